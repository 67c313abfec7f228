"""Review queues: claiming items under leases, labelling, agreement and adjudication.

Concurrency invariant: every change to an item's label count, and every lease granted on it,
happens while holding that QueueItem row's lock (SELECT … FOR UPDATE). So "labels + live leases
< overlap" is checked and acted on atomically, and no item ever gets more than `overlap` labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from adjudication.models import (
    Dataset,
    FinalLabel,
    Guidelines,
    Label,
    Lease,
    Question,
    QueueItem,
    ReaderSpec,
    Reading,
    Response,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
)
from adjudication.permissions import has_role
from adjudication.rawsql import column_fields, convert_row, fetch_one, raw_all, raw_one
from adjudication.review.guidelines import default_guidelines
from adjudication.review.labels import LabelEntry, agreement, label_key
from adjudication.review.selectors import current_labels, open_item_skips
from adjudication.revisions import dataset_changed
from adjudication.routing.services import (
    information_refresh_request,
    queue_items_sync,
    review_items_route,
    routing_policy_create,
    validation_message,
)
from adjudication.validators import free_text_problem, unprintable
from readers.options import letters as option_letters

CLAIM_ATTEMPTS = 25  # rows tried (one locked at a time) per claim before reporting "busy"
MAX_FREE_TEXT = 10_000  # characters of a note, reason or typed answer


class ReviewError(Exception):
    """A request the review flow refuses (expired lease, wrong annotator, bad label)."""


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


def queue_create(
    *,
    dataset: Dataset,
    name: str,
    policy: RoutingPolicy | None = None,
    panel: Sequence[str | ReaderSpec] | None = None,
    overlap: int = 2,
    lease_seconds: int = 900,
    show_candidates: bool = True,
    judge_correctness: bool = False,
    control_fraction: float = 0.0,
    seed: int = 0,
    missing_is_disagreement: bool = False,
    compare: str = "either",
    priority: str = "disagreement",
    target: str = "",
    budget: int | None = None,
    created_by: User | None = None,
    title: str = "",
    guidelines: str | None = None,
    annotators: Sequence[User] = (),
) -> ReviewQueue:
    """A queue over a routing policy's items. Without a policy, one is made from `panel` (reader
    names or specs; default: every rule reader that has read this dataset) and routed now. With
    `annotators`, only they see and claim it. `priority`, `target` and `budget` are the new policy's
    (routing.services.routing_policy_create: "information" routes by label value for the target).
    All or nothing: a queue that cannot be filled is not left behind half made."""
    queue = ReviewQueue(
        name=name,
        dataset=dataset,
        policy=policy,
        overlap=overlap,
        lease_seconds=lease_seconds,
        show_candidates=show_candidates,
        judge_correctness=judge_correctness,
        seed=seed,
        created_by=created_by,
        title=title.strip(),
    )
    try:
        # The model's validators bound every number to its column and names to one printable line.
        queue.full_clean(exclude=["policy"], validate_unique=False)
    except ValidationError as exc:
        raise ReviewError(validation_message(exc)) from None
    _check_title(queue.title)
    _check_annotators(annotators)
    if ReviewQueue.objects.filter(name=name).exists():
        raise ReviewError(f"a queue named {name!r} exists already")
    try:
        with transaction.atomic():
            if policy is None:
                if not panel:
                    panel = sorted(
                        set(
                            Reading.objects.filter(response__dataset=dataset, reader_spec__kind="rule").values_list(
                                "reader_spec__name", flat=True
                            )
                        )
                    )
                if len(panel) < 2:
                    raise ReviewError(
                        "the dataset needs readings by at least two readers (run_readers) to route disagreements"
                    )
                try:
                    queue.policy = routing_policy_create(
                        dataset=dataset,
                        name=f"queue:{name}",
                        panel=panel,
                        compare=compare,
                        missing_is_disagreement=missing_is_disagreement,
                        control_fraction=control_fraction,
                        seed=seed,
                        priority=priority,
                        target=target,
                        budget=budget,
                    )
                except (ValueError, KeyError) as exc:
                    raise ReviewError(str(exc).strip("'\"")) from exc
            elif policy.dataset_id != dataset.pk:
                raise ReviewError(f"policy {policy.name!r} belongs to another dataset")
            queue.save()
            queue.annotators.set(annotators)
            guidelines_update(
                queue=queue,
                text=default_guidelines(judge_correctness=judge_correctness) if guidelines is None else guidelines,
                by=created_by,
            )
            # Routes on the policy, which adds the items to every queue on it, this one included.
            review_items_route(policy=queue.policy)
            queue_items_sync(queue=queue)
    except IntegrityError:
        # The name check above raced with another creation of the same name.
        raise ReviewError(f"a queue named {name!r} exists already") from None
    return queue


def _check_title(title: str) -> None:
    if len(title) > TITLE_MAX:
        raise ReviewError(f"title: at most {TITLE_MAX} characters")
    bad = unprintable(title)
    if bad:
        raise ReviewError(f"title: must be one line of printable text (found {bad})")


def _check_annotators(annotators: Sequence[User]) -> None:
    refused = sorted(u.username for u in annotators if not (u.is_active and has_role(u, "annotator")))
    if refused:
        raise ReviewError(f"annotators: {', '.join(refused)} do not hold the annotator role")


_TITLE_FIELD = ReviewQueue._meta.get_field("title")
assert _TITLE_FIELD.max_length is not None  # the title is a bounded CharField
TITLE_MAX: int = _TITLE_FIELD.max_length


def queue_state_set(*, queue: ReviewQueue, state: str) -> ReviewQueue:
    """Pause (no new claims), close (hidden from annotators, no claims) or re-open a queue. Live
    leases stay: an annotator who holds an item can still submit it."""
    if state not in ReviewQueue.State.values:
        raise ReviewError(f"state: one of {', '.join(ReviewQueue.State.values)}")
    ReviewQueue.objects.filter(pk=queue.pk).update(state=state)
    queue.state = state
    return queue


def queue_title_set(*, queue: ReviewQueue, title: str) -> ReviewQueue:
    """The title annotators see (blank: "Queue N"); the name stays the managers' handle."""
    title = title.strip()
    _check_title(title)
    ReviewQueue.objects.filter(pk=queue.pk).update(title=title)
    queue.title = title
    return queue


