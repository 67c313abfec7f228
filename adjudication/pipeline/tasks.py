"""The reading pipeline's Celery task: one batch of responses read by every selected rule reader."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_init

from adjudication.models import ReaderSpec
from adjudication.pipeline.batches import batch_tracked
from adjudication.pipeline.readings import readings_create
from adjudication.task_names import READ_BATCH

log = logging.getLogger(__name__)


@worker_init.connect
def _warm_readers(**_kwargs: object) -> None:
    """In a worker's main process, before it forks its pool: every process forked from it (the pool's
    children, and their isolation processes) starts with the readers imported and warm, instead of
    importing SymPy and math-verify on its first batch (profiled: about half of a worker process's
    CPU time on a 16,000-reading run)."""
    from readers.warmup import warm_up

    log.info("readers warmed up in %.1f s", warm_up())


@shared_task(
    name=READ_BATCH,
    bind=True,
    acks_late=True,
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)
def read_batch(self, reader_spec_ids: list[int], response_ids: list[int], batch_id: int | None = None) -> int:
    # Tracked (TaskBatch), so that a command waiting for these readings learns of a failure.
    with batch_tracked(batch_id, claimed_by=self.request.hostname or ""):
        specs = list(ReaderSpec.objects.filter(pk__in=reader_spec_ids).order_by("name"))
        return readings_create(reader_specs=specs, response_ids=response_ids)
