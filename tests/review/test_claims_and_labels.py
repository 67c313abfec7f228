"""Leases, the overlap cap, labels, agreement and adjudication, at the service level."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from adjudication.models import FinalLabel, Label, Lease, QueueItem
from adjudication.review.adjudicate.selectors import adjudication_queue
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.errors import ReviewError
from adjudication.review.labels import LabelEntry

from .conftest import label_next, make_user

pytestmark = pytest.mark.django_db


def expired_lease_filled_by_others(queue) -> tuple[User, Lease]:
    """Annotator a's lease, expired before a labelled; b and c then took and labelled both slots of its item."""
    a, b, c = (make_user(n, "annotator") for n in "abc")
    la = lease_claim_next(queue=queue, annotator=a).lease
    Lease.objects.filter(pk=la.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    label_next(queue, b)
    label_next(queue, c)
    return a, la


def test_a_queue_holds_every_disputed_response(queue):
    assert queue.items.count() == 6 and queue.policy.panel.count() == 2


def test_an_unfinished_lease_is_returned_again_before_anything_new(queue):
    ann = make_user("ann", "annotator")
    first = lease_claim_next(queue=queue, annotator=ann).lease
    assert lease_claim_next(queue=queue, annotator=ann).lease == first


def test_overlap_caps_labels_plus_live_leases(queue):
    a, b, c = (make_user(n, "annotator") for n in "abc")
    item_a = lease_claim_next(queue=queue, annotator=a).lease.item
    item_b = lease_claim_next(queue=queue, annotator=b).lease.item
    assert item_a == item_b  # highest priority first; two slots
    item_c = lease_claim_next(queue=queue, annotator=c).lease.item
    assert item_c != item_a  # both slots of the first item are leased


def test_an_annotator_never_gets_the_same_item_twice(queue):
    ann = make_user("ann", "annotator")
    seen = [label_next(queue, ann).item_id for _ in range(6)]
    assert len(set(seen)) == 6
    assert lease_claim_next(queue=queue, annotator=ann).lease is None


def test_expired_leases_return_to_the_pool(queue):
    a, b, c = (make_user(n, "annotator") for n in "abc")
    la = lease_claim_next(queue=queue, annotator=a).lease
    lb = lease_claim_next(queue=queue, annotator=b).lease
    assert la.item == lb.item
    Lease.objects.filter(pk=la.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert lease_claim_next(queue=queue, annotator=c).lease.item == la.item


def test_a_late_label_on_an_expired_lease_is_refused_once_others_filled_the_item(queue):
    a, la = expired_lease_filled_by_others(queue)
    with pytest.raises(ReviewError, match="expired"):
        label_submit(lease=la, annotator=a, entry=LabelEntry(kind="option", answer="B"))
    assert QueueItem.objects.get(pk=la.item_id).label_count == 2


def test_agreeing_labels_make_a_unanimous_final_label(queue):
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    item_id = label_next(queue, a, "B").item_id
    label_next(queue, b, "(b)")
    item = QueueItem.objects.get(pk=item_id)
    assert item.status == QueueItem.Status.AGREED
    final = item.final_labels.get()
    assert (final.kind, final.answer, final.provenance) == ("option", "B", "unanimous")


def test_conflicts_go_to_adjudication_lowest_agreement_first_and_keep_provenance(queue):
    a, b, adj = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    first = label_next(queue, a, "B").item_id
    label_next(queue, b, "C")
    conflicts = adjudication_queue(queue=queue, adjudicator=adj)
    assert [item.pk for item, _ in conflicts] == [first] and conflicts[0][1] == 0.5
    final = final_label_adjudicate(
        item=conflicts[0][0],
        adjudicator=adj,
        kind="option",
        answer="C",
        error_type="reader_bug",
        notes="box is the final commitment",
    )
    assert final.provenance == "adjudicated" and final.decided_by == adj
    assert QueueItem.objects.get(pk=first).status == QueueItem.Status.ADJUDICATED
    assert adjudication_queue(queue=queue, adjudicator=adj) == []


def test_skips_need_a_reason_and_do_not_fill_a_slot(queue):
    a, b, c = (make_user(n, "annotator") for n in "abc")
    lease = lease_claim_next(queue=queue, annotator=a).lease
    with pytest.raises(ReviewError, match="reason"):
        label_submit(lease=lease, annotator=a, entry=LabelEntry(kind="skipped"))
    label_submit(lease=lease, annotator=a, skip_reason="cannot read the LaTeX", entry=LabelEntry(kind="skipped"))
    item = QueueItem.objects.get(pk=lease.item_id)
    assert item.label_count == 0
    assert lease_claim_next(queue=queue, annotator=b).lease.item == item
    assert lease_claim_next(queue=queue, annotator=c).lease.item == item


def test_labels_are_append_only_and_a_revision_keeps_author_and_time(queue):
    a = make_user("a", "annotator")
    original = label_next(queue, a, "B")
    revised = label_revise(label=original, annotator=a, entry=LabelEntry(kind="option", answer="C"))
    assert Label.objects.filter(item=original.item).count() == 2
    assert revised.revises == original and revised.annotator == a and revised.created_at >= original.created_at
    original.refresh_from_db()
    assert original.answer == "B"
    with pytest.raises(ReviewError):
        label_revise(label=original, annotator=make_user("z", "annotator"), entry=LabelEntry(kind="option", answer="A"))


@pytest.mark.parametrize(
    "kind,answer,message",
    [("option", "Z", "one of A, B, C, D"), ("text", " ", "answer text"), ("bogus", "", "unknown label kind")],
)
def test_bad_labels_are_refused(queue, kind, answer, message):
    a = make_user("a", "annotator")
    lease = lease_claim_next(queue=queue, annotator=a).lease
    with pytest.raises(ReviewError, match=message):
        label_submit(lease=lease, annotator=a, entry=LabelEntry(kind=kind, answer=answer))
    assert not Label.objects.exists()


def test_unresolved_adjudication(queue):
    a, b, adj = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    label_next(queue, a, kind="no_answer", answer="")
    label_next(queue, b, "B")
    item = adjudication_queue(queue=queue, adjudicator=adj)[0][0]
    final = final_label_adjudicate(
        item=item, adjudicator=adj, kind="", unresolved=True, error_type="ambiguous_response"
    )
    assert final.provenance == FinalLabel.Provenance.UNRESOLVED


def test_nested_candidate_spans_each_keep_a_mark():
    from adjudication.review.rendering import response_parts

    text = "So the answer is B. Then again \\boxed{C} it is."
    outer = (text.index("B. Then"), text.index("{C}") + 2, 1)  # a long, greedy regex match
    inner = (text.index("{C}") + 1, text.index("{C}") + 2, 2)
    marks = [(seg.text, seg.mark) for part in response_parts(text, [outer, inner]) for seg in part.segments if seg.mark]
    # The inner answer keeps its own mark; the greedy match keeps what is left before it.
    assert marks == [("B. Then again \\boxed{", 1), ("C", 2)]
    # disjoint spans are all marked, in text order
    b = (text.index("B."), text.index("B.") + 1, 1)
    marks = [(seg.text, seg.mark) for part in response_parts(text, [inner, b]) for seg in part.segments if seg.mark]
    assert marks == [("B", 1), ("C", 2)]
    assert "".join(seg.text for part in response_parts(text, [outer, inner]) for seg in part.segments) == text


def test_a_refused_late_label_sends_the_annotator_on_to_the_next_item(queue):
    from django.test import Client

    a, la = expired_lease_filled_by_others(queue)
    client = Client()
    client.force_login(a)
    resp = client.post(f"/review/item/{la.pk}/", {"kind": "option", "answer": "B"})
    assert resp.status_code == 302 and resp["Location"].startswith("/review/?queue=")
    nxt = client.get(resp["Location"])
    assert nxt.status_code == 302 and f"/review/item/{la.pk}/" not in nxt["Location"]


def test_the_adjudication_list_costs_the_same_queries_for_two_conflicts_as_for_six(queue, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    a, b, adj = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    client.force_login(adj)

    def conflicts_and_queries(n: int) -> tuple[int, int]:
        while len(adjudication_queue(queue=queue, adjudicator=adj)) < n:
            label_next(queue, a, "B")
            label_next(queue, b, "C")
        with CaptureQueriesContext(connection) as ctx:
            page = client.get("/adjudicate/")
        assert page.status_code == 200
        return len(re.findall(r'href="/adjudicate/\d+/"', page.content.decode())), len(ctx.captured_queries)

    links_two, queries_two = conflicts_and_queries(2)
    links_six, queries_six = conflicts_and_queries(6)
    assert (links_two, links_six) == (2, 6)
    assert queries_six == queries_two
