"""The annotator's writes: claiming the next item under a lease, labelling it, revising a label.
The item's lock, the entry's check and settling are review.items' (shared with the adjudicator's
final labels)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from adjudication.models import Guidelines, Label, Lease, QueueItem, ReviewQueue
from adjudication.rawsql import column_fields, convert_row, raw_all, raw_one
from adjudication.review.errors import ReviewError
from adjudication.review.items import (
    check_text,
    current_labels,
    live_leases,
    lock_item,
    settle,
    validate_entry,
)
from adjudication.review.labels import LabelEntry
from adjudication.revisions import dataset_changed

CLAIM_ATTEMPTS = 25  # rows tried (one locked at a time) per claim before reporting "busy"


@dataclass
class Claim:
    lease: Lease | None
    busy: bool = False  # items remain but were momentarily locked by other claims: try again
    # Why no new item was handed out although the queue may hold some: "paused", "closed" or
    # "not_assigned" (the queue has assigned annotators and this is not one of them); "" otherwise.
    refused: str = ""

    @property
    def refusal(self) -> str:
        """The refusal as a sentence for the annotator (never the queue's name)."""
        return CLAIM_REFUSALS.get(self.refused, "")


CLAIM_REFUSALS = {
    "paused": "This queue is paused: no new items are handed out for now. Come back later.",
    "closed": "This queue is closed: it hands out no more items.",
    "not_assigned": "This queue is assigned to other annotators.",
}

# Raw SQL: the claim runs on every "next item", and building these statements through the ORM
# cost more CPU than PostgreSQL spends executing them (bench/review_bench.py).
# The queue's state, whether the annotator may claim in it (nobody assigned, or they are), and their
# unfinished live lease there: one statement, the one the claim always ran for the lease, so that
# enforcing state and assignment costs the claim no extra round trip.
_ACCESS_AND_CURRENT_LEASE_SQL = """
    SELECT q.state,
           NOT EXISTS (SELECT 1 FROM adjudication_reviewqueue_annotators a WHERE a.reviewqueue_id = q.id)
           OR EXISTS (SELECT 1 FROM adjudication_reviewqueue_annotators a
                      WHERE a.reviewqueue_id = q.id AND a.user_id = %(annotator)s),
           (SELECT l.id FROM adjudication_lease l
            JOIN adjudication_queueitem qi ON qi.id = l.item_id
            WHERE qi.queue_id = q.id AND l.annotator_id = %(annotator)s
              AND l.completed_at IS NULL AND l.expires_at > %(now)s
            ORDER BY l.claimed_at, l.id LIMIT 1)
    FROM adjudication_reviewqueue q WHERE q.id = %(queue)s"""

# Per-row lookups (NOT EXISTS on the item's primary key) over the annotator's few live leases, not
# an anti-join against every item of the queue.
_GIVE_BACK_ELSEWHERE_SQL = """
    UPDATE adjudication_lease SET expires_at = %(now)s
    WHERE annotator_id = %(annotator)s AND completed_at IS NULL AND expires_at > %(now)s
      AND NOT EXISTS (SELECT 1 FROM adjudication_queueitem qi
                      WHERE qi.id = adjudication_lease.item_id AND qi.queue_id = %(queue)s)
    RETURNING id"""

_WITH_ROOM_SQL = """
    SELECT qi.id FROM adjudication_queueitem qi
    WHERE qi.queue_id = %(queue)s AND qi.status = 'open' AND qi.label_count < %(overlap)s
      AND NOT EXISTS (SELECT 1 FROM adjudication_label lab
                      WHERE lab.item_id = qi.id AND lab.annotator_id = %(annotator)s
                        AND lab.invalidated_at IS NULL)
      AND qi.label_count + (SELECT count(*) FROM adjudication_lease l
                            WHERE l.item_id = qi.id AND l.completed_at IS NULL AND l.expires_at > %(now)s)
          < %(overlap)s"""

# Ties are broken by the per-queue shuffle (QueueItem.tiebreak), never by import order.
_BY_PRIORITY = " ORDER BY qi.priority DESC, qi.tiebreak, qi.id LIMIT 1"

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

    Nothing new is handed out in a paused or closed queue (an unfinished live lease is still
    returned: it may be submitted), nor to an annotator the queue is not assigned to (`refused`
    says which). State and assignment are read in the statement that looks for the live lease.

    One row is locked per attempt (LIMIT 1 FOR UPDATE SKIP LOCKED over the items with room), so
    concurrent claims and label submissions do not queue behind a window of locked rows; the room
    is re-counted under the lock, since the query's snapshot may predate a lease committed since."""
    now = timezone.now()
    expires = now + timedelta(seconds=queue.lease_seconds)
    adapt = connection.ops.adapt_datetimefield_value
    params = {
        "queue": queue.pk,
        "annotator": annotator.pk,
        "now": adapt(now),
        "overlap": queue.overlap,
        "expires": adapt(expires),
    }
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    with transaction.atomic():
        access = raw_one(_ACCESS_AND_CURRENT_LEASE_SQL, params)
        if access is None:
            raise ReviewQueue.DoesNotExist(f"review queue {queue.pk}")
        state, allowed, current = access
        if not allowed:
            return Claim(None, refused="not_assigned")
        if current is None and state != ReviewQueue.State.ACTIVE:
            return Claim(None, refused=state)
        # Working in this queue gives back what the annotator holds unlabelled in the others: an
        # item reserved there would otherwise wait out its lease while they label here.
        raw_all(_GIVE_BACK_ELSEWHERE_SQL, params)
        if current is not None:
            return Claim(Lease.objects.get(pk=current))
        tried: list[int] = []

        def with_room() -> str:
            # Rows whose room ran out under our lock are passed over in the next attempt.
            not_tried = "".join(f" AND qi.id <> {int(pk)}" for pk in tried)
            return _WITH_ROOM_SQL + not_tried + _BY_PRIORITY

        for _ in range(CLAIM_ATTEMPTS):
            row = raw_one(with_room() + lock, params)
            if row is None:
                break
            granted = raw_one(_LEASE_IF_ROOM_SQL, {**params, "item": row[0]})
            if granted is not None:
                return Claim(
                    Lease(id=granted[0], item_id=row[0], annotator=annotator, claimed_at=now, expires_at=expires)
                )
            tried.append(row[0])
        # Nothing claimable among the rows we could lock. If items with room exist that others
        # hold locked right now, report busy rather than "done".
        return Claim(None, busy=raw_one(with_room(), params) is not None)


_LOCK_LEASE_SQL = """
    SELECT l.annotator_id, l.claimed_at, l.expires_at, l.completed_at,
           EXISTS (SELECT 1 FROM adjudication_label lab
                   WHERE lab.item_id = l.item_id AND lab.annotator_id = %(annotator)s
                     AND lab.invalidated_at IS NULL)
    FROM adjudication_lease l WHERE l.id = %(lease)s"""

_LOCK_LEASE_FIELDS = column_fields(Lease, "annotator", "claimed_at", "expires_at", "completed_at")


def label_submit(*, lease: Lease, annotator: User, entry: LabelEntry, skip_reason: str = "") -> Label:
    """Record the annotator's label for the leased item and complete the lease."""
    now = timezone.now()
    lock = " FOR UPDATE OF l" if connection.features.has_select_for_update_of else ""
    with transaction.atomic():
        locked = lock_item(lease.item_id)
        item, queue = locked.item, locked.item.queue
        row = raw_one(_LOCK_LEASE_SQL + lock, {"annotator": annotator.pk, "lease": lease.pk})
        if row is None:
            raise ReviewError("no such lease")
        annotator_id, claimed_at, expires_at, completed_at = convert_row(row[:4], _LOCK_LEASE_FIELDS)
        if annotator_id != annotator.id:
            raise ReviewError("this item is leased to someone else")
        if completed_at is not None:
            raise ReviewError(
                "this item was already labelled; revise the label instead "
                "(POST /api/labels/<id>/revise/, or Backspace on the page)"
            )
        if row[4]:
            raise ReviewError("you have already labelled this item")
        if locked.replaced_at is not None and locked.replaced_at >= claimed_at:
            raise ReviewError("the response was replaced by a new version after you opened it; it is back in the queue")
        if expires_at <= now and entry.kind != Label.Kind.SKIPPED:
            # An expired lease went back to the pool; honour it only if the item still has room.
            others = Lease.objects.filter(live_leases(now), item=item).exclude(annotator=annotator).count()
            if item.label_count + others >= queue.overlap:
                raise ReviewError("your lease expired and the item has been labelled by others meanwhile")
        clean = validate_entry(queue, locked.choices, entry)
        check_text("the skip reason", skip_reason)
        if clean.kind == Label.Kind.SKIPPED and not skip_reason.strip():
            raise ReviewError("a skip needs a reason")
        label = Label.objects.create(
            guidelines_version=_guidelines_version(queue.pk),
            item=item,
            annotator=annotator,
            **asdict(clean),
            skip_reason=skip_reason.strip(),
            seconds_spent=(now - claimed_at).total_seconds(),
        )
        Lease.objects.filter(pk=lease.pk).update(completed_at=now)
        if clean.kind != Label.Kind.SKIPPED:
            item.label_count += 1
            settle(item, queue)
            item.save(update_fields=["label_count", "status"])
        # Last: the item rows are locked first, the dataset's counter last (adjudication.revisions).
        dataset_changed(dataset_id=queue.dataset_id)
        return label


def _guidelines_version(queue_id: int) -> int | None:
    return Guidelines.objects.filter(queue_id=queue_id).aggregate(n=Max("version"))["n"]


def label_revise(*, label: Label, annotator: User, entry: LabelEntry) -> Label:
    """A new label revising the annotator's current one (the old row is kept). The item's state and
    final label are derived again from its current labels, by the rule a new label settles by.

    An adjudicated item is refused: the adjudicator decided on the labels as they stood, and an
    annotator's second thought neither overrides that decision nor silently re-opens the item (what
    users of review tools such as Label Studio or Potato expect of a reviewer's decision: it stays
    until a reviewer changes it). The annotator asks an adjudicator, who may decide again; the
    newest decision counts."""
    now = timezone.now()
    with transaction.atomic():
        locked = lock_item(label.item_id)
        item = locked.item
        if label.annotator_id != annotator.id:
            raise ReviewError("only the author can revise a label")
        if label.invalidated_at is not None:
            raise ReviewError("this label was made on a response text that has since been replaced")
        if item.status == QueueItem.Status.ADJUDICATED:
            raise ReviewError("the item is adjudicated; ask an adjudicator")
        if entry.kind == Label.Kind.SKIPPED:
            raise ReviewError("a label cannot be revised into a skip")
        # Checked under the item's lock: two revisions of one label would fork its history, and
        # the second, made on a superseded row, would read a state that no longer holds.
        newer = Q(created_at__gt=label.created_at) | Q(created_at=label.created_at, id__gt=label.pk)
        if Label.objects.filter(newer, item_id=label.item_id, annotator_id=annotator.id).exists():
            raise ReviewError("this label has been revised since; revise your newest label of the item")
        clean = validate_entry(item.queue, locked.choices, entry)
        new = Label.objects.create(
            item=item,
            annotator=annotator,
            **asdict(clean),
            revises=label,
            guidelines_version=_guidelines_version(item.queue_id),
        )
        labels = current_labels(item)
        item.label_count = len(labels)
        settle(item, item.queue, labels=labels, now=now)
        item.save(update_fields=["label_count", "status"])
        dataset_changed(dataset_id=item.queue.dataset_id)
        return new
