"""Annotator, adjudicator and manager pages of the review flow. Thin: services write, selectors read."""
from __future__ import annotations

import csv
import json
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from .models import Dataset, FinalLabel, Label, Lease, QueueItem, ReviewQueue
from .permissions import has_role, is_manager
from .review_selectors import (annotator_stats, candidates_for, current_labels_anonymous, final_labels, item_page,
                               leased_item, queue_status, response_parts)
from .services.review import (ReviewError, adjudication_queue, final_label_adjudicate, label_submit,
                              lease_claim_next, queue_create)


def _require(request: HttpRequest, role: str) -> None:
    if not has_role(request.user, role):
        raise PermissionDenied(f"{role}s only")


def review_home(request: HttpRequest) -> HttpResponse:
    """Claim the next item of the first queue with work for this annotator, and go there."""
    _require(request, "annotator")
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


@require_http_methods(["GET", "POST"])
def review_item(request: HttpRequest, lease_id: int) -> HttpResponse:
    _require(request, "annotator")
    leased = leased_item(lease_id=lease_id, annotator=request.user)
    if leased is None:
        raise Http404("no such lease of yours")
    if leased.completed_at is not None:
        return redirect("review:home")
    if request.method == "POST":
        lease = Lease(id=leased.lease_id, item_id=leased.item_id, annotator=request.user,
                      claimed_at=leased.claimed_at, expires_at=leased.expires_at)
        try:
            if request.POST.get("action", "label") == "skip":
                label_submit(lease=lease, annotator=request.user, kind=Label.Kind.SKIPPED,
                             skip_reason=request.POST.get("skip_reason", ""), note=request.POST.get("note", ""))
            else:
                confidence = request.POST.get("confidence") or None
                label_submit(lease=lease, annotator=request.user, kind=request.POST.get("kind", ""),
                             answer=request.POST.get("answer", ""), correctness=request.POST.get("correctness", ""),
                             confidence=int(confidence) if confidence else None, note=request.POST.get("note", ""))
        except (ReviewError, ValueError) as exc:
            messages.error(request, str(exc))
            if leased.expires_at <= timezone.now():
                # The item went back to the pool and filled up: nothing to do here, take the next one.
                return redirect(_next_item_url(leased.queue_name))
            return redirect("review:item", lease_id=leased.lease_id)
        return redirect(_next_item_url(leased.queue_name))
    return render(request, "review/item.html", item_page(leased=leased, annotator=request.user))


def adjudicate_list(request: HttpRequest) -> HttpResponse:
    _require(request, "adjudicator")
    rows = []
    for queue in ReviewQueue.objects.order_by("name"):
        for item, score in adjudication_queue(queue=queue):
            rows.append({"item": item, "queue": queue.name, "agreement": score})
    return render(request, "review/adjudicate_list.html", {"rows": rows})


@require_http_methods(["GET", "POST"])
def adjudicate_item(request: HttpRequest, item_id: int) -> HttpResponse:
    _require(request, "adjudicator")
    item = get_object_or_404(QueueItem.objects.select_related("queue", "review_item__response__question"), pk=item_id)
    if request.method == "POST":
        try:
            final_label_adjudicate(
                item=item, adjudicator=request.user, kind=request.POST.get("kind", ""),
                answer=request.POST.get("answer", ""), correctness=request.POST.get("correctness", ""),
                error_type=request.POST.get("error_type", ""), notes=request.POST.get("notes", ""),
                unresolved=request.POST.get("unresolved") == "1")
        except ReviewError as exc:
            messages.error(request, str(exc))
            return redirect("review:adjudicate-item", item_id=item.pk)
        nxt = adjudication_queue(queue=item.queue)
        return redirect("review:adjudicate-item", item_id=nxt[0][0].pk) if nxt else redirect("review:adjudicate")
    response = item.review_item.response
    question = response.question
    cands, spans = candidates_for(item, request.user) if item.queue.show_candidates else ([], [])
    return render(request, "review/adjudicate_item.html", {
        "item": item, "question": question.text, "choices": [(chr(65 + i), c) for i, c in enumerate(question.choices)],
        "is_mc": bool(question.choices), "parts": response_parts(response.text, spans), "candidates": cands,
        "labels": current_labels_anonymous(item), "judge_correctness": item.queue.judge_correctness,
        "gold": question.gold, "error_types": FinalLabel.ErrorType.choices,
    })


def queue_list(request: HttpRequest) -> HttpResponse:
    if not is_manager(request.user):
        raise PermissionDenied("managers only")
    queues = [{"queue": q, "status": queue_status(queue=q), "annotators": annotator_stats(queue=q)}
              for q in ReviewQueue.objects.select_related("dataset").order_by("name")]
    return render(request, "review/queues.html", {"queues": queues, "datasets": Dataset.objects.order_by("name")})


@require_POST
def queue_new(request: HttpRequest) -> HttpResponse:
    if not is_manager(request.user):
        raise PermissionDenied("managers only")
    dataset = Dataset.objects.filter(pk=request.POST.get("dataset") or None).first()
    if dataset is None:
        messages.error(request, "choose a dataset")
        return redirect("review:queues")
    try:
        queue_create(dataset=dataset, name=request.POST.get("name", "").strip(),
                     overlap=int(request.POST.get("overlap") or 2),
                     lease_seconds=int(request.POST.get("lease_seconds") or 900),
                     show_candidates=request.POST.get("show_candidates") == "on",
                     judge_correctness=request.POST.get("judge_correctness") == "on",
                     control_fraction=float(request.POST.get("control_fraction") or 0), created_by=request.user)
    except (ReviewError, ValueError, KeyError) as exc:
        messages.error(request, str(exc))
    return redirect("review:queues")


def queue_export(request: HttpRequest, queue_id: int, fmt: str) -> HttpResponse:
    if not is_manager(request.user):
        raise PermissionDenied("managers only")
    if fmt not in ("jsonl", "csv"):
        raise Http404("export formats: jsonl, csv")
    queue = get_object_or_404(ReviewQueue, pk=queue_id)
    rows = final_labels(queue=queue)
    if fmt == "jsonl":
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        resp = HttpResponse(body, content_type="application/x-ndjson")
    else:
        fields = ["response_id", "model", "checkpoint", "benchmark", "is_control", "status", "final_kind",
                  "final_answer", "final_correctness", "provenance", "error_type", "labels"]

        class Echo:
            def write(self, value: str) -> str:
                return value

        writer = csv.DictWriter(Echo(), fieldnames=fields, extrasaction="ignore")
        lines = [writer.writeheader()]
        lines += [writer.writerow({**r, "labels": json.dumps(r["labels"], ensure_ascii=False)}) for r in rows]
        resp = StreamingHttpResponse(lines, content_type="text/csv")
    resp["Content-Disposition"] = f'attachment; filename="{queue.name}-final-labels.{fmt}"'
    return resp
