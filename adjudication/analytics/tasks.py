"""The analytics page's Celery task: compute one stored report."""

from __future__ import annotations

from celery import shared_task

from adjudication.analytics.selectors import report_still_needed
from adjudication.analytics.services import MISSING, report_compute
from adjudication.models import AnalyticsReport
from adjudication.task_names import COMPUTE_REPORT


@shared_task(name=COMPUTE_REPORT, bind=True, acks_late=True)
def compute_report(self, report_id: int) -> str:
    """Compute one stored analytics report (default queue) unless it is gone or no longer needed:
    done already, or a report of the same parameters for this data version or a later one is."""
    report = AnalyticsReport.objects.defer("body").filter(pk=report_id).first()
    if report is None:
        return MISSING
    if not report_still_needed(report):
        return "not needed"
    return report_compute(report_id=report_id).status
