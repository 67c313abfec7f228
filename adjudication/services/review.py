"""Review queues: claiming items under leases, labelling, agreement and adjudication.

Concurrency invariant: every change to an item's label count, and every lease granted on it,
happens while holding that QueueItem row's lock (SELECT … FOR UPDATE). So "labels + live leases
< overlap" is checked and acted on atomically, and no item ever gets more than `overlap` labels.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from ..models import (Dataset, FinalLabel, Label, Lease, Question, QueueItem, Reading, ReviewItem, ReviewQueue,
                      RoutingPolicy)
from ..rawsql import convert_row, execute, fetch_one
from .routing import review_items_route, routing_policy_create

CLAIM_ATTEMPTS = 25  # rows tried (one locked at a time) per claim before reporting "busy"


class ReviewError(Exception):
    """A request the review flow refuses (expired lease, wrong annotator, bad label)."""


@dataclass
class Claim:
    lease: Lease | None
    busy: bool = False  # items remain but were momentarily locked by other claims: try again


def queue_create(
    *, dataset: Dataset, name: str, policy: RoutingPolicy | None = None, panel: list[str] | None = None,
    overlap: int = 2, lease_seconds: int = 900, show_candidates: bool = True, judge_correctness: bool = False,
    control_fraction: float = 0.0, seed: int = 0, missing_is_disagreement: bool = False, compare: str = "either",
    created_by: User | None = None,
) -> ReviewQueue:
    """A queue over a routing policy's items. Without a policy, one is made from `panel` (default:
    every rule reader that has read this dataset) and routed now."""
    if overlap < 1:
        raise ReviewError("overlap must be at least 1")
    if lease_seconds < 10:
        raise ReviewError("a lease must last at least 10 seconds")
    if ReviewQueue.objects.filter(name=name).exists():
        raise ReviewError(f"a queue named {name!r} exists already")
    with transaction.atomic():
        if policy is None:
            if not panel:
                panel = sorted(set(Reading.objects.filter(response__dataset=dataset, reader_spec__kind="rule")
                                   .values_list("reader_spec__name", flat=True)))
            if len(panel) < 2:
                raise ReviewError("the dataset needs readings by at least two readers (run_readers) to route disagreements")
            try:
                policy = routing_policy_create(
                    dataset=dataset, name=f"queue:{name}", panel=panel, compare=compare,
                    missing_is_disagreement=missing_is_disagreement, control_fraction=control_fraction, seed=seed)
            except ValueError as exc:
                raise ReviewError(str(exc)) from exc
        queue = ReviewQueue.objects.create(
            name=name, dataset=dataset, policy=policy, overlap=overlap, lease_seconds=lease_seconds,
            show_candidates=show_candidates, judge_correctness=judge_correctness, created_by=created_by)
    queue_sync(queue=queue)
    return queue


def queue_sync(*, queue: ReviewQueue) -> int:
    """Route newly disputed responses and add the policy's new items to the queue."""
    review_items_route(policy=queue.policy)
    items = [QueueItem(queue=queue, review_item=ri, priority=ri.priority)
             for ri in ReviewItem.objects.filter(policy=queue.policy).exclude(queue_items__queue=queue)]
    QueueItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    return len(items)


def _live(now):
    return Q(completed_at__isnull=True, expires_at__gt=now)


# Raw SQL: the claim runs on every "next item", and building these statements through the ORM
# cost more CPU than PostgreSQL spends executing them (bench/review_bench.py).
_CURRENT_LEASE_SQL = """
    SELECT l.id FROM adjudication_lease l
    JOIN adjudication_queueitem qi ON qi.id = l.item_id
    WHERE qi.queue_id = %(queue)s AND l.annotator_id = %(annotator)s
      AND l.completed_at IS NULL AND l.expires_at > %(now)s
    ORDER BY l.claimed_at, l.id LIMIT 1"""
_WITH_ROOM_SQL = """
    SELECT qi.id FROM adjudication_queueitem qi
    WHERE qi.queue_id = %(queue)s AND qi.status = 'open' AND qi.label_count < %(overlap)s
      AND NOT EXISTS (SELECT 1 FROM adjudication_label lab
                      WHERE lab.item_id = qi.id AND lab.annotator_id = %(annotator)s)
      AND qi.label_count + (SELECT count(*) FROM adjudication_lease l
                            WHERE l.item_id = qi.id AND l.completed_at IS NULL AND l.expires_at > %(now)s)
          < %(overlap)s"""
