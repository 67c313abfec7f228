"""What the blinded item page shows, and the progress numbers. Nothing here may carry model,
checkpoint, run, prompt or reader identity into an annotator-facing context."""

from __future__ import annotations

import functools
import random
import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.utils import timezone
from django.utils.safestring import mark_safe

from adjudication.exports import Column
from adjudication.models import (
    FinalLabel,
    Guidelines,
    Label,
    Lease,
    Question,
    QueueItem,
    Reading,
    Response,
    ReviewItem,
    ReviewQueue,
)
from adjudication.rawsql import column_fields, fetch_all, fetch_one, raw_all, raw_one
from adjudication.review.markup import answer_html, inline_html
from adjudication.review.rendering import response_parts, text_html
from adjudication.routing.rules import MISSING, answer_key, comparable_answer
from adjudication.text import displayable
from readers.base import Item
from readers.canonical import canonical_answer
from readers.options import LETTERS

_PANEL_READINGS_SQL = """
    SELECT r.answer, r.normalized, r.canonical, r.verdict, r.span_start, r.span_end FROM adjudication_reading r
    WHERE r.response_id = %s AND r.reader_spec_id IN (
        SELECT p.readerspec_id FROM adjudication_routingpolicy_panel p WHERE p.routingpolicy_id = %s)
    ORDER BY r.reader_spec_id"""
_PANEL_READING_FIELDS = column_fields(Reading, "answer", "normalized", "canonical", "verdict", "span_start", "span_end")


def candidates_for(item: QueueItem, annotator: User) -> tuple[list[dict], list[tuple[int, int, int]]]:
    question = item.review_item.response.question
    return panel_candidates(
        response_id=item.review_item.response_id,
        policy_id=item.queue.policy_id,
        item_id=item.pk,
        annotator_id=annotator.pk,
        choices=question.choices,
        gold=question.gold,
    )


def panel_candidates(
    *,
    response_id: int,
    policy_id: int,
    item_id: int,
    annotator_id: int,
    choices: Sequence[str] = (),
    gold: str = "",
) -> tuple[list[dict], list[tuple[int, int, int]]]:
    """Distinct candidate answers of the routing panel, anonymised and shuffled per (item, annotator),
    with their spans in the response. Readers are grouped by their canonical answer (so "(C) Merton",
    "option C)" and "$\\boxed{\\text{C}}$" are one candidate, "C"), which is what the candidate
    shows; every span any of them extracted is marked in the response under that one candidate.
    A reading stored without a canonical answer gets one here, from the item; two groups that
    would show the same text are one candidate."""
    item = Item(response="", gold=gold or "", choices=tuple(str(c) for c in choices or ()))
    by_shown: dict[str, set[tuple[int, int]]] = {}
    for answer, normalized, stored_canonical, verdict, span_start, span_end in fetch_all(
        _PANEL_READINGS_SQL, [response_id, policy_id], _PANEL_READING_FIELDS
    ):
        if verdict in MISSING:
            continue
        canonical = stored_canonical if (stored_canonical or "").strip() else canonical_answer(answer, item)
        key = answer_key(comparable_answer(canonical=canonical, normalized=normalized, answer=answer))
        if not key:
            continue
        # What the candidate shows: the canonical answer, else (an answer with none) the raw text.
        shown = (canonical or answer or key).strip()[:200]
        spans_of = by_shown.setdefault(shown, set())
        if span_start is not None and span_end is not None and span_end > span_start:
            spans_of.add((span_start, span_end))
    shown_answers = sorted(by_shown)
    random.Random(f"{item_id}:{annotator_id}").shuffle(shown_answers)
    cands: list[dict] = []
    spans: list[tuple[int, int, int]] = []
    for number, shown in enumerate(shown_answers, start=1):
        cands.append({"number": number, "answer": shown})
        spans.extend((s, e, number) for s, e in sorted(by_shown[shown]))
    return cands, spans


@dataclass(frozen=True)
class LeasedItem:
    """What the annotator's item page needs, loaded in one statement (the page is the hot path of
    the review loop). Blinded by construction: no run, model, checkpoint or reader columns."""

    lease_id: int
    item_id: int
    claimed_at: datetime
    expires_at: datetime
    completed_at: datetime | None
    queue_id: int
    queue_title: str  # never the queue's name: names are the managers' and may name readers
    overlap: int
    show_candidates: bool
    judge_correctness: bool
    policy_id: int
    response_id: int
    response_text: str
    question_text: str
    choices: list
    gold: str


