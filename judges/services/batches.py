"""The status of every `llm`-queue task, so that a waiting command notices a task that failed.

Tasks ignore their results (there is no Celery result backend), and a task that raises loses its
batch: `acks_late` acknowledges a failed task, so it is not redelivered. Without a record, the
command waiting for the batch's readings would wait forever. Each batch gets an LLMBatch row when
it is enqueued; the task marks it running, then done or failed (with the error, API keys
redacted). A worker process that dies mid-task leaves the row `running` and the message is
redelivered (CELERY_TASK_REJECT_ON_WORKER_LOST), which marks it running again.
"""
from __future__ import annotations

import logging
import traceback
import uuid
from contextlib import contextmanager
from typing import Iterator, Sequence

from django.db import DatabaseError
from django.db.models import F

from adjudication.models import Dataset

from ..models import Endpoint, LLMBatch
from ..redaction import redact, secrets_from_env

log = logging.getLogger(__name__)

_ERROR_CHARS = 4000


class LLMBatchFailed(RuntimeError):
    """A batch task failed; the message (and the batch's `error`) says why, API keys redacted."""


def known_secrets() -> tuple[str, ...]:
    """The API keys of every endpoint: a task's exception may quote any of them."""
    return secrets_from_env(Endpoint.objects.exclude(api_key_env="").values_list("api_key_env", flat=True))


def batches_create(*, run_id: uuid.UUID, kind: str, dataset: Dataset, sizes: Sequence[int]) -> list[int]:
    """One queued LLMBatch per batch about to be enqueued; their ids, in order."""
    rows = LLMBatch.objects.bulk_create(
        [LLMBatch(run=run_id, kind=kind, dataset=dataset, responses=size) for size in sizes])
    return [row.pk for row in rows]


@contextmanager
def batch_tracked(batch_id: int | None) -> Iterator[None]:
    """Run a batch task's work, recording that it started and how it ended. A failure is logged
    and re-raised as LLMBatchFailed, whose message holds no API key (Celery logs it too)."""
    if batch_id is None:  # a message enqueued before batches were tracked
        yield
        return
    LLMBatch.objects.filter(pk=batch_id).update(status=LLMBatch.Status.RUNNING, deliveries=F("deliveries") + 1)
    secrets = known_secrets()  # now: after a failure the database may not answer
    try:
        yield
    except Exception as exc:
        message = redact(f"{type(exc).__name__}: {exc}", secrets)[:_ERROR_CHARS]
        log.error("LLM batch %s failed: %s", batch_id, redact(traceback.format_exc(), secrets))
        try:
            LLMBatch.objects.filter(pk=batch_id).update(status=LLMBatch.Status.FAILED, error=message)
        except DatabaseError as db_exc:  # the database itself is what failed: the log line is all there is
            log.error("LLM batch %s: its failure could not be recorded either: %s", batch_id,
                      redact(str(db_exc), secrets))
        raise LLMBatchFailed(f"LLM batch {batch_id} failed: {message}") from None
    LLMBatch.objects.filter(pk=batch_id).update(status=LLMBatch.Status.DONE, error="")

