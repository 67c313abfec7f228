"""readers.isolation: hard budgets, crash containment, order, and clean process hygiene.

Misbehaving readers exist only inside registry scopes (`registry.scoped`), entered before the pools
that read them fork (workers inherit the registry through fork()).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from readers import registry
from readers.base import VERDICTS, Item, Reader, Reading
from readers.isolation.pool import IsolatedPool, read_isolated


@pytest.fixture(autouse=True)
def _plain_http() -> None:
    """Overrides tests/conftest.py's autouse fixture of the same name, which needs pytest-django's
    `settings`: readers is a Django-free library and these tests run with `-p no:django`."""


# Set by a test before its pool forks: workers inherit it, and a "meet" reading waits there for
# the other worker's (fork-context primitives survive the fork; no resource-tracker process).
MEETING: Any = None


class Misbehave(Reader):
    """Does what the response says: echo, sleep, loop, exit, segv, raise, hog, …"""

    name = "test-misbehave"
    version = "0"

    def read(self, item: Item) -> Any:
        cmd = item.response
        if cmd == "sleep":
            time.sleep(3600)
        elif cmd == "loop":
            while True:
                pass
        elif cmd == "exit":
            os._exit(7)
        elif cmd == "segv":
            ctypes.string_at(0)
        elif cmd == "raise":
            raise ValueError("boom")
        elif cmd == "sysexit":
            raise SystemExit(3)
        elif cmd == "hog":
            blocks = []
            while True:
                blocks.append(bytes(256 * 1024**2))  # calloc: address space, no page faults
        elif cmd == "not-a-reading":
            return "correct"
        elif cmd == "unpicklable":
            return Reading("correct", detail={"fn": lambda: None})
        elif cmd == "rlimit":
            return Reading("correct", answer=str(resource.getrlimit(resource.RLIMIT_AS)[0]))
        elif cmd.startswith("nap:"):
            time.sleep(float(cmd[4:]))
        elif cmd == "pid":
            return Reading("correct", answer=str(os.getpid()))
        elif cmd == "meet":
            MEETING.wait()
            return Reading("correct", answer=str(os.getpid()))
        elif cmd == "subclass":
            return TaggedReading("correct", answer=cmd)
        return Reading("correct", answer=cmd)


class MeetThenHang(Reader):
    """Waits at MEETING for the other worker's reading, then never returns."""

    name = "test-meet-then-hang"
    version = "0"

    def read(self, item: Item) -> Any:
        MEETING.wait()
        time.sleep(3600)


class TaggedReading(Reading):
    """A Reading subclass: crosses the pipe as itself, not as a plain Reading."""


class BrokenFactory(Reader):
    name = "test-broken-factory"
    version = "0"

    def __init__(self) -> None:
        raise RuntimeError("cannot build")


@pytest.fixture(autouse=True, scope="module")
def _test_readers() -> Iterator[None]:
    """In scope before any pool of this module forks (workers inherit the registry)."""
    with registry.scoped({"test-misbehave": lambda: Misbehave(name="test-misbehave")}):
        yield


def items_of(*responses: str) -> list[Item]:
    return [Item(response=r, gold="g") for r in responses]


def child_pids() -> set[int]:
    """Children of this process, zombies included (a zombie keeps its /proc entry)."""
    me = os.getpid()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may contain spaces, so split after the last ")".
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me:
            found.add(int(entry))
    return found


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    before = child_pids()
    yield
    deadline = time.monotonic() + 5
    while child_pids() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child_pids() - before == set()


@pytest.fixture
def pool(no_leftovers: None) -> Iterator[IsolatedPool]:
    with IsolatedPool(processes=2, budget_s=1.0, batch_size=8) as p:
        yield p


# ---------------------------------------------------------------------------------------------
# ordinary operation
# ---------------------------------------------------------------------------------------------


def test_results_come_back_in_input_order(pool: IsolatedPool) -> None:
    responses = [f"r{i}" for i in range(300)]
    results = pool.read_many("test-misbehave", items_of(*responses))
    assert [reading.answer for reading, _ in results] == responses
    assert all(reading.verdict == "correct" and ms >= 0 for reading, ms in results)


