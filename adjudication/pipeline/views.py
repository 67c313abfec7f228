from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from adjudication.analytics.report import Params
from adjudication.analytics.selectors import StoredReport, report_parts, report_readers
from adjudication.analytics.services import report_for_view
from adjudication.forms import form_errors
from adjudication.models import Dataset
from adjudication.permissions import has_role, is_manager, role_required
from adjudication.pipeline.forms import RunReadersForm
from adjudication.pipeline.selectors import (
    SUMMARY_GROUPS,
    DatasetCounts,
    dataset_counts,
    dataset_default_panel,
    reader_summary,
)
from adjudication.pipeline.services import dataset_read
from readers import registry as reader_registry


def home(request: HttpRequest) -> HttpResponse:
    """The managers' landing page: a card per dataset with its counts, its headline numbers (from
    the stored analytics report; a missing or stale one is requested, never computed here) and
    links to its analytics, queues, items and audits."""
    # Dataset pages name models and checkpoints: managers only. Others go to their own work.
    if not is_manager(request.user):
        return redirect(
            "review:adjudicate"
            if has_role(request.user, "adjudicator") and not has_role(request.user, "annotator")
            else "review:home"
        )
    datasets = list(Dataset.objects.order_by("name"))
    readers = {d.pk: report_readers(dataset=d) for d in datasets}
    reports = {d.pk: report_for_view(dataset=d, params=Params.from_query({}, readers=readers[d.pk])) for d in datasets}
    parts = {pk: _card_parts(state) for pk, state in reports.items()}
    counts = dataset_counts(
        dataset_ids=[d.pk for d in datasets],
        readings={pk: p["readings"] for pk, p in parts.items() if p["readings"] is not None},
    )
    cards = [
        {
            "dataset": d,
            "counts": _with_headline_disputed(counts[d.pk], parts[d.pk]["headline"]),
            "report": reports[d.pk],
            "headline": parts[d.pk]["headline"],
            "readers": readers[d.pk],
        }
        for d in datasets
    ]
    return render(request, "pipeline/home.html", {"cards": cards})


def _with_headline_disputed(counts: DatasetCounts, headline: dict | None) -> DatasetCounts:
    """The card's disputed count is the headline's (analytics.selectors.disputed_by_benchmark, summed),
    the number the analytics page shows beside the same readers: one source for both."""
    rows = (headline or {}).get("by_benchmark") or []
    if not rows or any("disputed" not in r for r in rows):
        return counts
    return replace(counts, disputed=sum(r["disputed"] for r in rows))


def _card_parts(state: StoredReport) -> dict:
    """A card's part of the stored report: its headline, and (when the report is current) the
    readings it counted, so the landing page never counts millions of readings itself."""
    if state.report is None:
        return {"headline": None, "readings": None}
    try:
        got = report_parts(report=state.report, parts=["headline", "tables__readers__rows"])
    except type(state.report).DoesNotExist:  # replaced by a newer report meanwhile: show none
        return {"headline": None, "readings": None}
    rows = got["tables__readers__rows"] or []
    return {"headline": got["headline"], "readings": sum(r["n"] for r in rows) if state.current else None}


@role_required("manager")
def dataset_detail(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    by = request.GET.get("by", "benchmark/checkpoint")
    if by not in SUMMARY_GROUPS:
        by = "benchmark/checkpoint"
    rows = reader_summary(dataset=dataset, by=by)
    return render(
        request,
        "pipeline/dataset.html",
        {
            "dataset": dataset,
            "rows": rows,
            "by": by,
            "runs": dataset.runs.all(),
            "n_responses": dataset.responses.count(),
            "groupings": list(SUMMARY_GROUPS),
            # The readers that apply to this dataset's task types (readers.tasks), pre-ticked.
            "panel": dataset_default_panel(dataset_id=dataset.pk),
            "can_manage": is_manager(request.user),
        },
    )


@require_POST
@role_required("manager")
def dataset_run_readers(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    form = RunReadersForm(request.POST, readers=list(reader_registry.names()))
    if not form.is_valid():
        # Nothing ticked is a mistake to point out, not a request for every reader.
        messages.error(request, form_errors(form))
        return redirect("adjudication:dataset", dataset_id=dataset.id)
    names = form.cleaned_data["reader"]
    dataset_read(dataset=dataset, reader_names=names, batch_size=settings.READER_BATCH_SIZE)
    messages.info(request, f"Reading with {len(names)} reader(s); progress below.")
    return redirect("adjudication:dataset", dataset_id=dataset.id)


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