def queue_annotators_set(*, queue: ReviewQueue, annotators: Sequence[User]) -> ReviewQueue:
    """Who may see and claim the queue: exactly these annotators (nobody: every annotator). Someone
    unassigned keeps their live lease (it can be submitted) but is handed nothing new."""
    _check_annotators(annotators)
    queue.annotators.set(annotators)
    return queue


MAX_GUIDELINES_CHARS = 100_000


def guidelines_update(*, queue: ReviewQueue, text: str, by: User | None) -> Guidelines:
    """A new version of the queue's guidelines (the earlier ones are kept: labels name theirs)."""
    problem = free_text_problem(text)
    if problem:
        raise ReviewError(f"the guidelines {problem}")
    if not text.strip() or len(text) > MAX_GUIDELINES_CHARS:
        raise ReviewError(f"the guidelines must be 1 to {MAX_GUIDELINES_CHARS} characters")
    with transaction.atomic():
        # The queue row's lock orders concurrent edits: each gets the next version number.
        ReviewQueue.objects.select_for_update().filter(pk=queue.pk).first()
        latest = queue.guidelines.aggregate(n=Max("version"))["n"] or 0
        return Guidelines.objects.create(queue=queue, version=latest + 1, text=text, created_by=by)


def queue_sync(*, queue: ReviewQueue) -> int:
    """Route newly disputed responses and add the policy's new items to the queue."""
    report = review_items_route(policy=queue.policy)
    return report.queued + queue_items_sync(queue=queue)


def _live(now):
    return Q(completed_at__isnull=True, expires_at__gt=now)


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
class _Locked:
    item: QueueItem
    choices: list
    replaced_at: datetime | None


def _lock_item(item_id: int) -> _Locked:
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
    return _Locked(item, row[-2], row[-1])


def _check_text(field: str, value: str) -> None:
    problem = free_text_problem(value)
    if problem:
        raise ReviewError(f"{field} {problem}")
    if len(value) > MAX_FREE_TEXT:
        raise ReviewError(f"{field} must be at most {MAX_FREE_TEXT} characters")


def _validate(queue: ReviewQueue, choices: list, entry: LabelEntry) -> LabelEntry:
    """The entry as it may be stored: only what the queue asked for, normalised. Whatever the caller
    sent, a field the queue did not ask for is stored empty: a correctness on a queue that does not
    judge it would otherwise make its way into the unanimous final label and into agreement."""
    kind, answer, correctness, confidence = entry.kind, entry.answer, entry.correctness, entry.confidence
    if kind not in Label.Kind.values:
        raise ReviewError(f"unknown label kind {kind!r}")
    _check_text("the answer", answer)
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
    _check_text("the note", entry.note)
    return replace(entry, answer=answer, correctness=correctness)


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
        locked = _lock_item(lease.item_id)
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
            others = Lease.objects.filter(_live(now), item=item).exclude(annotator=annotator).count()
            if item.label_count + others >= queue.overlap:
                raise ReviewError("your lease expired and the item has been labelled by others meanwhile")
        clean = _validate(queue, locked.choices, entry)
        _check_text("the skip reason", skip_reason)
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
            _settle(item, queue)
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
        locked = _lock_item(label.item_id)
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
        clean = _validate(item.queue, locked.choices, entry)
        new = Label.objects.create(
            item=item,
            annotator=annotator,
            **asdict(clean),
            revises=label,
            guidelines_version=_guidelines_version(item.queue_id),
        )
        labels = current_labels(item)
        item.label_count = len(labels)
        _settle(item, item.queue, labels=labels, now=now)
        item.save(update_fields=["label_count", "status"])
        dataset_changed(dataset_id=item.queue.dataset_id)
        return new


