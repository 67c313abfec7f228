"""The managers' queues: creating one over a routing policy, its state, title, assigned annotators
and guidelines, syncing it with its policy, its status, ETA, agreement and per-annotator numbers,
and its exports (which name each response's model and checkpoint: managers only)."""
