"""A queue's progress counts are a partition of its items (issue 36 item 7): each item is in exactly
one state, the derived counts (labelled, skipped) are shown apart and named so, and an item settled
by a single label on an overlap-1 queue is "labelled once", never "agreed"."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adjudication.models import QueueItem
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import lease_claim_next
from adjudication.review.queues.selectors import ITEM_STATES, queue_status
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec

from .conftest import disputed_dataset, label_next, make_user

pytestmark = pytest.mark.django_db

STATE_KEYS = [key for key, _ in ITEM_STATES]


@pytest.fixture
def overlap2(write_jsonl):
    """A queue of 8 items, overlap 2, with one item in every state: agreed (two labels B), conflicting
    (B vs C), adjudicated (another conflict, decided), waiting for a second label (and skipped by a
    third annotator), leased, the rest not started."""
    ds = disputed_dataset(write_jsonl, 8)
    queue = queue_create(dataset=ds, spec=QueueSpec(name="q2", overlap=2))
    a, b, c = (make_user(n, "annotator") for n in "abc")
    judge = make_user("j", "adjudicator")
    label_next(queue, a, "B")
    label_next(queue, b, "B")  # agreed
    label_next(queue, a, "B")
    label_next(queue, b, "C")  # conflicting
    label_next(queue, a, "B")
    conflict = label_next(queue, b, "C").item
    final_label_adjudicate(item=conflict, adjudicator=judge, kind="option", answer="C")  # adjudicated
    waiting = label_next(queue, a, "B").item  # waiting for more labels: c skips it, nobody holds it
    assert label_next(queue, c, kind="skipped", answer="", skip_reason="unsure").item == waiting
    assert lease_claim_next(queue=queue, annotator=c).lease.item != waiting  # leased
    return queue


def test_the_states_partition_the_items_and_each_state_is_counted_once(overlap2):
    status = queue_status(queue=overlap2)
    by_key = {s["key"]: s["count"] for s in status["states"]}
    assert [s["key"] for s in status["states"]] == STATE_KEYS
    assert sum(by_key.values()) == status["items"] == 8
    assert by_key == {
        "pending": 3,
        "leased": 1,
        "waiting": 1,
        "conflicting": 1,
        "one_label": 0,
        "agreed": 1,
        "adjudicated": 1,
    }
    # the derived counts overlap the states: every item with a label, settled or not; the skip
    assert status["labelled"] == 4 and status["skipped"] == 1


def test_the_queue_page_shows_the_partition_and_the_derived_counts_apart(overlap2):
    manager = Client()
    manager.force_login(make_user("m", "manager"))
    html = manager.get(f"/queues/{overlap2.pk}/").content.decode()
    line = re.search(rf'<p id="queue-{overlap2.pk}-states">(.*?)</p>', html, re.S)
    assert line is not None
    total = int(re.match(r"(\d+) items?:", line.group(1)).group(1))
    shown = [int(n) for n in re.findall(r'data-state="[a-z_]+">(\d+) ', line.group(1))]
    assert len(shown) == len(STATE_KEYS) and sum(shown) == total == 8
    derived = re.search(rf'<p class="muted" id="queue-{overlap2.pk}-derived">(.*?)</p>', html, re.S)
    assert derived is not None
    assert "Derived counts" in derived.group(1) and "4 with at least one label" in derived.group(1)
    listing = manager.get("/queues/").content.decode()
    row = re.search(rf'<tr id="queue-{overlap2.pk}-row">(.*?)</tr>', listing, re.S).group(1)
    cells = [int(n) for n in re.findall(r'<td data-state="[a-z_]+">(\d+)</td>', row)]
    assert len(cells) == len(STATE_KEYS) and sum(cells) == 8


def test_one_label_on_an_overlap_1_queue_is_labelled_once_not_agreed(write_jsonl):
    ds = disputed_dataset(write_jsonl, 3)
    queue = queue_create(dataset=ds, spec=QueueSpec(name="q1", overlap=1))
    label_next(queue, make_user("a", "annotator"), "B")
    assert queue.items.filter(status=QueueItem.Status.AGREED).count() == 1  # settled, as before
    status = queue_status(queue=queue)
    assert status["agreed"] == 0 and status["one_label"] == 1
    assert {s["key"]: s["count"] for s in status["states"]}["one_label"] == 1
    manager = Client()
    manager.force_login(make_user("m", "manager"))
    html = manager.get(f"/queues/{queue.pk}/").content.decode()
    assert '<span data-state="one_label">1 labelled once</span>' in html
    assert '<span data-state="agreed">0 agreed</span>' in html