_LEASED_ITEM_SQL = """
    SELECT l.id, l.item_id, l.claimed_at, l.expires_at, l.completed_at, q.id, q.title, q.overlap,
           q.show_candidates, q.judge_correctness, q.policy_id, r.id, r.text, qu.text, qu.choices, qu.gold
    FROM adjudication_lease l
    JOIN adjudication_queueitem qi ON qi.id = l.item_id
    JOIN adjudication_reviewqueue q ON q.id = qi.queue_id
    JOIN adjudication_reviewitem ri ON ri.id = qi.review_item_id
    JOIN adjudication_response r ON r.id = ri.response_id
    JOIN adjudication_question qu ON qu.id = r.question_id
    WHERE l.id = %s AND l.annotator_id = %s"""
_LEASED_ITEM_FIELDS = [
    *column_fields(Lease, "id", "item", "claimed_at", "expires_at", "completed_at"),
    *column_fields(ReviewQueue, "id", "title", "overlap", "show_candidates", "judge_correctness", "policy"),
    *column_fields(Response, "id", "text"),
    *column_fields(Question, "text", "choices", "gold"),
]


def leased_item(*, lease_id: int, annotator: User) -> LeasedItem | None:
    """The annotator's own lease (None for anybody else's: a lease id reveals nothing)."""
    row = fetch_one(_LEASED_ITEM_SQL, [lease_id, annotator.pk], _LEASED_ITEM_FIELDS)
    return None if row is None else LeasedItem(*row)


def shown_item(
    *,
    question: str,
    choices: list,
    gold: str,
    response: str,
    show_gold: bool,
    candidates: tuple[list[dict], list[tuple[int, int, int]]],
) -> dict:
    """What the item pages show of an item: question, options, the response in parts, candidate
    answers and (when asked) the gold, all made displayable."""
    cands, spans = candidates
    # The *_html values are escaped by markup (raw HTML off, maths as escaped TeX text).
    return {
        "question": displayable(question),
        "question_html": mark_safe(text_html(displayable(question))),  # noqa: S308
        "choices": [
            (LETTERS[i], mark_safe(inline_html(displayable(str(text)))))  # noqa: S308
            for i, text in enumerate(choices)
        ],
        "is_mc": bool(choices),
        "parts": response_parts(displayable(response), spans),
        "candidates": [
            {
                **c,
                "answer": displayable(c["answer"]),
                "answer_html": mark_safe(answer_html(displayable(c["answer"]))),  # noqa: S308
            }
            for c in cands
        ],
        "gold": displayable(gold) if show_gold else None,
        "gold_html": mark_safe(answer_html(displayable(gold))) if show_gold else None,  # noqa: S308
    }


def own_label(*, item_id: int, annotator: User) -> Label | None:
    """The annotator's current label of the item (their newest row, a skip included), if any."""
    return Label.objects.filter(item_id=item_id, annotator=annotator).order_by("-created_at", "-id").first()


_PREVIOUS_LEASE_SQL = """
    SELECT l.id FROM adjudication_lease l JOIN adjudication_queueitem qi ON qi.id = l.item_id
    WHERE l.annotator_id = %(annotator)s AND qi.queue_id = %(queue)s AND l.completed_at IS NOT NULL{before}
    ORDER BY l.completed_at DESC, l.id DESC LIMIT 1"""
_PREVIOUS_ANY = _PREVIOUS_LEASE_SQL.format(before="")
_PREVIOUS_BEFORE = _PREVIOUS_LEASE_SQL.format(before=" AND l.completed_at < %(before)s")


def previous_lease_id(*, annotator: User, queue_id: int, before: datetime | None) -> int | None:
    """The annotator's last finished item in this queue before `before` (a completion time; None: the
    newest), so that Back and Backspace walk back through their own labels one by one. Hand-written
    SQL: the item page is the review loop's hot path (see docs/review.md, Performance)."""
    params: dict = {"annotator": annotator.pk, "queue": queue_id}
    if before is None:
        row = raw_one(_PREVIOUS_ANY, params)
    else:
        row = raw_one(_PREVIOUS_BEFORE, {**params, "before": connection.ops.adapt_datetimefield_value(before)})
    return None if row is None else row[0]


