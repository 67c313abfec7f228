"""Reproducibility bundle of the quickstart's format-share report: its size, and how long the
replay takes against computing the report once, in the same run.

Setup (not timed): a scratch SQLite database (the embedded default), `manage.py quickstart
--no-serve` (the bundled sample data imported and read by every rule reader, the review queue).

Timed, each a child process as a user would run it:
  1. baseline: `manage.py format_share --dataset quickstart --json` (the report, computed once);
  2. `manage.py bundle --dataset quickstart --report format_share --out FILE`;
  3. `manage.py replay FILE`: a new scratch SQLite database, migrated, loaded, the report
     recomputed and compared (exit status 0 only when every number is reproduced).

Prints, last:
  RESULT bundle_mb <size of the bundle; target < 5>
  RESULT bundle_s <seconds to write it>
  RESULT format_share_report_s <baseline>
  RESULT replay_s <seconds; target < 60>
  RESULT replay_vs_report_ratio <replay_s / format_share_report_s>
Run: python bench/replay_bench.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, manage, result  # noqa: E402


def timed(*args: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    manage(*args, env=env, stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))  # noqa: SIM115
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as scratch:
        env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "REDIS_URL")}
        env.update(
            DATABASE_URL=f"sqlite:///{Path(scratch) / 'bench.sqlite3'}",
            SECRET_KEY=os.environ.get("SECRET_KEY", "bench-only"),
            PYTHONPATH=str(ROOT),
        )
        manage("migrate", "--no-input", "-v", "0", env=env)
        manage("quickstart", "--no-serve", env=env, stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))  # noqa: SIM115
        report_s = timed("format_share", "--dataset", "quickstart", "--json", env=env)
        path = Path(scratch) / "quickstart-format-share.zip"
        bundle_s = timed("bundle", "--dataset", "quickstart", "--report", "format_share", "--out", str(path), env=env)
        replay_s = timed("replay", str(path), env=env)
        result("bundle_mb", path.stat().st_size / 1e6)
        result("bundle_s", bundle_s)
        result("format_share_report_s", report_s)
        result("replay_s", replay_s)
        result("replay_vs_report_ratio", replay_s / report_s)


if __name__ == "__main__":
    main()
