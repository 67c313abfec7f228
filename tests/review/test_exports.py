"""The queue exports carry everything stored (issue 17, item 6): the final label with who decided it,
when and why (unresolved as "unresolved"), and every individual label with its author, time, note,
skip reason, guideline version, seconds spent, revision and invalidation; CSV flat, one row per
label in a second table; Parquet typed, with model text back verbatim."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime

import pytest
from django.test import Client

from adjudication.models import FinalLabel, Label, QueueItem
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.selectors import FINAL_LABEL_COLUMNS, LABEL_COLUMNS
from adjudication.review.queues.services import guidelines_update, queue_create, review_invalidate_replaced
from adjudication.review.queues.specs import QueueSpec
from adjudication.text import unescape_text

from ..conftest import run_command
from .conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db

FORMATS = ("jsonl", "csv", "parquet")


def claim(queue, user):
    lease = lease_claim_next(queue=queue, annotator=user).lease
    assert lease is not None
    return lease


@pytest.fixture
def labelled(write_jsonl):
    """Four items, overlap 2. Annotator one labels item 1 (B, confidence 4, a note), 2 (B), skips 3
    ("response cut off") and labels 4 A then revises it to C, under guidelines v1; annotator two, under
    v2, labels 1 B (unanimous), 2 C (conflict), 3 B, 4 C (unanimous). The adjudicator marks item 2
    unresolved with an error type and notes."""
    queue = queue_create(dataset=disputed_dataset(write_jsonl, 4), spec=QueueSpec(name="ex", overlap=2))
    boss = make_user("boss", "manager")
    one, two, adj = make_user("one", "annotator"), make_user("two", "annotator"), make_user("adj", "adjudicator")
    v1 = guidelines_update(queue=queue, text="Pick the final answer.", by=boss).version
    items = []
    for step in range(4):
        lease = claim(queue, one)
        items.append(lease.item_id)
        if step == 0:
            label_submit(
                lease=lease, annotator=one, entry=LabelEntry(kind="option", answer="B", confidence=4, note="clear")
            )
        elif step == 1:
            label_submit(lease=lease, annotator=one, entry=LabelEntry(kind="option", answer="B"))
        elif step == 2:
            label_submit(
                lease=lease,
                annotator=one,
                entry=LabelEntry(kind="skipped", note="half"),
                skip_reason="response cut off",
            )
        else:
            first = label_submit(lease=lease, annotator=one, entry=LabelEntry(kind="option", answer="A"))
            label_revise(label=first, annotator=one, entry=LabelEntry(kind="option", answer="C", note="misread"))
    v2 = guidelines_update(queue=queue, text="Pick the final answer. Boxed wins.", by=boss).version
    assert v2 == v1 + 1
    second = dict(zip(items, ["B", "C", "B", "C"]))
    while (lease := lease_claim_next(queue=queue, annotator=two).lease) is not None:
        label_submit(lease=lease, annotator=two, entry=LabelEntry(kind="option", answer=second[lease.item_id]))
    final_label_adjudicate(
        item=QueueItem.objects.get(pk=items[1]),
        adjudicator=adj,
        kind="option",
        unresolved=True,
        error_type="ambiguous_response",
        notes="both answers are defended; ask the author",
    )
    manager = Client()
    manager.force_login(boss)
    queue.versions = (v1, v2)
    return queue, items, manager


def download(manager: Client, queue, table: str, fmt: str, *, api: bool = False):
    url = f"/api/queues/{queue.pk}/{table}/?fmt={fmt}" if api else f"/queues/{queue.pk}/{table}.{fmt}"
    reply = manager.get(url)
    assert reply.status_code == 200, (url, reply.content[:300])
    assert f'.{fmt}"' in reply["Content-Disposition"]
    return reply


def jsonl_rows(reply) -> list[dict]:
    return [json.loads(line) for line in reply.content.decode("utf-8").splitlines()]


def csv_rows(reply) -> list[dict]:
    return list(csv.DictReader(io.StringIO(reply.content.decode("utf-8"))))


def parquet_table(reply):
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(reply.content))


def test_final_labels_carry_the_decision_who_made_it_when_and_why(labelled):
    queue, items, manager = labelled
    rows = {r["item_id"]: r for r in jsonl_rows(download(manager, queue, "final-labels", "jsonl"))}
    assert set(rows) == {items[0], items[1], items[3]}  # item 3 still needs a label
    unresolved = rows[items[1]]
    stored = FinalLabel.objects.get(item_id=items[1])
    assert (unresolved["final_kind"], unresolved["final_answer"], unresolved["provenance"]) == (
        "unresolved",
        "",
        "unresolved",
    )
    assert stored.kind == "ambiguous"  # the stored row is left as it is
    assert unresolved["error_type"] == "ambiguous_response"
    assert unresolved["final_notes"] == "both answers are defended; ask the author"
    assert unresolved["decided_by"] == "adj"
    assert datetime.fromisoformat(unresolved["decided_at"]) == stored.created_at
    assert unresolved["status"] == "adjudicated" and unresolved["decision_count"] == 1
    unanimous = rows[items[0]]
    assert (unanimous["final_kind"], unanimous["final_answer"], unanimous["provenance"]) == ("option", "B", "unanimous")
    assert unanimous["decided_by"] is None and unanimous["decided_at"] is not None
    assert (unanimous["model"], unanimous["checkpoint"], unanimous["benchmark"]) == ("orca-7b", "base", "mmlu")
    assert [d["kind"] for d in unresolved["decision_history"]] == ["unresolved"]
    assert unresolved["routing_reason"]  # which readers said what


def test_each_label_carries_its_author_time_note_guidelines_and_time_spent(labelled):
    queue, items, manager = labelled
    rows = {r["item_id"]: r for r in jsonl_rows(download(manager, queue, "final-labels", "jsonl"))}
    first = rows[items[0]]["labels"]
    v1, v2 = queue.versions
    assert [(lab["annotator"], lab["answer"], lab["guidelines_version"]) for lab in first] == [
        ("one", "B", v1),
        ("two", "B", v2),
    ]
    assert first[0]["confidence"] == 4 and first[0]["note"] == "clear"
    assert all(isinstance(lab["seconds_spent"], float) and lab["seconds_spent"] >= 0 for lab in first)
    stored = Label.objects.get(item_id=items[0], annotator__username="one")
    assert datetime.fromisoformat(first[0]["created_at"]) == stored.created_at
    revised = rows[items[3]]["labels"]
    old, new = (lab for lab in revised if lab["annotator"] == "one")
    assert (old["answer"], old["current"], new["answer"], new["current"]) == ("A", False, "C", True)
    assert new["revises"] == old["label_id"] and new["note"] == "misread"


def test_the_labels_table_has_one_row_per_label_skips_included(labelled):
    queue, items, manager = labelled
    rows = jsonl_rows(download(manager, queue, "labels", "jsonl"))
    assert len(rows) == Label.all_objects.filter(queue=queue).count() == 9
    assert [c.name for c in LABEL_COLUMNS] == list(rows[0])
    skip = next(r for r in rows if r["kind"] == "skipped")
    assert (skip["item_id"], skip["annotator"], skip["skip_reason"], skip["note"]) == (
        items[2],
        "one",
        "response cut off",
        "half",
    )
    assert skip["current"] is True and skip["guidelines_version"] == queue.versions[0]
    assert {r["response_id"] for r in rows} == {f"mc-{i}" for i in range(4)}


def test_invalidated_labels_stay_in_the_labels_table_as_history(labelled):
    queue, items, manager = labelled
    response_id = QueueItem.objects.get(pk=items[0]).review_item.response_id
    review_invalidate_replaced(response_ids=[response_id])
    finals = {r["item_id"] for r in jsonl_rows(download(manager, queue, "final-labels", "jsonl"))}
    assert items[0] not in finals  # re-opened: its agreement was about words no longer there
    history = [r for r in jsonl_rows(download(manager, queue, "labels", "jsonl")) if r["item_id"] == items[0]]
    assert len(history) == 2
    assert all(r["invalidated_at"] is not None and r["current"] is False for r in history)


@pytest.mark.parametrize("api", [False, True], ids=["page", "api"])
def test_csv_exports_are_flat_and_match_the_jsonl(labelled, api):
    queue, items, manager = labelled
    finals = csv_rows(download(manager, queue, "final-labels", "csv", api=api))
    assert list(finals[0]) == [c.name for c in FINAL_LABEL_COLUMNS]
    labels = csv_rows(download(manager, queue, "labels", "csv", api=api))
    assert list(labels[0]) == [c.name for c in LABEL_COLUMNS] and len(labels) == 9
    for row in finals + labels:
        for column, cell in row.items():
            assert not cell.startswith(("[", "{")), f"JSON in the CSV cell {column}: {cell!r}"
    by_item = {int(r["item_id"]): r for r in finals}
    assert by_item[items[1]]["final_kind"] == "unresolved" and by_item[items[1]]["decided_by"] == "adj"
    assert by_item[items[0]]["label_count"] == "2" and by_item[items[0]]["is_control"] == "False"
    jsonl = {r["item_id"]: r for r in jsonl_rows(download(manager, queue, "final-labels", "jsonl", api=api))}
    assert by_item[items[1]]["decided_at"] == jsonl[items[1]]["decided_at"]


@pytest.mark.parametrize("api", [False, True], ids=["page", "api"])
def test_parquet_exports_have_typed_columns_and_the_same_values(labelled, api):
    import pyarrow as pa

    queue, _, manager = labelled
    finals = parquet_table(download(manager, queue, "final-labels", "parquet", api=api))
    assert finals.column_names == [c.name for c in FINAL_LABEL_COLUMNS]
    types = {f.name: f.type for f in finals.schema}
    assert types["item_id"] == pa.int64() and types["label_count"] == pa.int64()
    assert types["priority"] == pa.float64() and types["is_control"] == pa.bool_()
    assert types["decided_at"] == pa.timestamp("us", tz="UTC") and types["final_kind"] == pa.string()
    jsonl = {r["item_id"]: r for r in jsonl_rows(download(manager, queue, "final-labels", "jsonl"))}
    for row in finals.to_pylist():
        expected = jsonl[row["item_id"]]
        for column in ("final_kind", "final_answer", "provenance", "final_notes", "decided_by", "label_count"):
            assert row[column] == expected[column], column
        assert row["decided_at"] == datetime.fromisoformat(expected["decided_at"])
    labels = parquet_table(download(manager, queue, "labels", "parquet", api=api))
    types = {f.name: f.type for f in labels.schema}
    assert types["confidence"] == pa.int64() and types["seconds_spent"] == pa.float64()
    assert types["current"] == pa.bool_() and types["invalidated_at"] == pa.timestamp("us", tz="UTC")
    assert labels.num_rows == 9
    skip = next(r for r in labels.to_pylist() if r["kind"] == "skipped")
    assert skip["skip_reason"] == "response cut off" and skip["guidelines_version"] == queue.versions[0]


def test_a_second_decision_counts_and_both_stay_in_the_history(labelled):
    queue, items, manager = labelled
    other = make_user("adj2", "adjudicator")
    final_label_adjudicate(item=QueueItem.objects.get(pk=items[1]), adjudicator=other, kind="option", answer="C")
    row = next(r for r in jsonl_rows(download(manager, queue, "final-labels", "jsonl")) if r["item_id"] == items[1])
    assert (row["final_kind"], row["final_answer"], row["provenance"], row["decided_by"]) == (
        "option",
        "C",
        "adjudicated",
        "adj2",
    )
    assert row["decision_count"] == 2
    assert [(d["kind"], d["decided_by"]) for d in row["decision_history"]] == [
        ("unresolved", "adj"),
        ("option", "adj2"),
    ]


HOSTILE = ["x\ud800y", "nul\x00here", "=cmd|' /C calc'!A0", "\\ud83d written by the model", "\\\udfff", "\\frac{1}{2}"]


def test_model_text_survives_every_format_verbatim(labelled):
    """Answers as the database can hold them (label answers copied from model text): CSV and
    Parquet give them back through unescape_text (CSV less its formula apostrophe), JSONL as is."""
    queue, _, manager = labelled
    rows = list(Label.all_objects.filter(queue=queue).order_by("item_id", "created_at", "id"))
    for label, text in zip(rows, HOSTILE):
        Label.all_objects.filter(pk=label.pk).update(answer=text)
    wanted = {label.pk: text for label, text in zip(rows, HOSTILE)}

    jsonl = {r["label_id"]: r["answer"] for r in jsonl_rows(download(manager, queue, "labels", "jsonl"))}
    parquet = {
        r["label_id"]: unescape_text(r["answer"])
        for r in parquet_table(download(manager, queue, "labels", "parquet")).to_pylist()
    }
    cells = {int(r["label_id"]): r["answer"] for r in csv_rows(download(manager, queue, "labels", "csv"))}
    for pk, text in wanted.items():
        assert jsonl[pk] == text and parquet[pk] == text
        cell = cells[pk]
        assert unescape_text(cell[1:] if text.startswith("=") else cell) == text
    assert cells[rows[2].pk].startswith("'=")  # the formula is defused in CSV only
    assert parquet[rows[2].pk] == HOSTILE[2]


def test_an_unknown_format_is_refused(labelled):
    queue, _, manager = labelled
    assert manager.get(f"/queues/{queue.pk}/labels.xlsx").status_code == 404
    reply = manager.get(f"/api/queues/{queue.pk}/labels/?fmt=xlsx")
    assert reply.status_code == 400 and reply.json()["error"]["fields"] == {"fmt": ["one of jsonl, csv, parquet"]}


def test_an_empty_queue_exports_headers_and_schemas(write_jsonl):
    queue = queue_create(dataset=disputed_dataset(write_jsonl, 1), spec=QueueSpec(name="empty", overlap=1))
    manager = Client()
    manager.force_login(make_user("boss", "manager"))
    for table, columns in (("final-labels", FINAL_LABEL_COLUMNS), ("labels", LABEL_COLUMNS)):
        assert download(manager, queue, table, "jsonl").content == b""
        header = download(manager, queue, table, "csv").content.decode().strip()
        assert header == ",".join(c.name for c in columns)
        empty = parquet_table(download(manager, queue, table, "parquet"))
        assert empty.num_rows == 0 and empty.column_names == [c.name for c in columns]


def test_the_export_labels_command_writes_the_same_tables(labelled, tmp_path):
    import pyarrow.parquet as pq
    from django.core.management.base import CommandError

    queue, items, manager = labelled
    out = tmp_path / "labels.parquet"
    run_command("export_labels", queue=queue.name, table="labels", fmt="parquet", out=out)
    from_command = pq.read_table(out).to_pylist()
    from_page = parquet_table(download(manager, queue, "labels", "parquet")).to_pylist()
    assert from_command == from_page and len(from_command) == 9
    printed = run_command("export_labels", queue=queue.name, fmt="jsonl")
    assert [json.loads(line)["item_id"] for line in printed.splitlines()] == [items[0], items[1], items[3]]
    with pytest.raises(CommandError, match="no queue named 'nope'"):
        run_command("export_labels", queue="nope")
    with pytest.raises(CommandError, match="--out"):
        run_command("export_labels", queue=queue.name, fmt="parquet")
