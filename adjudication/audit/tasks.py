"""The verifier audit's Celery task."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from adjudication.audit.services import audit_run_execute
from adjudication.task_names import RUN_AUDIT


@shared_task(name=RUN_AUDIT, bind=True, acks_late=True)
def run_audit(self, audit_run_id: int) -> str:
    """The metamorphic verifier audit of one AuditRun: runs it if queued, or if the worker that
    claimed it went silent for a lease (killed mid-audit; this is the redelivered task).

    While another worker's claim is live the task looks again once that claim could have gone
    stale, rather than giving up: a redelivery can arrive before the lease of a worker that has
    just died runs out (visibility timeout shorter than the lease), and then nothing else would
    ever resume the audit. The next look is one message at a time, sooner than the broker's
    visibility timeout, so that the broker never redelivers the waiting message as well."""
    outcome = audit_run_execute(audit_run_id=audit_run_id)
    if outcome.recheck_in is not None and not self.request.is_eager:
        visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
        run_audit.apply_async((audit_run_id,), countdown=min(outcome.recheck_in, visibility / 2))
    return outcome.status