_BY_PRIORITY = " ORDER BY qi.priority DESC, qi.id LIMIT 1"
# A statement of its own, so that under READ COMMITTED it counts the leases committed while we
# waited for the row lock: the candidate query's snapshot may predate them.
_LEASE_IF_ROOM_SQL = """
    INSERT INTO adjudication_lease (item_id, annotator_id, claimed_at, expires_at, completed_at)
    SELECT qi.id, %(annotator)s, %(now)s, %(expires)s, NULL FROM adjudication_queueitem qi
    WHERE qi.id = %(item)s AND qi.label_count + (
        SELECT count(*) FROM adjudication_lease l
        WHERE l.item_id = qi.id AND l.completed_at IS NULL AND l.expires_at > %(now)s) < %(overlap)s
    RETURNING id"""


def lease_claim_next(*, queue: ReviewQueue, annotator: User) -> Claim:
    """The annotator's next item: an unfinished live lease first; else the highest-priority open
    item they have not labelled or skipped, whose labels + live leases leave room.

    One row is locked per attempt (LIMIT 1 FOR UPDATE SKIP LOCKED over the items with room), so
    concurrent claims and label submissions do not queue behind a window of locked rows; the room
    is re-counted under the lock, since the query's snapshot may predate a lease committed since."""
    now = timezone.now()
    expires = now + timedelta(seconds=queue.lease_seconds)
    adapt = connection.ops.adapt_datetimefield_value
    params = {"queue": queue.pk, "annotator": annotator.pk, "now": adapt(now), "overlap": queue.overlap,
              "expires": adapt(expires)}
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    with transaction.atomic(), connection.cursor() as cursor:
        execute(cursor, _CURRENT_LEASE_SQL, params)
        row = cursor.fetchone()
        if row is not None:
            return Claim(Lease.objects.get(pk=row[0]))
        tried: list[int] = []

        def with_room() -> str:
            # Rows whose room ran out under our lock are passed over in the next attempt.
            not_tried = "".join(f" AND qi.id <> {int(pk)}" for pk in tried)
            return _WITH_ROOM_SQL + not_tried + _BY_PRIORITY

        for _ in range(CLAIM_ATTEMPTS):
            execute(cursor, with_room() + lock, params)
            row = cursor.fetchone()
            if row is None:
                break
            execute(cursor, _LEASE_IF_ROOM_SQL, {**params, "item": row[0]})
            granted = cursor.fetchone()
            if granted is not None:
                return Claim(Lease(id=granted[0], item_id=row[0], annotator=annotator, claimed_at=now,
                                   expires_at=expires))
            tried.append(row[0])
        # Nothing claimable among the rows we could lock. If items with room exist that others
        # hold locked right now, report busy rather than "done".
        execute(cursor, with_room(), params)
        return Claim(None, busy=cursor.fetchone() is not None)


_SPACES = re.compile(r"\s+")


def normalise_answer(kind: str, answer: str) -> str:
    if kind == Label.Kind.OPTION:
        return answer.strip().strip("()").strip().upper()
    if kind == Label.Kind.TEXT:
        return _SPACES.sub(" ", answer.strip()).casefold()
    return ""


def _label_key(label: Label | FinalLabel, judge_correctness: bool) -> tuple:
    key = (label.kind, normalise_answer(label.kind, label.answer))
    return key + ((label.correctness,) if judge_correctness else ())


def current_labels(item: QueueItem) -> list[Label]:
    """Each annotator's newest label of the item, skips excluded."""
    newest: dict[int, Label] = {}
    for label in item.labels.order_by("created_at", "id"):
        newest[label.annotator_id] = label
    return [lab for lab in newest.values() if lab.kind != Label.Kind.SKIPPED]


def agreement(labels: list[Label], judge_correctness: bool) -> float:
    if not labels:
        return 1.0
    counts = Counter(_label_key(lab, judge_correctness) for lab in labels)
    return counts.most_common(1)[0][1] / len(labels)


