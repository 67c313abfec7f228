"""What the adjudicator sees: conflicting items (lowest agreement first), items left unresolved,
and one item with what annotators saw, the gold, and their labels, anonymised."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import OuterRef, Subquery

from adjudication.browse.selectors import llm_traces
from adjudication.models import FinalLabel, Label, QueueItem, ReviewQueue
from adjudication.review.annotate.selectors import candidates_for
from adjudication.review.items import current_labels
from adjudication.review.labels import agreement
from adjudication.review.rendering import shown_item
from adjudication.text import displayable


def adjudication_page(*, item: QueueItem, adjudicator: User) -> dict:
    """The adjudicator's view of a conflicting item: what annotators saw, the gold, the labels as
    "Annotator 1 / 2", and the LLM readings' traces."""
    response = item.review_item.response
    question = response.question
    cands = candidates_for(item, adjudicator) if item.queue.show_candidates else ([], [])
    return {
        "item": item,
        "shown": shown_item(
            question=question.text,
            choices=question.choices,
            gold=question.gold,
            response=response.text,
            show_gold=True,
            candidates=cands,
        ),
        "labels": current_labels_anonymous(item),
        "judge_correctness": item.queue.judge_correctness,
        # Whether "no candidates" means the queue hides them or the readers found none.
        "show_candidates": item.queue.show_candidates,
        # Adjudicators may see which judge said what, and why (annotators never: docs/review.md).
        "traces": llm_traces(response_id=response.pk),
    }


def unresolved_items(*, adjudicator: User) -> list[QueueItem]:
    """Items whose newest final label says "unresolved", for a second look (not the adjudicator's
    own labelled items: those are another adjudicator's to decide)."""
    newest = FinalLabel.objects.filter(item=OuterRef("pk")).order_by("-created_at", "-id").values("provenance")[:1]
    mine = Label.objects.filter(annotator=adjudicator).values("item_id")
    return list(
        QueueItem.objects.filter(status=QueueItem.Status.ADJUDICATED)
        .annotate(last_decision=Subquery(newest))
        .filter(last_decision=FinalLabel.Provenance.UNRESOLVED)
        .exclude(id__in=mine)
        .select_related("queue")
        .order_by("id")
    )


def adjudication_queue(*, queue: ReviewQueue, adjudicator: User) -> list[tuple[QueueItem, float]]:
    """Conflicting items this adjudicator may decide (not ones they labelled), lowest agreement first."""
    mine = Label.objects.filter(queue=queue, annotator=adjudicator).values("item_id")
    items = list(queue.items.filter(status=QueueItem.Status.CONFLICT).exclude(id__in=mine).prefetch_related("labels"))
    scored = [(item, agreement(current_labels(item), queue.judge_correctness)) for item in items]
    return sorted(scored, key=lambda pair: (pair[1], -pair[0].priority, pair[0].tiebreak, pair[0].id))


def current_labels_anonymous(item: QueueItem) -> list[dict]:
    """The item's current labels as "Annotator 1", "Annotator 2"… in labelling order (for adjudicators)."""

    labels = sorted(current_labels(item), key=lambda lab: (lab.created_at, lab.id))
    return [
        {
            "number": n,
            "who": f"Annotator {n}",
            "kind_value": lab.kind,
            "kind": lab.get_kind_display(),
            "answer": displayable(lab.answer),
            "correctness": lab.correctness,
            "confidence": lab.confidence,
            "time_spent": time_spent(lab.seconds_spent),
            "note": lab.note,
        }
        for n, lab in enumerate(labels, start=1)
    ]


def time_spent(seconds: float | None) -> str:
    """A label's time from claim to submit, as the adjudicator reads it ("" when not measured)."""
    if seconds is None or seconds < 0:
        return ""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
