"""The metamorphic verifier audit on a stored dataset's golds ("certify your readers on your
benchmark"): start it (a queued AuditRun, enqueued on commit) and execute it (the Celery task's
one service call).

The claim on a run is a lease in PostgreSQL, not a lock anywhere else: a worker claims a queued run
(or a running one whose worker has been silent for AUDIT_LEASE_SECONDS) by compare-and-set on the
row, beats `heartbeat_at` while the audit runs, and writes its result only while the row still
carries its attempt number. A worker killed mid-audit therefore leaves a run that the redelivered
task claims again, once; a duplicate task while the first worker is alive leaves it alone; and
every failure, the final write included, ends the run `failed` with its error.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from adjudication.audit.compute import audit_summary_counted
from adjudication.audit.selectors import audit_claim_is_stale, audit_last_seen, audit_lease_seconds
from adjudication.fields import json_safe
from adjudication.models import AuditRun, Dataset
from adjudication.task_names import RUN_AUDIT, task_send_on_commit
from readers import registry as reader_registry

log = logging.getLogger(__name__)

MISSING = "missing"


@dataclass(frozen=True)
class AuditOutcome:
    """What one delivery of the task found or did. `attempt` is set when this delivery holds the
    claim; `recheck_in` when another worker's claim is live: it could go stale in that many seconds."""

    status: str
    attempt: int | None = None
    recheck_in: float | None = None


def audit_output_root() -> Path:
    return Path(settings.AUDIT_OUTPUT_DIR)


