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
buffered and sent in chunks: at the end of every batch, and within a batch whenever ≥ 50 ms
passed since the last send (a slow reader's batch sends a few messages, not one per item; a killed
worker's finished but unsent work is at most that much). So a fast reader costs one message per batch, and
the parent still knows exactly which item is in flight and since when: the deadline of an item
is its own start time + budget, independent of when messages arrive. (Publishing does not wake
the parent: while a worker builds a reader or is between items, the parent looks again at least
every budget_s, so the next item's deadline is never missed.)
On overrun (or death) the parent SIGKILLs (reaps) the worker, reads whatever the child had sent,
and then: the item in flight gets timeout (error); items the child had finished but not yet sent
are re-run on the replacement worker (readers are pure functions); later items continue there.
The parent keeps up to two batches queued per worker (the second only when small enough to sit
in the socket buffer), so a worker goes straight on to its next batch without a round trip.
A batch holds one reader's items; `read_panel` deals the batches of several readers out in one
run (a Celery task reads its responses with every reader of the panel in one call), so a worker
goes from one reader's batches to the next one's, and a killed worker's unanswered batches are
requeued each under its own reader.

Not thread-safe by design: read_many holds a lock, so concurrent callers are serialised.

Modules: `pool` (IsolatedPool, read_isolated: the parent side), `child` (the worker loop and its
process setup), `protocol` (the wire format and the shared-memory slot layout both sides use).
"""
