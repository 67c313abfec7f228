"""Celery tasks: take ids, load, re-check what is still missing, call one service."""

from __future__ import annotations

import logging

from celery import Task, shared_task
from celery.signals import task_postrun, task_prerun, worker_init
from django.db import close_old_connections

from adjudication.models import ReaderSpec
from adjudication.pipeline.batches import batch_tracked
from adjudication.pipeline.readings import readings_create

log = logging.getLogger(__name__)


@worker_init.connect
def _warm_readers(**_kwargs: object) -> None:
    """In a worker's main process, before it forks its pool: every process forked from it (the pool's
    children, and their isolation processes) starts with the readers imported and warm, instead of
    importing SymPy and math-verify on its first batch (profiled: about half of a worker process's
    CPU time on a 16,000-reading run)."""
    from readers.warmup import warm_up

    log.info("readers warmed up in %.1f s", warm_up())


@task_prerun.connect
@task_postrun.connect
def _database_connection_check(task: Task | None = None, **_kwargs: object) -> None:
    """What Django does around every request, around every task: a connection that broke, or that
    is older than CONN_MAX_AGE, is closed (the next query opens a new one); a healthy one is kept.
    Celery's own Django fixup would close it after every task (CELERY_DB_REUSE_MAX in
    config/settings/queue.py turns that off): a new PostgreSQL backend per task, with cold caches.
    Not for a task run eagerly: it runs inside its caller, perhaps inside the caller's transaction."""
    if task is not None and task.request.is_eager:
        return
    close_old_connections()


@shared_task(
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


@shared_task(bind=True, acks_late=True)
def run_audit(self, audit_run_id: int) -> str:
    """The metamorphic verifier audit of one AuditRun: runs it if queued, or if the worker that
    claimed it went silent for a lease (killed mid-audit; this is the redelivered task).

    While another worker's claim is live the task looks again once that claim could have gone
    stale, rather than giving up: a redelivery can arrive before the lease of a worker that has
    just died runs out (visibility timeout shorter than the lease), and then nothing else would
    ever resume the audit. The next look is one message at a time, sooner than the broker's
    visibility timeout, so that the broker never redelivers the waiting message as well."""
    from django.conf import settings

    from adjudication.audit.services import audit_run_execute

    outcome = audit_run_execute(audit_run_id=audit_run_id)
    if outcome.recheck_in is not None and not self.request.is_eager:
        visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
        run_audit.apply_async((audit_run_id,), countdown=min(outcome.recheck_in, visibility / 2))
    return outcome.status


@shared_task(bind=True, acks_late=True)
def compute_report(self, report_id: int) -> str:
    """Compute one stored analytics report (default queue) unless it is gone or no longer needed:
    done already, or a report of the same parameters for this data version or a later one is."""
    from adjudication.analytics.selectors import report_still_needed
    from adjudication.analytics.services import MISSING, report_compute
    from adjudication.models import AnalyticsReport

    report = AnalyticsReport.objects.defer("body").filter(pk=report_id).first()
    if report is None:
        return MISSING
    if not report_still_needed(report):
        return "not needed"
    return report_compute(report_id=report_id).status


@shared_task(bind=True, acks_late=True)
def refresh_information_priorities(self, policy_id: int) -> str:
    """Refit an information policy's priorities if its refresh request is still pending (a burst of
    final labels made one request; a second delivery finds it claimed and does nothing)."""
    from adjudication.routing.services import information_refresh_claimed

    report = information_refresh_claimed(policy_id=policy_id)
    return f"{report.changed} priorities changed" if report.refitted else "nothing pending"
