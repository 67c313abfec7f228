"""Every registered reader, through the isolation pool, on a sample of hostile inputs: each gets a
verdict class within its budget, and no worker is left hanging. (How long the full set takes is
bench/hostile_bench.py's measure.)"""

from __future__ import annotations

import os

import pytest

from readers import VERDICTS, registry
from readers.hostile import FAMILIES, hostile_items
from readers.isolation.pool import IsolatedPool

# Any budget tests the same thing (a verdict class for every item, a timeout killed at the budget and
# not before, no worker left): a second is enough. A reading stuck in SymPy or math-verify burns its
# whole budget: 21 of these 48 items do under math-verify-latex-seed001.
BUDGET_S = 1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("reader", registry.names())
def test_each_hostile_family_gets_a_verdict_class_within_budget(reader):
    sample = list(hostile_items(2 * len(FAMILIES), seed=1))  # every family, as MC and as open-ended
    items = [item for _, item in sample]
    with IsolatedPool(processes=2, budget_s=BUDGET_S) as pool:
        results = pool.read_many(reader, items)
        pids = pool.worker_pids()
    assert len(results) == len(items)
    for (family, _), (reading, elapsed_ms) in zip(sample, results, strict=True):
        assert reading.verdict in VERDICTS, (family, reading)
        if reading.verdict == "timeout":  # killed at its budget, and not before it
            assert reading.detail == {"budget_s": BUDGET_S} and elapsed_ms >= BUDGET_S * 1000, (family, elapsed_ms)
    assert not any(_alive(pid) for pid in pids), "workers survived close()"