def pick_value(label: Label | None) -> str:
    """The label as the item page's pick radio writes it ("option:B", "text:42", "no_answer:")."""
    if label is None or label.kind == Label.Kind.SKIPPED:
        return ""
    return f"{label.kind}:{label.answer}"


def item_page(*, leased: LeasedItem, annotator: User) -> dict:
    cands = (
        panel_candidates(
            response_id=leased.response_id,
            policy_id=leased.policy_id,
            item_id=leased.item_id,
            annotator_id=annotator.pk,
            choices=leased.choices,
            gold=leased.gold,
        )
        if leased.show_candidates
        else ([], [])
    )
    previous = previous_lease_id(annotator=annotator, queue_id=leased.queue_id, before=leased.completed_at)
    guidelines = current_guidelines(queue_id=leased.queue_id)
    return {
        "lease_id": leased.lease_id,
        "queue_id": leased.queue_id,
        "queue_title": leased.queue_title.strip() or f"Queue {leased.queue_id}",
        "guidelines": guidelines,
        # Before the annotator's first label in this queue the guidelines are open; later, behind g.
        "guidelines_open": previous is None and leased.completed_at is None,
        **shown_item(
            question=leased.question_text,
            choices=leased.choices,
            gold=leased.gold,
            response=leased.response_text,
            show_gold=leased.judge_correctness,
            candidates=cands,
        ),
        "judge_correctness": leased.judge_correctness,
        "progress": progress_counts(queue_id=leased.queue_id, overlap=leased.overlap, annotator_id=annotator.pk),
        "expires_at": leased.expires_at,
        "previous_lease_id": previous,
        "pace_seconds": own_pace(queue_id=leased.queue_id, annotator=annotator),
    }


_PACE_SQL = """
    SELECT lab.seconds_spent FROM adjudication_label lab
    WHERE lab.queue_id = %(queue)s AND lab.annotator_id = %(annotator)s AND lab.revises_id IS NULL
      AND lab.kind <> 'skipped' AND lab.seconds_spent IS NOT NULL AND lab.invalidated_at IS NULL
    ORDER BY lab.created_at DESC LIMIT %(last)s"""


def own_pace(*, queue_id: int, annotator: User, last: int = 50) -> float | None:
    """Median seconds the annotator spent on each of their last labels in this queue (skips and
    revisions aside: they measure something else)."""
    seconds = [row[0] for row in raw_all(_PACE_SQL, {"queue": queue_id, "annotator": annotator.pk, "last": last})]
    return statistics.median(seconds) if seconds else None


@dataclass(frozen=True)
class ShownGuidelines:
    version: int
    html: str


_GUIDELINES_SQL = """
    SELECT g.version, g.text FROM adjudication_guidelines g WHERE g.queue_id = %(queue)s
    ORDER BY g.version DESC LIMIT 1"""


@functools.lru_cache(maxsize=64)
def _guidelines_html(text: str) -> str:
    # Guidelines change rarely and every item page shows them: render each text once per process.
    return text_html(text)


def current_guidelines(*, queue_id: int) -> ShownGuidelines | None:
    """The queue's newest guidelines, rendered (escaped Markdown with maths)."""
    row = raw_one(_GUIDELINES_SQL, {"queue": queue_id})
    if row is None:
        return None
    return ShownGuidelines(version=row[0], html=mark_safe(_guidelines_html(row[1])))  # noqa: S308


def guidelines_versions(*, queue: ReviewQueue) -> list[Guidelines]:
    return list(queue.guidelines.order_by("-version").select_related("created_by"))


def annotator_visible_queues(*, annotator: User) -> QuerySet[ReviewQueue]:
    """The queues an annotator sees: not closed, and either assigned to nobody (every annotator) or
    to them. Paused queues are seen (with their progress) but hand out nothing new."""
    assigned = ReviewQueue.annotators.through.objects.filter(reviewqueue_id=OuterRef("pk"))
    return ReviewQueue.objects.exclude(state=ReviewQueue.State.CLOSED).filter(
        ~Exists(assigned) | Exists(assigned.filter(user_id=annotator.pk))
    )


