"""The status of every fan-out task (reading, judging, regenerating), so that a waiting command
notices a task that failed.

Tasks ignore their results (there is no Celery result backend), and a task that raises loses its
batch: `acks_late` acknowledges a failed task, so it is not redelivered. Without a record, the
command waiting for the batch's readings would wait forever. Each batch gets a TaskBatch row when
it is enqueued; the task marks it running, then done or failed (with the error, secrets redacted
by the caller's `redact`). A worker process that dies mid-task leaves the row `running` and the
message is redelivered (CELERY_TASK_REJECT_ON_WORKER_LOST), which marks it running again.
"""

from __future__ import annotations

import logging
import math
import re
import traceback
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

from django.db import DatabaseError, transaction
from django.db.models import F

from adjudication.models import Dataset, TaskBatch

log = logging.getLogger(__name__)
K = TypeVar("K")

_ERROR_CHARS = 4000


class BatchFailed(RuntimeError):
    """A batch task failed; the message (and the batch's `error`) says why, secrets redacted."""


def batches_create(*, run_id: uuid.UUID, kind: str, dataset: Dataset, sizes: Sequence[int]) -> list[int]:
    """One queued TaskBatch per batch about to be enqueued; their ids, in order."""
    rows = TaskBatch.objects.bulk_create(
        [TaskBatch(run=run_id, kind=kind, dataset=dataset, responses=size) for size in sizes]
    )
    return [row.pk for row in rows]


def batch_task_id(batch_id: int) -> str:
    """The Celery task id of a message for batch `batch_id` (a new one per message sent): the broker's
    messages then say which batches they carry (pipeline.broker.batches_held), without decoding them."""
    return f"batch-{batch_id}-{uuid.uuid4().hex}"


_BATCH_TASK_ID = re.compile(r"batch-(\d+)-")


def batch_of_task(task_id: object) -> int | None:
    """The batch a task id of batch_task_id's names, or None."""
    match = _BATCH_TASK_ID.match(task_id) if isinstance(task_id, str) else None
    return int(match.group(1)) if match else None


def batches_enqueue(
    *,
    run_id: uuid.UUID,
    kind: str,
    dataset: Dataset,
    todo: Mapping[K, Collection[int]],
    order: Sequence[int],
    batch_size: int,
    send: Callable[[list[K], list[int], int], None],
    on_enqueued: Callable[[int], None] | None = None,
    taper: bool = False,
    resend: dict[int, Callable[[], None]] | None = None,
) -> int:
    """Split the responses some producer still needs (`todo`: producer key -> response ids) into
    batches in `order`, record one TaskBatch each, and hand each batch to `send(keys, ids,
    batch_id)` once the transaction commits, with only the producers that batch needs. Returns the
    number of batches. `on_enqueued(n_readings)` follows each batch (in eager mode: after it ran).
    `taper`: the last batches of a long run get smaller (batch_sizes). `resend` (batch id -> send
    it again) is filled for a waiting command, which re-sends a batch the broker lost
    (pipeline.progress); `send` names its message with `batch_task_id(batch_id)`."""
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    wanted = {key: set(ids) for key, ids in todo.items()}
    needed = [rid for rid in order if any(rid in ids for ids in wanted.values())]
    chunks, start = [], 0
    for size in batch_sizes(len(needed), batch_size, taper=taper):
        chunks.append(needed[start : start + size])
        start += size
    batch_ids = batches_create(run_id=run_id, kind=kind, dataset=dataset, sizes=[len(c) for c in chunks])
    for chunk, batch_id in zip(chunks, batch_ids, strict=True):
        keys = [key for key, ids in wanted.items() if any(rid in ids for rid in chunk)]
        # on_commit: a worker must never receive ids of rows it cannot see yet.
        transaction.on_commit(partial(send, keys, chunk, batch_id))
        if resend is not None:
            resend[batch_id] = partial(send, keys, chunk, batch_id)
        if on_enqueued:
            on_enqueued(sum(1 for ids in wanted.values() for rid in chunk if rid in ids))
    return len(chunks)


def batch_sizes(n: int, batch_size: int, *, taper: bool = False) -> list[int]:
    """Sizes of the batches of `n` responses: `batch_size` each (the last one what is left), or,
    with `taper` and at least four full batches, full ones until four batches' worth are left,
    then each a quarter of what is left, down to a quarter batch. Workers take batches as they
    free up, so a run ends when its last batch does: with full batches to the end, one worker
    process reads the last one alone while the others idle (profiled: up to half a batch's time
    per worker process); small last batches end the run nearly together on every process."""
    if not taper or n < 4 * batch_size:
        return [min(batch_size, n - start) for start in range(0, n, batch_size)]
    sizes, left = [], n
    floor = max(1, math.ceil(batch_size / 4))
    while left > 0:
        size = batch_size if left > 4 * batch_size else max(floor, math.ceil(left / 4))
        size = min(size, left)
        sizes.append(size)
        left -= size
    return sizes


def _as_is(text: str) -> str:
    return text


@contextmanager
def batch_tracked(
    batch_id: int | None,
    *,
    redact: Callable[[], Callable[[str], str]] | None = None,
    claimed_by: str = "",
) -> Iterator[None]:
    """Run a batch task's work, recording that it started (and on which worker: `claimed_by`, the
    Celery node name) and how it ended. A failure is logged and re-raised as BatchFailed.
    `redact()` is called before the work (after a failure the database may not answer) and
    returns the function that removes secrets from error texts."""
    if batch_id is None:  # a message enqueued before batches were tracked
        yield
        return
    TaskBatch.objects.filter(pk=batch_id).update(
        status=TaskBatch.Status.RUNNING, deliveries=F("deliveries") + 1, claimed_by=claimed_by[:255]
    )
    clean = redact() if redact is not None else _as_is
    try:
        yield
    except Exception as exc:
        message = clean(f"{type(exc).__name__}: {exc}")[:_ERROR_CHARS]
        log.error("task batch %s failed: %s", batch_id, clean(traceback.format_exc()))
        try:
            TaskBatch.objects.filter(pk=batch_id).update(status=TaskBatch.Status.FAILED, error=message)
        except DatabaseError as db_exc:  # the database itself is what failed: the log line is all there is
            log.error("task batch %s: its failure could not be recorded either: %s", batch_id, clean(str(db_exc)))
        raise BatchFailed(f"batch {batch_id} failed: {message}") from None
    TaskBatch.objects.filter(pk=batch_id).update(status=TaskBatch.Status.DONE, error="")
