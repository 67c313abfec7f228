"""The adjudicator's writes: a final label on a conflicting item (or "unresolved")."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from adjudication.models import FinalLabel, Label, QueueItem
from adjudication.review.errors import ReviewError
from adjudication.review.items import check_text, lock_item, validate_entry
from adjudication.review.labels import LabelEntry
from adjudication.revisions import dataset_changed
from adjudication.routing.refresh import information_refresh_request

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
        locked = lock_item(item.pk)
        item = locked.item
        refusal = may_adjudicate(item=item, adjudicator=adjudicator)
        if refusal:
            raise ReviewError(refusal)
        if error_type not in FinalLabel.ErrorType.values:
            raise ReviewError(f"unknown error type {error_type!r}")
        check_text("the notes", notes)
        if unresolved:
            clean = LabelEntry(kind=Label.Kind.AMBIGUOUS)
        elif kind == Label.Kind.SKIPPED:
            raise ReviewError("a final label cannot be a skip")
        else:
            clean = validate_entry(
                item.queue, locked.choices, LabelEntry(kind=kind, answer=answer, correctness=correctness)
            )
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