def audit_run_start(*, dataset: Dataset, reader_names: list[str], user=None) -> AuditRun:
    """A queued AuditRun, handed to a worker once the transaction commits."""
    try:
        reader_names = reader_registry.require(reader_names)
    except reader_registry.UnknownReader as exc:
        raise ValueError(str(exc)) from None
    if not reader_names:
        raise ValueError("choose at least one reader")
    with transaction.atomic():
        run = AuditRun.objects.create(
            dataset=dataset,
            readers=list(dict.fromkeys(reader_names)),
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        task_send_on_commit(RUN_AUDIT, run.pk)
    return run


def audit_run_resume(*, run: AuditRun) -> bool:
    """Hand a stale run to a worker again (when its task is gone: lost by the broker, or an
    embedded deployment without redelivery). The worker's claim decides; this only enqueues."""
    if not audit_claim_is_stale(run, now=timezone.now()):
        return False
    task_send_on_commit(RUN_AUDIT, run.pk)
    return True


def _storable_error(exc: BaseException) -> str:
    # The message may quote model text (NUL, lone surrogates): the error column must take it whatever it is.
    return json_safe(f"{type(exc).__name__}: {exc}")[:2000]


def audit_run_claim(*, audit_run_id: int) -> AuditOutcome:
    """Compare-and-set on the row (locked for the decision): a queued run, or a running one whose
    worker has been silent for a lease, becomes this caller's next attempt. A stale run that has
    had AUDIT_MAX_ATTEMPTS claims is failed instead: a gold that kills its worker every time must
    not be retried forever. Times are the database's, so workers' clocks never disagree."""
    lease = audit_lease_seconds()
    with transaction.atomic():
        run = (
            AuditRun.objects.select_for_update()
            .annotate(db_now=Now())
            .filter(pk=audit_run_id)
            .only("status", "started_at", "heartbeat_at", "attempts", "error", "finished_at")
            .first()
        )
        if run is None:
            return AuditOutcome(MISSING)
        now: datetime = run.db_now
        if run.status == AuditRun.Status.RUNNING and not audit_claim_is_stale(run, now=now):
            seen = audit_last_seen(run)
            assert seen is not None  # not stale: its worker has been heard of
            return AuditOutcome(run.status, recheck_in=max(1.0, lease - (now - seen).total_seconds()) + 1.0)
        if run.status not in (AuditRun.Status.QUEUED, AuditRun.Status.RUNNING):
            return AuditOutcome(run.status)
        if run.status == AuditRun.Status.RUNNING and run.attempts >= settings.AUDIT_MAX_ATTEMPTS:
            seen = audit_last_seen(run)
            run.status, run.finished_at = AuditRun.Status.FAILED, now
            run.error = (
                f"abandoned after {run.attempts} attempts: no heartbeat from the worker of the last one "
                f"since {seen:%Y-%m-%d %H:%M:%S %Z} (lease {lease:g} s); it was lost mid-audit each time"
                if seen
                else f"abandoned after {run.attempts} attempts: no heartbeat from its worker"
            )
            run.save(update_fields=["status", "error", "finished_at"])
            return AuditOutcome(run.status)
        run.status, run.attempts = AuditRun.Status.RUNNING, run.attempts + 1
        run.started_at = run.heartbeat_at = now
        run.error, run.finished_at = "", None
        run.save(update_fields=["status", "attempts", "started_at", "heartbeat_at", "error", "finished_at"])
    log.info("audit %s claimed: attempt %s", audit_run_id, run.attempts)
    return AuditOutcome(run.status, attempt=run.attempts)


class _Heartbeat:
    """Beats the claim from a thread while the audit (CPU and the isolation pool) runs in this one.

    The thread has its own database connection (Django's are per thread) and closes it. A beat
    never queues behind a row lock (lock_timeout on PostgreSQL): a missed beat costs nothing, the
    lease is four beats long. A beat that finds the row no longer ours (reclaimed, or finished)
    stops the thread; the final write is fenced by the attempt number anyway."""

    def __init__(self, *, audit_run_id: int, attempt: int, interval: float) -> None:
        self.audit_run_id, self.attempt, self.interval = audit_run_id, attempt, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"audit-{audit_run_id}-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    if not self._beat():
                        log.warning(
                            "audit %s: attempt %s no longer holds the claim; heartbeat stopped",
                            self.audit_run_id,
                            self.attempt,
                        )
                        return
                except DatabaseError as exc:
                    log.warning("audit %s: missed a heartbeat: %s", self.audit_run_id, exc)
        finally:
            connection.close()

    def _beat(self) -> bool:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '1s'")
            return (
                AuditRun.objects.filter(
                    pk=self.audit_run_id, status=AuditRun.Status.RUNNING, attempts=self.attempt
                ).update(heartbeat_at=Now())
                == 1
            )


def audit_run_execute(*, audit_run_id: int) -> AuditOutcome:
    """Claim the run (see audit_run_claim) and, if this delivery won it, run the audit under a
    heartbeat. Whatever fails, reading the golds, the readers, the files or the final summary
    write (jsonb refuses NUL, for one), ends the run `failed` with the error, never `running`."""
    claim = audit_run_claim(audit_run_id=audit_run_id)
    if claim.attempt is None:
        log.info("audit %s not claimed (status %s)", audit_run_id, claim.status)
        return claim
    mine = AuditRun.objects.filter(pk=audit_run_id, status=AuditRun.Status.RUNNING, attempts=claim.attempt)
    status = AuditRun.Status.DONE
    try:
        run = AuditRun.objects.select_related("dataset").get(pk=audit_run_id)
        out_dir = audit_output_root() / f"run-{run.pk}"
        with _Heartbeat(audit_run_id=audit_run_id, attempt=claim.attempt, interval=audit_lease_seconds() / 4):
            summary, n_golds = audit_summary_counted(run=run, out_dir=out_dir)
        # A savepoint when the caller is in a transaction: a refused write leaves it usable for the failure.
        with transaction.atomic():
            # The report shows golds: a NUL or lone surrogate in one is shown replaced (the files
            # under out_dir keep them verbatim).
            written = mine.update(
                status=status, summary=json_safe(summary), n_golds=n_golds, out_dir=str(out_dir), finished_at=Now()
            )
    except Exception as exc:  # noqa: BLE001 - the run records its failure; the task does not retry
        log.exception("audit %s failed (attempt %s)", audit_run_id, claim.attempt)
        status = AuditRun.Status.FAILED
        written = mine.update(status=status, error=_storable_error(exc), finished_at=Now())
    if not written:
        # Paused past the lease and reclaimed by another worker: that attempt's outcome stands.
        log.warning(
            "audit %s: attempt %s lost its claim before finishing; its outcome is dropped", audit_run_id, claim.attempt
        )
        current = AuditRun.objects.filter(pk=audit_run_id).values_list("status", flat=True).first()
        return AuditOutcome(current or MISSING)
    return AuditOutcome(status, attempt=claim.attempt)
