"""The one readings store (pipeline.store.readings_write), on each vendor's bulk write: what every
producer's rows become (canonical answer, verbatim text, storable detail), one reading per pair,
a refused row, the data version, and the row-by-row protocol the LLM producers use."""

from __future__ import annotations

import math

import pytest
from django.db import IntegrityError, connection

from adjudication.fields import encode_verbatim
from adjudication.models import Dataset, ReaderSpec, Reading, Response
from adjudication.pipeline import store
from adjudication.pipeline.store import ReadingRow, readings_discard, readings_write
from adjudication.revisions import dataset_version
from readers import Item
from readers import Reading as ReaderReading

from .. import vendors
from ..conftest import math_row, mc_row, run_command
from ..vendors import run_on_sqlite

vendor = vendors.vendor  # each vendor's write paths (tests/vendors.py)
pytestmark = pytest.mark.django_db
on_each_vendor = pytest.mark.usefixtures("vendor")

HOSTILE = "B\x00 \ud800 tab\there\nnewline \\N back\\slash"
SENTINEL_LIKE = "\x01json:looks like the sentinel"
MC = Item(response="", gold="B", choices=("Durkheim", "Weber", "Merton", "Parsons"), question="Which?")


def imported(write_jsonl, dataset: str = "w", n: int = 3) -> list[int]:
    rows = [mc_row(i) for i in range(n)]
    run_command("import_responses", str(write_jsonl(rows, name=f"{dataset}.jsonl")), dataset=dataset, no_progress=True)
    return list(Response.objects.filter(dataset__name=dataset).order_by("id").values_list("id", flat=True))


def spec(name: str = "s") -> ReaderSpec:
    return ReaderSpec.objects.get_or_create(name=name, version="1", config_hash="h")[0]


def write_each(ids: list[int], s: ReaderSpec, *readings: ReaderReading, **options) -> None:
    """The i-th reading of the i-th response, each row with `options`."""
    readings_write(rows=[ReadingRow(rid, s.id, r, **options) for rid, r in zip(ids, readings, strict=True)])


def raw(spec_id: int) -> list[tuple]:
    """The stored columns as the database holds them (text encoded, jsonb as parsed JSON), by response."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT answer, normalized, canonical, verdict, span_start, span_end, detail, elapsed_ms "
            "FROM adjudication_reading WHERE reader_spec_id = %s ORDER BY response_id",
            [spec_id],
        )
        rows = cursor.fetchall()
    detail = Reading._meta.get_field("detail")
    return [(*row[:6], detail.from_db_value(row[6], None, connection), row[7]) for row in rows]


def producers_rows(ids: list[int], spec_id: int) -> list[ReadingRow]:
    """A row as each producer hands it: a rule reader's (canonical made in the pool, a span), a
    harness's or regeneration's (the item, for the store to make the canonical answer), a judge's."""
    detail = {"score": math.nan, "note": "nul\x00", "nested": [1, {"x": math.inf}], "k": ("t",)}
    return [
        ReadingRow(ids[0], spec_id, ReaderReading("correct", HOSTILE, SENTINEL_LIKE, (3, 4), detail, "B"), 2.5),
        ReadingRow(ids[1], spec_id, ReaderReading("incorrect", answer="(c)", detail=detail), 1.0, item=MC),
        ReadingRow(ids[2], spec_id, ReaderReading("error", detail={"failed": "call"}), 7.0),
    ]


EXPECTED = [
    (encode_verbatim(HOSTILE), encode_verbatim(SENTINEL_LIKE), "B", "correct", 3, 4),
    ("(c)", None, "C", "incorrect", None, None),
    (None, None, None, "error", None, None),
]
STORED_DETAIL = {"score": None, "note": "nul\ufffd", "nested": [1, {"x": None}], "k": ["t"]}


@on_each_vendor
def test_every_producers_row_is_stored_as_the_store_makes_it(write_jsonl):
    ids = imported(write_jsonl)
    s = spec()
    readings_write(rows=producers_rows(ids, s.id))
    stored = raw(s.id)
    assert [row[:6] for row in stored] == EXPECTED
    assert [row[6] for row in stored] == [STORED_DETAIL, STORED_DETAIL, {"failed": "call"}]
    assert [row[7] for row in stored] == [2.5, 1.0, 7.0]
    first = Reading.objects.get(response_id=ids[0], reader_spec=s)
    assert (first.answer, first.normalized) == (HOSTILE, SENTINEL_LIKE)  # decoded back, byte for byte
    assert first.created_at is not None


