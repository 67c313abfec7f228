"""Annotator, adjudicator and manager pages of the review flow. Thin: services write, selectors read."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from adjudication.exports import table_download
from adjudication.forms import form_errors
from adjudication.models import Dataset, FinalLabel, Label, Lease, QueueItem, ReviewQueue
from adjudication.permissions import role_required
from adjudication.review.forms import AdjudicationForm, LabelForm, QueueForm, SkipForm
from adjudication.review.labels import LabelEntry
from adjudication.review.selectors import (
    FINAL_LABEL_COLUMNS,
    LeasedItem,
    adjudication_page,
    adjudication_queue,
    annotator_stats,
    final_labels,
    item_page,
    leased_item,
    own_label,
    policy_items_missing,
    queue_status,
    revisit_page,
)
from adjudication.review.services import (
    ReviewError,
    final_label_adjudicate,
    label_revise,
    label_submit,
    lease_claim_next,
    may_adjudicate,
    queue_create,
    queue_sync,
)


# never_cache (Cache-Control: no-store): Back must ask the server again, never replay a page or a
# redirect the browser kept, which is how Back after a submit looped.
@never_cache
@role_required("annotator")
def review_home(request: HttpRequest) -> HttpResponse:
    """Claim the next item of the first queue with work for this annotator, and go there."""
    queues = ReviewQueue.objects.order_by("created_at", "id")
    wanted = request.GET.get("queue")
    if wanted:
        queues = queues.filter(name=wanted)
    busy = False
    for queue in queues:
        claim = lease_claim_next(queue=queue, annotator=request.user)
        if claim.lease is not None:
            return redirect("review:item", lease_id=claim.lease.pk)
        busy = busy or claim.busy
    return render(request, "review/done.html", {"busy": busy, "queues": [q.name for q in queues]})


def _next_item_url(queue_name: str) -> str:
    return f"{reverse('review:home')}?{urlencode({'queue': queue_name})}"


@never_cache
@require_http_methods(["GET", "POST"])
@role_required("annotator")
def review_item(request: HttpRequest, lease_id: int) -> HttpResponse:
    leased = leased_item(lease_id=lease_id, annotator=request.user)
    if leased is None:
        raise Http404("no such lease of yours")
    if leased.completed_at is not None:
        return _revisit(request, leased)
    if request.method == "POST":
        lease = Lease(
            id=leased.lease_id,
            item_id=leased.item_id,
            annotator=request.user,
            claimed_at=leased.claimed_at,
            expires_at=leased.expires_at,
        )
        skipping = request.POST.get("action", "label") == "skip"
        form = SkipForm(request.POST) if skipping else LabelForm(request.POST)
        try:
            if not form.is_valid():
                raise ReviewError(form_errors(form))
            if skipping:
                data = form.cleaned_data
                entry = LabelEntry(kind=Label.Kind.SKIPPED, note=data["note"])
                label_submit(lease=lease, annotator=request.user, entry=entry, skip_reason=data["skip_reason"])
            else:
                label_submit(lease=lease, annotator=request.user, entry=LabelEntry(**form.cleaned_data))
        except ReviewError as exc:
            messages.error(request, str(exc))
            now = timezone.now()
            current = leased_item(lease_id=leased.lease_id, annotator=request.user)
            if current is None or current.expires_at <= now or leased.expires_at <= now:
                # The item went back to the pool (and filled up, or its text was replaced): nothing
                # to do here, take the next one.
                return redirect(_next_item_url(leased.queue_name))
            return redirect("review:item", lease_id=leased.lease_id)
        return redirect(_next_item_url(leased.queue_name))
    return render(request, "review/item.html", item_page(leased=leased, annotator=request.user))


def _revisit(request: HttpRequest, leased: LeasedItem) -> HttpResponse:
    """A finished item again: its page with the annotator's label picked; a POST revises the label
    (a new row; the old one is kept) and goes on to the next item."""
    if request.method == "POST":
        form = LabelForm(request.POST)
        label = own_label(item_id=leased.item_id, annotator=request.user)
        try:
            if not form.is_valid():
                raise ReviewError(form_errors(form))
            if label is None:
                raise ReviewError("the response was replaced by a new version; there is no label to revise")
            label_revise(label=label, annotator=request.user, entry=LabelEntry(**form.cleaned_data))
        except ReviewError as exc:
            messages.error(request, str(exc))
            return redirect("review:item", lease_id=leased.lease_id)
        messages.success(request, "Label revised.")
        return redirect(_next_item_url(leased.queue_name))
    return render(request, "review/item.html", revisit_page(leased=leased, annotator=request.user))


@role_required("adjudicator")
def adjudicate_list(request: HttpRequest) -> HttpResponse:
    rows = []
    for queue in ReviewQueue.objects.order_by("name"):
        for item, score in adjudication_queue(queue=queue, adjudicator=request.user):
            rows.append({"item": item, "queue": queue.name, "agreement": score})
    return render(request, "review/adjudicate_list.html", {"rows": rows})


@require_http_methods(["GET", "POST"])
@role_required("adjudicator")
def adjudicate_item(request: HttpRequest, item_id: int) -> HttpResponse:
    item = get_object_or_404(QueueItem.objects.select_related("queue", "review_item__response__question"), pk=item_id)
    if may_adjudicate(item=item, adjudicator=request.user):
        # Not "forbidden": whether an item exists and is still being labelled is itself not shown.
        raise Http404("no such item to adjudicate")
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        try:
            if not form.is_valid():
                raise ReviewError(form_errors(form))
            final_label_adjudicate(item=item, adjudicator=request.user, **form.cleaned_data)
        except ReviewError as exc:
            messages.error(request, str(exc))
            return redirect("review:adjudicate-item", item_id=item.pk)
        nxt = adjudication_queue(queue=item.queue, adjudicator=request.user)
        return redirect("review:adjudicate-item", item_id=nxt[0][0].pk) if nxt else redirect("review:adjudicate")
    return render(
        request,
        "review/adjudicate_item.html",
        {**adjudication_page(item=item, adjudicator=request.user), "error_types": FinalLabel.ErrorType.choices},
    )


@role_required("manager")
def queue_list(request: HttpRequest) -> HttpResponse:
    queues = [
        {
            "queue": q,
            "status": queue_status(queue=q),
            "annotators": annotator_stats(queue=q),
            "missing": policy_items_missing(queue=q),
        }
        for q in ReviewQueue.objects.select_related("dataset").order_by("name")
    ]
    return render(request, "review/queues.html", {"queues": queues, "datasets": Dataset.objects.order_by("name")})


@require_POST
@role_required("manager")
def queue_new(request: HttpRequest) -> HttpResponse:
    form = QueueForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("review:queues")
    data = form.cleaned_data
    try:
        queue_create(
            dataset=data["dataset"],
            name=data["name"],
            overlap=data["overlap"],
            lease_seconds=data["lease_seconds"],
            show_candidates=data["show_candidates"],
            judge_correctness=data["judge_correctness"],
            control_fraction=data["control_fraction"] or 0.0,
            created_by=request.user,
        )
    except ReviewError as exc:
        messages.error(request, str(exc))
    return redirect("review:queues")


@require_POST
@role_required("manager")
def queue_sync_view(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = get_object_or_404(ReviewQueue.objects.select_related("policy"), pk=queue_id)
    added = queue_sync(queue=queue)
    messages.info(request, f"queue {queue.name}: {added} new item(s) from its policy")
    return redirect("review:queues")


@role_required("manager")
def queue_export(request: HttpRequest, queue_id: int, fmt: str) -> HttpResponse:
    if fmt not in ("jsonl", "csv"):
        raise Http404("export formats: jsonl, csv")
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    return table_download(
        fmt=fmt, filename_stem=f"{queue.name}-final-labels", rows=final_labels(queue=queue), columns=FINAL_LABEL_COLUMNS
    )
