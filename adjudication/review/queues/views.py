"""The managers' queue pages: the list, a new queue (preview, create), one queue (progress, state,
assignment, title, guidelines, sync, skips, agreement) and its exports. Thin: services write,
selectors read."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from adjudication.errors import ApplicationError
from adjudication.exports import FORMATS, table_download
from adjudication.forms import form_error_add, form_errors, query_id
from adjudication.models import Dataset, ReaderSpec, ReviewQueue, RoutingPolicy
from adjudication.permissions import AuthenticatedRequest, role_required
from adjudication.review.errors import ReviewError
from adjudication.review.queues.agreement import queue_agreement
from adjudication.review.queues.forms import (
    DatasetPickForm,
    GuidelinesForm,
    QueueAnnotatorsForm,
    QueueForm,
    QueueStateForm,
    QueueTitleForm,
)
from adjudication.review.queues.selectors import (
    ITEM_STATES,
    annotator_candidates,
    annotator_stats,
    guidelines_versions,
    policy_items_missing,
    queue_export_table,
    queue_status,
    queue_strata,
)
from adjudication.review.queues.services import (
    guidelines_update,
    queue_annotators_set,
    queue_create,
    queue_state_set,
    queue_sync,
    queue_title_set,
    skips_reopen,
)
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.selectors import (
    InformationDraw,
    PanelPreset,
    dataset_readers,
    information_preview,
    panel_presets,
    route_preview,
    route_preview_warning,
)
from adjudication.routing.specs import PolicySpec


@require_http_methods(["GET", "POST"])
@role_required("manager")
def guidelines_edit(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    """Managers edit a queue's guidelines; each save is a new version, the old ones are kept."""
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    if request.method == "POST":
        form = GuidelinesForm(request.POST)
        try:
            if not form.is_valid():
                raise ReviewError(form_errors(form))
            saved = guidelines_update(queue=queue, text=form.cleaned_data["text"], by=request.user)
        except ReviewError as exc:
            messages.error(request, str(exc))
            return redirect("review:guidelines-edit", queue_id=queue.pk)
        messages.success(request, f"Guidelines saved as version {saved.version}.")
        return redirect("review:guidelines-edit", queue_id=queue.pk)
    versions = guidelines_versions(queue=queue)
    return render(
        request,
        "review/guidelines_edit.html",
        {"queue": queue, "versions": versions, "text": versions[0].text if versions else ""},
    )


@role_required("manager")
def queue_list(request: AuthenticatedRequest) -> HttpResponse:
    """Every queue, or one dataset's (?dataset=<id>, the landing card's link), with the new-queue
    form's dataset already picked."""
    listed = ReviewQueue.objects.select_related("dataset").order_by("name")
    wanted = query_id(request.GET, "dataset")
    dataset = Dataset.objects.filter(pk=wanted).first() if wanted is not None else None
    if dataset is not None:
        listed = listed.filter(dataset=dataset)
    queues = [{"queue": q, "status": queue_status(queue=q), "missing": policy_items_missing(queue=q)} for q in listed]
    pick = DatasetPickForm(initial={"dataset": dataset.pk} if dataset else None)
    return render(
        request,
        "review/queues.html",
        {"queues": queues, "pick": pick, "dataset": dataset, "item_states": ITEM_STATES},
    )


def _panel_initial(readers: list[ReaderSpec], presets: list[PanelPreset]) -> list[int]:
    # The dataset's default panel (the readers of its task types), as run_readers has it; a dataset
    # none of whose readers is in it (plugins only) starts with its rule readers.
    return presets[0].reader_ids or [r.pk for r in readers if r.kind == "rule"]


def _preset_panel(key: str, readers: list[ReaderSpec], presets: list[PanelPreset]) -> set[str] | None:
    """The panel a preset button ticks: a task type's, none, or every reader; None: no such preset."""
    if key == "none":
        return set()
    if key == "all":
        return {str(r.pk) for r in readers}
    return next(({str(pk) for pk in p.reader_ids} for p in presets if p.key == key), None)


def _reader_groups(readers: list[ReaderSpec]) -> list[tuple[str, list[ReaderSpec]]]:
    kinds = dict(ReaderSpec.KIND_CHOICES)
    groups: dict[str, list[ReaderSpec]] = {}
    for reader in readers:
        groups.setdefault(kinds.get(reader.kind, reader.kind), []).append(reader)
    return list(groups.items())


