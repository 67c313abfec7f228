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

Protocol. Each worker has one duplex socketpair (multiprocessing.connection framing, pickle) and
one 64-byte slot in a shared anonymous mmap created before any fork:
    parent -> child: (batch_id, reader_name, [item fields, ...])    one batch; None = exit
    child -> parent: ("r", batch_id, first_pos, [elapsed_ms, ...], plain, [reading fields, ...])
                                         results of consecutive items of a batch
                     ("fatal", batch_id, message)    the reader could not be built
    shared slot:     seq, batch_id, pos, start_ns    the item in flight (pos -1: building the
                                                     reader) and when it started
The child writes the slot before every item (a seqlock: seq is odd while it writes) with
time.monotonic_ns(), the same system-wide CLOCK_MONOTONIC the parent reads. Results are
buffered and sent in chunks: at the end of every batch, and within a batch whenever ≥ 5 ms
passed since the last send. So a fast reader costs one message per batch, not one per item, and
the parent still knows exactly which item is in flight and since when: the deadline of an item
is its own start time + budget, independent of when messages arrive. (Publishing does not wake
the parent: while a worker builds a reader or is between items, the parent looks again at least
every budget_s, so the next item's deadline is never missed.)
On overrun (or death) the parent SIGKILLs (reaps) the worker, reads whatever the child had sent,
and then: the item in flight gets timeout (error); items the child had finished but not yet sent
are re-run on the replacement worker (readers are pure functions); later items continue there.
The parent keeps up to two batches queued per worker (the second only when small enough to sit
in the socket buffer), so a worker goes straight on to its next batch without a round trip.

Not thread-safe by design: read_many holds a lock, so concurrent callers are serialised.
"""
from __future__ import annotations

import gc
import math
import mmap
import os
import pickle
import resource
import select
import signal
import socket
import threading
import time
import weakref
from collections import deque
from itertools import starmap
from dataclasses import dataclass, field, fields
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from operator import attrgetter
from typing import Any, Sequence

from . import registry
from .base import Item, Reading
from .canonical import with_canonical

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




# ---------------------------------------------------------------------------------------------
# wire format and shared state
# ---------------------------------------------------------------------------------------------

_PICKLE = pickle.HIGHEST_PROTOCOL
# One 64-byte slot (8 int64) per worker in the shared mmap; the first four words are used.
_SLOT_WORDS = 8
_SEQ, _BID, _POS, _T0 = 0, 1, 2, 3
# The child sends buffered results at the end of a batch, after this much time, or this many items.
_FLUSH_NS = 5_000_000
_FLUSH_ITEMS = 1024
# How many batches the parent keeps queued on one worker; a batch is only queued behind another
# when its pickle is at most this large (a fraction of the socket buffer, so the send can never
# block while the child is busy: the parent must always stay free to watch deadlines).
_DEPTH = 2
_PREFETCH_BYTES = 64 * 1024
# Batch sizing for readers known to be fast: at least this much work per batch, and at least
# this many batches per worker.
_BATCH_MS = 4.0
_FAST_SPLIT = 1

# Plain Item / Reading objects cross the pipe as tuples of their fields: ~2x cheaper to pickle.
_ITEM_FIELDS = attrgetter(*(f.name for f in fields(Item)))
_READING_FIELDS = attrgetter(*(f.name for f in fields(Reading)))


def _encode_item(item: Item) -> Any:
    return _ITEM_FIELDS(item) if type(item) is Item else item


def _decode_item(data: Any) -> Item:
    return Item(*data) if type(data) is tuple else data


def _pack_readings(readings: list[Reading]) -> tuple[bool, list]:
    """(True, [field tuple, ...]) when every reading is a plain Reading, else (False, readings)."""
    if all(type(r) is Reading for r in readings):
        return True, [_READING_FIELDS(r) for r in readings]
    return False, readings  # a Reading subclass travels as itself


def _unpack_readings(plain: bool, packed: list) -> list[Reading]:
    return list(starmap(Reading, packed)) if plain else packed


def _send(conn: Connection, msg: Any) -> None:
    conn.send_bytes(pickle.dumps(msg, _PICKLE))


def _recv(conn: Connection) -> Any:
    return pickle.loads(conn.recv_bytes())


# ---------------------------------------------------------------------------------------------
# child side
# ---------------------------------------------------------------------------------------------

def _read_one(reader: Any, item: Item) -> Reading:
    try:
        reading = reader.read(item)
    except MemoryError:
        return Reading("error", detail={"error": "MemoryError: reader exceeded the worker memory cap"})
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a reader is also a reader error
        return Reading("error", detail={"error": _describe_exception(exc)})
    if not isinstance(reading, Reading):
        return Reading("error", detail={"error": f"reader returned {type(reading).__name__}, not Reading"})
    # Every reading of every reader passes here, in the child, while its item is still the one
    # published as in flight: the canonical answer is made within the reading's hard budget.
    # with_canonical never raises, and a reader's own canonical is kept.
    return with_canonical(reading, item)


def _pickle_results(bid: int, first: int, times: list[float], readings: list[Reading]) -> bytes:
    """("r", batch_id, first_pos, [elapsed_ms, ...], plain, packed readings), pickled."""
    try:
        return pickle.dumps(("r", bid, first, times, *_pack_readings(readings)), _PICKLE)
    except Exception:  # noqa: BLE001 - e.g. an unpicklable object in some reading's detail
        pass
    for k, reading in enumerate(readings):
        try:
            pickle.dumps(reading, _PICKLE)
        except Exception as exc:  # noqa: BLE001
            readings[k] = Reading("error", detail={
                "error": f"reading could not be sent to the parent: {_describe_exception(exc)}"})
    return pickle.dumps(("r", bid, first, times, *_pack_readings(readings)), _PICKLE)


def _child_main(conn: Connection, state: memoryview, base: int) -> None:
    readers: dict[str, Any] = {}
    clock = time.monotonic_ns
    i_seq, i_bid, i_pos, i_t0 = base + _SEQ, base + _BID, base + _POS, base + _T0
    while True:
        try:
            msg = _recv(conn)
        except (EOFError, OSError):
            return  # parent closed or died
        if msg is None:
            return
        bid, reader_name, items = msg
        # seqlock write: the parent never uses a half-written (odd seq) slot
        state[i_seq] += 1
        state[i_bid], state[i_pos], state[i_t0] = bid, -1, clock()
        state[i_seq] += 1
        reader = readers.get(reader_name)
        if reader is None:
            try:
                reader = registry.get(reader_name)
            except BaseException as exc:  # noqa: BLE001
                try:
                    _send(conn, ("fatal", bid, _describe_exception(exc)))
                except (OSError, EOFError):
                    return
                continue
            readers[reader_name] = reader
        last = len(items) - 1
        first = 0
        times: list[float] = []
        readings: list[Reading] = []
        flushed = clock()
        for pos, data in enumerate(items):
            item = _decode_item(data)
            t0 = clock()
            state[i_seq] += 1
            state[i_pos], state[i_t0] = pos, t0
            state[i_seq] += 1
            reading = _read_one(reader, item)
            t1 = clock()
            readings.append(reading)
            times.append((t1 - t0) / 1e6)
            # Pickling and sending happen while `pos` is still the published item in flight, so
            # the time they take counts against its budget, like the reading itself.
            if pos == last or t1 - flushed >= _FLUSH_NS or len(times) >= _FLUSH_ITEMS:
                try:
                    conn.send_bytes(_pickle_results(bid, first, times, readings))
                except (OSError, EOFError):
                    return
                first, times, readings, flushed = pos + 1, [], [], clock()


# ---------------------------------------------------------------------------------------------
# parent side
# ---------------------------------------------------------------------------------------------

class _Batch:
    """Items (global indices) sent to a worker as one message; `done` results have come back."""

    __slots__ = ("bid", "indices", "done", "data")

    def __init__(self, bid: int, indices: list[int]) -> None:
        self.bid = bid
        self.indices = indices
        self.done = 0
        self.data: bytes | None = None  # the pickled message, once built


@dataclass
class _Worker:
    pid: int
    conn: Connection
    known_readers: frozenset[str]
    slot: int
    # batches sent and not fully answered, in the order the child works through them
    batches: deque[_Batch] = field(default_factory=deque)
    # monotonic ns of the last message from the child (or of a dispatch to an idle child): the
    # start of the gap when the child is between items
    gap_start: int = 0
    poller: Any = None  # select.poll on conn alone (Connection.poll builds a selector per call)

    def __post_init__(self) -> None:
        self.poller = select.poll()
        self.poller.register(self.conn.fileno(), select.POLLIN)

    def readable(self) -> bool:
        return bool(self.poller.poll(0))


@dataclass
class _Culprit:
    """Where a worker is: building the reader for `batch` (pos -1) or reading batch.indices[pos],
    since `start` (monotonic ns)."""

    batch: _Batch
    pos: int
    start: int
    seq: int
    from_state: bool  # False: between items; batch/pos is the next item, which has not started


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
            if not w.batches:
                _send(w.conn, None)
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

    `stats`: workers spawned, timeouts, deaths, and reruns (items a killed or dead worker had
    finished but not yet sent, read again by its replacement).
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
        self.stats: dict[str, int] = {"spawned": 0, "timeouts": 0, "deaths": 0, "reruns": 0}
        self._owner_pid = os.getpid()
        self._workers: list[_Worker | None] = [None] * processes
        # Shared with every child (MAP_SHARED|MAP_ANONYMOUS, inherited through fork).
        self._shm = mmap.mmap(-1, processes * _SLOT_WORDS * 8)
        self._state = memoryview(self._shm).cast("q")
        self._next_bid = 0
        self._prefetch_bytes: int | None = None
        # mean ms per item of each reader seen by this pool (exponentially weighted)
        self._item_ms: dict[str, float] = {}
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
        base = slot * _SLOT_WORDS
        for k in range(_SLOT_WORDS):  # the previous worker of this slot is dead and reaped
            self._state[base + k] = 0
        self._state[base + _BID] = self._state[base + _POS] = -1
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
                _child_main(child_conn, self._state, base)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        child_conn.close()
        worker = _Worker(pid=pid, conn=parent_conn, known_readers=known, slot=slot)
        self._workers[slot] = worker
        self.stats["spawned"] += 1
        if self._prefetch_bytes is None:
            self._prefetch_bytes = _prefetch_limit(parent_conn)
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

    def _read_state(self, slot: int) -> tuple[bool, int, int, int, int]:
        """(consistent, seq, batch_id, pos, start_ns) of the worker in `slot`."""
        mv, base = self._state, slot * _SLOT_WORDS
        for _ in range(100):
            seq = mv[base + _SEQ]
            if not seq & 1:
                bid, pos, t0 = mv[base + _BID], mv[base + _POS], mv[base + _T0]
                if mv[base + _SEQ] == seq:
                    return True, seq, bid, pos, t0
        # The child is in the middle of publishing a new item (or was killed right then).
        return False, mv[base + _SEQ], mv[base + _BID], mv[base + _POS], mv[base + _T0]

    def _new_batch(self, indices: list[int]) -> _Batch:
        self._next_bid += 1
        return _Batch(self._next_bid, indices)

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
            ok = False
            try:
                results = _Run(self, reader_name, items, known).run()
                ok = True
                return results
            finally:
                # Interrupted mid-run (KeyboardInterrupt, a bug), or a worker somehow still owes
                # results: it would stream them into the next run's batches. Kill it.
                for slot, w in enumerate(self._workers):
                    if w is not None and (w.batches or not ok):
                        self._retire(slot, kill=True)


def _prefetch_limit(conn: Connection) -> int:
    """How large a batch may be to be queued behind another: well inside the socket buffer."""
    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            sndbuf = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        finally:
            sock.close()
    except OSError:
        return 0
    return max(0, min(_PREFETCH_BYTES, sndbuf // 4))


class _Run:
    """State of one read_many call."""

    def __init__(self, pool: IsolatedPool, reader_name: str, items: list[Item], known: frozenset[str]) -> None:
        self.pool = pool
        self.reader_name = reader_name
        self.items = items
        self.known = known
        self.results: list[tuple[Reading, float] | None] = [None] * len(items)
        self.budget_ns = int(pool.budget_s * 1e9)
        self.start_ns = int(pool.start_timeout_s * 1e9)
        n, p = len(items), pool.processes
        # Small inputs are split so that every worker gets a share (four batches each, so a slow
        # worker can be overtaken); large ones use batch_size. Every batch costs two messages, so
        # for a reader this pool has seen to be fast a batch holds at least ~_BATCH_MS of work,
        # down to one batch per worker.
        size = math.ceil(n / (p * 4))
        mean_ms = pool._item_ms.get(reader_name)
        if mean_ms is not None:
            size = max(size, min(math.ceil(n / (p * _FAST_SPLIT)), math.ceil(_BATCH_MS / max(mean_ms, 1e-3))))
        size = min(pool.batch_size, max(1, size))
        self.queue: deque[_Batch] = deque(pool._new_batch(list(range(i, min(i + size, n))))
                                          for i in range(0, n, size))
        self.remaining = n
        self.ms_sum = 0.0
        self.ms_count = 0

    def _set(self, index: int, reading: Reading, elapsed_ms: float) -> None:
        if self.results[index] is None:
            self.remaining -= 1
        self.results[index] = (reading, elapsed_ms)

    # -- sending -----------------------------------------------------------------------------
    def _fill(self) -> None:
        """Give every worker up to _DEPTH batches, round-robin (one each first)."""
        pool = self.pool
        for depth in range(_DEPTH):
            for slot in range(pool.processes):
                if not self.queue:
                    return
                w = pool._workers[slot]
                if w is not None and len(w.batches) > depth:
                    continue
                if self._dispatch(slot, self.queue[0]):
                    self.queue.popleft()

    def _dispatch(self, slot: int, batch: _Batch) -> bool:
        pool = self.pool
        if batch.data is None:
            batch.data = pickle.dumps(
                (batch.bid, self.reader_name, [_encode_item(self.items[i]) for i in batch.indices]), _PICKLE)
        w = pool._workers[slot]
        if w is not None and w.batches and len(batch.data) > (pool._prefetch_bytes or 0):
            return False  # too large to queue behind the running batch: wait until it is done
        if w is None:
            w = pool._spawn(slot, self.known)
        try:
            w.conn.send_bytes(batch.data)
        except (OSError, ValueError):
            if w.batches:
                return False  # died while busy: the EOF is handled by the main loop
            # Died while idle (e.g. OOM-killed between batches): replace and retry once.
            pool._retire(slot, kill=True)
            w = pool._spawn(slot, self.known)
            w.conn.send_bytes(batch.data)
        if not w.batches:
            w.gap_start = time.monotonic_ns()
        w.batches.append(batch)
        batch.data = None
        return True

    # -- receiving ---------------------------------------------------------------------------
    def _handle(self, w: _Worker, msg: Any) -> None:
        kind = msg[0]
        if kind == "r":
            _, bid, first, times, plain, packed = msg
            b = w.batches[0]
            done = first + len(times)
            if b.bid != bid or b.done != first or done > len(b.indices):  # pragma: no cover - protocol bug
                raise RuntimeError(f"unexpected results for batch {bid}@{first}, expected {b.bid}@{b.done}")
            results = self.results
            for index, reading, ms in zip(b.indices[first:done], _unpack_readings(plain, packed), times):
                if results[index] is None:
                    self.remaining -= 1
                results[index] = (reading, ms)
            self.ms_sum += sum(times)
            self.ms_count += len(times)
            b.done = done
            if done == len(b.indices):
                w.batches.popleft()
        elif kind == "fatal":
            _, bid, message = msg
            b = w.batches.popleft()
            if b.bid != bid:  # pragma: no cover - protocol bug
                raise RuntimeError(f"unexpected fatal for batch {bid}, expected {b.bid}")
            for index in b.indices[b.done:]:
                self._set(index, Reading("error", detail={"error": f"reader could not be built: {message}"}), 0.0)
        else:  # pragma: no cover - protocol bug
            raise RuntimeError(f"unexpected worker message {kind!r}")
        w.gap_start = time.monotonic_ns()

    def _drain(self, w: _Worker) -> bool:
        """Handle every message already available; False if the worker's pipe hit EOF."""
        while True:
            try:
                if not w.readable():
                    return True
                msg = _recv(w.conn)
            except (EOFError, OSError):
                return False
            self._handle(w, msg)

    def _drain_dead(self, w: _Worker) -> None:
        """Everything a dead (reaped) child sent before dying; a torn last message is dropped."""
        try:
            os.set_blocking(w.conn.fileno(), False)
        except OSError:
            return
        while True:
            try:
                if not w.readable():
                    return
                msg = _recv(w.conn)
            except (EOFError, OSError, pickle.UnpicklingError):
                return
            self._handle(w, msg)

    # -- where is a worker -------------------------------------------------------------------
    def _locate(self, w: _Worker) -> _Culprit | None:
        """The item (or reader build) the worker is busy with; None if unknowable right now
        (the child is publishing a new item at this very moment)."""
        ok, seq, bid, pos, t0 = self.pool._read_state(w.slot)
        if not ok:
            return None
        for b in w.batches:
            if b.bid == bid:
                if pos < 0 or pos >= b.done:
                    return _Culprit(b, pos, t0, seq, True)
                break  # that item's result is already here: between items
        # Between items (its last published item is answered) or not started on its batches.
        head = w.batches[0]
        return _Culprit(head, -1 if head.done == 0 else head.done, w.gap_start, seq, False)

    def _deadline(self, c: _Culprit | None) -> int:
        if c is None:
            return time.monotonic_ns() + self.budget_ns  # it has just started something
        return c.start + (self.start_ns if c.pos < 0 else self.budget_ns)

    def _wake_at(self, c: _Culprit | None) -> int:
        """When to look at the worker again. The child publishes a new item without waking the
        parent; an item in flight can only be followed by later deadlines, but a reader build or
        a gap between items can turn into an item whose deadline is as early as now + budget."""
        now = time.monotonic_ns()
        if c is None:
            return now + 1_000_000
        deadline = self._deadline(c)
        if c.from_state and c.pos >= 0:
            return deadline
        return min(deadline, now + self.budget_ns)

    def _requeue(self, w: _Worker, state: tuple[bool, int, int, int, int]) -> None:
        """Send every unanswered item of the (retired) worker's batches back to the queue."""
        ok, _seq, sbid, spos, _t0 = state
        rest: list[int] = []
        reran = 0
        counting = ok and any(b.bid == sbid for b in w.batches)
        for b in w.batches:
            for k in range(b.done, len(b.indices)):
                index = b.indices[k]
                if self.results[index] is None:
                    rest.append(index)
                    if counting and (b.bid != sbid or k < spos):
                        reran += 1  # finished by the child, but never sent
            if b.bid == sbid:
                counting = False
        w.batches.clear()
        self.pool.stats["reruns"] += reran
        if rest:
            self.queue.appendleft(self.pool._new_batch(rest))

    def _on_death(self, slot: int) -> None:
        """The worker's pipe closed while it owned batches: it died."""
        pool = self.pool
        w = pool._workers[slot]
        assert w is not None
        status = pool._retire(slot, kill=True)  # the pipe hit EOF: everything sent has been read
        pool.stats["deaths"] += 1
        why = _describe_status(status)
        now = time.monotonic_ns()
        state = pool._read_state(slot)
        if w.batches:
            c = self._locate(w)
            if c is None:  # killed while publishing a new item: blame the next unanswered one
                head = w.batches[0]
                c = _Culprit(head, -1 if head.done == 0 else head.done, w.gap_start, 0, False)
            if c.pos < 0:
                for index in c.batch.indices[c.batch.done:]:
                    self._set(index, Reading("error", detail={"error": f"{why} while building the reader"}), 0.0)
            else:
                self._set(c.batch.indices[c.pos], Reading("error", detail={"error": why}),
                          max(0, now - c.start) / 1e6)
        self._requeue(w, state)

    def _on_overrun(self, slot: int) -> None:
        pool = self.pool
        w = pool._workers[slot]
        assert w is not None
        # The result may have arrived while we were busy with another worker.
        if not self._drain(w):
            self._on_death(slot)
            return
        if not w.batches:
            return
        c = self._locate(w)
        if c is None or time.monotonic_ns() < self._deadline(c):
            return
        try:
            os.kill(w.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _reap(w.pid)
        # Race: the item may have finished between the last look and the kill. Whatever the child
        # managed to send before dying is a real result, so read the pipe first.
        self._drain_dead(w)
        state = pool._read_state(slot)
        now = time.monotonic_ns()
        pool._workers[slot] = None  # reaped above: no second waitpid on a pid that may be reused
        try:
            w.conn.close()
        except OSError:
            pass
        moved = not state[0] or state[1] != c.seq  # the child published a new item after our look
        pending = c.batch in w.batches and (c.pos < 0 and c.batch.done == 0 or c.pos >= c.batch.done)
        if pending and not moved:
            if c.pos < 0:
                for index in c.batch.indices:
                    self._set(index, Reading("error", detail={
                        "error": f"reader build exceeded {pool.start_timeout_s:g} s"}), 0.0)
            else:
                pool.stats["timeouts"] += 1
                self._set(c.batch.indices[c.pos], Reading("timeout", detail={"budget_s": pool.budget_s}),
                          max(0, now - c.start) / 1e6)
        # else: the overdue item did finish (its result was sent, or it is among the finished but
        # unsent ones); nothing to blame, everything unanswered is read again.
        self._requeue(w, state)

    def run(self) -> list[tuple[Reading, float]]:
        pool = self.pool
        while self.remaining:
            self._fill()
            busy = {w.conn.fileno(): slot for slot, w in enumerate(pool._workers) if w is not None and w.batches}
            if not busy:  # pragma: no cover - remaining > 0 implies queued or in-flight work
                raise RuntimeError("isolation pool lost track of items")
            wake_at = min(self._wake_at(self._locate(pool._workers[s]))  # type: ignore[arg-type]
                          for s in busy.values())
            timeout_ms = math.ceil(max(0, wake_at - time.monotonic_ns()) / 1e6)
            poller = select.poll()
            for fd in busy:
                poller.register(fd, select.POLLIN)
            for fd, _events in poller.poll(timeout_ms):  # EINTR is retried by Python (PEP 475)
                slot = busy[fd]
                w = pool._workers[slot]
                if w is not None and not self._drain(w):
                    self._on_death(slot)
            now = time.monotonic_ns()
            for slot in busy.values():
                w = pool._workers[slot]
                if w is not None and w.batches and now >= self._deadline(self._locate(w)):
                    self._on_overrun(slot)
        if self.ms_count:
            old = pool._item_ms.get(self.reader_name)
            mean = self.ms_sum / self.ms_count
            pool._item_ms[self.reader_name] = mean if old is None else 0.5 * old + 0.5 * mean
        return [r for r in self.results if r is not None]


def read_isolated(reader_name: str, items: Sequence[Item], *, processes: int = 2,
                  budget_s: float = 5.0) -> list[tuple[Reading, float]]:
    """One-shot convenience: a fresh pool, read, close."""
    with IsolatedPool(processes=processes, budget_s=budget_s) as pool:
        return pool.read_many(reader_name, items)
