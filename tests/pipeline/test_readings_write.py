"""Writing readings (pipeline.store.readings_write): one COPY per task on PostgreSQL, and when
another worker stored some of the same readings first, theirs are kept and the rest stored."""

from __future__ import annotations

import math

import pytest
from django.db import IntegrityError, connection

from adjudication.models import Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.pipeline.store import ReadingRow, readings_write
from readers import Reading as ReaderReading

from ..conftest import mc_row, run_command

pytestmark = pytest.mark.django_db


def imported(write_jsonl, n: int = 3) -> list[int]:
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(n)])), dataset="w", no_progress=True)
    return list(Response.objects.order_by("id").values_list("id", flat=True))


def test_readings_another_worker_stored_first_are_kept_and_the_rest_are_stored(write_jsonl):
    ids = imported(write_jsonl)
    spec = reader_spec_by_name(name="boxed")
    assert readings_create(reader_specs=[spec], response_ids=ids[:1]) == 1  # "the other worker"
    theirs = Reading.objects.get(response_id=ids[0], reader_spec=spec)
    # This worker computed all three (a second delivery of the same batch, at the same time).
    rows = [ReadingRow(rid, spec.id, ReaderReading("incorrect", answer="Z"), 1.0) for rid in ids]
    readings_write(rows=rows)
    stored = {r.response_id: r for r in Reading.objects.filter(reader_spec=spec)}
    assert sorted(stored) == ids
    assert (stored[ids[0]].pk, stored[ids[0]].verdict, stored[ids[0]].answer) == (theirs.pk, theirs.verdict, None)
    assert [(stored[rid].verdict, stored[rid].answer) for rid in ids[1:]] == [("incorrect", "Z")] * 2


def test_a_copied_reading_keeps_any_text_and_a_storable_detail(write_jsonl):
    (rid,) = imported(write_jsonl, 1)
    spec = reader_spec_by_name(name="boxed")
    text = "B\x00 \ud800 tab\there\nnewline \\N back\\slash"
    reading = ReaderReading(
        "correct",
        answer=text,
        normalized="\x01json:looks like the sentinel",
        canonical="B",
        span=(3, 4),
        detail={"score": math.nan, "note": "nul\x00", "nested": [1, {"x": math.inf}]},
    )
    readings_write(rows=[ReadingRow(rid, spec.id, reading, 2.5)])
    stored = Reading.objects.get(response_id=rid, reader_spec=spec)
    assert (stored.answer, stored.normalized, stored.canonical) == (text, "\x01json:looks like the sentinel", "B")
    assert (stored.verdict, stored.span_start, stored.span_end, stored.elapsed_ms) == ("correct", 3, 4, 2.5)
    assert stored.detail == {"score": None, "note": "nul\ufffd", "nested": [1, {"x": None}]}
    assert stored.created_at is not None


def test_a_reading_the_database_refuses_fails_the_write_whole(write_jsonl):
    ids = imported(write_jsonl, 2)
    spec = reader_spec_by_name(name="boxed")
    bad = ReaderReading("correct", answer="B", span=(5, 2))  # span end before its start: the check refuses it
    rows = [
        ReadingRow(ids[0], spec.id, ReaderReading("correct", answer="B"), 1.0),
        ReadingRow(ids[1], spec.id, bad, 1.0),
    ]
    with pytest.raises(IntegrityError):
        readings_write(rows=rows)
    if connection.vendor == "postgresql":  # one COPY: nothing of it stays
        assert not Reading.objects.filter(reader_spec=spec).exists()
