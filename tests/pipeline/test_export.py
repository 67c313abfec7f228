"""export_readings: one row per reading with the reader's identity."""

from __future__ import annotations

import csv
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adjudication.models import ReaderSpec, Reading, Response

from ..conftest import mc_row, run_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_readings(write_jsonl):
    run_command(
        "import_responses", str(write_jsonl([mc_row(0), mc_row(1, checkpoint="rl")])), dataset="e", no_progress=True
    )
    spec = ReaderSpec.objects.create(name="boxed", version="1.0", config_hash="abc123", config={"k": 1})
    for r in Response.objects.all():
        Reading.objects.create(
            response=r, reader_spec=spec, answer="B", normalized="B", verdict="correct", span_start=3, span_end=4
        )
    return spec


def test_jsonl_export_names_response_run_and_reader_identity(two_readings, tmp_path):
    out = tmp_path / "readings.jsonl"
    run_command("export_readings", dataset="e", fmt="jsonl", out=out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["response_id"], r["checkpoint"]) for r in rows} == {("mc-0", "base"), ("mc-1", "rl")}
    for r in rows:
        assert (r["model"], r["benchmark"], r["reader"], r["version"], r["config_hash"], r["answer"], r["verdict"]) == (
            "orca-7b",
            "mmlu",
            "boxed",
            "1.0",
            "abc123",
            "B",
            "correct",
        )
    assert not (tmp_path / "readings.jsonl.partial").exists()


def test_csv_export_has_a_header_and_one_row_per_reading(two_readings, tmp_path):
    out = tmp_path / "readings.csv"
    run_command("export_readings", dataset="e", fmt="csv", out=out)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 and rows[0]["reader"] == "boxed" and rows[0]["config_hash"] == "abc123"


def test_export_of_an_unknown_dataset_is_a_clear_error():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        run_command("export_readings", dataset="nope")


@pytest.fixture
def hostile_readings(write_jsonl):
    """Readings whose answers hold a lone surrogate, a NUL and a formula, as model text can."""
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(3)])), dataset="h", no_progress=True)
    spec = ReaderSpec.objects.create(name="boxed", version="1.0", config_hash="abc123", config={})
    answers = ["x\ud800y", "nul\x00here", "=cmd|' /C calc'!A0"]
    for r, answer in zip(Response.objects.order_by("external_id"), answers):
        Reading.objects.create(response=r, reader_spec=spec, answer=answer, normalized=answer, verdict="incorrect")
    return answers


def test_jsonl_export_to_stdout_is_whole_valid_utf8_and_keeps_model_text_verbatim(hostile_readings):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("export_readings", dataset="h", fmt="jsonl", stdout=out)
    text = out.getvalue()
    text.encode("utf-8")  # valid UTF-8: no lone surrogate left unescaped
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["answer"] for r in rows] == hostile_readings


def test_exports_to_a_file_are_valid_utf8_and_formulas_are_defused(hostile_readings, tmp_path):
    jsonl, table = tmp_path / "r.jsonl", tmp_path / "r.csv"
    run_command("export_readings", dataset="h", fmt="jsonl", out=jsonl)
    run_command("export_readings", dataset="h", fmt="csv", out=table)
    raw = jsonl.read_bytes().decode("utf-8")  # raises on invalid UTF-8
    assert [json.loads(line)["answer"] for line in raw.splitlines()] == hostile_readings
    cells = [r["answer"] for r in csv.DictReader(table.open(encoding="utf-8"))]
    assert cells == ["x\\ud800y", "nul\x00here", "'=cmd|' /C calc'!A0"]
    assert not list(tmp_path.glob("*.partial"))


# -- Parquet (issue 17, item 6) ------------------------------------------------------------------------


def test_parquet_export_has_typed_columns(two_readings, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "readings.parquet"
    run_command("export_readings", dataset="e", fmt="parquet", out=out)
    table = pq.read_table(out)
    assert table.num_rows == 2
    types = {f.name: f.type for f in table.schema}
    assert types["span_start"] == types["span_end"] == pa.int64()
    assert types["elapsed_ms"] == pa.float64() and types["answer"] == pa.string()
    rows = table.to_pylist()
    assert {(r["response_id"], r["checkpoint"]) for r in rows} == {("mc-0", "base"), ("mc-1", "rl")}
    assert all((r["reader"], r["span_start"], r["span_end"], r["verdict"]) == ("boxed", 3, 4, "correct") for r in rows)
    assert not list(tmp_path.glob("*.partial"))


def test_parquet_export_gives_model_text_back_verbatim(hostile_readings, tmp_path):
    import pyarrow.parquet as pq

    from adjudication.text import unescape_text

    out = tmp_path / "r.parquet"
    run_command("export_readings", dataset="h", fmt="parquet", out=out)
    table = pq.read_table(out)
    stored = table.column("answer").to_pylist()
    assert stored[1] == "nul\x00here" and stored[2] == "=cmd|' /C calc'!A0"  # NUL kept, no apostrophe
    assert [unescape_text(a) for a in stored] == hostile_readings
    assert b"unescape_text" in table.schema.metadata[b"adjudication.text"]


def test_parquet_export_is_written_in_bounded_row_groups(hostile_readings, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from adjudication import exports

    monkeypatch.setattr(exports, "PARQUET_BATCH_ROWS", 2)
    out = tmp_path / "r.parquet"
    run_command("export_readings", dataset="h", fmt="parquet", out=out)
    meta = pq.ParquetFile(out).metadata
    assert (meta.num_rows, meta.num_row_groups) == (3, 2)
    assert [meta.row_group(i).num_rows for i in range(2)] == [2, 1]


def test_parquet_export_needs_an_output_file(two_readings):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--out"):
        run_command("export_readings", dataset="e", fmt="parquet")


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_an_export_that_fails_midway_leaves_the_old_file_and_no_partial_one(two_readings, tmp_path, monkeypatch, fmt):
    def broken(*, dataset):
        yield {"response_id": "mc-0", "answer": "half"}
        raise RuntimeError("database went away")

    monkeypatch.setattr("adjudication.management.commands.export_readings.export_rows", broken)
    out = tmp_path / f"r.{fmt}"
    out.write_bytes(b"the previous export")
    with pytest.raises(RuntimeError, match="went away"):
        run_command("export_readings", dataset="e", fmt=fmt, out=out)
    assert out.read_bytes() == b"the previous export"
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob(".export-*"))


# -- the one escape of CSV cells and Parquet strings -------------------------------------------------

# Text made of what the escape has to tell apart: backslashes, the letters of an escape, surrogates.
_TRICKY = st.text(alphabet=st.sampled_from(["\\", "u", "d", "8", "f", "0", "\ud800", "\udfff", "\x00", "é", "x"]))


@given(st.one_of(_TRICKY, st.text()))
def test_escaped_text_is_valid_utf8_and_unescapes_to_itself(text):
    from adjudication.text import escape_text, unescape_text

    escaped = escape_text(text)
    escaped.encode("utf-8")
    assert unescape_text(escaped) == text


def test_the_escape_leaves_ordinary_text_alone():
    from adjudication.text import escape_text

    for text in ("\\frac{1}{2} and \\boxed{C}", "nul\x00kept", "\\uD800 upper case", "plain"):
        assert escape_text(text) == text
    assert escape_text("x\ud800") == "x\\ud800"
    assert escape_text("\\ud800 typed by the model") == "\\\\ud800 typed by the model"
