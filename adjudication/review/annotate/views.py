"""The annotator's pages: their queues, the item page (label, skip, revise), their labels, and a
queue's guidelines. Thin: services write, selectors read; the page data is plain values."""

from __future__ import annotations

from dataclasses import fields
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from adjudication.forms import form_errors, query_id
from adjudication.models import Label, Lease, ReviewQueue
from adjudication.permissions import AuthenticatedRequest, has_role, is_manager, role_required
from adjudication.review.annotate.forms import LabelForm, SkipForm
from adjudication.review.annotate.selectors import (
    ItemPage,
    LeasedItem,
    annotator_queues,
    annotator_visible_queues,
    current_guidelines,
    item_page,
    leased_item,
    my_labels,
    own_label,
    queue_visible_to,
    revisit_page,
)
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.errors import ReviewError
from adjudication.review.labels import LabelEntry


def _page_context(page: ItemPage) -> dict[str, object]:
    # A template takes a dict: the page's fields, one level deep (the shown item stays one value).
    return {field.name: getattr(page, field.name) for field in fields(page)}


# never_cache (Cache-Control: no-store): Back must ask the server again, never replay a page or a
# redirect the browser kept, which is how Back after a submit looped.
@never_cache
@role_required("annotator")
def review_home(request: AuthenticatedRequest) -> HttpResponse:
    """The annotator's landing page: their queues with their progress. Claiming starts only in the
    queue they pick (?queue=<id>); with a single queue holding work for them there is nothing to
    pick, and its next item opens at once."""
    wanted = query_id(request.GET, "queue")
    if wanted is not None:
        queue = get_object_or_404(ReviewQueue, pk=wanted)
    else:
        queues = annotator_queues(annotator=request.user)
        with_work = [q for q in queues if q["remaining"] and not q["paused"]]
        if len(with_work) != 1:
            return render(request, "review/home.html", {"queues": queues})
        queue = ReviewQueue.objects.get(pk=with_work[0]["id"])
    claim = lease_claim_next(queue=queue, annotator=request.user)
    if claim.lease is not None:
        return redirect("review:item", lease_id=claim.lease.pk)
    context = {"busy": claim.busy, "queue_id": queue.pk, "refusal": claim.refusal, "refused": claim.refused}
    return render(request, "review/done.html", context, status=403 if claim.refused == "not_assigned" else 200)


@never_cache
@role_required("annotator")
def review_mine(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    """My labels in one queue, each reopening its item to revise it while not adjudicated. A closed
    queue, or one assigned to others, is not found: annotators do not see it."""
    queue = get_object_or_404(annotator_visible_queues(annotator=request.user), pk=queue_id)
    return render(
        request,
        "review/mine.html",
        {
            "queue_id": queue.pk,
            "queue_title": queue.display_title,
            "rows": my_labels(queue=queue, annotator=request.user),
        },
    )


@never_cache
@role_required("annotator", "adjudicator", "manager")
def guidelines_page(request: AuthenticatedRequest, queue_id: int) -> HttpResponse:
    """A queue's current guidelines, for everyone who labels or decides its items (an annotator
    only for the queues they see)."""
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    if not (is_manager(request.user) or has_role(request.user, "adjudicator")) and not queue_visible_to(
        queue=queue, annotator=request.user
    ):
        raise Http404("no such queue")
    return render(
        request,
        "review/guidelines.html",
        {"queue_id": queue.pk, "queue_title": queue.display_title, "guidelines": current_guidelines(queue_id=queue.pk)},
    )


def _next_item_url(queue_id: int) -> str:
    return f"{reverse('review:home')}?{urlencode({'queue': queue_id})}"


@never_cache
@require_http_methods(["GET", "POST"])
@role_required("annotator")
def review_item(request: AuthenticatedRequest, lease_id: int) -> HttpResponse:
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
                return redirect(_next_item_url(leased.queue_id))
            return redirect("review:item", lease_id=leased.lease_id)
        return redirect(_next_item_url(leased.queue_id))
    return render(request, "review/item.html", _page_context(item_page(leased=leased, annotator=request.user)))


def _revisit(request: AuthenticatedRequest, leased: LeasedItem) -> HttpResponse:
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
        return redirect(_next_item_url(leased.queue_id))
    return render(request, "review/item.html", _page_context(revisit_page(leased=leased, annotator=request.user)))