@on_each_vendor
def test_a_readers_own_canonical_answer_is_kept_and_an_item_fills_only_a_missing_one(write_jsonl):
    ids = imported(write_jsonl, n=2)
    s = spec()
    write_each(ids, s, ReaderReading("correct", answer="(b)", canonical="own"), ReaderReading("no_answer"), item=MC)
    assert [row[2] for row in raw(s.id)] == ["own", None]


def test_both_bulk_writes_store_the_same_values(write_jsonl):
    if connection.vendor != "postgresql":
        pytest.skip("both bulk writes run on PostgreSQL only")
    by = {}
    for vendor_name in ("postgresql", "sqlite"):
        ids, s = imported(write_jsonl, dataset=vendor_name), spec(vendor_name)
        store.bulk_write_for(vendor_name)([store._with_canonical(row) for row in producers_rows(ids, s.id)])
        by[vendor_name] = raw(s.id)
    assert by["postgresql"] == by["sqlite"]
    assert [row[:6] for row in by["postgresql"]] == EXPECTED


@on_each_vendor
def test_a_reading_already_there_is_kept_and_the_rest_are_stored(write_jsonl):
    ids = imported(write_jsonl)
    s = spec()
    readings_write(rows=[ReadingRow(ids[0], s.id, ReaderReading("correct", answer="B"), 1.0)])  # another worker's
    theirs = Reading.objects.get(response_id=ids[0], reader_spec=s)
    readings_write(rows=[ReadingRow(rid, s.id, ReaderReading("incorrect", answer="Z"), 1.0) for rid in ids])
    stored = {r.response_id: r for r in Reading.objects.filter(reader_spec=s)}
    assert sorted(stored) == ids
    assert (stored[ids[0]].pk, stored[ids[0]].verdict, stored[ids[0]].answer) == (theirs.pk, "correct", "B")
    assert [(stored[rid].verdict, stored[rid].answer) for rid in ids[1:]] == [("incorrect", "Z")] * 2


@on_each_vendor
def test_a_row_the_database_refuses_fails_the_write_whole(write_jsonl):
    ids = imported(write_jsonl, n=2)
    s = spec()
    rows = [
        ReadingRow(ids[0], s.id, ReaderReading("correct", answer="B"), 1.0),
        ReadingRow(ids[1], s.id, ReaderReading("correct", answer="B", span=(5, 2)), 1.0),  # the CHECK refuses it
    ]
    dataset = Dataset.objects.get(name="w")
    before = dataset_version(dataset_id=dataset.pk)
    with pytest.raises(IntegrityError):
        readings_write(rows=rows)
    assert not Reading.objects.filter(reader_spec=s).exists()
    assert dataset_version(dataset_id=dataset.pk) == before


@on_each_vendor
def test_the_data_version_of_each_dataset_goes_up_once_unless_the_caller_raises_it(write_jsonl):
    a, b = imported(write_jsonl, dataset="a", n=2), imported(write_jsonl, dataset="b", n=1)
    versions = {name: Dataset.objects.get(name=name).pk for name in ("a", "b")}
    before = {name: dataset_version(dataset_id=pk) for name, pk in versions.items()}
    s = spec()
    readings_write(rows=[ReadingRow(rid, s.id, ReaderReading("correct")) for rid in [*a, *b]])
    assert {name: dataset_version(dataset_id=pk) for name, pk in versions.items()} == {
        name: number + 1 for name, number in before.items()
    }
    readings_write(rows=[ReadingRow(rid, spec("t").id, ReaderReading("correct")) for rid in a], record_change=False)
    assert dataset_version(dataset_id=versions["a"]) == before["a"] + 1
    assert Reading.objects.filter(reader_spec__name="t").count() == 2


