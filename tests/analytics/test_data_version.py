"""The data version (adjudication.revisions): every write the analytics read raises it, once, as
the last statement of its transaction (item rows first, the counter last); a write that is rolled
back, or that changes nothing, leaves it where it was."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from adjudication.models import Dataset, Label, QueueItem, ReaderSpec, Response, ReviewQueue
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.review.adjudicate.selectors import adjudication_queue
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.errors import ReviewError
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create, review_invalidate_replaced, skips_reopen
from adjudication.review.queues.specs import QueueSpec
from adjudication.revisions import dataset_version
from adjudication.routing.services import queue_items_sync, review_items_route, routing_policy_create
from adjudication.routing.specs import PolicySpec

from ..conftest import mc_row, run_command
from ..review.conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db

COUNTER = "adjudication_datasetrevision"


def version(ds: Dataset) -> int:
    return dataset_version(dataset_id=ds.pk)


def raises_once_and_last(ds: Dataset, write: Callable[[], Any]) -> Any:
    """Run `write`; the dataset's version went up by exactly one, and the statement that raised it
    was the last of its transaction (the next one releases the writer's savepoint: inside a test
    every transaction is a savepoint of the test's)."""
    before = version(ds)
    with CaptureQueriesContext(connection) as seen:
        out = write()
    assert version(ds) == before + 1
    sqls = [q["sql"] for q in seen.captured_queries]
    bumps = [i for i, sql in enumerate(sqls) if COUNTER in sql]
    assert len(bumps) == 1, sqls
    following = sqls[bumps[0] + 1 :]
    assert following and following[0].startswith("RELEASE SAVEPOINT"), following[:3]
    return out


def label(queue: ReviewQueue, user, answer: str = "B", kind: str = "option") -> Label:
    lease = lease_claim_next(queue=queue, annotator=user).lease
    assert lease is not None
    return label_submit(
        lease=lease,
        annotator=user,
        entry=LabelEntry(kind=kind, answer=answer),
        skip_reason="unclear" * (kind == "skipped"),
    )


@pytest.fixture
def queue(write_jsonl) -> ReviewQueue:
    return queue_create(dataset=disputed_dataset(write_jsonl, 4), spec=QueueSpec(name="q", overlap=2))


def test_an_import_raises_the_data_version_once(write_jsonl):
    rows = [mc_row(i) for i in range(3)]
    path = write_jsonl(rows, name="a.jsonl")
    run_command("import_responses", str(path), dataset="imp", no_progress=True)
    ds = Dataset.objects.get(name="imp")
    assert version(ds) == 1
    more = write_jsonl([mc_row(i) for i in range(3, 2505)], name="b.jsonl")  # three batches of the importer
    raises_once_and_last(ds, lambda: run_command("import_responses", str(more), dataset="imp", no_progress=True))


def test_an_import_that_changes_nothing_keeps_the_data_version(write_jsonl):
    path = write_jsonl([mc_row(i) for i in range(3)])
    run_command("import_responses", str(path), dataset="imp", no_progress=True)
    ds = Dataset.objects.get(name="imp")
    run_command("import_responses", str(path), dataset="imp", no_progress=True)
    assert version(ds) == 1


def test_a_failed_import_does_not_raise_the_data_version(write_jsonl):
    run_command("import_responses", str(write_jsonl([mc_row(0)])), dataset="imp", no_progress=True)
    ds = Dataset.objects.get(name="imp")
    bad = write_jsonl([mc_row(1), '{"id": "x"'], name="bad.jsonl")
    with pytest.raises(Exception, match="line 2"):
        run_command("import_responses", str(bad), dataset="imp", no_progress=True)
    assert version(ds) == 1 and Response.objects.filter(dataset=ds).count() == 1


def test_replacing_labelled_responses_raises_the_data_version_once_after_the_queue_items(write_jsonl, queue):
    ds = queue.dataset
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    label(queue, a), label(queue, b)
    texts = {r.external_id: r.text for r in Response.objects.filter(dataset=ds)}
    rows = [mc_row(int(ext.split("-")[1]), response=text + " (edited)") for ext, text in texts.items()]
    path = write_jsonl(rows, name="replace.jsonl")
    raises_once_and_last(
        ds, lambda: run_command("import_responses", str(path), dataset=ds.name, replace=True, no_progress=True)
    )
    assert not Label.objects.exists() and Label.all_objects.count() == 2


def test_new_readings_raise_the_data_version(write_jsonl):
    ds = disputed_dataset(write_jsonl, 3)
    ids = list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    spec = reader_spec_by_name(name="fixed")
    assert raises_once_and_last(ds, lambda: readings_create(reader_specs=[spec], response_ids=ids)) == 3
    before = version(ds)
    assert readings_create(reader_specs=[spec], response_ids=ids) == 0  # nothing missing: nothing changed
    assert version(ds) == before


def test_a_judges_readings_raise_the_data_version_of_their_dataset(write_jsonl):
    from judges.services.calls import Finished
    from judges.services.records import ReadingResult, write

    ds, other = disputed_dataset(write_jsonl, 2), disputed_dataset(write_jsonl, 2, name="other")
    spec = ReaderSpec.objects.create(name="judge-x", version="1", kind="judge", config_hash="j" * 16)
    finished = [
        Finished((rid, spec.pk), ReadingResult(rid, spec.pk, "correct"), 1.0)
        for rid in Response.objects.filter(dataset=ds).values_list("id", flat=True)
    ]
    raises_once_and_last(ds, lambda: write([], finished))
    assert version(other) == 1  # its import only: the judge's readings were not about it


def test_routing_raises_the_data_version(write_jsonl):
    ds = disputed_dataset(write_jsonl, 3)
    policy = routing_policy_create(dataset=ds, name="p", spec=PolicySpec(panel=["strict-match", "boxed"]))
    report = raises_once_and_last(ds, lambda: review_items_route(policy=policy))
    assert report.created == 3
    before = version(ds)
    assert review_items_route(policy=policy).created == 0  # routed already: nothing changed
    assert version(ds) == before


def test_adding_items_to_a_queue_raises_the_data_version(queue):
    ds = queue.dataset
    second = ReviewQueue.objects.create(name="q2", dataset=ds, policy=queue.policy)
    assert raises_once_and_last(ds, lambda: queue_items_sync(queue=second)) == 4
    before = version(ds)
    assert queue_items_sync(queue=second) == 0
    assert version(ds) == before


def test_a_label_raises_the_data_version(queue):
    a = make_user("a", "annotator")
    lease = lease_claim_next(queue=queue, annotator=a).lease
    raises_once_and_last(
        queue.dataset, lambda: label_submit(lease=lease, annotator=a, entry=LabelEntry(kind="option", answer="B"))
    )


def test_a_skip_raises_the_data_version(queue):
    # Skips count in human-human agreement (a skipped item is not rated), so they are data too.
    a = make_user("a", "annotator")
    raises_once_and_last(queue.dataset, lambda: label(queue, a, kind="skipped"))


def test_a_revised_label_raises_the_data_version(queue):
    a = make_user("a", "annotator")
    first = label(queue, a)
    raises_once_and_last(
        queue.dataset, lambda: label_revise(label=first, annotator=a, entry=LabelEntry(kind="option", answer="C"))
    )


def test_an_adjudication_raises_the_data_version(queue):
    a, b, judge = make_user("a", "annotator"), make_user("b", "annotator"), make_user("j", "adjudicator")
    label(queue, a, "B"), label(queue, b, "C")
    ((item, _),) = adjudication_queue(queue=queue, adjudicator=judge)
    raises_once_and_last(
        queue.dataset,
        lambda: final_label_adjudicate(item=item, adjudicator=judge, kind="option", answer="B"),
    )


def test_reopening_skips_raises_the_data_version_only_when_there_were_skips(queue):
    a = make_user("a", "annotator")
    before = version(queue.dataset)
    assert skips_reopen(queue=queue) == 0
    assert version(queue.dataset) == before
    label(queue, a, kind="skipped")
    assert raises_once_and_last(queue.dataset, lambda: skips_reopen(queue=queue)) == 1


def test_invalidating_replaced_responses_raises_the_data_version(queue):
    a = make_user("a", "annotator")
    labelled = label(queue, a)
    response_id = QueueItem.objects.get(pk=labelled.item_id).review_item.response_id
    report = raises_once_and_last(queue.dataset, lambda: review_invalidate_replaced(response_ids=[response_id]))
    assert report.labels == 1


def test_a_label_whose_transaction_rolls_back_leaves_the_data_version(queue):
    a = make_user("a", "annotator")
    lease = lease_claim_next(queue=queue, annotator=a).lease
    before = version(queue.dataset)

    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        label_submit(lease=lease, annotator=a, entry=LabelEntry(kind="option", answer="B"))
        assert version(queue.dataset) == before + 1  # inside: raised ...
        raise Abort
    assert version(queue.dataset) == before  # ... and rolled back with the label
    assert not Label.objects.exists()


def test_a_refused_label_leaves_the_data_version(queue):
    a = make_user("a", "annotator")
    lease = lease_claim_next(queue=queue, annotator=a).lease
    before = version(queue.dataset)
    with pytest.raises(ReviewError):
        label_submit(lease=lease, annotator=a, entry=LabelEntry(kind="option", answer="Z"))
    assert version(queue.dataset) == before
