"""20 annotators racing over 100 items with overlap 2: exactly 2 labels per item (PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import connection, connections

from adjudication.models import Label, Lease, QueueItem
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec

from .conftest import disputed_dataset, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_twenty_threads_over_a_hundred_items_leave_exactly_two_labels_each(write_jsonl):
    if connection.vendor != "postgresql":
        pytest.skip("row locks with SKIP LOCKED need PostgreSQL")
    queue = queue_create(dataset=disputed_dataset(write_jsonl, 100), spec=QueueSpec(name="race", overlap=2))
    users = [make_user(f"ann{i}", "annotator") for i in range(20)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(users))

    def annotate(user):
        try:
            start.wait()
            while True:
                claim = lease_claim_next(queue=queue, annotator=user)
                if claim.lease is None:
                    if claim.busy:
                        time.sleep(0.01)
                        continue
                    return
                label_submit(
                    lease=claim.lease, annotator=user, entry=LabelEntry(kind="option", answer="BC"[user.pk % 2])
                )
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=annotate, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    per_item = Counter(Label.objects.values_list("item_id", flat=True))
    assert len(per_item) == 100 and set(per_item.values()) == {2}
    assert Label.objects.count() == 200
    pairs = Counter(Label.objects.values_list("item_id", "annotator_id"))
    assert max(pairs.values()) == 1, "an annotator labelled the same item twice"
    assert set(QueueItem.objects.filter(queue=queue).values_list("label_count", flat=True)) == {2}
    assert not Lease.objects.filter(completed_at__isnull=True).exists()
