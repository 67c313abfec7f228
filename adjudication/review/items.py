"""A queue item's rules, shared by the rooms that write labels (annotate: labels and revisions;
adjudicate: final labels; queues: invalidation): the item's row lock, which live leases hold it, how
a label entry is checked for its queue, each annotator's current label, and how labels settle an
item (agreed, or in conflict).

Concurrency invariant: every change to an item's label count, and every lease granted on it,
happens while holding that QueueItem row's lock (SELECT … FOR UPDATE). So "labels + live leases
< overlap" is checked and acted on atomically, and no item ever gets more than `overlap` labels.
Nothing here knows model, checkpoint, run or reader identity: the annotator's room imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from adjudication.models import FinalLabel, Label, Question, QueueItem, ReviewItem, ReviewQueue
from adjudication.rawsql import column_fields, fetch_one
from adjudication.review.errors import ReviewError
from adjudication.review.labels import LabelEntry, agreement, label_key
from adjudication.routing.refresh import information_refresh_request
from adjudication.validators import free_text_problem
from readers.options import letters as option_letters

MAX_FREE_TEXT = 10_000  # characters of a note, reason or typed answer


def live_leases(now: datetime) -> Q:
    """The leases that still hold their item at `now` (a filter on Lease)."""
    return Q(completed_at__isnull=True, expires_at__gt=now)


_LOCK_ITEM_SQL = """
    SELECT qi.id, qi.queue_id, qi.review_item_id, qi.priority, qi.label_count, qi.status,
           q.id, q.name, q.dataset_id, q.policy_id, q.overlap, q.judge_correctness, qu.choices, ri.replaced_at
    FROM adjudication_queueitem qi
    JOIN adjudication_reviewqueue q ON q.id = qi.queue_id
    JOIN adjudication_reviewitem ri ON ri.id = qi.review_item_id
    JOIN adjudication_response r ON r.id = ri.response_id
    JOIN adjudication_question qu ON qu.id = r.question_id
    WHERE qi.id = %s"""

_ITEM_COLUMNS = ["id", "queue_id", "review_item_id", "priority", "label_count", "status"]

# In the model's field order (Model.from_db assigns a partial row's values in that order).
# dataset_id: every label write raises the dataset's data version, without a query of its own.
# policy_id: a final label asks an information policy for a refit (routing.services), no query either.
_QUEUE_COLUMNS = ["id", "name", "dataset_id", "policy_id", "overlap", "judge_correctness"]

_LOCK_ITEM_FIELDS = [
    *column_fields(QueueItem, *(n.removesuffix("_id") for n in _ITEM_COLUMNS)),
    *column_fields(ReviewQueue, *(n.removesuffix("_id") for n in _QUEUE_COLUMNS)),
    *column_fields(Question, "choices"),
    *column_fields(ReviewItem, "replaced_at"),
]


@dataclass(frozen=True)
class LockedItem:
    item: QueueItem
    choices: list
    replaced_at: datetime | None


def lock_item(item_id: int) -> LockedItem:
    """The item, locked (only its own row: not the queue, response or question), with its queue
    (the fields labelling needs; others load on access), the question's options and when the
    response text was last replaced. Must run inside a transaction."""
    lock = " FOR UPDATE OF qi" if connection.features.has_select_for_update_of else ""
    row = fetch_one(_LOCK_ITEM_SQL + lock, [item_id], _LOCK_ITEM_FIELDS)
    if row is None:
        raise QueueItem.DoesNotExist(f"queue item {item_id}")
    n = len(_ITEM_COLUMNS)
    item = QueueItem.from_db("default", _ITEM_COLUMNS, row[:n])
    item.queue = ReviewQueue.from_db("default", _QUEUE_COLUMNS, row[n : n + len(_QUEUE_COLUMNS)])
    return LockedItem(item, row[-2], row[-1])


def check_text(field: str, value: str) -> None:
    problem = free_text_problem(value)
    if problem:
        raise ReviewError(f"{field} {problem}")
    if len(value) > MAX_FREE_TEXT:
        raise ReviewError(f"{field} must be at most {MAX_FREE_TEXT} characters")


def validate_entry(queue: ReviewQueue, choices: list, entry: LabelEntry) -> LabelEntry:
    """The entry as it may be stored: only what the queue asked for, normalised. Whatever the caller
    sent, a field the queue did not ask for is stored empty: a correctness on a queue that does not
    judge it would otherwise make its way into the unanimous final label and into agreement."""
    kind, answer, correctness, confidence = entry.kind, entry.answer, entry.correctness, entry.confidence
    if kind not in Label.Kind.values:
        raise ReviewError(f"unknown label kind {kind!r}")
    check_text("the answer", answer)
    if kind == Label.Kind.OPTION:
        letter = answer.strip().strip("()").strip().upper()
        letters = option_letters(len(choices))
        if len(letter) != 1 or letter not in letters:
            raise ReviewError(f"an option label must be one of {', '.join(letters) or '(no options)'}")
        answer = letter
    elif kind == Label.Kind.TEXT:
        answer = answer.strip()
        if not answer:
            raise ReviewError("a free-text label needs the answer text")
    else:
        answer = ""
    if correctness not in ("", "correct", "incorrect"):
        raise ReviewError("correctness must be correct, incorrect or empty")
    if not queue.judge_correctness or kind == Label.Kind.SKIPPED:
        correctness = ""
    if confidence is not None and (isinstance(confidence, bool) or not 1 <= confidence <= 5):
        raise ReviewError("confidence must be 1–5")
    check_text("the note", entry.note)
    return replace(entry, answer=answer, correctness=correctness)


def settle(
    item: QueueItem, queue: ReviewQueue, *, labels: list[Label] | None = None, now: datetime | None = None
) -> None:
    """With k labels in, an item is either agreed (one standing final label: unanimous) or in
    conflict (none). The same rule settles a new label and re-settles a revised one: a standing
    unanimous final label that no longer matches the labels is invalidated (kept as history), one
    that still matches stands as it is, so an item never holds two."""
    if item.label_count < queue.overlap or item.status == QueueItem.Status.ADJUDICATED:
        return
    labels = current_labels(item) if labels is None else labels
    # Only a settled item can hold a standing final label; a first settle (every new label's)
    # costs no query for it.
    standing = [] if item.status == QueueItem.Status.OPEN else list(FinalLabel.objects.filter(item_id=item.pk))
    kept: FinalLabel | None = None
    if agreement(labels, queue.judge_correctness) == 1.0:
        first = labels[0]
        key = label_key(first, queue.judge_correctness)
        kept = next(
            (
                f
                for f in standing
                if f.provenance == FinalLabel.Provenance.UNANIMOUS and label_key(f, queue.judge_correctness) == key
            ),
            None,
        )
        if kept is None:
            FinalLabel.objects.create(
                item=item,
                kind=first.kind,
                answer=first.answer,
                correctness=first.correctness,
                provenance=FinalLabel.Provenance.UNANIMOUS,
            )
        item.status = QueueItem.Status.AGREED
    else:
        item.status = QueueItem.Status.CONFLICT
    stale = [f.pk for f in standing if f is not kept]
    if stale:
        FinalLabel.objects.filter(pk__in=stale).update(invalidated_at=now or timezone.now())
    if stale or (item.status == QueueItem.Status.AGREED and kept is None):
        information_refresh_request(policy_id=queue.policy_id)


def current_labels(item: QueueItem) -> list[Label]:
    """Each annotator's newest label of the item, skips excluded."""
    newest: dict[int, Label] = {}
    # Sorted here, not with order_by(): .all() answers from a prefetch (the adjudication list
    # prefetches every item's labels), so a list of n items costs no n extra queries.
    for label in sorted(item.labels.all(), key=lambda lab: (lab.created_at, lab.id)):
        newest[label.annotator_id] = label
    return [lab for lab in newest.values() if lab.kind != Label.Kind.SKIPPED]