_LOCK_ITEM_SQL = """
    SELECT qi.id, qi.queue_id, qi.review_item_id, qi.priority, qi.label_count, qi.status,
           q.id, q.name, q.overlap, q.judge_correctness, qu.choices
    FROM adjudication_queueitem qi
    JOIN adjudication_reviewqueue q ON q.id = qi.queue_id
    JOIN adjudication_reviewitem ri ON ri.id = qi.review_item_id
    JOIN adjudication_response r ON r.id = ri.response_id
    JOIN adjudication_question qu ON qu.id = r.question_id
    WHERE qi.id = %s"""
_ITEM_COLUMNS = ["id", "queue_id", "review_item_id", "priority", "label_count", "status"]
_QUEUE_COLUMNS = ["id", "name", "overlap", "judge_correctness"]
_LOCK_ITEM_FIELDS = [*(QueueItem._meta.get_field(n.removesuffix("_id")) for n in _ITEM_COLUMNS),
                     *(ReviewQueue._meta.get_field(n) for n in _QUEUE_COLUMNS),
                     Question._meta.get_field("choices")]


def _lock_item(item_id: int) -> tuple[QueueItem, list]:
    """The item, locked (only its own row: not the queue, response or question), with its queue
    (the fields labelling needs; others load on access) and the question's options.
    Must run inside a transaction."""
    lock = " FOR UPDATE OF qi" if connection.features.has_select_for_update_of else ""
    row = fetch_one(_LOCK_ITEM_SQL + lock, [item_id], _LOCK_ITEM_FIELDS)
    if row is None:
        raise QueueItem.DoesNotExist(f"queue item {item_id}")
    n = len(_ITEM_COLUMNS)
    item = QueueItem.from_db("default", _ITEM_COLUMNS, row[:n])
    item.queue = ReviewQueue.from_db("default", _QUEUE_COLUMNS, row[n:n + len(_QUEUE_COLUMNS)])
    return item, row[-1]


def _validate(queue: ReviewQueue, choices: list, kind: str, answer: str, correctness: str,
              confidence: int | None) -> str:
    if kind not in Label.Kind.values:
        raise ReviewError(f"unknown label kind {kind!r}")
    if kind == Label.Kind.OPTION:
        letter = answer.strip().strip("()").strip().upper()
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(choices)]
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
    if correctness and not queue.judge_correctness:
        correctness = ""
    if confidence is not None and not 1 <= confidence <= 5:
        raise ReviewError("confidence must be 1–5")
    return answer


_LOCK_LEASE_SQL = """
    SELECT l.annotator_id, l.claimed_at, l.expires_at, l.completed_at,
           EXISTS (SELECT 1 FROM adjudication_label lab
                   WHERE lab.item_id = l.item_id AND lab.annotator_id = %(annotator)s)
    FROM adjudication_lease l WHERE l.id = %(lease)s"""
_LOCK_LEASE_FIELDS = [Lease._meta.get_field(n) for n in ("annotator", "claimed_at", "expires_at", "completed_at")]


def label_submit(*, lease: Lease, annotator: User, kind: str, answer: str = "", correctness: str = "",
                 confidence: int | None = None, note: str = "", skip_reason: str = "") -> Label:
    """Record the annotator's label for the leased item and complete the lease."""
    now = timezone.now()
    lock = " FOR UPDATE OF l" if connection.features.has_select_for_update_of else ""
    with transaction.atomic():
        item, choices = _lock_item(lease.item_id)
        queue = item.queue
        with connection.cursor() as cursor:
            execute(cursor, _LOCK_LEASE_SQL + lock, {"annotator": annotator.pk, "lease": lease.pk})
            row = cursor.fetchone()
        if row is None:
            raise ReviewError("no such lease")
        annotator_id, claimed_at, expires_at, completed_at = convert_row(row[:4], _LOCK_LEASE_FIELDS)
        if annotator_id != annotator.id:
            raise ReviewError("this item is leased to someone else")
        if completed_at is not None:
            raise ReviewError("this item was already labelled; revise the label instead")
        if row[4]:
            raise ReviewError("you have already labelled this item")
        if expires_at <= now and kind != Label.Kind.SKIPPED:
            # An expired lease went back to the pool; honour it only if the item still has room.
            others = Lease.objects.filter(_live(now), item=item).exclude(annotator=annotator).count()
            if item.label_count + others >= queue.overlap:
                raise ReviewError("your lease expired and the item has been labelled by others meanwhile")
        answer = _validate(queue, choices, kind, answer, correctness, confidence)
        if kind == Label.Kind.SKIPPED and not skip_reason.strip():
            raise ReviewError("a skip needs a reason")
        label = Label.objects.create(
            item=item, annotator=annotator, kind=kind, answer=answer, correctness=correctness,
            confidence=confidence, note=note, skip_reason=skip_reason.strip(),
            seconds_spent=(now - claimed_at).total_seconds())
        Lease.objects.filter(pk=lease.pk).update(completed_at=now)
        if kind != Label.Kind.SKIPPED:
            item.label_count += 1
            _settle(item, queue)
            item.save(update_fields=["label_count", "status"])
        return label


