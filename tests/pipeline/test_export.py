"""export_readings: one row per reading with the reader's identity."""

from __future__ import annotations

import csv
import json

import pytest

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