def test_work_is_spread_over_the_processes(pool: IsolatedPool) -> None:
    pids = {r.answer for r, _ in pool.read_many("test-misbehave", items_of(*["pid"] * 64))}
    assert len(pids) == 2 and str(os.getpid()) not in pids


def test_processes_read_at_the_same_time(no_leftovers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each "meet" reading waits until the other one is under way too: both finish only if the two
    # workers read at the same time; one after the other, the first would wait into its budget.
    monkeypatch.setattr(sys.modules[__name__], "MEETING", multiprocessing.get_context("fork").Barrier(2))
    with IsolatedPool(processes=2, budget_s=30.0) as p:
        results = p.read_many("test-misbehave", items_of("meet", "meet"))
    assert [r.verdict for r, _ in results] == ["correct", "correct"]
    assert len({r.answer for r, _ in results}) == 2  # two workers, met


def test_empty_input_and_unknown_reader(pool: IsolatedPool) -> None:
    assert pool.read_many("test-misbehave", []) == []
    with pytest.raises(KeyError):
        pool.read_many("no-such-reader", items_of("x"))


def test_real_reader_through_the_pool(pool: IsolatedPool) -> None:
    items = [
        Item(response="The final answer is $\\boxed{\\dfrac{1}{2}}$.", gold="\\frac{1}{2}"),
        Item(response="The final answer is $\\boxed{3}$.", gold="4"),
        Item(response="no idea", gold="4"),
    ]
    verdicts = [r.verdict for r, _ in pool.read_many("math-verify-latex", items)]
    assert verdicts == ["correct", "incorrect", "no_answer"]


# ---------------------------------------------------------------------------------------------
# budgets
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", ["sleep", "loop"])
def test_overrun_is_a_timeout_and_the_pool_keeps_working(pool: IsolatedPool, cmd: str) -> None:
    # "sleep" and "loop" never end: a result at all means the worker was killed at its budget
    results = pool.read_many("test-misbehave", items_of("a", cmd, "b", "c"))
    verdicts = [r.verdict for r, _ in results]
    assert verdicts == ["correct", "timeout", "correct", "correct"]
    timed_out, elapsed_ms = results[1]
    assert timed_out.detail == {"budget_s": 1.0}
    assert elapsed_ms >= 1000  # not killed before its budget
    assert pool.stats["timeouts"] == 1
    # Replaced worker, same pool: still answers.
    assert [r.answer for r, _ in pool.read_many("test-misbehave", items_of("x", "y"))] == ["x", "y"]


def test_several_overruns_in_one_batch(pool: IsolatedPool) -> None:
    results = pool.read_many("test-misbehave", items_of("sleep", "a", "loop", "b", "sleep", "c"))
    assert [r.verdict for r, _ in results] == ["timeout", "correct"] * 3
    assert all(r.detail == {"budget_s": 1.0} and ms >= 1000 for r, ms in results[::2])
    assert pool.stats["timeouts"] == 3


def test_overruns_on_both_workers_at_once_are_both_killed(no_leftovers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Both workers are stuck together (each hangs only once the other is under way too): the pool
    # watches both deadlines, not one worker at a time, and kills and replaces both.
    monkeypatch.setattr(sys.modules[__name__], "MEETING", multiprocessing.get_context("fork").Barrier(2))
    name = "test-meet-then-hang"
    with registry.scoped({name: lambda: MeetThenHang(name=name)}), IsolatedPool(processes=2, budget_s=1.0) as p:
        results = p.read_many(name, items_of("x", "y"))
        after = p.read_many("test-misbehave", items_of("a", "b"))
        stats = dict(p.stats)
    assert [r.verdict for r, _ in results] == ["timeout", "timeout"]
    assert [r.answer for r, _ in after] == ["a", "b"]
    assert stats["timeouts"] == 2


# ---------------------------------------------------------------------------------------------
# crashes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cmd,needle",
    [
        ("exit", "exited with code 7"),
        ("segv", "SIGSEGV"),
        ("raise", "ValueError: boom"),
        ("sysexit", "SystemExit"),
        ("not-a-reading", "not Reading"),
        ("unpicklable", "could not be sent"),
    ],
)
def test_crash_is_an_error_and_the_batch_continues(pool: IsolatedPool, cmd: str, needle: str) -> None:
    responses = ["a", "b", cmd, "c", "d", "e"]
    results = pool.read_many("test-misbehave", items_of(*responses))
    verdicts = [r.verdict for r, _ in results]
    assert verdicts == ["correct", "correct", "error", "correct", "correct", "correct"]
    assert needle in results[2][0].detail["error"]
    assert [r.answer for r, _ in results if r.verdict == "correct"] == ["a", "b", "c", "d", "e"]


def test_worker_deaths_are_counted_and_replaced(pool: IsolatedPool) -> None:
    results = pool.read_many("test-misbehave", items_of("exit", "segv", "exit", "ok"))
    assert [r.verdict for r, _ in results] == ["error", "error", "error", "correct"]
    assert pool.stats["deaths"] == 3


def test_memory_cap_turns_a_hog_into_an_error(no_leftovers: None) -> None:
    with IsolatedPool(processes=1, budget_s=20.0, memory_limit_bytes=2 * 1024**3) as p:
        (limit, _), (hog, _), (after, _) = p.read_many("test-misbehave", items_of("rlimit", "hog", "after"))
    assert int(limit.answer) >= 2 * 1024**3  # the cap, or the parent's size + headroom if larger
    assert int(limit.answer) != resource.RLIM_INFINITY
    assert hog.verdict == "error" and "MemoryError" in hog.detail["error"]
    assert after.verdict == "correct"


def test_reader_that_cannot_be_built(pool: IsolatedPool) -> None:
    with registry.scoped({"test-broken-factory": BrokenFactory}):
        results = pool.read_many("test-broken-factory", items_of("a", "b"))
    assert [r.verdict for r, _ in results] == ["error", "error"]
    assert "cannot build" in results[0][0].detail["error"]


# ---------------------------------------------------------------------------------------------
# hostile inputs through math-verify
# ---------------------------------------------------------------------------------------------

HOSTILE = {
    "power tower": r"The final answer is $2^{2^{2^{2^{20}}}}$",
    "9^9^9": r"$9^{9^{9}}$",
    "10k nested braces": "$" + "{" * 10_000 + "1" + "}" * 10_000 + "$",
    "1 MB response": ("Step: we know $\\frac{1}{2} + x = 3$ and so on. " * 25_000)[:1_000_000] + " $\\boxed{2}$",
    "NUL bytes": "The final\x00 answer is \x00$\\boxed{2}$\x00",
    "lone surrogate": "The final answer is \ud800 $\\boxed{2}$ \udfff",
    "HTML/JS": "<script>alert('x')</script><img src=x onerror=alert(1)> $\\boxed{2}$",
}


def test_hostile_inputs_each_get_a_verdict_within_budget(no_leftovers: None) -> None:
    budget = 3.0
    items = [Item(response=text, gold="2") for text in HOSTILE.values()]
    with IsolatedPool(processes=2, budget_s=budget) as p:
        results = p.read_many("math-verify-latex", items)
        # and the pool is still usable afterwards
        again = p.read_many("math-verify-latex", [Item(response="$\\boxed{2}$", gold="2")])
    for name, (reading, _elapsed_ms) in zip(HOSTILE, results, strict=True):
        assert reading.verdict in VERDICTS, name
        if reading.verdict == "timeout":  # killed at its budget: the detail says which
            assert reading.detail == {"budget_s": budget}, name
    by_name = {name: reading.verdict for name, (reading, _) in zip(HOSTILE, results)}
    assert by_name["9^9^9"] in ("timeout", "error")  # never finishes (probe §3b)
    assert by_name["NUL bytes"] == by_name["lone surrogate"] == by_name["HTML/JS"] == "correct"
    assert again[0][0].verdict == "correct"


# ---------------------------------------------------------------------------------------------
# buffered results: the child sends finished readings in chunks, the deadline comes from the
# start time it publishes in shared memory
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def never_flush_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children forked while this is active send results only at the end of a batch, so every
    item finished before a hang or crash in the same batch is still unsent when it happens."""
    import readers.isolation.child as child

    monkeypatch.setattr(child, "_FLUSH_NS", 10**15)


def echo_ok(results: list[tuple[Reading, float]], responses: list[str], skip: set[int]) -> None:
    for i, ((reading, ms), response) in enumerate(zip(results, responses, strict=True)):
        if i not in skip:
            assert (reading.verdict, reading.answer) == ("correct", response), i
            assert ms >= 0


@pytest.mark.parametrize("cmd", ["loop", "sleep"])
def test_hang_after_many_fast_items_in_one_batch(no_leftovers: None, never_flush_early: None, cmd: str) -> None:
    # 251 items, one process: the first batch (items 0-63) holds the 51 fast items and the hang.
    responses = [f"f{i}" for i in range(51)] + [cmd] + [f"g{i}" for i in range(199)]
    with IsolatedPool(processes=1, budget_s=1.0) as p:
        results = p.read_many("test-misbehave", items_of(*responses))
        stats = dict(p.stats)
    timed_out, elapsed_ms = results[51]
    assert timed_out.verdict == "timeout" and timed_out.detail == {"budget_s": 1.0}
    echo_ok(results, responses, skip={51})
    # the deadline counts from the item's own start (published by the child), not from the last
    # message, which here was none at all: counted from the batch's dispatch, it would have cut
    # the item off before it had its full second
    assert elapsed_ms >= 1000
    # items 0-50 were read but still buffered when the worker was killed: read again
    assert stats["timeouts"] == 1 and stats["reruns"] == 51 and stats["spawned"] == 2


def test_hang_after_many_fast_items_default_flushing(pool: IsolatedPool) -> None:
    responses = [f"f{i}" for i in range(150)] + ["loop"] + [f"g{i}" for i in range(149)]
    results = pool.read_many("test-misbehave", items_of(*responses))
    assert results[150][0].verdict == "timeout" and results[150][0].detail == {"budget_s": 1.0}
    assert results[150][1] >= 1000
    echo_ok(results, responses, skip={150})
    assert pool.stats["timeouts"] == 1


@pytest.mark.parametrize("cmd,needle", [("segv", "SIGSEGV"), ("exit", "exited with code 7")])
def test_crash_after_many_fast_items(no_leftovers: None, never_flush_early: None, cmd: str, needle: str) -> None:
    responses = [f"f{i}" for i in range(120)] + [cmd] + [f"g{i}" for i in range(130)]
    with IsolatedPool(processes=1, budget_s=5.0) as p:
        results = p.read_many("test-misbehave", items_of(*responses))
        stats = dict(p.stats)
        # and the replacement goes on serving
        assert [r.answer for r, _ in p.read_many("test-misbehave", items_of("z"))] == ["z"]
    assert results[120][0].verdict == "error" and needle in results[120][0].detail["error"]
    echo_ok(results, responses, skip={120})
    assert stats["deaths"] == 1 and stats["timeouts"] == 0
    assert stats["reruns"] > 0  # the finished, unsent items of the crashed batch


def test_several_hangs_and_crashes_among_many_fast_items(pool: IsolatedPool) -> None:
    responses = [f"r{i}" for i in range(400)]
    bad = {37: "loop", 38: "segv", 200: "sleep", 201: "exit", 399: "loop"}
    for i, cmd in bad.items():
        responses[i] = cmd
    results = pool.read_many("test-misbehave", items_of(*responses))
    assert {i: results[i][0].verdict for i in bad} == {
        37: "timeout",
        38: "error",
        200: "timeout",
        201: "error",
        399: "timeout",
    }
    echo_ok(results, responses, skip=set(bad))
    assert pool.stats["timeouts"] == 3 and pool.stats["deaths"] == 2


def test_hang_on_the_first_item_after_a_slow_reader_build(no_leftovers: None) -> None:
    # The parent looks while the child is still building the reader (start_timeout_s applies);
    # the child then starts the hanging item without sending anything. Detection must follow
    # that item's own budget, not the build allowance: the item naps 30 s, past its 1 s budget
    # and inside the 600 s allowance, so it reads "correct" if the allowance were followed.
    name = "test-slow-build"

    def slow_factory() -> Reader:
        time.sleep(0.3)
        return Misbehave(name=name)

    with registry.scoped({name: slow_factory}), IsolatedPool(processes=1, budget_s=1.0, start_timeout_s=600.0) as p:
        results = p.read_many(name, items_of("nap:30", "a"))
    assert [r.verdict for r, _ in results] == ["timeout", "correct"]
    assert results[0][0].detail == {"budget_s": 1.0} and results[0][1] >= 1000


def test_fast_readings_travel_in_chunks(no_leftovers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import readers.isolation.pool as iso

    messages = {"n": 0}
    real_handle = iso._Run._handle

    def counting(self: Any, w: Any, msg: Any) -> None:
        messages["n"] += 1
        real_handle(self, w, msg)

    monkeypatch.setattr(iso._Run, "_handle", counting)
    responses = [f"r{i}" for i in range(2000)]
    with IsolatedPool(processes=2, budget_s=5.0, batch_size=64) as p:
        results = p.read_many("test-misbehave", items_of(*responses))
    echo_ok(results, responses, skip=set())
    # About one message per batch: ~30 of 64, then the shrinking tail of guided scheduling (this
    # reader is untimed on a first call, so the last batches go down to single items), plus one
    # per 50 ms of reading; a loaded machine adds some. What must hold is that readings travel
    # many to a message, never one per item.
    assert messages["n"] <= len(responses) // 8


def test_a_run_is_cut_into_shrinking_batches_that_cover_every_item_once() -> None:
    """Guided self-scheduling: big batches first, small ones last, so no worker is left reading a
    long last batch while the others idle; a reader the pool has timed gets no batch below ~0.5 ms
    of its work."""
    import readers.isolation.pool as iso

    pool = IsolatedPool(processes=2, batch_size=64)
    try:
        pool._item_ms["test-misbehave"] = 0.1  # seen before: 0.1 ms an item, so batches of >= 5
        known = registry.snapshot()
        run = iso._Run(pool, [("test-misbehave", items_of(*"ab" * 300)), ("echo-new", items_of("c", "d"))], known)
        batches = []
        while (batch := run._next_batch()) is not None:
            batches.append(batch)
    finally:
        pool.close()
    timed = [b for b in batches if b.reader == "test-misbehave"]
    sizes = [len(b.indices) for b in timed]
    assert sorted(i for b in batches for i in b.indices) == list(range(602))
    assert sizes[0] == 64 and sizes == sorted(sizes, reverse=True)
    assert min(sizes[:-1]) == 5  # the floor for a 0.1 ms reader; only the very last batch is a rest
    # a reader the pool has not timed may end in single items (a slow reader's tail)
    assert [len(b.indices) for b in batches if b.reader == "echo-new"] == [1, 1]


def test_reading_subclass_and_plain_readings_in_one_chunk(pool: IsolatedPool) -> None:
    results = pool.read_many("test-misbehave", items_of("a", "subclass", "b"))
    assert [type(r).__name__ for r, _ in results] == ["Reading", "TaggedReading", "Reading"]
    assert [r.answer for r, _ in results] == ["a", "subclass", "b"]


# ---------------------------------------------------------------------------------------------
# lifecycle and environments
# ---------------------------------------------------------------------------------------------


def test_sequential_pools_leave_no_processes(no_leftovers: None) -> None:
    for _ in range(3):
        with IsolatedPool(processes=2, budget_s=1.0) as p:
            assert [r.verdict for r, _ in p.read_many("test-misbehave", items_of("a", "sleep", "exit", "b"))] == [
                "correct",
                "timeout",
                "error",
                "correct",
            ]
            pids = p.worker_pids()
        assert pids and not any(os.path.exists(f"/proc/{pid}") for pid in pids)


def test_close_is_idempotent_and_final(no_leftovers: None) -> None:
    p = IsolatedPool(processes=2, budget_s=1.0)
    p.read_many("test-misbehave", items_of("a", "b", "c"))
    p.close()
    p.close()
    with pytest.raises(RuntimeError):
        p.read_many("test-misbehave", items_of("a"))


def test_garbage_collected_pool_reaps_its_workers(no_leftovers: None) -> None:
    import gc

    p = IsolatedPool(processes=2, budget_s=1.0)
    p.read_many("test-misbehave", items_of("a", "b", "c"))
    del p
    gc.collect()


def test_read_isolated_convenience(no_leftovers: None) -> None:
    results = read_isolated("test-misbehave", items_of("a", "raise", "b"), processes=2, budget_s=1.0)
    assert [r.verdict for r, _ in results] == ["correct", "error", "correct"]


def test_reader_registered_after_the_workers_forked(pool: IsolatedPool) -> None:
    pool.read_many("test-misbehave", items_of("warm"))
    name = f"test-late-{os.getpid()}"
    with registry.scoped({name: lambda: Misbehave(name=name)}):
        assert [r.answer for r, _ in pool.read_many(name, items_of("late"))] == ["late"]


class Shout(Reader):
    name = "test-misbehave"
    version = "0"

    def read(self, item: Item) -> Reading:
        return Reading("correct", answer=item.response.upper())


def test_a_worker_forked_in_another_scope_is_replaced(pool: IsolatedPool) -> None:
    """A name shadowed in a scope is another reader: workers that forked before the scope (and know
    the module's reader under that name) must not build the old one, nor workers of the scope after it."""
    pool.read_many("test-misbehave", items_of("warm"))
    with registry.scoped({"test-misbehave": Shout}):
        assert [r.answer for r, _ in pool.read_many("test-misbehave", items_of("abc"))] == ["ABC"]
    assert [r.answer for r, _ in pool.read_many("test-misbehave", items_of("abc"))] == ["abc"]


def test_outer_alarm_survives(pool: IsolatedPool) -> None:
    # math-verify cancels a caller's SIGALRM when it runs in-process (probe §3a); in the pool it
    # runs in the child, so the parent's alarm is untouched.
    fired: list[int] = []
    old = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.alarm(30)
        pool.read_many("math-verify-latex", [Item(response="$2$", gold="2")])
        remaining = signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert remaining > 0 and not fired


def test_pool_in_a_thread(no_leftovers: None) -> None:
    out: list[Any] = []

    def run() -> None:
        with IsolatedPool(processes=2, budget_s=1.0) as p:
            out.extend(r.verdict for r, _ in p.read_many("test-misbehave", items_of("a", "sleep", "b")))

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    assert out == ["correct", "timeout", "correct"]


def _in_daemonic_child(queue: Any) -> None:
    try:
        with IsolatedPool(processes=2, budget_s=1.0) as p:
            verdicts = [r.verdict for r, _ in p.read_many("test-misbehave", items_of("a", "sleep", "segv", "b"))]
        queue.put(verdicts)
    except BaseException as exc:  # noqa: BLE001
        queue.put(repr(exc))


def test_pool_inside_a_daemonic_process_like_a_celery_prefork_child(no_leftovers: None) -> None:
    # multiprocessing refuses to start children from a daemonic process
    # ("daemonic processes are not allowed to have children"); the pool forks directly.
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_in_daemonic_child, args=(queue,), daemon=True)
    proc.start()
    try:
        result = queue.get(timeout=60)
    finally:
        proc.join(10)
    assert result == ["correct", "timeout", "error", "correct"]
    assert proc.exitcode == 0


def test_pool_refuses_use_from_a_forked_child(pool: IsolatedPool) -> None:
    pool.read_many("test-misbehave", items_of("a"))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            try:
                pool.read_many("test-misbehave", items_of("a"))
            except RuntimeError:
                code = 0
            os.write(w, bytes([code]))
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"\x00"
    # and the parent's pool is intact
    assert [x.answer for x, _ in pool.read_many("test-misbehave", items_of("still"))] == ["still"]


@pytest.mark.parametrize("kwargs", [{"processes": 0}, {"budget_s": 0}, {"batch_size": 0}])
def test_invalid_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        IsolatedPool(**kwargs)


def test_interrupted_run_does_not_leak_into_the_next(pool: IsolatedPool, monkeypatch: pytest.MonkeyPatch) -> None:
    import readers.isolation.pool as iso

    real_handle = iso._Run._handle
    calls = {"n": 0}

    def flaky(self: Any, w: Any, msg: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        real_handle(self, w, msg)

    monkeypatch.setattr(iso._Run, "_handle", flaky)
    with pytest.raises(KeyboardInterrupt):
        pool.read_many("test-misbehave", items_of(*["nap:0.05"] * 20))
    monkeypatch.setattr(iso._Run, "_handle", real_handle)
    assert [r.answer for r, _ in pool.read_many("test-misbehave", items_of("p", "q", "r"))] == ["p", "q", "r"]


# ---------------------------------------------------------------------------------------------
# several readers in one run (read_panel): the batches of every reader are dealt out together
# ---------------------------------------------------------------------------------------------

SHOUT = "test-shout"


@pytest.fixture
def shout() -> Iterator[None]:
    """A second reader, entered before the test's pool forks: it answers in capitals, so a reading
    shows which of the two readers made it."""
    with registry.scoped({SHOUT: lambda: Shout(name=SHOUT)}):
        yield


def test_a_panel_run_returns_each_readers_readings_in_input_order(shout: None, no_leftovers: None) -> None:
    first = [f"a{i}" for i in range(150)]
    second = [f"b{i}" for i in range(70)]
    with IsolatedPool(processes=2, budget_s=5.0, batch_size=8) as p:
        out = p.read_panel([("test-misbehave", items_of(*first)), (SHOUT, items_of(*second)), ("test-misbehave", [])])
        assert p.read_panel([]) == [] and p.read_panel([(SHOUT, [])]) == [[]]
    assert [len(results) for results in out] == [150, 70, 0]
    assert [r.answer for r, _ in out[0]] == first
    assert [r.answer for r, _ in out[1]] == [b.upper() for b in second]


def test_a_panel_run_with_an_unknown_reader_reads_nothing(shout: None, pool: IsolatedPool) -> None:
    with pytest.raises(registry.UnknownReader, match="no-such-reader"):
        pool.read_panel([(SHOUT, items_of("x")), ("no-such-reader", items_of("y"))])
    assert pool.stats["spawned"] == 0


@pytest.mark.parametrize("cmd", ["loop", "sleep"])
def test_in_a_panel_run_the_item_that_overruns_times_out_and_every_other_gets_its_own_verdict(
    shout: None, no_leftovers: None, never_flush_early: None, cmd: str
) -> None:
    # One worker, batches of 8 (0-7, 8-15 and 16-19 of the first reader, then the second's): when
    # item 17 hangs, the worker also holds the second reader's first batch, queued behind it. Both
    # go back, item 17 excepted, and the replacement reads each with the reader it belongs to.
    # Nothing of the batch had been sent (never_flush_early): item 16 is read again.
    first = [f"a{i}" for i in range(20)]
    first[17] = cmd
    second = [f"b{i}" for i in range(20)]
    with IsolatedPool(processes=1, budget_s=1.0, batch_size=8) as p:
        mine, shouted = p.read_panel([("test-misbehave", items_of(*first)), (SHOUT, items_of(*second))])
        stats = dict(p.stats)
    assert mine[17][0].verdict == "timeout" and mine[17][0].detail == {"budget_s": 1.0}
    assert mine[17][1] >= 1000
    echo_ok(mine, first, skip={17})
    assert [(r.verdict, r.answer) for r, _ in shouted] == [("correct", b.upper()) for b in second]
    assert stats["timeouts"] == 1 and stats["spawned"] == 2 and stats["reruns"] == 1


@pytest.mark.parametrize("cmd,needle", [("segv", "SIGSEGV"), ("exit", "exited with code 7")])
def test_in_a_panel_run_a_crash_mid_batch_is_an_error_and_both_readers_go_on(
    shout: None, no_leftovers: None, cmd: str, needle: str
) -> None:
    first = [f"a{i}" for i in range(30)]
    first[17] = cmd
    second = [f"b{i}" for i in range(30)]
    with IsolatedPool(processes=2, budget_s=5.0, batch_size=8) as p:
        mine, shouted = p.read_panel([("test-misbehave", items_of(*first)), (SHOUT, items_of(*second))])
        stats = dict(p.stats)
    assert mine[17][0].verdict == "error" and needle in mine[17][0].detail["error"]
    echo_ok(mine, first, skip={17})
    assert [r.answer for r, _ in shouted] == [b.upper() for b in second]
    assert stats["deaths"] == 1 and stats["timeouts"] == 0
