"""Readers that do not apply say so (issue 36 item 3): on multiple-choice data the default panel is
the multiple-choice readers plus `fixed`, no reader records `error`, and a maths reader named
explicitly records `not_applicable`, which no summary or analytics count takes as a failure or as
a wrong answer."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from adjudication.analytics.selectors import ranking_tables, reading_summary
from adjudication.models import Dataset, Reading
from adjudication.pipeline.selectors import dataset_default_panel, default_panel, reader_summary

from ..conftest import mc_row, run_command

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager")]

# MMLU-Pro's shape: ten options A–J; golds include J, the one a four-option reader never sees.
OPTIONS = ["Durkheim", "Weber", "Merton", "Parsons", "Comte", "Marx", "Mead", "Goffman", "Simmel", "Tönnies"]
ANSWERS = [("J", "The answer is (J)."), ("C", "so the answer is (C)"), ("J", "Answer: I"), ("E", "I am not sure.")]
MATHS_READERS = ["sympy-cascade", "gsm8k-strict-match", "math-verify-expr"]


def ten_option_rows() -> list[dict]:
    rows = []
    for checkpoint in ("base", "rl"):
        for i, (gold, response) in enumerate(ANSWERS):
            rows.append(
                mc_row(i, id=f"{checkpoint}-{i}", choices=OPTIONS, gold=gold, response=response, checkpoint=checkpoint)
            )
    return rows


@pytest.fixture
def run_readers(django_capture_on_commit_callbacks):
    """`manage.py run_readers`, its batches read inline once enqueued (eager Celery)."""

    def run(**options) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            run_command("run_readers", dataset="mmlu10", no_wait=True, **options)

    return run


@pytest.fixture
def mc_dataset(write_jsonl) -> Dataset:
    run_command("import_responses", str(write_jsonl(ten_option_rows())), dataset="mmlu10", no_progress=True)
    return Dataset.objects.get(name="mmlu10")


def test_the_default_panel_of_a_multiple_choice_dataset_records_no_error(mc_dataset, run_readers):
    run_readers()
    read_by = set(Reading.objects.values_list("reader_spec__name", flat=True))
    assert (
        read_by
        == set(default_panel(task_types={"multiple_choice"}))
        == set(dataset_default_panel(dataset_id=mc_dataset.pk))
    )
    assert "fixed" in read_by and not read_by & set(MATHS_READERS)
    verdicts = Counter(Reading.objects.values_list("verdict", flat=True))
    assert verdicts["error"] == 0 and verdicts["timeout"] == 0 and verdicts["not_applicable"] == 0
    assert verdicts["correct"] > 0


def test_a_maths_reader_named_on_multiple_choice_records_not_applicable_with_its_identity(mc_dataset, run_readers):
    run_readers(readers=MATHS_READERS)
    readings = Reading.objects.filter(reader_spec__name__in=MATHS_READERS).select_related("reader_spec")
    assert readings.count() == len(MATHS_READERS) * 8
    assert {r.verdict for r in readings} == {"not_applicable"}
    # the reader's name, version and config hash, as with every verdict
    assert all(r.reader_spec.version and r.reader_spec.config_hash for r in readings)
    assert {r.detail["task_type"] for r in readings} == {"multiple_choice"}


def test_not_applicable_is_no_failure_and_no_wrong_answer_in_the_summaries(mc_dataset, run_readers):
    run_readers(readers=["fixed", "sympy-cascade"])
    rows = {(row.reader, row.group): row for row in reader_summary(dataset=mc_dataset, by="checkpoint")}
    sympy, fixed = rows[("sympy-cascade", "base")], rows[("fixed", "base")]
    assert (sympy.n, sympy.not_applicable, sympy.counts["error"], sympy.counts["incorrect"]) == (0, 4, 0, 0)
    assert (fixed.n, fixed.not_applicable) == (4, 0)
    # Analytics: a reader with only not_applicable readings has no accuracy (no 0 / n), and no
    # not_applicable reading is in anyone's denominator.
    summary = reading_summary(dataset=mc_dataset)
    assert {c.verdict for c in summary.counts} <= {"correct", "incorrect", "no_answer"}
    tables = ranking_tables(dataset=mc_dataset, summary=summary)
    assert "sympy-cascade" not in tables
    assert sum(n for _k, n in tables["fixed"].values()) == 8


def test_read_on_a_file_follows_its_task_types_and_marks_a_named_maths_reader_not_applicable(write_jsonl, tmp_path):
    out = tmp_path / "out.jsonl"
    src = write_jsonl(ten_option_rows())
    table = run_command(
        "read", str(src), "--reader", "all", "--reader", "sympy-cascade", "--out", str(out), "--processes", "1"
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    readers = {line["reader"] for line in lines}
    assert readers == set(default_panel(task_types={"multiple_choice"})) | {"sympy-cascade"}
    assert {line["verdict"] for line in lines if line["reader"] == "sympy-cascade"} == {"not_applicable"}
    assert not [line for line in lines if line["verdict"] == "error"]
    sympy_row = next(row for row in table.splitlines() if row.startswith("sympy-cascade"))
    assert sympy_row.split()[2:] == ["0", "-", "-", "-", "4"]
