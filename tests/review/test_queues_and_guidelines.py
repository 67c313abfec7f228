"""Annotators' landing page (no claim until a queue is picked), display titles instead of queue
names, versioned guidelines recorded on each label, and "My labels"."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from adjudication.models import Guidelines, Label, Lease
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.errors import ReviewError
from adjudication.review.guidelines import COMMITMENT, CORRECTNESS
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import guidelines_update, queue_create
from adjudication.review.queues.specs import QueueSpec

from .conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_queues(write_jsonl):
    ds = disputed_dataset(write_jsonl, 4)
    first = queue_create(dataset=ds, spec=QueueSpec(name="boxed-vs-strict", overlap=1, title="Sociology, round 1"))
    second = queue_create(dataset=ds, spec=QueueSpec(name="fixed-vs-boxed", overlap=1, judge_correctness=True))
    return first, second


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_landing_page_lists_queues_by_title_and_claims_nothing(two_queues):
    _first, second = two_queues
    ann = make_user("ann", "annotator")
    page = logged_in(ann).get("/review/")
    body = page.content.decode()
    assert page.status_code == 200
    assert "Sociology, round 1" in body and f"Queue {second.pk}" in body
    assert "boxed-vs-strict" not in body and "fixed-vs-boxed" not in body
    assert "0 done · 4 left for you" in body
    assert not Lease.objects.exists()


def test_picking_a_queue_claims_there_and_gives_back_an_item_held_in_another(two_queues):
    first, second = two_queues
    ann = make_user("ann", "annotator")
    client = logged_in(ann)
    opened = client.get(f"/review/?queue={first.pk}")
    assert opened.status_code == 302 and "/review/item/" in opened["Location"]
    held = Lease.objects.get()
    client.get(f"/review/?queue={second.pk}")
    held.refresh_from_db()
    assert held.completed_at is None and held.expires_at <= timezone.now()  # given back, not labelled
    # The item given back is claimable by someone else at once.
    other = make_user("bob", "annotator")
    assert lease_claim_next(queue=first, annotator=other).lease.item_id == held.item_id


def test_an_unknown_queue_is_not_found_and_a_queue_named_instead_of_numbered_is_a_bad_request(two_queues):
    # Annotators know queues by id and title only; a name in the query string is not an id (a 400,
    # as every id a query string carries: validators.parse_id), whether or not a queue has it.
    client = logged_in(make_user("ann", "annotator"))
    assert client.get("/review/?queue=999999").status_code == 404
    assert client.get("/review/?queue=boxed-vs-strict").status_code == 400


def test_annotators_get_queue_titles_from_the_api_and_managers_get_names(two_queues):
    _first, second = two_queues
    ann_view = json.loads(logged_in(make_user("ann", "annotator")).get("/api/queues/").content)
    assert [q["title"] for q in ann_view] == ["Sociology, round 1", f"Queue {second.pk}"]
    assert all("name" not in q for q in ann_view)
    manager_view = json.loads(logged_in(make_user("man", "manager")).get("/api/queues/").content)
    assert [q["name"] for q in manager_view] == ["boxed-vs-strict", "fixed-vs-boxed"]


def test_a_queue_starts_with_the_default_guidelines_of_its_task(two_queues):
    first, second = two_queues
    assert [(g.version, g.text) for g in first.guidelines.all()] == [(1, COMMITMENT)]
    assert [(g.version, g.text) for g in second.guidelines.all()] == [(1, CORRECTNESS)]
    for hard_case in ("Two answers at once", "Truncated or unfinished thinking", "Self-corrections", "outside the"):
        assert hard_case in COMMITMENT


def test_each_label_records_the_guidelines_version_it_was_made_under(two_queues):
    first, _ = two_queues
    ann = make_user("ann", "annotator")
    lease = lease_claim_next(queue=first, annotator=ann).lease
    label = label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="B"))
    manager = make_user("man", "manager")
    v2 = guidelines_update(queue=first, text="## New rules\n\nBoxes win.", by=manager)
    revised = label_revise(label=label, annotator=ann, entry=LabelEntry(kind="option", answer="C"))
    assert (label.guidelines_version, v2.version, revised.guidelines_version) == (1, 2, 2)
    assert list(Guidelines.objects.filter(queue=first).values_list("version", flat=True).order_by("version")) == [1, 2]


@pytest.mark.parametrize("text", ["", "   \n", "bad\x00nul"])
def test_empty_or_unstorable_guidelines_are_refused(two_queues, text):
    with pytest.raises(ReviewError):
        guidelines_update(queue=two_queues[0], text=text, by=None)


def test_managers_edit_guidelines_and_annotators_read_them_escaped(two_queues):
    first, _ = two_queues
    manager = logged_in(make_user("man", "manager"))
    saved = manager.post(
        f"/queues/{first.pk}/guidelines/", {"text": "Pick the **last** box. <script>x()</script> $x^2$"}
    )
    assert saved.status_code == 302
    assert first.guidelines.order_by("-version").first().version == 2
    edit_page = manager.get(f"/queues/{first.pk}/guidelines/").content.decode()
    assert "Guidelines saved as version 2" in edit_page and "&lt;script&gt;" in edit_page
    shown = logged_in(make_user("ann", "annotator")).get(f"/review/queues/{first.pk}/guidelines/").content.decode()
    assert "Version 2." in shown and "<strong>last</strong>" in shown and "<script>x()" not in shown
    assert 'class="math-tex"' in shown


def test_the_item_page_opens_the_guidelines_before_the_first_label_only(two_queues):
    first, _ = two_queues
    ann = make_user("ann", "annotator")
    client = logged_in(ann)
    item = client.get(f"/review/?queue={first.pk}", follow=True).content.decode()
    assert '<details id="guidelines" class="guidelines" open>' in item and "read them before your first label" in item
    lease = Lease.objects.get()
    client.post(f"/review/item/{lease.pk}/", {"kind": "option", "answer": "B"})
    later = client.get(f"/review/?queue={first.pk}", follow=True).content.decode()
    assert '<details id="guidelines" class="guidelines">' in later


def test_my_labels_lists_own_labels_only_and_reopens_them(two_queues):
    first, _ = two_queues
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    for user, answer in ((ann, "B"), (bob, "C")):
        lease = lease_claim_next(queue=first, annotator=user).lease
        label_submit(lease=lease, annotator=user, entry=LabelEntry(kind="text", answer=f"ANSWER-{answer}"))
    page = logged_in(ann).get(f"/review/queues/{first.pk}/mine/").content.decode()
    assert "ANSWER-B" in page and "ANSWER-C" not in page
    mine = Lease.objects.get(annotator=ann)
    assert f"/review/item/{mine.pk}/" in page
    assert Label.objects.filter(annotator=ann).count() == 1


def test_a_skipped_item_is_counted_and_a_manager_reopens_it_for_its_annotator(write_jsonl):
    # Overlap 2 and two annotators: one labels, the other skips. The item cannot settle until the
    # skip is re-opened; the queue page shows it meanwhile.
    ds = disputed_dataset(write_jsonl, 1, name="sk")
    queue = queue_create(dataset=ds, spec=QueueSpec(name="skips", overlap=2))
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    lease = lease_claim_next(queue=queue, annotator=ann).lease
    label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="B"))
    lease = lease_claim_next(queue=queue, annotator=bob).lease
    label_submit(lease=lease, annotator=bob, entry=LabelEntry(kind=Label.Kind.SKIPPED), skip_reason="unsure")
    assert lease_claim_next(queue=queue, annotator=bob).lease is None  # stuck: nobody left to label it
    manager = logged_in(make_user("man", "manager"))
    assert f'<span id="queue-{queue.pk}-skipped">1 skipped</span>' in manager.get("/queues/").content.decode()
    reopened = manager.post(f"/queues/{queue.pk}/reopen-skips/", follow=True).content.decode()
    assert "1 skip re-opened" in reopened and f'<span id="queue-{queue.pk}-skipped">0 skipped</span>' in reopened
    again = lease_claim_next(queue=queue, annotator=bob).lease
    assert again is not None and again.item_id == lease.item_id
    label_submit(lease=again, annotator=bob, entry=LabelEntry(kind="option", answer="B"))
    queue.items.get().refresh_from_db()
    assert queue.items.get().status == "agreed"
    # The skip is kept as history.
    assert Label.all_objects.filter(annotator=bob, kind=Label.Kind.SKIPPED, invalidated_at__isnull=False).count() == 1


def test_the_api_revises_own_labels_only_and_keeps_the_old_row(two_queues):
    first, _ = two_queues
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    lease = lease_claim_next(queue=first, annotator=ann).lease
    label = label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="B"))
    # A second submit of the same item is refused with the way out named.
    again = logged_in(ann).post(f"/api/leases/{lease.pk}/label/", {"kind": "option", "answer": "C"})
    assert again.status_code == 400 and "/api/labels/<id>/revise/" in again.content.decode()
    revised = logged_in(ann).post(f"/api/labels/{label.pk}/revise/", {"kind": "option", "answer": "C", "note": "box"})
    assert revised.status_code == 201
    new = Label.objects.get(pk=revised.json()["label"])
    assert (new.answer, new.note, new.revises_id) == ("C", "box", label.pk)
    assert Label.objects.filter(pk=label.pk).exists()  # history kept
    assert logged_in(bob).post(f"/api/labels/{label.pk}/revise/", {"kind": "option", "answer": "D"}).status_code == 404
    skip = logged_in(ann).post(f"/api/labels/{new.pk}/revise/", {"kind": "skipped"})
    assert skip.status_code == 400