def annotator_candidates(*, queue: ReviewQueue | None = None) -> QuerySet[User]:
    """The users a queue can be assigned to: active members of the annotator group, and whoever the
    queue is assigned to now (so that someone who lost the role can still be unassigned)."""
    users = Q(is_active=True, groups__name="annotator")
    if queue is not None:
        users |= Q(assigned_queues=queue)
    return User.objects.filter(pk__in=User.objects.filter(users).values("pk")).order_by("username")


def users_named(*, usernames: Sequence[str]) -> tuple[list[User], list[str]]:
    """The users of these usernames (each once, sorted) and the usernames nobody has."""
    wanted = set(usernames)
    found = list(User.objects.filter(username__in=wanted).order_by("username"))
    return found, sorted(wanted - {u.username for u in found})


def queue_visible_to(*, queue: ReviewQueue, annotator: User) -> bool:
    return annotator_visible_queues(annotator=annotator).filter(pk=queue.pk).exists()


def annotator_queues(*, annotator: User) -> list[dict]:
    """Each queue as its annotators see it on their landing page: display title, whether it is
    paused, and their own progress (labelled, remaining for them, capped), oldest queue first.
    Closed queues and queues assigned to others are not listed."""
    rows = []
    for queue_id, title, overlap, state in (
        annotator_visible_queues(annotator=annotator)
        .order_by("created_at", "id")
        .values_list("id", "title", "overlap", "state")
    ):
        progress = progress_counts(queue_id=queue_id, overlap=overlap, annotator_id=annotator.pk)
        rows.append(
            {
                "id": queue_id,
                "title": title.strip() or f"Queue {queue_id}",
                "paused": state == ReviewQueue.State.PAUSED,
                **progress,
            }
        )
    return rows


def my_labels(*, queue: ReviewQueue, annotator: User) -> list[dict]:
    """The annotator's current label of each item they finished in this queue, newest first, with the
    lease that reopens it. Blinded: question and own answer only."""
    leases = (
        Lease.objects.filter(annotator=annotator, item__queue=queue, completed_at__isnull=False)
        .select_related("item__review_item__response__question")
        .order_by("-completed_at", "-id")
    )
    own: dict[int, Label] = {}
    for mine in Label.objects.filter(annotator=annotator, item__queue=queue).order_by("created_at", "id"):
        own[mine.item_id] = mine
    rows = []
    for lease in leases:
        label = own.get(lease.item_id)
        rows.append(
            {
                "lease_id": lease.pk,
                "question": displayable(lease.item.review_item.response.question.text)[:160],
                "label": label,
                "answer": displayable(label.answer) if label else "",
                "adjudicated": lease.item.status == QueueItem.Status.ADJUDICATED,
                "revised": label is not None and label.revises_id is not None,
            }
        )
    return rows


def revisit_page(*, leased: LeasedItem, annotator: User) -> dict:
    """A finished item, shown again (Back, Backspace, My labels) with the annotator's label picked:
    revisable until the item is adjudicated."""
    label = own_label(item_id=leased.item_id, annotator=annotator)
    status = QueueItem.objects.filter(pk=leased.item_id).values_list("status", flat=True).first()
    page = item_page(leased=leased, annotator=annotator)
    pick = pick_value(label)
    typed = label is not None and label.kind == Label.Kind.TEXT
    listed = {f"text:{c['answer']}" for c in page["candidates"]}
    return {
        **page,
        "revisit": True,
        "own_label": label,
        "own_pick": "text:" if typed and pick not in listed else pick,
        "own_free_text": label.answer if label is not None and typed and pick not in listed else "",
        "locked": label is None or label.invalidated_at is not None or status == QueueItem.Status.ADJUDICATED,
    }


def adjudication_page(*, item: QueueItem, adjudicator: User) -> dict:
    """The adjudicator's view of a conflicting item: what annotators saw, the gold, and the
    labels as "Annotator 1 / 2"."""
    response = item.review_item.response
    question = response.question
    cands = candidates_for(item, adjudicator) if item.queue.show_candidates else ([], [])
    return {
        "item": item,
        **shown_item(
            question=question.text,
            choices=question.choices,
            gold=question.gold,
            response=response.text,
            show_gold=True,
            candidates=cands,
        ),
        "labels": current_labels_anonymous(item),
        "judge_correctness": item.queue.judge_correctness,
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
    from adjudication.review.labels import agreement

    mine = Label.objects.filter(queue=queue, annotator=adjudicator).values("item_id")
    items = list(queue.items.filter(status=QueueItem.Status.CONFLICT).exclude(id__in=mine).prefetch_related("labels"))
    scored = [(item, agreement(current_labels(item), queue.judge_correctness)) for item in items]
    return sorted(scored, key=lambda pair: (pair[1], -pair[0].priority, pair[0].tiebreak, pair[0].id))


def policy_items_missing(*, queue: ReviewQueue) -> int:
    """How many of its policy's items the queue does not hold (routed since it was last synced)."""
    return ReviewItem.objects.filter(policy_id=queue.policy_id).exclude(queue_items__queue=queue).count()


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
            "note": lab.note,
        }
        for n, lab in enumerate(labels, start=1)
    ]


