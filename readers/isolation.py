"""Hard isolation for readers: every reading runs in a killable child process under a wall-clock
budget and an address-space cap.

Why processes and not threads or math-verify's own timeouts: a thread cannot be stopped (and a
SymPy big-integer computation starves the GIL, so even a watchdog thread does not run), and
math-verify's SIGALRM timeout only works in the main thread and clobbers outer alarms
(design/readers-catalogue.md §2.8, design/math-verify-probe.md §3). Only SIGKILL from outside is
a hard bound.

Why raw os.fork() and not multiprocessing.Pool/Process: this pool must also run inside a Celery
prefork child, which is a daemonic process, and multiprocessing refuses to start children from a
daemonic process. fork() also makes workers start warm: the parent has already imported the
readers (SymPy, math-verify), so a replacement worker costs a few milliseconds, not 0.5 s.

Protocol (one duplex socketpair per worker, multiprocessing.connection framing + pickle):
    parent -> child: (reader_name, [Item, ...])   one batch; None = exit
    child -> parent: ("ready",)                    reader built, first item starts now
                     ("done", i, Reading, ms)      item i of the batch finished; i+1 starts now
                     ("fatal", message)            the reader could not be built
Because the child streams one message per item, the parent always knows which item is in flight
and (to within one message latency, which only ever extends the budget) when it started.

Not thread-safe by design: read_many holds a lock, so concurrent callers are serialised.
"""
from __future__ import annotations

import gc
import math
import os
import resource
import signal
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait
from typing import Any, Sequence

from . import registry
from .base import Item, Reading

DEFAULT_MEMORY_LIMIT = 4 * 1024**3
# A child whose parent already maps more than the cap still needs some headroom to run at all.
_MIN_HEADROOM = 512 * 1024**2
_ERROR_CHARS = 1000


def _short(text: str) -> str:
    return text if len(text) <= _ERROR_CHARS else text[:_ERROR_CHARS] + "…"


def _describe_exception(exc: BaseException) -> str:
    try:
        return _short(f"{type(exc).__name__}: {exc}")
    except Exception:  # noqa: BLE001 - str() of a hostile exception can itself fail
        return type(exc).__name__


def _describe_status(status: int | None) -> str:
    if status is None:
        return "worker exited (status unknown)"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"worker killed by signal {name}"
    if os.WIFEXITED(status):
        return f"worker exited with code {os.WEXITSTATUS(status)}"
    return f"worker ended (status {status})"


