"""Stored analytics reports: request one for a dataset's current data version (get-or-create, its
computation enqueued on commit), and compute it (the Celery task's one service call).

A report is computed once per (dataset, parameters, data version) and read by the page and every
download. The data version (adjudication.revisions) goes up with every write the analytics read,
so a stored report is current while it carries the dataset's number; once the data changes, the
next view requests a new one and shows the old one, saying so, until the new one is done.

The claim on a computation is a compare-and-set on the row in the database, as for an AuditRun
(adjudication/audit/services.py), never a lock elsewhere: a queued report (or a running one whose
worker has been silent for ANALYTICS_LEASE_SECONDS) becomes the caller's next attempt, and the
result is written only while the row still carries that attempt number. A failed computation is
handed out again by the next request until it has had ANALYTICS_MAX_ATTEMPTS attempts.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.db.models.functions import Now
from django.utils import timezone

from adjudication.analytics import reports
from adjudication.analytics.report import Params, build
from adjudication.analytics.report import report_body as analytics_report_body
from adjudication.analytics.reports import ReportSpec
from adjudication.analytics.selectors import StoredReport, report_is_stale, report_retryable, report_stored
from adjudication.fields import json_safe
from adjudication.models import AnalyticsChoice, AnalyticsReport, Dataset
from adjudication.revisions import dataset_version
from adjudication.task_names import COMPUTE_REPORT, task_send_after_response

log = logging.getLogger(__name__)

MISSING = "missing"
Status = AnalyticsReport.Status


@dataclass(frozen=True)
class ReportOutcome:
    """What one delivery of the task found or did; `attempt` is set when it held the claim."""

    status: str
    attempt: int | None = None


def _enqueue(report_id: int) -> None:
    # Never inside a page request, also where Celery is eager: after the response (issue 36 item 15).
    task_send_after_response(COMPUTE_REPORT, report_id)


def report_request(*, dataset: Dataset, params: Params | ReportSpec) -> AnalyticsReport:
    """The report row for the dataset's current data version and these parameters, created if
    absent; its computation is enqueued (on commit) when the row is new, failed and still
    retryable, or queued / running but not heard of for a lease. Concurrent calls converge on one
    row (the unique constraint decides) and hand it out once (each hand-out is a compare-and-set)."""
    version = dataset_version(dataset_id=dataset.pk)
    with transaction.atomic():
        report, created = AnalyticsReport.objects.defer("body").get_or_create(
            dataset=dataset,
            params_key=params.key,
            data_version=version,
            defaults={"params": params.canonical()},
        )
        if created or _hand_out_again(report):
            _enqueue(report.pk)
    return report


def _hand_out_again(report: AnalyticsReport) -> bool:
    """Put a failed-but-retryable or a stale report back in the queue; True if this caller did.
    A compare-and-set on (status, attempts, heartbeat_at): of two callers, one hands it out."""
    unchanged = AnalyticsReport.objects.filter(
        pk=report.pk, status=report.status, attempts=report.attempts, heartbeat_at=report.heartbeat_at
    )
    if report.heartbeat_at is None:
        unchanged = AnalyticsReport.objects.filter(
            pk=report.pk, status=report.status, attempts=report.attempts, heartbeat_at__isnull=True
        )
    if not (report_retryable(report) or report_is_stale(report, now=timezone.now())):
        return False
    # heartbeat_at of a queued report: when it was last handed out (one hand-out per lease).
    return unchanged.update(status=Status.QUEUED, heartbeat_at=Now()) == 1


def report_for_view(*, dataset: Dataset, params: Params | ReportSpec) -> StoredReport:
    """What the page and the downloads show: the stored report, after requesting a computation
    when it is not current (and none is under way). The computation never runs in a page request:
    a worker's task, or on the embedded default the same task after the response has been sent
    (adjudication.after_response); outside a request (a command) it runs before this returns."""
    stored = report_stored(dataset=dataset, params=params)
    if stored.current:
        return stored
    under_way = stored.pending is not None and not report_is_stale(stored.pending, now=timezone.now())
    if under_way or (stored.failed is not None and not report_retryable(stored.failed)):
        return stored
    report_request(dataset=dataset, params=params)
    return report_stored(dataset=dataset, params=params)


def report_claim(*, report_id: int) -> ReportOutcome:
    """Compare-and-set on the row (locked for the decision): a queued report, or a running one
    whose worker has been silent for a lease, becomes this caller's next attempt; a stale one that
    has had ANALYTICS_MAX_ATTEMPTS claims is failed instead."""
    with transaction.atomic():
        report = (
            AnalyticsReport.objects.select_for_update()
            .annotate(db_now=Now())
            .filter(pk=report_id)
            .only("status", "created_at", "started_at", "heartbeat_at", "attempts", "error", "finished_at")
            .first()
        )
        if report is None:
            return ReportOutcome(MISSING)
        now: datetime = report.db_now
        if report.status == Status.RUNNING and not report_is_stale(report, now=now):
            return ReportOutcome(report.status)
        if report.status not in (Status.QUEUED, Status.RUNNING):
            return ReportOutcome(report.status)
        if report.status == Status.RUNNING and report.attempts >= settings.ANALYTICS_MAX_ATTEMPTS:
            report.status, report.finished_at = Status.FAILED, now
            report.error = f"abandoned after {report.attempts} attempts: each lost its worker mid-computation"
            report.save(update_fields=["status", "error", "finished_at"])
            return ReportOutcome(report.status)
        report.status, report.attempts = Status.RUNNING, report.attempts + 1
        report.started_at = report.heartbeat_at = now
        report.error, report.finished_at = "", None
        report.save(update_fields=["status", "attempts", "started_at", "heartbeat_at", "error", "finished_at"])
    log.info("analytics report %s claimed: attempt %s", report_id, report.attempts)
    return ReportOutcome(report.status, attempt=report.attempts)


def _storable_error(exc: BaseException) -> str:
    return json_safe(f"{type(exc).__name__}: {exc}")[:2000]


def report_body(*, dataset: Dataset, params: Params | ReportSpec) -> dict[str, Any]:
    """What a stored report holds: the analytics page's report (built on one snapshot, with the
    data version it saw), or another kind's JSON as report_compute gives it."""
    if isinstance(params, Params):
        return analytics_report_body(dataset=dataset, params=params, build=build)
    return reports.report_compute(params.kind, source=dataset, options=params.options)