# Counting every open item of a large queue on each page view costs more than the rest of the
# page (about 10 ms for 35,000 items): beyond this many, "remaining" is shown as "1000+".
REMAINING_CAP = 1000


# One statement, two counts. Both read the annotator's labels in this queue from the (queue,
# annotator, item) index, with no join; NOT IN (item_id is never null) lets PostgreSQL hash that
# list once rather than probe the labels per open item. Open items are counted only up to
# REMAINING_CAP + 1, so a 100,000-item queue costs what a 1,000-item one does.
_PROGRESS_SQL = """
    SELECT (SELECT count(DISTINCT lab.item_id) FROM adjudication_label lab
            WHERE lab.queue_id = %(queue)s AND lab.annotator_id = %(annotator)s AND lab.invalidated_at IS NULL),
           (SELECT count(*) FROM (
                SELECT 1 FROM adjudication_queueitem qi
                WHERE qi.queue_id = %(queue)s AND qi.status = 'open' AND qi.label_count < %(overlap)s
                  AND qi.id NOT IN (SELECT lab.item_id FROM adjudication_label lab
                                    WHERE lab.queue_id = %(queue)s AND lab.annotator_id = %(annotator)s
                                      AND lab.invalidated_at IS NULL)
                LIMIT %(limit)s) open_items)"""


def annotator_progress(*, queue: ReviewQueue, annotator: User) -> dict:
    return progress_counts(queue_id=queue.pk, overlap=queue.overlap, annotator_id=annotator.pk)


def progress_counts(*, queue_id: int, overlap: int, annotator_id: int) -> dict:
    row = raw_one(
        _PROGRESS_SQL, {"queue": queue_id, "annotator": annotator_id, "overlap": overlap, "limit": REMAINING_CAP + 1}
    )
    assert row is not None  # a SELECT of two scalar subqueries: always one row
    done, remaining = row
    return {"done": done, "remaining": min(remaining, REMAINING_CAP), "remaining_more": remaining > REMAINING_CAP}


def queue_status(*, queue: ReviewQueue) -> dict:
    now = timezone.now()
    counts = dict(queue.items.values_list("status").annotate(n=Count("id")))
    leased = queue.items.filter(leases__completed_at__isnull=True, leases__expires_at__gt=now).distinct().count()
    open_items = counts.get(QueueItem.Status.OPEN, 0)
    labelled = queue.items.filter(label_count__gt=0).count()
    skipped = open_item_skips(queue=queue).values("item_id").distinct().count()
    return {
        "items": sum(counts.values()),
        "pending": open_items,
        "leased": leased,
        "labelled": labelled,
        "conflicting": counts.get(QueueItem.Status.CONFLICT, 0),
        "agreed": counts.get(QueueItem.Status.AGREED, 0),
        "adjudicated": counts.get(QueueItem.Status.ADJUDICATED, 0),
        "skipped": skipped,
        **queue_eta(queue=queue, now=now),
    }


def open_item_skips(*, queue: ReviewQueue) -> QuerySet[Label]:
    """Current skips (not revised into a label) on the queue's open items: the ones that can leave an
    item stuck, when every annotator left has labelled or skipped it."""
    return Label.objects.filter(item__queue=queue, kind=Label.Kind.SKIPPED, item__status=QueueItem.Status.OPEN).exclude(
        revisions__isnull=False
    )


