"""Issue 32: a revised label settles its item again by the rule a new label settles by, and the
exports, the analytics and the adjudication list then read the same state."""

from __future__ import annotations

from typing import Any

import pytest

from adjudication.analytics.selectors import human_observations
from adjudication.models import FinalLabel, Label, QueueItem, ReviewQueue
from adjudication.pipeline.selectors import dataset_counts
from adjudication.review.adjudicate.selectors import adjudication_queue
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import label_revise
from adjudication.review.errors import ReviewError
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.selectors import final_labels

from .conftest import label_next, make_user

pytestmark = pytest.mark.django_db


def revise(label: Label, answer: str, **extra: Any) -> Label:
    return label_revise(label=label, annotator=label.annotator, entry=LabelEntry(kind="option", answer=answer, **extra))


def agreed_item(queue: ReviewQueue) -> tuple[Label, Label]:
    """Two annotators' labels of one item, both B: the item is agreed, with a unanimous final label."""
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    first, second = label_next(queue, a), label_next(queue, b)
    assert first.item_id == second.item_id
    assert QueueItem.objects.get(pk=first.item_id).status == QueueItem.Status.AGREED
    return first, second


def export_row(queue: ReviewQueue, item_id: int) -> dict:
    return next(row for row in final_labels(queue=queue) if row["item_id"] == item_id)


def response_id(item_id: int) -> str:
    return str(QueueItem.objects.values_list("review_item__response_id", flat=True).get(pk=item_id))


def test_revising_an_agreed_item_into_disagreement_invalidates_its_unanimous_final_label(queue):
    first, _ = agreed_item(queue)
    agreed = FinalLabel.objects.get(item_id=first.item_id)
    revise(first, "C")
    item = QueueItem.objects.get(pk=first.item_id)
    assert item.status == QueueItem.Status.CONFLICT and item.label_count == 2
    assert not FinalLabel.objects.filter(item=item).exists()
    agreed.refresh_from_db()
    assert agreed.invalidated_at is not None  # kept as history
    row = export_row(queue, item.pk)
    assert (row["status"], row["final_kind"], row["provenance"], row["decision_count"]) == ("conflict", None, None, 0)
    assert [d["invalidated_at"] is not None for d in row["decision_history"]] == [True]
    assert response_id(item.pk) not in human_observations(dataset=queue.dataset)
    assert dataset_counts(dataset_ids=[queue.dataset_id])[queue.dataset_id].labelled == 0
    adjudicator = make_user("j", "adjudicator")
    assert [i.pk for i, _ in adjudication_queue(queue=queue, adjudicator=adjudicator)] == [item.pk]


def test_revising_back_to_the_agreed_answer_leaves_one_standing_unanimous_final_label(queue):
    first, _ = agreed_item(queue)
    back = revise(revise(first, "C"), "B")
    item = QueueItem.objects.get(pk=back.item_id)
    assert item.status == QueueItem.Status.AGREED
    standing = FinalLabel.objects.get(item=item)
    assert (standing.provenance, standing.answer) == (FinalLabel.Provenance.UNANIMOUS, "B")
    assert FinalLabel.all_objects.filter(item=item, invalidated_at__isnull=False).count() == 1
    row = export_row(queue, item.pk)
    assert (row["status"], row["final_answer"], row["decision_count"]) == ("agreed", "B", 1)
    assert human_observations(dataset=queue.dataset)[response_id(item.pk)].answer == "B"


def test_a_revision_that_keeps_the_agreed_answer_keeps_the_final_label_as_it_is(queue):
    first, _ = agreed_item(queue)
    agreed = FinalLabel.objects.get(item_id=first.item_id)
    revise(first, "b", note="checked again", confidence=5)
    assert list(FinalLabel.all_objects.filter(item_id=first.item_id)) == [agreed]
    agreed.refresh_from_db()
    assert agreed.invalidated_at is None
    assert QueueItem.objects.get(pk=first.item_id).status == QueueItem.Status.AGREED


def test_a_revision_that_makes_a_conflict_agree_settles_it_with_one_unanimous_final_label(queue):
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    first, _ = label_next(queue, a, "C"), label_next(queue, b, "B")
    assert QueueItem.objects.get(pk=first.item_id).status == QueueItem.Status.CONFLICT
    revise(first, "B")
    assert QueueItem.objects.get(pk=first.item_id).status == QueueItem.Status.AGREED
    assert FinalLabel.objects.get(item_id=first.item_id).answer == "B"


def test_a_superseded_label_cannot_be_revised_again(queue):
    """Revising the same skip twice counted its annotator twice towards the overlap."""
    a = make_user("a", "annotator")
    skip = label_next(queue, a, "", kind="skipped", skip_reason="unreadable")
    revise(skip, "B")
    with pytest.raises(ReviewError, match="revised since"):
        revise(skip, "C")
    item = QueueItem.objects.get(pk=skip.item_id)
    assert item.label_count == 1 and item.status == QueueItem.Status.OPEN
    assert Label.objects.filter(item=item).count() == 2


def test_revising_a_label_after_adjudication_is_refused_and_the_decision_stays_current(queue):
    """The adjudicator decided on the labels as they stood: an annotator's later change of mind
    goes to an adjudicator, it neither replaces the decision nor re-opens the item."""
    a, b, judge = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    first, _ = label_next(queue, a, "B"), label_next(queue, b, "C")
    decision = final_label_adjudicate(
        item=QueueItem.objects.get(pk=first.item_id), adjudicator=judge, kind="option", answer="C"
    )
    with pytest.raises(ReviewError, match="adjudicated"):
        revise(first, "C")
    assert list(FinalLabel.objects.filter(item_id=first.item_id)) == [decision]
    row = export_row(queue, first.item_id)
    assert (row["status"], row["final_answer"], row["provenance"]) == ("adjudicated", "C", "adjudicated")
    assert human_observations(dataset=queue.dataset)[response_id(first.item_id)].answer == "C"