@require_http_methods(["GET", "POST"])
@role_required("manager")
def queue_new(request: AuthenticatedRequest) -> HttpResponse:
    """Two steps: the dataset (GET ?dataset=), then the panel and the rest. "Preview" shows what the
    queue would route, without writing anything; "Create" makes it and opens its page."""
    if request.method == "GET" and not request.GET.get("dataset"):
        return render(request, "review/queue_new.html", {"pick": DatasetPickForm()})
    pick = DatasetPickForm(request.POST if request.method == "POST" else request.GET)
    if not pick.is_valid():
        messages.error(request, form_errors(pick))
        return render(request, "review/queue_new.html", {"pick": DatasetPickForm()}, status=400)
    dataset = pick.cleaned_data["dataset"]
    readers = dataset_readers(dataset=dataset)
    presets = panel_presets(dataset=dataset, readers=readers)
    creating = request.POST.get("action") == "create"
    if request.method == "POST":
        form = QueueForm(request.POST, readers=readers, creating=creating)
    else:
        form = QueueForm(readers=readers, initial={"panel": _panel_initial(readers, presets)})
    context = {
        "dataset": dataset,
        "form": form,
        "reader_groups": _reader_groups(readers),
        "presets": presets,
        "preview": None,
    }
    if request.method == "GET":
        context["chosen"] = {str(pk) for pk in _panel_initial(readers, presets)}
        return render(request, "review/queue_new.html", context)
    preset = _preset_panel(request.POST.get("preset", ""), readers, presets) if "preset" in request.POST else None
    if preset is not None:
        # A preset button only re-ticks the panel: the other settings stay as typed.
        context["chosen"] = preset
        return render(request, "review/queue_new.html", context)
    context["chosen"] = set(request.POST.getlist("panel"))
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return render(request, "review/queue_new.html", context)
    data = form.cleaned_data
    try:
        if not creating:
            routing = PolicySpec.from_values(data)
            if routing.priority != RoutingPolicy.Priority.INFORMATION:
                counts = route_preview(dataset=dataset, spec=routing)
                context["preview"] = counts
                context["preview_warning"] = route_preview_warning(
                    counts=counts, panel=data["panel"], task_types=[p.key for p in presets[1:]]
                )
            else:
                fit, chosen = information_preview(dataset=dataset, spec=routing)
                shown = "draw" if isinstance(chosen, InformationDraw) else "picks"
                context["information_preview"] = {"fit": fit, shown: chosen}
            return render(request, "review/queue_new.html", context)
        queue = queue_create(dataset=dataset, spec=QueueSpec.from_values(data), created_by=request.user)
    except ApplicationError as exc:
        form_error_add(form, exc)
        messages.error(request, form_errors(form))
        return render(request, "review/queue_new.html", context)
    n = queue.items.count()
    messages.success(request, f"Queue {queue.name} created with {n} item{'s' if n != 1 else ''}.")
    return redirect("review:queue", queue_id=queue.pk)


@role_required("manager")
def queue_detail(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    """One queue for its managers: progress, state, who may label it, its title, routing, exports,
    and how much its annotators agree (each number linked to the disagreeing items)."""
    queue = get_object_or_404(ReviewQueue.objects.select_related("dataset", "policy"), pk=queue_id)
    assigned = set(queue.annotators.values_list("pk", flat=True))
    return render(
        request,
        "review/queue_detail.html",
        {
            "queue": queue,
            "status": queue_status(queue=queue),
            "strata": queue_strata(queue=queue),
            "annotators": annotator_stats(queue=queue),
            "missing": policy_items_missing(queue=queue),
            "panel": list(queue.policy.panel.order_by("name", "version")),
            "candidates": [{"user": u, "assigned": u.pk in assigned} for u in annotator_candidates(queue=queue)],
            "assigned_count": len(assigned),
            "agreement": queue_agreement(queue=queue),
            "states": ReviewQueue.State,
        },
    )


def _back_to_queue(queue: ReviewQueue) -> HttpResponse:
    return redirect("review:queue", queue_id=queue.pk)


@require_POST
@role_required("manager")
def queue_state(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    form = QueueStateForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return _back_to_queue(queue)
    before = queue.state
    queue_state_set(queue=queue, state=form.cleaned_data["state"])
    if before == queue.state:
        messages.info(request, f"{queue.name} is {queue.get_state_display()} already.")
    else:
        messages.success(request, f"{queue.name} is now {queue.get_state_display()}.")
    return _back_to_queue(queue)


@require_POST
@role_required("manager")
def queue_title(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    form = QueueTitleForm(request.POST)
    try:
        if not form.is_valid():
            raise ReviewError(form_errors(form))
        queue_title_set(queue=queue, title=form.cleaned_data["title"])
    except ReviewError as exc:
        messages.error(request, str(exc))
        return _back_to_queue(queue)
    messages.success(request, f"Annotators now see {queue.name} as “{queue.display_title}”.")
    return _back_to_queue(queue)


@require_POST
@role_required("manager")
def queue_annotators(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    form = QueueAnnotatorsForm(request.POST, candidates=annotator_candidates(queue=queue))
    try:
        if not form.is_valid():
            raise ReviewError(form_errors(form))
        chosen = list(form.cleaned_data["annotators"])
        queue_annotators_set(queue=queue, annotators=chosen)
    except ReviewError as exc:
        messages.error(request, str(exc))
        return _back_to_queue(queue)
    if chosen:
        names = ", ".join(sorted(u.username for u in chosen))
        messages.success(request, f"{queue.name} is assigned to {names}.")
    else:
        messages.success(request, f"{queue.name} is open to every annotator.")
    return _back_to_queue(queue)


@require_POST
@role_required("manager")
def queue_reopen_skips(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    n = skips_reopen(queue=queue)
    messages.success(request, f"{queue.name}: {n} skip{'s' if n != 1 else ''} re-opened for their annotators.")
    return _back_to_queue(queue)


@require_POST
@role_required("manager")
def queue_sync_view(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    queue = get_object_or_404(ReviewQueue.objects.select_related("policy"), pk=queue_id)
    added = queue_sync(queue=queue)
    messages.info(request, f"queue {queue.name}: {added} new item(s) from its policy")
    return _back_to_queue(queue)


@role_required("manager")
def queue_export(request: AuthenticatedRequest, queue_id: int, fmt: str) -> HttpResponse:
    """The final labels of a queue, one row per decided item (JSONL also nests its labels)."""
    return _queue_download(queue_id, fmt, "final-labels")


@role_required("manager")
def queue_labels_export(request: AuthenticatedRequest, queue_id: int, fmt: str) -> HttpResponse:
    """Every individual label of a queue, one row each, history included."""
    return _queue_download(queue_id, fmt, "labels")


def _queue_download(queue_id: int, fmt: str, table: str) -> HttpResponse:
    if fmt not in FORMATS:
        raise Http404("export formats: " + ", ".join(FORMATS))
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    rows, columns = queue_export_table(queue=queue, table=table)
    return table_download(fmt=fmt, filename_stem=f"{queue.name}-{table}", rows=rows, columns=columns)