def queue_eta(*, queue: ReviewQueue, now: datetime) -> dict:
    """Labels still wanted, and how long they take at the queue's recent pace: the median seconds
    per label of its last 200 labels, shared by the annotators who labelled in the last 24 hours."""
    wanted = (
        queue.items.filter(status=QueueItem.Status.OPEN).aggregate(
            n=Sum(Value(queue.overlap) - F("label_count"), output_field=IntegerField())
        )["n"]
        or 0
    )
    # seconds_spent__isnull=False: the column is nullable, these values are not.
    recent = cast(
        "list[float]",
        list(
            Label.objects.filter(queue=queue, revises__isnull=True, seconds_spent__isnull=False)
            .exclude(kind=Label.Kind.SKIPPED)
            .order_by("-created_at")
            .values_list("seconds_spent", flat=True)[:200]
        ),
    )
    active = (
        Label.objects.filter(queue=queue, created_at__gte=now - timedelta(hours=24))
        .values("annotator_id")
        .distinct()
        .count()
    )
    if not wanted or not recent:
        return {"labels_wanted": wanted, "eta_hours": None, "active_annotators": active}
    seconds = wanted * statistics.median(recent) / max(active, 1)
    return {"labels_wanted": wanted, "eta_hours": seconds / 3600, "active_annotators": active}


def annotator_stats(*, queue: ReviewQueue) -> list[dict]:
    rows = []
    by_user: dict[int, list[float]] = {}
    names: dict[int, str] = {}
    for annotator_id, username, seconds in Label.objects.filter(item__queue=queue, revises__isnull=True).values_list(
        "annotator_id", "annotator__username", "seconds_spent"
    ):
        by_user.setdefault(annotator_id, []).append(seconds or 0.0)
        names[annotator_id] = username
    for uid, spent in sorted(by_user.items(), key=lambda kv: names[kv[0]]):
        rows.append({"annotator": names[uid], "count": len(spent), "median_seconds": statistics.median(spent)})
    return rows


# The final-labels export: one row per item that has left "needs labels", flat (CSV, Parquet). The
# JSONL rows also nest the item's labels ("labels": LABEL_COLUMNS less the item's own columns), every
# decision made on it ("decision_history", invalidated ones included) and the routing reason.
FINAL_LABEL_COLUMNS = (
    Column("response_id"),
    Column("item_id", "int"),
    Column("model"),
    Column("checkpoint"),
    Column("benchmark"),
    Column("prompt"),
    Column("is_control", "bool"),
    Column("priority", "float"),
    Column("status"),
    Column("final_kind"),
    Column("final_answer"),
    Column("final_correctness"),
    Column("provenance"),
    Column("error_type"),
    Column("final_notes"),
    Column("decided_by"),
    Column("decided_at", "time"),
    Column("decision_count", "int"),
    Column("label_count", "int"),
    Column("replaced_at", "time"),
)

# The labels export: one row per individual label of a queue, history included (revised rows, and
# rows invalidated when the response text was replaced or a skip re-opened).
LABEL_COLUMNS = (
    Column("label_id", "int"),
    Column("item_id", "int"),
    Column("response_id"),
    Column("annotator"),
    Column("created_at", "time"),
    Column("kind"),
    Column("answer"),
    Column("correctness"),
    Column("confidence", "int"),
    Column("note"),
    Column("skip_reason"),
    Column("guidelines_version", "int"),
    Column("seconds_spent", "float"),
    Column("revises", "int"),
    Column("invalidated_at", "time"),
    Column("current", "bool"),
)
_LABEL_FIELDS = (
    "id",
    "item_id",
    "item__review_item__response__external_id",
    "annotator__username",
    "created_at",
    "kind",
    "answer",
    "correctness",
    "confidence",
    "note",
    "skip_reason",
    "guidelines_version",
    "seconds_spent",
    "revises_id",
    "invalidated_at",
    "is_current",
)
_ITEM_OWN = ("item_id", "response_id")

# What an export says of a final label whose provenance is "unresolved": no answer was decided (the
# row stores kind "ambiguous" with an empty answer; the export does not pretend that was a verdict).
UNRESOLVED = "unresolved"


