"""The managers' download buttons: a bundle of the report a page shows (docs/bundles.md), built as
a background job (bundles.jobs): the link answers with a page that reloads itself until the bundle
is there, then with the file."""

from __future__ import annotations

from django.http import FileResponse, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render

from adjudication.analytics.report import Params
from adjudication.analytics.reports import AnalyticsOptions, AuditRunOptions
from adjudication.analytics.selectors import report_readers
from adjudication.bundles import reports
from adjudication.bundles.jobs import bundle_job
from adjudication.models import AuditRun, Dataset
from adjudication.permissions import role_required

REFRESH_SECONDS = 2


def _send(request: HttpRequest, dataset: Dataset, spec: reports.ReportSpec, filename: str) -> HttpResponseBase:
    job = bundle_job(dataset=dataset, spec=spec)
    if job.state == "ready":
        handle = open(job.path, "rb")  # noqa: SIM115  (FileResponse closes it once sent)
        return FileResponse(handle, as_attachment=True, filename=filename, content_type="application/zip")
    context = {"dataset": dataset, "job": job, "filename": filename, "refresh": REFRESH_SECONDS, "spec": spec}
    return render(request, "bundles/job.html", context, status=409 if job.state == "failed" else 202)


@role_required("manager")
def analytics_bundle(request: HttpRequest, dataset_id: int) -> HttpResponseBase:
    """The analytics report for the page's parameters (its query string), with everything it was
    computed from."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    params = Params.from_query(request.GET, readers=report_readers(dataset=dataset))
    spec = reports.ReportSpec("analytics", AnalyticsOptions.from_canonical(params.canonical()))
    return _send(request, dataset, spec, f"bundle-{dataset.pk}-analytics.zip")


@role_required("manager")
def audit_bundle(request: HttpRequest, audit_id: int) -> HttpResponseBase:
    run = get_object_or_404(AuditRun.objects.select_related("dataset"), pk=audit_id)
    spec = reports.ReportSpec("audit_run", AuditRunOptions(run=run.pk))
    return _send(request, run.dataset, spec, f"bundle-{run.dataset_id}-audit-{run.pk}.zip")
