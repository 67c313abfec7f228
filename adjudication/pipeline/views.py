from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from adjudication.analytics.report import Params
from adjudication.analytics.selectors import StoredReport, report_parts, report_readers
from adjudication.analytics.services import report_for_view
from adjudication.errors import ApplicationError
from adjudication.forms import form_error_add, form_errors
from adjudication.models import Dataset
from adjudication.permissions import has_role, is_manager, role_required
from adjudication.pipeline.forms import RunJudgesForm, RunReadersForm
from adjudication.pipeline.producers import JudgePlan, JudgeRuns, judge_runs
from adjudication.pipeline.selectors import (
    SUMMARY_GROUPS,
    DatasetCounts,
    dataset_counts,
    dataset_default_panel,
    dataset_queue_names,
    reader_summary,
)
from adjudication.pipeline.services import dataset_read
from adjudication.pipeline.subsets import ResponseSubset
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
    return _dataset_page(request, dataset)


def _dataset_page(
    request: HttpRequest,
    dataset: Dataset,
    *,
    judge_form: RunJudgesForm | None = None,
    judge_plans: list[JudgePlan] | None = None,
    status: int = 200,
) -> HttpResponse:
    by = request.GET.get("by", "benchmark/checkpoint")
    if by not in SUMMARY_GROUPS:
        by = "benchmark/checkpoint"
    rows = reader_summary(dataset=dataset, by=by)
    runs = judge_runs()
    if judge_form is None and runs is not None:
        judge_form = _judge_form(dataset, runs)
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
            "judge_form": judge_form,
            "judge_plans": judge_plans,
        },
        status=status,
    )


def _judge_form(dataset: Dataset, runs: JudgeRuns, data: QueryDict | None = None) -> RunJudgesForm:
    return RunJudgesForm(data, judges=runs.names(), queues=dataset_queue_names(dataset=dataset))


@require_POST
@role_required("manager")
def dataset_run_judges(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """LLM judges on the dataset or a subset of it: "Preview" shows per judge how many responses
    the subset holds and how many are still to judge (nothing written); "Judge" enqueues what is
    missing and returns at once (the workers judge it; its readings join the reader table)."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    runs = judge_runs()
    if runs is None:
        raise Http404("no installed app runs LLM judges")
    form = _judge_form(dataset, runs, request.POST)
    plans = None
    if form.is_valid():
        names, subset = form.cleaned_data["judge"], form.cleaned_data["response_subset"]
        try:
            if form.cleaned_data["action"] == "run":
                plans = runs.start(dataset, names, subset)
                messages.info(request, _judging_message(subset, plans))
                return redirect("adjudication:dataset", dataset_id=dataset.id)
            plans = runs.plan(dataset, names, subset)
        except ApplicationError as exc:
            form_error_add(form, exc)
    return _dataset_page(request, dataset, judge_form=form, judge_plans=plans, status=400 if form.errors else 200)


def _judging_message(subset: ResponseSubset, plans: list[JudgePlan]) -> str:
    n = plans[0].responses if plans else 0
    return (
        f"Judging {subset.describe()}: {n} response{'s' if n != 1 else ''}; "
        + "; ".join(f"{p.judge}: {p.judged} already judged, {p.to_judge} enqueued" for p in plans)
        + ". Their readings join the reader table below as the workers write them."
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
