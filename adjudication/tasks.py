"""Celery tasks: take ids, load, re-check what is still missing, call one service."""
from __future__ import annotations

from celery import shared_task

from .models import ReaderSpec
from .services.readings import readings_create


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(ConnectionError, TimeoutError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)
def read_batch(self, reader_spec_ids: list[int], response_ids: list[int]) -> int:
    specs = list(ReaderSpec.objects.filter(pk__in=reader_spec_ids).order_by("name"))
    return readings_create(reader_specs=specs, response_ids=response_ids)


@shared_task(bind=True, acks_late=True)
def run_audit(self, audit_run_id: int) -> str:
    """The metamorphic verifier audit of one AuditRun (re-checks its status: runs only if queued)."""
    from .services.audit import audit_run_execute

    return audit_run_execute(audit_run_id=audit_run_id)
