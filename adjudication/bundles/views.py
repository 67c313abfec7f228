"""The managers' download buttons: a bundle of the report a page shows (docs/bundles.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.http import FileResponse, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404

from adjudication.analytics.report import Params
from adjudication.analytics.reports import AnalyticsOptions, AuditRunOptions
from adjudication.analytics.selectors import report_readers
from adjudication.bundles import reports
from adjudication.bundles.services import bundle_write
from adjudication.models import AuditRun, Dataset
from adjudication.permissions import role_required


def _send(dataset: Dataset, spec: reports.ReportSpec, filename: str) -> HttpResponseBase:
    scratch = tempfile.TemporaryDirectory(prefix="bundle-download-")
    path = Path(scratch.name) / filename
    try:
        bundle_write(dataset=dataset, out=path, report_specs=[spec])
    except reports.ReportError as exc:
        scratch.cleanup()
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    handle = open(path, "rb")  # noqa: SIM115  (FileResponse closes it once sent)
    # Unlinked now: the open handle keeps the bytes until the response is sent, and nothing stays behind.
    scratch.cleanup()
    return FileResponse(handle, as_attachment=True, filename=filename, content_type="application/zip")


@role_required("manager")
def analytics_bundle(request: HttpRequest, dataset_id: int) -> HttpResponseBase:
    """The analytics report for the page's parameters (its query string), with everything it was
    computed from."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    params = Params.from_query(request.GET, readers=report_readers(dataset=dataset))
    spec = reports.ReportSpec("analytics", AnalyticsOptions.from_canonical(params.canonical()))
    return _send(dataset, spec, f"bundle-{dataset.pk}-analytics.zip")


@role_required("manager")
def audit_bundle(request: HttpRequest, audit_id: int) -> HttpResponseBase:
    run = get_object_or_404(AuditRun.objects.select_related("dataset"), pk=audit_id)
    spec = reports.ReportSpec("audit_run", AuditRunOptions(run=run.pk))
    return _send(run.dataset, spec, f"bundle-{run.dataset_id}-audit-{run.pk}.zip")
