"""10,000 hostile inputs through every reader in the isolation pool.

Checks, on the full run, what the test checks on a sample: every reading gets a verdict class
within its budget (plus the parent's reaction time), no worker hangs, and the workers' memory
stays bounded (each worker has an address-space cap; the peak RSS of any reaped worker is reported).
Prints, last:
  RESULT hostile_readings <count>
  RESULT hostile_worst_overrun_ms <max(elapsed - budget), 0 if none>
  RESULT hostile_peak_worker_rss_mb <value>
  RESULT hostile_unclassified <readings without a verdict class: must be 0>
Run: python bench/hostile_bench.py   (BENCH_HOSTILE_N, BENCH_BUDGET_S to change the size and budget)
"""

from __future__ import annotations

import collections
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import result  # noqa: E402

from readers import VERDICTS, registry  # noqa: E402
from readers.hostile import hostile_items  # noqa: E402
from readers.isolation.pool import IsolatedPool  # noqa: E402

N = int(os.environ.get("BENCH_HOSTILE_N", "10000"))
BUDGET_S = float(os.environ.get("BENCH_BUDGET_S", "2"))


def main() -> None:
    sample = list(hostile_items(N, seed=42, weighted=True))
    items = [item for _, item in sample]
    names = registry.names()
    worst_overrun = 0.0
    unclassified = 0
    total = 0
    verdicts: collections.Counter = collections.Counter()
    started = time.monotonic()
    with IsolatedPool(processes=2, budget_s=BUDGET_S) as pool:
        for name in names:
            t0 = time.monotonic()
            results = pool.read_many(name, items)
            by_verdict = collections.Counter(r.verdict for r, _ in results)
            print(f"{name:30s} {time.monotonic() - t0:7.1f}s {dict(by_verdict)}", flush=True)
            for reading, elapsed_ms in results:
                total += 1
                verdicts[reading.verdict] += 1
                unclassified += reading.verdict not in VERDICTS
                worst_overrun = max(worst_overrun, elapsed_ms - BUDGET_S * 1000)
        stats = dict(pool.stats)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{total} readings in {time.monotonic() - started:.0f}s; verdicts {dict(verdicts)}; pool {stats}", flush=True)
    result("hostile_readings", total)
    result("hostile_worst_overrun_ms", max(worst_overrun, 0.0))
    result("hostile_peak_worker_rss_mb", peak_mb)
    result("hostile_unclassified", unclassified)


if __name__ == "__main__":
    main()