def label_revise(*, label: Label, annotator: User, kind: str, answer: str = "", correctness: str = "",
                 confidence: int | None = None, note: str = "") -> Label:
    """A new label row revising the annotator's earlier one (the old row is kept)."""
    with transaction.atomic():
        item, choices = _lock_item(label.item_id)
        if label.annotator_id != annotator.id:
            raise ReviewError("only the author can revise a label")
        if item.status == QueueItem.Status.ADJUDICATED:
            raise ReviewError("the item is adjudicated; ask an adjudicator")
        if kind == Label.Kind.SKIPPED:
            raise ReviewError("a label cannot be revised into a skip")
        answer = _validate(item.queue, choices, kind, answer, correctness, confidence)
        new = Label.objects.create(item=item, annotator=annotator, kind=kind, answer=answer, correctness=correctness,
                                   confidence=confidence, note=note, revises=label)
        if label.kind == Label.Kind.SKIPPED:
            item.label_count += 1
        _settle(item, item.queue)
        item.save(update_fields=["label_count", "status"])
        return new


def _settle(item: QueueItem, queue: ReviewQueue) -> None:
    """With k labels in, an item is either agreed (final label: unanimous) or in conflict."""
    if item.label_count < queue.overlap or item.status == QueueItem.Status.ADJUDICATED:
        return
    labels = current_labels(item)
    if agreement(labels, queue.judge_correctness) == 1.0:
        first = labels[0]
        FinalLabel.objects.create(item=item, kind=first.kind, answer=first.answer, correctness=first.correctness,
                                  provenance=FinalLabel.Provenance.UNANIMOUS)
        item.status = QueueItem.Status.AGREED
    else:
        item.status = QueueItem.Status.CONFLICT


def adjudication_queue(*, queue: ReviewQueue) -> list[tuple[QueueItem, float]]:
    """Conflicting items, lowest agreement first."""
    items = list(queue.items.filter(status=QueueItem.Status.CONFLICT).prefetch_related("labels"))
    scored = [(item, agreement(current_labels(item), queue.judge_correctness)) for item in items]
    return sorted(scored, key=lambda pair: (pair[1], -pair[0].priority, pair[0].id))


def final_label_adjudicate(*, item: QueueItem, adjudicator: User, kind: str, answer: str = "", correctness: str = "",
                           error_type: str = "", notes: str = "", unresolved: bool = False) -> FinalLabel:
    with transaction.atomic():
        item, choices = _lock_item(item.pk)
        if item.status not in (QueueItem.Status.CONFLICT, QueueItem.Status.ADJUDICATED):
            raise ReviewError("only items whose labels conflict are adjudicated")
        if error_type not in FinalLabel.ErrorType.values:
            raise ReviewError(f"unknown error type {error_type!r}")
        if unresolved:
            kind, answer, correctness = Label.Kind.AMBIGUOUS, "", ""
        elif kind == Label.Kind.SKIPPED:
            raise ReviewError("a final label cannot be a skip")
        else:
            answer = _validate(item.queue, choices, kind, answer, correctness, None)
        final = FinalLabel.objects.create(
            item=item, kind=kind, answer=answer, correctness=correctness, error_type=error_type, notes=notes,
            provenance=FinalLabel.Provenance.UNRESOLVED if unresolved else FinalLabel.Provenance.ADJUDICATED,
            decided_by=adjudicator)
        item.status = QueueItem.Status.ADJUDICATED
        item.save(update_fields=["status"])
        return final
