"""The worker side of the isolation pool: process setup after fork, and the loop that reads batches."""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import signal
import time
from multiprocessing.connection import Connection
from typing import Any

from .. import registry
from ..answer.canonical import with_canonical
from ..base import Item, Reading
from ..tasks import not_applicable
from .protocol import BID, PICKLE, POS, SEQ, T0, decode_item, describe_exception, pack_readings, recv, send

DEFAULT_MEMORY_LIMIT = 4 * 1024**3
# A child whose parent already maps more than the cap still needs some headroom to run at all.
_MIN_HEADROOM = 512 * 1024**2
# The child sends buffered results at the end of a batch, after this much time, or this many items.
_FLUSH_NS = 50_000_000
_FLUSH_ITEMS = 1024


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


def child_setup(memory_limit: int | None, pdeathsig: bool, parent_pid: int) -> None:
    # Ctrl-C goes to the whole process group; the parent decides what happens to its workers,
    # so a KeyboardInterrupt must not surface inside a reading as a bogus "error".
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Handlers inherited from Celery/billiard or pytest refer to the parent's state.
    for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGCHLD"):
        sig = getattr(signal, name, None)
        if sig is not None:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, signal.SIG_DFL)
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
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
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
        # A reader outside the item's task type is not run at all (readers.tasks.not_applicable):
        # its GSM8K regex or SymPy parse on an option letter would only make a bogus "error".
        skipped = not_applicable(reader, item)
        if skipped is not None:
            return skipped
        reading = reader.read(item)
    except MemoryError:
        return Reading("error", detail={"error": "MemoryError: reader exceeded the worker memory cap"})
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a reader is also a reader error
        return Reading("error", detail={"error": describe_exception(exc)})
    if not isinstance(reading, Reading):
        return Reading("error", detail={"error": f"reader returned {type(reading).__name__}, not Reading"})
    # Every reading of every reader passes here, in the child, while its item is still the one
    # published as in flight: the canonical answer is made within the reading's hard budget.
    # with_canonical never raises, and a reader's own canonical is kept.
    return with_canonical(reading, item)


def _pickle_results(bid: int, first: int, times: list[float], readings: list[Reading]) -> bytes:
    """("r", batch_id, first_pos, [elapsed_ms, ...], plain, packed readings), pickled."""
    try:
        return pickle.dumps(("r", bid, first, times, *pack_readings(readings)), PICKLE)
    except Exception:  # noqa: BLE001 - e.g. an unpicklable object in some reading's detail
        pass
    for k, reading in enumerate(readings):
        try:
            pickle.dumps(reading, PICKLE)
        except Exception as exc:  # noqa: BLE001
            readings[k] = Reading(
                "error", detail={"error": f"reading could not be sent to the parent: {describe_exception(exc)}"}
            )
    return pickle.dumps(("r", bid, first, times, *pack_readings(readings)), PICKLE)


def child_main(conn: Connection, state: memoryview, base: int) -> None:
    readers: dict[str, Any] = {}
    clock = time.monotonic_ns
    i_seq, i_bid, i_pos, i_t0 = base + SEQ, base + BID, base + POS, base + T0
    while True:
        try:
            msg = recv(conn)
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
                    send(conn, ("fatal", bid, describe_exception(exc)))
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
            item = decode_item(data)
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