def _stored_spec(stored: dict[str, Any]) -> Params | ReportSpec:
    if "report" in stored:
        return ReportSpec.from_row(stored)
    return Params.from_stored(stored)


def report_compute(*, report_id: int) -> ReportOutcome:
    """Claim the report (report_claim) and, if this delivery won it, build and store it; then drop
    the older reports of the same parameters. Whatever fails, the build or the final write, ends
    the report `failed` with its error, never `running`."""
    claim = report_claim(report_id=report_id)
    if claim.attempt is None:
        log.info("analytics report %s not claimed (status %s)", report_id, claim.status)
        return claim
    mine = AnalyticsReport.objects.filter(pk=report_id, status=Status.RUNNING, attempts=claim.attempt)
    status = Status.DONE
    try:
        report = AnalyticsReport.objects.select_related("dataset").defer("body").get(pk=report_id)
        started = time.perf_counter()
        body = report_body(dataset=report.dataset, params=_stored_spec(report.params))
        elapsed = time.perf_counter() - started
        with transaction.atomic():
            written = mine.update(status=status, body=body, elapsed_s=elapsed, finished_at=Now())
            if written:
                _drop_superseded(report)
    except Exception as exc:  # noqa: BLE001 - the report records its failure; the next request retries it
        log.exception("analytics report %s failed (attempt %s)", report_id, claim.attempt)
        status = Status.FAILED
        written = mine.update(status=status, error=_storable_error(exc), finished_at=Now())
    if not written:
        log.warning("analytics report %s: attempt %s lost its claim; its outcome is dropped", report_id, claim.attempt)
        current = AnalyticsReport.objects.filter(pk=report_id).values_list("status", flat=True).first()
        return ReportOutcome(current or MISSING)
    return ReportOutcome(status, attempt=claim.attempt)


def _drop_superseded(report: AnalyticsReport) -> int:
    """Delete every report of the same dataset and parameters older than the newest done one
    (done, failed or never finished alike): the newest done report is all the page reads."""
    same = AnalyticsReport.objects.filter(dataset_id=report.dataset_id, params_key=report.params_key)
    newest = same.filter(status=Status.DONE).aggregate(v=Max("data_version"))["v"]
    if newest is None:
        return 0
    deleted, _ = same.filter(data_version__lt=newest).delete()
    return deleted


def analytics_choice_set(*, dataset: Dataset, reported: str, fixed: str, base: str) -> AnalyticsChoice:
    """Remember the readers and base checkpoint the analytics page was set to (analytics.selectors.
    report_readers): the landing card and the page without parameters show them from then on."""
    choice, _ = AnalyticsChoice.objects.update_or_create(
        dataset=dataset, defaults={"reported": reported, "fixed": fixed, "base": base}
    )
    return choice
