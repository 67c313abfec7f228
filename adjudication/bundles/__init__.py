"""Reproducibility bundles: one file holding a dataset's rows, its reports' parameters and numbers
and the environment they were computed in (services.bundle_write), and the replay that loads it
into a fresh database and recomputes every number (services.bundle_replay). docs/bundles.md."""