def label_rows(*, queue: ReviewQueue) -> Iterator[dict]:
    """Every label of the queue (LABEL_COLUMNS), history included, by item and time. `current`: the
    row is its annotator's standing label of the item (valid, and no valid row of theirs is newer)."""
    newer = Label.objects.filter(item_id=OuterRef("item_id"), annotator_id=OuterRef("annotator_id")).filter(
        Q(created_at__gt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), id__gt=OuterRef("id"))
    )
    rows = (
        Label.all_objects.filter(queue=queue)
        .annotate(
            is_current=ExpressionWrapper(Q(invalidated_at__isnull=True) & ~Exists(newer), output_field=BooleanField())
        )
        .order_by("item_id", "created_at", "id")
        .values_list(*_LABEL_FIELDS)
    )
    names = [c.name for c in LABEL_COLUMNS]
    for values in rows.iterator(chunk_size=5000):
        yield dict(zip(names, values))


def _decision(final: FinalLabel) -> dict:
    unresolved = final.provenance == FinalLabel.Provenance.UNRESOLVED
    return {
        "kind": UNRESOLVED if unresolved else final.kind,
        "answer": final.answer,
        "correctness": final.correctness,
        "provenance": final.provenance,
        "error_type": final.error_type,
        "notes": final.notes,
        "decided_by": final.decided_by.username if final.decided_by else None,
        "decided_at": final.created_at,
        "invalidated_at": final.invalidated_at,
    }


def final_labels(*, queue: ReviewQueue) -> list[dict]:
    """Every item with a final label (FINAL_LABEL_COLUMNS): its newest standing final label with who
    decided it and when, and (nested, for JSONL) every label of the item and every decision made."""
    labels: dict[int, list[dict]] = {}
    for row in label_rows(queue=queue):
        labels.setdefault(row["item_id"], []).append({k: v for k, v in row.items() if k not in _ITEM_OWN})
    decisions: dict[int, list[FinalLabel]] = {}
    finals = FinalLabel.all_objects.filter(item__queue=queue).select_related("decided_by").order_by("created_at", "id")
    for final in finals:
        decisions.setdefault(final.item_id, []).append(final)
    items = (
        queue.items.filter(~Q(status=QueueItem.Status.OPEN))
        .select_related("review_item__response__run")
        .defer("review_item__response__text", "review_item__response__prompt_text", "review_item__response__meta")
        .order_by("id")
    )
    out = []
    for item in items:
        review_item, response = item.review_item, item.review_item.response
        history = decisions.get(item.pk, [])
        standing = [f for f in history if f.invalidated_at is None]
        newest = _decision(standing[-1]) if standing else {}
        item_labels = labels.get(item.pk, [])
        out.append(
            {
                "item_id": item.pk,
                "response_id": response.external_id,
                "model": response.run.model,
                "checkpoint": response.run.checkpoint,
                "benchmark": response.run.benchmark,
                "prompt": response.run.prompt,
                "is_control": review_item.is_control,
                "priority": item.priority,
                "status": item.status,
                "final_kind": newest.get("kind"),
                "final_answer": newest.get("answer"),
                "final_correctness": newest.get("correctness"),
                "provenance": newest.get("provenance"),
                "error_type": newest.get("error_type", ""),
                "final_notes": newest.get("notes", ""),
                "decided_by": newest.get("decided_by"),
                "decided_at": newest.get("decided_at"),
                "decision_count": len(standing),
                "label_count": len(item_labels),
                "replaced_at": review_item.replaced_at,
                "labels": item_labels,
                "decision_history": [_decision(f) for f in history],
                "routing_reason": review_item.reason,
            }
        )
    return out


QUEUE_TABLES = ("final-labels", "labels")


def queue_export_table(*, queue: ReviewQueue, table: str) -> tuple[Iterable[dict], tuple[Column, ...]]:
    """A queue's export table and its columns: "final-labels" (one row per decided item) or "labels"
    (one row per individual label)."""
    if table == "final-labels":
        return final_labels(queue=queue), FINAL_LABEL_COLUMNS
    if table == "labels":
        return label_rows(queue=queue), LABEL_COLUMNS
    raise ValueError(f"unknown queue table {table!r}")


def current_labels(item: QueueItem) -> list[Label]:
    """Each annotator's newest label of the item, skips excluded."""
    newest: dict[int, Label] = {}
    # Sorted here, not with order_by(): .all() answers from a prefetch (the adjudication list
    # prefetches every item's labels), so a list of n items costs no n extra queries.
    for label in sorted(item.labels.all(), key=lambda lab: (lab.created_at, lab.id)):
        newest[label.annotator_id] = label
    return [lab for lab in newest.values() if lab.kind != Label.Kind.SKIPPED]
