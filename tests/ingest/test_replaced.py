"""The one rule for responses an import replaces (ingest.replaced), on each vendor's import path (the
ORM's, PostgreSQL's COPY and merge): the readings go, and labels go only when the text or the
question changed; the data version goes up once."""

from __future__ import annotations

import pytest

from adjudication.models import FinalLabel, Label, QueueItem, Reading, Response
from adjudication.revisions import dataset_version

from .. import vendors
from ..conftest import mc_row, run_command
from ..review import conftest as review
from ..review.conftest import disputed_dataset, label_next, make_user

vendor = vendors.vendor  # each vendor's write paths (tests/vendors.py)
queue = review.queue  # six disputed responses (dataset "rv"), a queue of overlap 2 over them
pytestmark = pytest.mark.django_db
on_each_vendor = pytest.mark.usefixtures("vendor")

TEXT = "Reasoning {i}. The answer is B. Then again \\boxed{{C}}"  # as review.disputed_dataset writes them
ROWS = [mc_row(i, response=TEXT.format(i=i)) for i in range(6)]


def reimport(write_jsonl, rows: list[dict], *, name: str) -> str:
    path = write_jsonl(rows, name=name)
    return run_command("import_responses", str(path), dataset="rv", replace=True, no_progress=True)


def labelled(queue) -> None:
    """Each response labelled B by two annotators (agreed: a final label each)."""
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    for _ in ROWS:
        label_next(queue, a)
        label_next(queue, b)
    assert set(queue.items.values_list("status", flat=True)) == {QueueItem.Status.AGREED}


@on_each_vendor
@pytest.mark.parametrize(
    "change",
    [
        {"response": "(D)"},
        {"question": "Which economist wrote it?"},
        {"gold": "C"},
        {"choices": ["Durkheim", "Weber", "Merton", "Pareto"]},
    ],
    ids=["text", "question", "gold", "choices"],
)
def test_a_replaced_text_or_question_loses_its_readings_and_labels(write_jsonl, queue, change):
    labelled(queue)
    before = dataset_version(dataset_id=queue.dataset_id)
    out = reimport(write_jsonl, [dict(ROWS[0], **change), *ROWS[1:]], name="b.jsonl")
    assert "0 new, 5 unchanged, 1 replaced" in out
    assert "2 labels" in out and "1 final label" in out and "1 review item re-opened" in out
    changed, kept = (Response.objects.get(external_id=f"mc-{i}") for i in range(2))
    assert not Reading.objects.filter(response=changed).exists()
    assert Reading.objects.filter(response=kept).count() == 2
    item = QueueItem.objects.get(review_item__response=changed)
    assert (item.status, item.label_count) == (QueueItem.Status.OPEN, 0)
    assert Label.all_objects.filter(item=item, invalidated_at__isnull=False).count() == 2  # kept as history
    assert not Label.objects.filter(item=item).exists() and not FinalLabel.objects.filter(item=item).exists()
    assert Label.objects.filter(item__review_item__response=kept).count() == 2
    assert dataset_version(dataset_id=queue.dataset_id) == before + 1  # once, for the whole import


@on_each_vendor
def test_a_replaced_row_whose_text_and_question_stay_loses_its_readings_but_keeps_its_labels(write_jsonl, queue):
    labelled(queue)
    renamed = dict(ROWS[0], meta={"note": "re-exported"}, model="renamed")
    out = reimport(write_jsonl, [renamed, *ROWS[1:]], name="b.jsonl")
    assert "1 replaced" in out and "invalidated" not in out
    changed = Response.objects.get(external_id="mc-0")
    assert changed.meta == {"note": "re-exported"} and changed.run.model == "renamed"
    assert not Reading.objects.filter(response=changed).exists()
    assert Label.objects.filter(item__review_item__response=changed).count() == 2
    assert set(QueueItem.objects.values_list("status", flat=True)) == {QueueItem.Status.AGREED}


@on_each_vendor
def test_many_replaced_rows_lose_exactly_their_own_readings(write_jsonl):
    dataset = disputed_dataset(write_jsonl, 30)
    rows = [mc_row(i, response=TEXT.format(i=i)) for i in range(30)]
    out = reimport(
        write_jsonl,
        [dict(row, response=f"new {i}") if i % 3 == 0 else row for i, row in enumerate(rows)],
        name="b.jsonl",
    )
    assert "0 new, 20 unchanged, 10 replaced" in out
    read = set(Reading.objects.values_list("response__external_id", flat=True))
    assert read == {f"mc-{i}" for i in range(30) if i % 3}
    assert Response.objects.filter(dataset=dataset).count() == 30