def _vm_size() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _set_pdeathsig() -> None:
    """Ask Linux to SIGKILL this child when the thread that forked it dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - non-Linux: the EOF check in the child loop still applies
        pass


# ---------------------------------------------------------------------------------------------
# child side
# ---------------------------------------------------------------------------------------------

def _child_setup(memory_limit: int | None, pdeathsig: bool, parent_pid: int) -> None:
    # Ctrl-C goes to the whole process group; the parent decides what happens to its workers,
    # so a KeyboardInterrupt must not surface inside a reading as a bogus "error".
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Handlers inherited from Celery/billiard or pytest refer to the parent's state.
    for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGCHLD"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    if pdeathsig:
        _set_pdeathsig()
        # The parent may have died between fork() and prctl().
        if os.getppid() != parent_pid:
            os._exit(0)
    try:
        import faulthandler

        # The parent reports the signal; a traceback dump per intentional crash is noise.
        faulthandler.disable()
    except Exception:  # noqa: BLE001
        pass
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        pass
    if memory_limit is not None:
        limit = memory_limit
        current = _vm_size()
        if current is not None and current + _MIN_HEADROOM > limit:
            limit = current + _MIN_HEADROOM
        try:
            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY and hard < limit:
                limit = hard
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):
            pass


def _read_one(reader: Any, item: Item) -> Reading:
    try:
        reading = reader.read(item)
    except MemoryError:
        return Reading("error", detail={"error": "MemoryError: reader exceeded the worker memory cap"})
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a reader is also a reader error
        return Reading("error", detail={"error": _describe_exception(exc)})
    if not isinstance(reading, Reading):
        return Reading("error", detail={"error": f"reader returned {type(reading).__name__}, not Reading"})
    return reading


def _child_main(conn: Connection) -> None:
    readers: dict[str, Any] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # parent closed or died
        if msg is None:
            return
        reader_name, items = msg
        reader = readers.get(reader_name)
        if reader is None:
            try:
                reader = registry.get(reader_name)
            except BaseException as exc:  # noqa: BLE001
                conn.send(("fatal", _describe_exception(exc)))
                continue
            readers[reader_name] = reader
        conn.send(("ready",))
        for i, item in enumerate(items):
            t0 = time.perf_counter()
            reading = _read_one(reader, item)
            elapsed_ms = (time.perf_counter() - t0) * 1000.0
            try:
                conn.send(("done", i, reading, elapsed_ms))
            except (BrokenPipeError, ConnectionResetError, EOFError):
                return
            except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable object in detail
                conn.send(("done", i, Reading("error", detail={
                    "error": f"reading could not be sent to the parent: {_describe_exception(exc)}"}), elapsed_ms))


# ---------------------------------------------------------------------------------------------
# parent side
# ---------------------------------------------------------------------------------------------

@dataclass
class _Worker:
    pid: int
    conn: Connection
    known_readers: frozenset[str]
    # current batch: global item indices; `pos` = index into batch of the item in flight
    batch: list[int] = field(default_factory=list)
    phase: str = "idle"  # "idle" | "building" | "running"
    pos: int = 0
    started: float = 0.0  # monotonic start of the build or of the item in flight


def _reap(pid: int, block: bool = True) -> int | None:
    """waitpid that tolerates already-reaped children (SIGCHLD=SIG_IGN auto-reaps)."""
    try:
        wpid, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return None
    if wpid == 0:
        return -1  # still running (non-blocking call)
    return status


def _shutdown(workers: list[_Worker | None], owner_pid: int) -> None:
    """Stop and reap every worker. Used by close() and by the GC/atexit finalizer."""
    if os.getpid() != owner_pid:
        return  # a forked child must never touch its parent's workers
    alive: list[_Worker] = [w for w in workers if w is not None]
    for i in range(len(workers)):
        workers[i] = None
    for w in alive:
        try:
            w.conn.send(None)
        except (OSError, ValueError):
            pass
        try:
            w.conn.close()
        except OSError:
            pass
    deadline = time.monotonic() + 1.0
    pending = list(alive)
    while pending and time.monotonic() < deadline:
        pending = [w for w in pending if _reap(w.pid, block=False) == -1]
        if pending:
            time.sleep(0.005)
    for w in pending:  # busy in C code, or ignoring us: no more patience
        try:
            os.kill(w.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _reap(w.pid)


class IsolatedPool:
    """`processes` forked workers; each reading runs under a hard wall-clock `budget_s`.

    Outcomes per item: the reader's Reading; Reading("timeout") when the budget is exceeded
    (the worker is SIGKILLed and replaced); Reading("error", detail={"error": ...}) when the
    reader raised, or when the worker died (segfault, OOM kill, os._exit) with that item in
    flight. The rest of a batch continues on a replacement worker either way.
    """

    def __init__(self, processes: int = 2, budget_s: float = 5.0, batch_size: int = 64, *,
                 memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT,
                 start_timeout_s: float = 60.0) -> None:
        if processes < 1:
            raise ValueError("processes must be >= 1")
        if budget_s <= 0:
            raise ValueError("budget_s must be > 0")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.processes = processes
        self.budget_s = float(budget_s)
        self.batch_size = batch_size
        self.memory_limit_bytes = memory_limit_bytes
        # Building a reader in the child is normally instant (imports are inherited through fork),
        # but a reader registered after the pool forked must import in the child.
        self.start_timeout_s = max(float(start_timeout_s), self.budget_s)
        self.stats: dict[str, int] = {"spawned": 0, "timeouts": 0, "deaths": 0}
        self._owner_pid = os.getpid()
        self._workers: list[_Worker | None] = [None] * processes
        self._lock = threading.Lock()
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self._workers, self._owner_pid)

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "IsolatedPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._finalizer()

    def worker_pids(self) -> list[int]:
        return [w.pid for w in self._workers if w is not None]

    def _spawn(self, slot: int, known: frozenset[str]) -> _Worker:
        parent_conn, child_conn = Pipe(duplex=True)
        other_fds = [w.conn.fileno() for w in self._workers if w is not None]
        forked_from_main = threading.current_thread() is threading.main_thread()
        parent_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # child: never return into the parent's stack (it would go on running it)
            code = 0
            try:
                # Everything inherited stays alive and untouched: a garbage cycle collected here
                # could run a finalizer on the parent's resources (e.g. close its shared DB
                # socket), and GC passes over inherited objects would copy their pages.
                gc.freeze()
                parent_conn.close()
                for fd in other_fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                # PR_SET_PDEATHSIG fires when the forking *thread* exits; only safe to use when
                # that thread is the main thread (a pool built in a request thread would lose
                # its workers when the thread ends).
                _child_setup(self.memory_limit_bytes, forked_from_main, parent_pid)
                _child_main(child_conn)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        child_conn.close()
        worker = _Worker(pid=pid, conn=parent_conn, known_readers=known)
        self._workers[slot] = worker
        self.stats["spawned"] += 1
        return worker

    def _retire(self, slot: int, kill: bool) -> int | None:
        """Stop the worker in `slot` (SIGKILL if `kill`), reap it, return its wait status."""
        w = self._workers[slot]
        assert w is not None
        self._workers[slot] = None
        if kill:
            try:
                os.kill(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        status = _reap(w.pid)
        try:
            w.conn.close()
        except OSError:
            pass
        return status

    # -- reading -----------------------------------------------------------------------------
    def read_many(self, reader_name: str, items: Sequence[Item]) -> list[tuple[Reading, float]]:
        """(reading, elapsed_ms) per item, in input order."""
        with self._lock:
            if self._closed:
                raise RuntimeError("IsolatedPool is closed")
            if os.getpid() != self._owner_pid:
                raise RuntimeError("IsolatedPool used in a forked child of its owner")
            known = frozenset(registry.names())  # also imports the built-in readers before fork
            if reader_name not in known:
                raise KeyError(f"unknown reader {reader_name!r}")
            items = list(items)
            if not items:
                return []
            # Workers forked before this reader was registered cannot build it: replace them.
            for slot, w in enumerate(self._workers):
                if w is not None and reader_name not in w.known_readers:
                    self._retire(slot, kill=True)
            try:
                return _Run(self, reader_name, items, known).run()
            except BaseException:
                # Interrupted mid-run (KeyboardInterrupt, a bug): a worker still busy with this
                # run's batch would stream results into the next run's indices. Kill them.
                for slot, w in enumerate(self._workers):
                    if w is not None and w.phase != "idle":
                        self._retire(slot, kill=True)
                raise


class _Run:
    """State of one read_many call."""

    def __init__(self, pool: IsolatedPool, reader_name: str, items: list[Item], known: frozenset[str]) -> None:
        self.pool = pool
        self.reader_name = reader_name
        self.items = items
        self.known = known
        self.results: list[tuple[Reading, float] | None] = [None] * len(items)
        # Small inputs are split so that every worker gets a share; large ones use batch_size.
        size = min(pool.batch_size, max(1, math.ceil(len(items) / (pool.processes * 4))))
        self.queue: deque[list[int]] = deque(
            list(range(i, min(i + size, len(items)))) for i in range(0, len(items), size))
        self.remaining = len(items)

    def _set(self, index: int, reading: Reading, elapsed_ms: float) -> None:
        if self.results[index] is None:
            self.remaining -= 1
        self.results[index] = (reading, elapsed_ms)

    def _dispatch(self, slot: int, batch: list[int]) -> None:
        pool = self.pool
        w = pool._workers[slot] or pool._spawn(slot, self.known)
        try:
            w.conn.send((self.reader_name, [self.items[i] for i in batch]))
        except (OSError, ValueError):
            # Died while idle (e.g. OOM-killed between batches): replace and retry once.
            pool._retire(slot, kill=True)
            w = pool._spawn(slot, self.known)
            w.conn.send((self.reader_name, [self.items[i] for i in batch]))
        w.batch, w.phase, w.pos, w.started = batch, "building", 0, time.monotonic()

    def _deadline(self, w: _Worker) -> float:
        limit = self.pool.start_timeout_s if w.phase == "building" else self.pool.budget_s
        return w.started + limit

    def _handle(self, w: _Worker, msg: Any) -> None:
        now = time.monotonic()
        kind = msg[0]
        if kind == "ready":
            w.phase, w.pos, w.started = "running", 0, now
        elif kind == "done":
            _, i, reading, elapsed_ms = msg
            self._set(w.batch[i], reading, float(elapsed_ms))
            w.pos, w.started = i + 1, now
            if w.pos >= len(w.batch):
                w.phase, w.batch = "idle", []
        elif kind == "fatal":
            for index in w.batch:
                self._set(index, Reading("error", detail={"error": f"reader could not be built: {msg[1]}"}), 0.0)
            w.phase, w.batch = "idle", []
        else:  # pragma: no cover - protocol bug
            raise RuntimeError(f"unexpected worker message {kind!r}")

    def _drain(self, w: _Worker) -> bool:
        """Handle every message already available; False if the worker's pipe hit EOF."""
        while True:
            try:
                if not w.conn.poll(0):
                    return True
                msg = w.conn.recv()
            except (EOFError, OSError):
                return False
            self._handle(w, msg)

    def _requeue_rest(self, w: _Worker, start: int) -> None:
        rest = w.batch[start:]
        if rest:
            self.queue.appendleft(rest)
        w.batch, w.phase = [], "idle"

    def _on_death(self, slot: int) -> None:
        """The worker's pipe closed while it owned a batch: it died."""
        pool = self.pool
        w = pool._workers[slot]
        assert w is not None
        now = time.monotonic()
        status = pool._retire(slot, kill=True)
        pool.stats["deaths"] += 1
        why = _describe_status(status)
        if w.phase == "building":
            for index in w.batch:
                self._set(index, Reading("error", detail={"error": f"{why} while building the reader"}), 0.0)
            w.batch, w.phase = [], "idle"
        elif w.phase == "running":
            self._set(w.batch[w.pos], Reading("error", detail={"error": why}), (now - w.started) * 1000.0)
            self._requeue_rest(w, w.pos + 1)

    def _on_overrun(self, slot: int) -> None:
        pool = self.pool
        w = pool._workers[slot]
        assert w is not None
        # The result may have arrived while we were busy with another worker.
        if not self._drain(w):
            self._on_death(slot)
            return
        if w.phase == "idle" or time.monotonic() < self._deadline(w):
            return
        phase, pos, started = w.phase, w.pos, w.started
        os.kill(w.pid, signal.SIGKILL)
        # Race: the item may have finished between the last poll and the kill. Whatever the child
        # managed to send before dying is a real result, so read the pipe up to EOF first.
        while True:
            try:
                if not w.conn.poll(1.0):
                    break
                self._handle(w, w.conn.recv())
            except (EOFError, OSError):
                break
        now = time.monotonic()
        pool._retire(slot, kill=True)
        if phase == "building":
            if w.phase == "building":
                for index in w.batch:
                    self._set(index, Reading("error", detail={
                        "error": f"reader build exceeded {pool.start_timeout_s:g} s"}), 0.0)
                w.batch, w.phase = [], "idle"
            elif w.phase == "running":
                self._requeue_rest(w, w.pos)
            return
        if w.phase == "running" and w.pos == pos:
            pool.stats["timeouts"] += 1
            self._set(w.batch[pos], Reading("timeout", detail={"budget_s": pool.budget_s}),
                      (now - started) * 1000.0)
            self._requeue_rest(w, pos + 1)
        elif w.phase == "running":
            # The overdue item did finish; the one after it had barely started: run it again.
            self._requeue_rest(w, w.pos)

    def run(self) -> list[tuple[Reading, float]]:
        pool = self.pool
        while self.remaining:
            for slot in range(pool.processes):
                w = pool._workers[slot]
                if (w is None or w.phase == "idle") and self.queue:
                    self._dispatch(slot, self.queue.popleft())
            busy = {w.conn: slot for slot, w in enumerate(pool._workers) if w is not None and w.phase != "idle"}
            if not busy:  # pragma: no cover - remaining > 0 implies queued or in-flight work
                raise RuntimeError("isolation pool lost track of items")
            now = time.monotonic()
            next_deadline = min(self._deadline(pool._workers[s]) for s in busy.values())  # type: ignore[arg-type]
            for conn in wait(list(busy), timeout=max(0.0, next_deadline - now)):
                slot = busy[conn]  # type: ignore[index]
                w = pool._workers[slot]
                if w is not None and not self._drain(w):
                    self._on_death(slot)
            now = time.monotonic()
            for slot in busy.values():
                w = pool._workers[slot]
                if w is not None and w.phase != "idle" and now >= self._deadline(w):
                    self._on_overrun(slot)
        return [r for r in self.results if r is not None]


def read_isolated(reader_name: str, items: Sequence[Item], *, processes: int = 2,
                  budget_s: float = 5.0) -> list[tuple[Reading, float]]:
    """One-shot convenience: a fresh pool, read, close."""
    with IsolatedPool(processes=processes, budget_s=budget_s) as pool:
        return pool.read_many(reader_name, items)
