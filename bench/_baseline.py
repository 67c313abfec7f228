"""The bare baseline of a bench that compares N processes with plain in-process work.

A ratio of an N-process system to ONE bare process is not an efficiency: on an N-core machine its
ceiling is N. The ceiling here is the same work done the bare way by N processes, measured in the
same run, as the larger (the stricter) of
    pool     a `multiprocessing` pool of N forked processes, each running the plain loop over its
             share of the items (the items are inherited through fork, not sent), timed by the parent
             from dispatch to the last share's end;
    scaled   N x the rate of the same plain loop in one forked process.
Both sides run in processes forked once, after the work was set up and warmed, and kept for every
measurement of a BarePool, as the system's own workers are kept: caches (a reader's parse cache,
say) warm up the same way on either side, and the parent's state never changes.
efficiency = system rate / ceiling: 1.0 means the system does as much as N bare loops could.

On a machine shared with other jobs neither wall-clock rate is steady, so the bare side also reports
its CPU time per unit, and `TreeCPU` measures the system's (every process of a tree, plus others
named): bare CPU per unit / system CPU per unit is what the system's overhead costs whatever the
load (1.0: none), an upper bound on the efficiency a quiet machine can show.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# The work a pool process runs: set before the pool forks, so every process inherits it (and the
# items and readers it closes over) instead of receiving them pickled.
_work: Callable[[int, int], Sequence[Any]] | None = None


def _run_share(bounds: tuple[int, int], keep: bool = False) -> tuple[int | Sequence[Any], float]:
    """(units done, or what the work returned for each if `keep`; CPU seconds this process spent)."""
    assert _work is not None, "BarePool forked before its work was set"
    cpu = time.process_time()
    done = _work(*bounds)
    cpu = time.process_time() - cpu
    return (done if keep else len(done)), cpu


@dataclass
class Baseline:
    processes: int
    single_rate: float  # units/s of one plain loop
    pool_rate: float  # units/s of `processes` plain loops in a forked pool
    cpu_per_unit: float = 0.0  # CPU seconds per unit of the plain loop (single and pool together)

    @property
    def scaled_rate(self) -> float:
        return self.processes * self.single_rate

    @property
    def ceiling(self) -> float:
        return max(self.pool_rate, self.scaled_rate)

    def describe(self, unit: str = "verdicts") -> str:
        which = "pool" if self.pool_rate >= self.scaled_rate else f"{self.processes} x single"
        return (
            f"bare, 1 process: {self.single_rate:.1f} {unit}/s; bare, pool of {self.processes} processes: "
            f"{self.pool_rate:.1f} {unit}/s; {self.processes} x single: {self.scaled_rate:.1f} {unit}/s "
            f"-> ceiling {self.ceiling:.1f} {unit}/s ({which}, the larger)"
        )

    def merged(self, other: Baseline) -> Baseline:
        """The stricter of two measurements of the same baseline (e.g. before and after the system ran)."""
        return Baseline(
            self.processes,
            max(self.single_rate, other.single_rate),
            max(self.pool_rate, other.pool_rate),
            min(self.cpu_per_unit, other.cpu_per_unit),
        )


class BarePool:
    """N forked processes that run `work(start, stop)` over index ranges of the items; the work
    returns one small value per unit done (a verdict, say: the single process's are kept in
    `single_results`, for comparing with the system's).

    `work` must be set up (items built, readers built and warmed) before the pool is created: the
    processes inherit all of it through fork.
    """

    def __init__(self, work: Callable[[int, int], Sequence[Any]], processes: int) -> None:
        global _work
        _work = work
        self.work = work
        self.processes = processes
        self.cpu = 0.0  # CPU seconds the processes spent in `work`
        self.single_results: dict[int, Sequence[Any]] = {}  # start -> what work(start, stop) returned
        context = multiprocessing.get_context("fork")
        self._single = context.Pool(1)
        self._pool = context.Pool(processes)

    def close(self) -> None:
        for pool in (self._single, self._pool):
            pool.terminate()
            pool.join()

    def __enter__(self) -> BarePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pool_seconds(self, start: int, stop: int) -> tuple[float, int]:
        """(seconds, units) for items [start, stop) split evenly over the pool's processes."""
        n = stop - start
        cuts = [start + n * k // self.processes for k in range(self.processes + 1)]
        shares = [(cuts[k], cuts[k + 1]) for k in range(self.processes)]
        t0 = time.perf_counter()
        results = self._pool.map(_run_share, shares, chunksize=1)
        seconds = time.perf_counter() - t0
        self.cpu += sum(cpu for _, cpu in results)
        return seconds, sum(done for done, _ in results)  # type: ignore[misc]

    def single_seconds(self, start: int, stop: int) -> tuple[float, int]:
        """(seconds, units) for items [start, stop) in one process."""
        t0 = time.perf_counter()
        done, cpu = self._single.apply(_run_share, ((start, stop), True))
        seconds = time.perf_counter() - t0
        self.cpu += cpu
        assert not isinstance(done, int)
        self.single_results[start] = done
        return seconds, len(done)

    def measure(self, start: int, stop: int, rounds: int = 1) -> Baseline:
        """Both rates over items [start, stop), in `rounds` interleaved slices (alternating which side
        goes first, so that both see the same background load)."""
        single_s = pool_s = 0.0
        single_n = pool_n = 0
        cpu_before = self.cpu
        size = -(-(stop - start) // rounds)
        for k, lo in enumerate(range(start, stop, size)):
            hi = min(lo + size, stop)
            for side in ("single", "pool") if k % 2 == 0 else ("pool", "single"):
                if side == "single":
                    s, n = self.single_seconds(lo, hi)
                    single_s, single_n = single_s + s, single_n + n
                else:
                    s, n = self.pool_seconds(lo, hi)
                    pool_s, pool_n = pool_s + s, pool_n + n
        return Baseline(
            self.processes, single_n / single_s, pool_n / pool_s, (self.cpu - cpu_before) / (single_n + pool_n)
        )


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process, from /proc (Linux); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as fh:
                out.extend(int(c) for c in fh.read().split())
        except OSError:
            pass
    return out


class TreeCPU:
    """CPU seconds spent by a process tree (by depth below its root) and by other processes, since
    `start()`. Call `sample()` now and then: a process that ends between samples loses its last
    ticks (the isolation pool's killed workers; none in an ordinary run)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._start: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}

    def _walk(self) -> dict[int, int]:
        depth, stack = {}, [(self.root, 0)]
        while stack:
            pid, d = stack.pop()
            depth[pid] = d
            stack.extend((c, d + 1) for c in _children(pid))
        return depth

    def start(self, others: Iterable[int] = ()) -> None:
        for pid in [*self._walk(), *others]:
            cpu = _cpu_seconds(pid)
            if cpu is not None:
                self._start[pid] = cpu

    def sample(self, others: Iterable[int] = ()) -> None:
        for pid, d in [*self._walk().items(), *((p, -1) for p in others)]:
            cpu = _cpu_seconds(pid)
            if cpu is not None:
                self._last[pid] = (str(d) if d >= 0 else "other", cpu - self._start.get(pid, 0.0))

    def by_group(self) -> dict[str, float]:
        """CPU seconds by depth in the tree ("0" the root, "1" its children, ...) and "other"."""
        out: dict[str, float] = {}
        for group, cpu in self._last.values():
            out[group] = out.get(group, 0.0) + cpu
        return out
