"""The adjudicator's pages: the conflicting items, and one item to decide. Thin: services write,
selectors read."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from adjudication.forms import form_errors
from adjudication.models import FinalLabel, QueueItem, ReviewQueue
from adjudication.permissions import AuthenticatedRequest, role_required
from adjudication.review.adjudicate.forms import AdjudicationForm
from adjudication.review.adjudicate.selectors import adjudication_page, adjudication_queue, unresolved_items
from adjudication.review.adjudicate.services import final_label_adjudicate, may_adjudicate
from adjudication.review.errors import ReviewError


@role_required("adjudicator")
def adjudicate_list(request: AuthenticatedRequest) -> HttpResponse:
    rows = []
    for queue in ReviewQueue.objects.order_by("name"):
        for item, score in adjudication_queue(queue=queue, adjudicator=request.user):
            rows.append({"item": item, "queue": queue.name, "agreement": score})
    unresolved = unresolved_items(adjudicator=request.user)
    return render(request, "review/adjudicate_list.html", {"rows": rows, "unresolved": unresolved})


@require_http_methods(["GET", "POST"])
@role_required("adjudicator")
def adjudicate_item(request: AuthenticatedRequest, item_id: int) -> HttpResponse:
    item = get_object_or_404(QueueItem.objects.select_related("queue", "review_item__response__question"), pk=item_id)
    if may_adjudicate(item=item, adjudicator=request.user):
        # Not "forbidden": whether an item exists and is still being labelled is itself not shown.
        raise Http404("no such item to adjudicate")
    if request.method == "POST":
        form = AdjudicationForm(request.POST)
        try:
            if not form.is_valid():
                raise ReviewError(form_errors(form))
            final = final_label_adjudicate(item=item, adjudicator=request.user, **form.cleaned_data)
        except ReviewError as exc:
            messages.error(request, str(exc))
            return redirect("review:adjudicate-item", item_id=item.pk)
        decided = "marked unresolved" if final.provenance == FinalLabel.Provenance.UNRESOLVED else "recorded"
        answer = f" ({final.get_kind_display()} {final.answer})".rstrip() if final.answer else ""
        messages.success(request, f"Item #{item.pk}: final label {decided}{answer}.")
        nxt = adjudication_queue(queue=item.queue, adjudicator=request.user)
        return redirect("review:adjudicate-item", item_id=nxt[0][0].pk) if nxt else redirect("review:adjudicate")
    return render(
        request,
        "review/adjudicate_item.html",
        {**adjudication_page(item=item, adjudicator=request.user), "error_types": FinalLabel.ErrorType.choices},
    )