@on_each_vendor
def test_with_a_stand_in_one_refused_row_alone_is_replaced_and_dependents_get_each_id(write_jsonl):
    ids = imported(write_jsonl)
    s = spec()
    readings_write(rows=[ReadingRow(ids[2], s.id, ReaderReading("correct", answer="B"))])  # another worker's
    seen: list[tuple[int, str, int]] = []

    def dependents(stored):
        seen.extend((row.response_id, row.dependent, reading_id) for row, reading_id in stored)

    def stand_in(row, exc):
        return row._replace(reading=ReaderReading("error", detail={"why": type(exc).__name__}), dependent="stand-in")

    rows = [
        ReadingRow(ids[0], s.id, ReaderReading("correct", answer="(b)"), item=MC, dependent="ok"),
        ReadingRow(ids[1], s.id, ReaderReading("correct", span=(5, 2)), dependent="refused"),
        ReadingRow(ids[2], s.id, ReaderReading("incorrect"), dependent="late"),
    ]
    readings_write(rows=rows, dependents=dependents, stand_in=stand_in)
    stored = {r.response_id: r for r in Reading.objects.filter(reader_spec=s)}
    assert (stored[ids[0]].verdict, stored[ids[0]].canonical) == ("correct", "B")
    assert (stored[ids[1]].verdict, stored[ids[1]].detail) == ("error", {"why": "IntegrityError"})
    assert stored[ids[2]].verdict == "correct"  # the reading there first wins; its row is dropped
    assert seen == [(ids[0], "ok", stored[ids[0]].pk), (ids[1], "stand-in", stored[ids[1]].pk)]


@on_each_vendor
def test_a_redo_overwrites_a_redoable_reading_in_place_and_nothing_else(write_jsonl):
    ids = imported(write_jsonl, n=2)
    s = spec()
    write_each(ids, s, ReaderReading("error", detail={"failed": "call"}), ReaderReading("correct", answer="B"))
    failed, good = (Reading.objects.get(response_id=rid, reader_spec=s) for rid in ids)
    seen: list[int] = []
    readings_write(
        rows=[
            ReadingRow(ids[0], s.id, ReaderReading("incorrect", answer="(c)"), 3.0, item=MC, replaces=failed.pk),
            ReadingRow(ids[1], s.id, ReaderReading("incorrect", answer="A"), 3.0, replaces=good.pk),
        ],
        dependents=lambda stored: seen.extend(reading_id for _, reading_id in stored),
        redoable=("error", "timeout"),
    )
    redone, kept = (Reading.objects.get(pk=pk) for pk in (failed.pk, good.pk))
    assert (redone.verdict, redone.answer, redone.canonical, redone.detail, redone.elapsed_ms) == (
        "incorrect",
        "(c)",
        "C",
        {},
        3.0,
    )
    assert (kept.verdict, kept.answer) == ("correct", "B")
    assert seen == [failed.pk]
    assert Reading.objects.filter(reader_spec=s).count() == 2


@on_each_vendor
def test_discarding_a_responses_readings_leaves_the_others(write_jsonl):
    ids = imported(write_jsonl, n=2)
    s = spec()
    readings_write(rows=[ReadingRow(rid, s.id, ReaderReading("correct")) for rid in ids])
    readings_discard(response_ids=[ids[0]])
    assert list(Reading.objects.values_list("response_id", flat=True)) == [ids[1]]


@on_each_vendor
def test_a_math_answer_gets_its_canonical_form_from_its_item(write_jsonl):
    run_command("import_responses", str(write_jsonl([math_row(0)])), dataset="m", no_progress=True)
    (rid,) = Response.objects.filter(dataset__name="m").values_list("id", flat=True)
    s = spec()
    item = Item(response="", gold="72", choices=(), question="Compute.")
    readings_write(rows=[ReadingRow(rid, s.id, ReaderReading("correct", answer="72.0"), item=item)])
    assert Reading.objects.get(response_id=rid).canonical == "72"


@pytest.mark.system  # a child process
def test_the_store_and_replace_rule_tests_pass_on_sqlite(tmp_path):
    counts = run_on_sqlite(tmp_path, "tests/pipeline/test_readings_store.py", "tests/ingest/test_replaced.py")
    # Each test on "sqlite" passed; those on "postgresql" (and the PostgreSQL-only one) skipped.
    assert counts["failures"] == counts["errors"] == 0 and counts["tests"] - counts["skipped"] >= 15, counts