def _settle(
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


ADJUDICABLE = (QueueItem.Status.CONFLICT, QueueItem.Status.ADJUDICATED)


def may_adjudicate(*, item: QueueItem, adjudicator: User) -> str | None:
    """Why this adjudicator may not see or decide this item, or None. An item still open would show
    the labels and the gold to someone who may yet label it; an item they labelled (or skipped)
    themselves would make them judge their own work against their colleague's."""
    if item.status not in ADJUDICABLE:
        return "only items whose labels conflict are adjudicated"
    if Label.objects.filter(item_id=item.pk, annotator_id=adjudicator.pk).exists():
        return "you labelled this item yourself; another adjudicator decides it"
    return None


def final_label_adjudicate(
    *,
    item: QueueItem,
    adjudicator: User,
    kind: str,
    answer: str = "",
    correctness: str = "",
    error_type: str = "",
    notes: str = "",
    unresolved: bool = False,
) -> FinalLabel:
    with transaction.atomic():
        locked = _lock_item(item.pk)
        item = locked.item
        refusal = may_adjudicate(item=item, adjudicator=adjudicator)
        if refusal:
            raise ReviewError(refusal)
        if error_type not in FinalLabel.ErrorType.values:
            raise ReviewError(f"unknown error type {error_type!r}")
        _check_text("the notes", notes)
        if unresolved:
            clean = LabelEntry(kind=Label.Kind.AMBIGUOUS)
        elif kind == Label.Kind.SKIPPED:
            raise ReviewError("a final label cannot be a skip")
        else:
            clean = _validate(item.queue, locked.choices, LabelEntry(kind=kind, answer=answer, correctness=correctness))
        final = FinalLabel.objects.create(
            item=item,
            kind=clean.kind,
            answer=clean.answer,
            correctness=clean.correctness,
            error_type=error_type,
            notes=notes,
            decided_by=adjudicator,
            provenance=FinalLabel.Provenance.UNRESOLVED if unresolved else FinalLabel.Provenance.ADJUDICATED,
        )
        item.status = QueueItem.Status.ADJUDICATED
        item.save(update_fields=["status"])
        information_refresh_request(policy_id=item.queue.policy_id)
        dataset_changed(dataset_id=item.queue.dataset_id)
        return final


def skips_reopen(*, queue: ReviewQueue) -> int:
    """Give skipped items back to the annotators who skipped them: their skips stay as history
    (invalidated) and the items become claimable by them again. Only items still open: a skip on
    a settled item changed nothing. Returns the number of skips re-opened."""
    now = timezone.now()
    with transaction.atomic():
        skips = open_item_skips(queue=queue).values_list("pk", flat=True)
        reopened = Label.objects.filter(pk__in=list(skips)).update(invalidated_at=now)
        if reopened:
            dataset_changed(dataset_id=queue.dataset_id)
        return reopened


@dataclass
class InvalidationReport:
    labels: int = 0
    final_labels: int = 0
    items_reopened: int = 0


def review_invalidate_replaced(*, response_ids: list[int], record_change: bool = True) -> InvalidationReport:
    """The responses' texts were replaced: labels and final labels made on the old text are kept as
    history but invalidated, their queue items re-opened (no labels, open), live leases on them
    ended, and their review items marked replaced with the old routing reason kept. The routing
    gives the items a new reason once the new readings are in.

    `record_change=False` leaves the data version to the caller: an import invalidates response by
    response as it goes and raises the version once, last, so that it never holds the counter
    while it still locks queue items (adjudication.revisions: item rows first, the counter last)."""
    report = InvalidationReport()
    if not response_ids:
        return report
    now = timezone.now()
    with transaction.atomic():
        items = QueueItem.objects.filter(review_item__response_id__in=response_ids)
        item_ids = list(items.select_for_update().values_list("id", flat=True))
        report.labels = Label.objects.filter(item_id__in=item_ids).update(invalidated_at=now)
        report.final_labels = FinalLabel.objects.filter(item_id__in=item_ids).update(invalidated_at=now)
        report.items_reopened = (
            QueueItem.objects.filter(id__in=item_ids)
            .exclude(status=QueueItem.Status.OPEN, label_count=0)
            .update(status=QueueItem.Status.OPEN, label_count=0)
        )
        Lease.objects.filter(_live(now), item_id__in=item_ids).update(expires_at=now)
        marked = 0
        for review_item in ReviewItem.objects.filter(response_id__in=response_ids).only("id", "reason"):
            reason = review_item.reason or {}
            previous = reason.get("before_replacement") if "readings" not in reason else reason
            marked += ReviewItem.objects.filter(pk=review_item.pk).update(
                replaced_at=now, reason={"before_replacement": previous}
            )
        if record_change and (item_ids or marked):
            datasets = Response.objects.filter(id__in=response_ids).values_list("dataset_id", flat=True).distinct()
            # In id order: two writers that raise several datasets' counters take them in one order.
            for dataset_id in sorted(set(datasets)):
                dataset_changed(dataset_id=dataset_id)
    return report
