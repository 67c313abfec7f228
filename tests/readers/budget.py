"""Pathological inputs under the isolation pool's hard budget, instead of a stopwatch in a test.

A runaway pattern (catastrophic regex backtracking, an exponential parse) shows as a reading the
pool killed at its budget: verdict "timeout", a failure these helpers report by input. How fast the
inputs are read is measured in bench/hostile_bench.py, against a baseline of the same run.
"""

from __future__ import annotations

from collections.abc import Sequence

from readers.base import Item, Reading
from readers.isolation.pool import IsolatedPool


def overran(results: Sequence[tuple[Reading, float]], labels: Sequence[object]) -> list[object]:
    """The labels of the readings the pool killed at their budget."""
    return [label for label, (reading, _ms) in zip(labels, results, strict=True) if reading.verdict == "timeout"]


def read_within_budget(
    reader: str,
    items: Sequence[Item],
    *,
    budget_s: float = 5.0,
    labels: Sequence[object] | None = None,
    pool: IsolatedPool | None = None,
) -> list[Reading]:
    """`reader`'s readings of `items` through `pool`, or a fresh two-worker pool with a budget of
    `budget_s` per reading; fails naming every input that ran into the budget."""
    labels = list(range(len(items))) if labels is None else labels
    if pool is None:
        with IsolatedPool(processes=2, budget_s=budget_s) as fresh:
            results = fresh.read_many(reader, items)
    else:
        budget_s = pool.budget_s
        results = pool.read_many(reader, items)
    killed = overran(results, labels)
    if killed:
        raise AssertionError(f"{reader}: killed at the {budget_s:g} s budget (a runaway pattern?): {killed}")
    return [reading for reading, _ms in results]
