"""Manager pages of every report kind: /analytics/<dataset_id>/reports/<kind>/ (the options as a
form, the report's text, its status) and its JSON download, .../reports/<kind>.json; the API twin
is analytics.api.

Like the analytics page they read the stored report for the dataset's current data version
(analytics.services.report_for_view: computed once by the Celery task, current while it carries
the dataset's data version); nothing is computed in the request except in eager mode (the embedded
default). The options come from the query string through the kind's options class
(analytics.reports), which refuses a bad one with the field named (400)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from adjudication.analytics.reports import (
    KINDS,
    OPTIONS,
    ReportError,
    ReportOptions,
    ReportSpec,
    options_from_query,
    report_json,
    report_text,
)
from adjudication.analytics.selectors import StoredReport, report_body_stored, report_parts, report_stored
from adjudication.analytics.services import report_for_view
from adjudication.exports import CONTENT_TYPES, attachment, download_name
from adjudication.models import AnalyticsReport, Dataset
from adjudication.permissions import role_required

REFRESH_SECONDS = 5  # how often a page waiting for its report reloads itself (a meta refresh)
RETRY_AFTER_SECONDS = 10
# The parts of the analytics page's report its text shows (the body runs to megabytes).
TEXT_PARTS = {"analytics": ("params", "headline", "format_share_error", "consensus", "consensus_error")}


def options_class(kind: str) -> type[ReportOptions]:
    cls = OPTIONS.get(kind)
    if cls is None:
        raise Http404(f"no report kind {kind!r} ({', '.join(KINDS)})")
    return cls


def stored_report(*, dataset: Dataset, spec: ReportSpec) -> tuple[StoredReport, dict[str, Any] | None]:
    """The stored report (a computation requested when it is not current) and its whole body, or
    None while none is done."""
    stored = report_for_view(dataset=dataset, params=spec)
    for _ in range(2):
        if stored.report is None:
            return stored, None
        try:
            return stored, report_body_stored(report=stored.report)
        except AnalyticsReport.DoesNotExist:
            # Replaced by a newer report between the two reads: that one.
            stored = report_stored(dataset=dataset, params=spec)
    return stored, None


def stamp(stored: StoredReport) -> dict[str, str]:
    """Which data a served report is of, as response headers."""
    report = stored.report
    return {
        "X-Report-Computed-At": report.finished_at.isoformat() if report and report.finished_at else "",
        "X-Report-Data-Version": str(report.data_version if report else ""),
        "X-Report-Current": "true" if stored.current else "false",
    }


def _form_fields(cls: type[ReportOptions], query: Any, options: ReportOptions | None = None) -> list[dict[str, Any]]:
    """The form's fields; `options`: the report's, whose values (the dataset's readers among them)
    the fields left out show."""
    out = []
    for f in cls._fields():
        if not f.option.shared:
            continue
        given = query.getlist(f.name) if f.name in query else None
        value = given if f.option.repeat else (given[-1] if given else None)
        default = f.default if options is None else getattr(options, f.name)
        if isinstance(default, tuple):
            default = f.default
        out.append(
            {
                "name": f.name,
                "kind": f.option.kind,
                "choices": f.option.choices,
                "repeat": f.option.repeat,
                "optional": default is None,
                "values": [v for v in (value or []) if v] + [""] if f.option.repeat else None,
                "value": value if value is not None else ("" if default is None else default),
                "checked": (value or "").lower() in ("1", "true", "on", "yes") if f.option.kind == "flag" else False,
                "default": "" if default is None else default,
            }
        )
    return out


def _text_body(kind: str, report: AnalyticsReport) -> dict[str, Any]:
    parts = TEXT_PARTS.get(kind)
    return report_parts(report=report, parts=parts) if parts else report_body_stored(report=report)


@role_required("manager")
def report_page(request: HttpRequest, dataset_id: int, kind: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    cls = options_class(kind)
    context: dict[str, Any] = {
        "dataset": dataset,
        "kind": kind,
        "kinds": KINDS,
    }
    try:
        spec = ReportSpec(kind, options_from_query(kind, request.GET, dataset=dataset))
    except ReportError as exc:
        context.update(option_error=exc.message, fields=_form_fields(cls, request.GET))
        return render(request, "analytics/report.html", context, status=400)
    context["fields"] = _form_fields(cls, request.GET, spec.options)
    stored = report_for_view(dataset=dataset, params=spec)
    body = None
    if stored.report is not None:
        try:
            body = _text_body(kind, stored.report)
        except AnalyticsReport.DoesNotExist:
            # Replaced by a newer report between the two reads: show that one.
            stored = report_stored(dataset=dataset, params=spec)
            body = _text_body(kind, stored.report) if stored.report is not None else None
    text = report_text(kind, body) if body is not None else None
    context.update(stored=stored, text=text, describe=spec.describe())
    if not stored.current:
        context["refresh"] = REFRESH_SECONDS if stored.failed is None else None
    return render(request, "analytics/report.html", context)


@role_required("manager")
def report_download(request: HttpRequest, dataset_id: int, kind: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    options_class(kind)  # a 404 for an unknown kind
    try:
        spec = ReportSpec(kind, options_from_query(kind, request.GET, dataset=dataset))
    except ReportError as exc:
        return HttpResponse(exc.message + "\n", status=400, content_type="text/plain; charset=utf-8")
    stored, body = stored_report(dataset=dataset, spec=spec)
    if body is None:
        return _waiting(stored)
    response = HttpResponse(report_json(body) + "\n", content_type=CONTENT_TYPES["json"])
    for header, value in stamp(stored).items():
        response[header] = value
    return attachment(response, download_name(f"{dataset.name}-{kind}", "json"))


def waiting_message(stored: StoredReport) -> str:
    if stored.failed is not None:
        return f"the report could not be computed: {stored.failed.error}"
    return (
        f"the report for these options (data version {stored.data_version}) is being computed; "
        f"try again in {RETRY_AFTER_SECONDS} seconds"
    )


def _waiting(stored: StoredReport) -> HttpResponse:
    """503 with Retry-After while the report is computed; 409 when it could not be."""
    failed = stored.failed is not None
    response = HttpResponse(
        waiting_message(stored) + "\n", status=409 if failed else 503, content_type="text/plain; charset=utf-8"
    )
    if not failed:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
