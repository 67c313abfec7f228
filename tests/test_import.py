"""Import: all-or-nothing, line-numbered errors, idempotent re-import, verbatim storage."""
from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management.base import CommandError

from adjudication.models import Dataset, Question, Reading, ReaderSpec, Response, Run

from .conftest import math_row, mc_row, project_table_counts, run_command

pytestmark = pytest.mark.django_db


def test_a_good_file_creates_runs_questions_and_responses(write_jsonl):
    rows = [mc_row(i) for i in range(3)] + [mc_row(i, id=f"rl-{i}", checkpoint="rl") for i in range(3)] + [math_row()]
    out = run_command("import_responses", str(write_jsonl(rows)), dataset="d", no_progress=True)
    assert "7 new" in out
    ds = Dataset.objects.get(name="d")
    assert ds.responses.count() == 7
    assert set(Run.objects.values_list("checkpoint", "benchmark")) == {("base", "mmlu"), ("rl", "mmlu"), ("rl", "math")}
    # base and rl answered the same three questions: they share Question rows
    assert Question.objects.filter(benchmark="mmlu").count() == 3
    r = Response.objects.get(external_id="mc-1")
    assert r.question.choices == ["Durkheim", "Weber", "Merton", "Parsons"]
    assert r.question.gold == "B" and r.run.prompt == "cot-v1"
    assert len(r.content_hash) == 64


def test_reimporting_the_same_file_changes_nothing(write_jsonl):
    path = write_jsonl([mc_row(i) for i in range(5)])
    run_command("import_responses", str(path), dataset="d", no_progress=True)
    before = project_table_counts()
    ids_before = list(Response.objects.values_list("id", "row_hash", "updated_at"))
    out = run_command("import_responses", str(path), dataset="d", no_progress=True)
    assert "0 new, 5 unchanged" in out
    assert project_table_counts() == before
    assert list(Response.objects.values_list("id", "row_hash", "updated_at")) == ids_before


def test_a_malformed_line_7_names_line_7_and_leaves_the_database_unchanged(write_jsonl):
    run_command("import_responses", str(write_jsonl([mc_row(100)], name="seed.jsonl")), dataset="d", no_progress=True)
    before = project_table_counts()
    lines = [json.dumps(mc_row(i)) for i in range(10)]
    lines[6] = '{"id": "broken", "question": "Q?", '
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(write_jsonl(lines)), dataset="d2", no_progress=True)
    assert "line 7" in str(err.value) and "in.jsonl" in str(err.value)
    assert project_table_counts() == before
    assert not Dataset.objects.filter(name="d2").exists()


@pytest.mark.parametrize(
    ("bad", "field", "needle"),
    [
        ({"gold": None}, "gold", "missing required field"),
        ({"response": 42}, "response", "must be a string, got int"),
        ({"choices": "A,B"}, "choices", "list of option texts"),
        ({"meta": [1]}, "meta", "must be an object"),
        ({"gold": "E"}, "gold", "letter A–D"),
        ({"question": "   "}, "question", "must not be empty"),
    ],
)
def test_a_bad_field_is_named_with_its_line(write_jsonl, bad, field, needle):
    rows = [mc_row(0), mc_row(1), {**mc_row(2), **bad}]
    rows[2] = {k: v for k, v in rows[2].items() if v is not None}
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(write_jsonl(rows)), dataset="d", no_progress=True)
    message = str(err.value)
    assert "line 3" in message and f"field '{field}'" in message and needle in message
    assert Response.objects.count() == 0


def test_a_duplicate_id_in_one_file_is_an_error_naming_both_lines(write_jsonl):
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(write_jsonl([mc_row(0), mc_row(1), mc_row(0)])), dataset="d", no_progress=True)
    assert "line 3" in str(err.value) and "duplicate id 'mc-0'" in str(err.value) and "line 1" in str(err.value)
    assert Response.objects.count() == 0


def test_a_changed_response_under_an_existing_id_needs_replace(write_jsonl):
    run_command("import_responses", str(write_jsonl([mc_row(0), mc_row(1)])), dataset="d", no_progress=True)
    spec = ReaderSpec.objects.create(name="x", version="1", config_hash="h")
    original = Response.objects.get(external_id="mc-1")
    Reading.objects.create(response=original, reader_spec=spec, verdict="correct")
    changed = write_jsonl([mc_row(0), mc_row(1, response="Actually the answer is (C).")], name="changed.jsonl")
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(changed), dataset="d", no_progress=True)
    assert "line 2" in str(err.value) and "--replace" in str(err.value)
    assert Response.objects.get(external_id="mc-1").text == original.text
    out = run_command("import_responses", str(changed), dataset="d", replace=True, no_progress=True)
    assert "1 replaced" in out
    replaced = Response.objects.get(external_id="mc-1")
    assert replaced.pk == original.pk and replaced.text == "Actually the answer is (C)."
    # the old reading described text that no longer exists
    assert not Reading.objects.filter(response=replaced).exists()


def test_hostile_text_is_stored_verbatim(write_jsonl):
    nasty = "NUL\x00 lone\ud800surrogate <script>alert(1)</script> \x01json:not-a-sentinel " + "x" * 200_000
    run_command("import_responses", str(write_jsonl([mc_row(0, response=nasty)])), dataset="d", no_progress=True)
    stored = Response.objects.get(external_id="mc-0")
    assert stored.text == nasty
    assert stored.content_hash == hashlib.sha256(nasty.encode("utf-8", "surrogatepass")).hexdigest()
    # PostgreSQL text cannot hold NUL or lone surrogates: the column holds the lossless escape.
    from django.db import connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT text FROM adjudication_response WHERE id = %s", [stored.pk])
        (raw,) = cursor.fetchone()
    assert raw.startswith("\x01json:") and "\x00" not in raw


def test_optional_fields_may_be_omitted_and_numbers_are_accepted_for_id_and_gold(write_jsonl):
    run_command("import_responses", str(write_jsonl([{"id": 7, "question": "2+2?", "gold": 4, "response": "4"}])),
                dataset="d", model="m", checkpoint="base", no_progress=True)
    r = Response.objects.get()
    assert r.external_id == "7" and r.question.gold == "4" and r.question.choices == []
    assert (r.run.model, r.run.checkpoint) == ("m", "base")


def test_lm_eval_samples_import_with_model_and_checkpoint_from_the_command_line(write_jsonl):
    samples = [
        {"doc_id": 0, "doc": {"question": "Janet has 3 apples...", "answer": "She has 3+4=7.\n#### 7"},
         "target": "She has 3+4=7.\n#### 7", "arguments": [["Q: ...\nA:", {"until": ["Q:"]}]],
         "resps": [["She buys 4 more. The answer is 7."]], "filtered_resps": ["7"], "doc_hash": "d0",
         "prompt_hash": "p0", "target_hash": "t0"},
        {"doc_id": 1, "doc": {"question": "Which is a mammal?", "choices": ["shark", "whale", "trout"], "answer": 1},
         "target": 1, "resps": [["The answer is (B)."]], "filtered_resps": ["(B)"], "prompt_hash": "p1"},
    ]
    path = write_jsonl(samples, name="samples_gsm8k_2026-01-02T10-11-12.123456.jsonl")
    run_command("import_responses", str(path), dataset="lm", fmt="lm-eval", model="qwen-7b", checkpoint="rl",
                no_progress=True)
    first = Response.objects.get(external_id="gsm8k:0")
    assert first.question.gold == "7" and first.text == "She buys 4 more. The answer is 7."
    assert (first.run.model, first.run.checkpoint, first.run.benchmark) == ("qwen-7b", "rl", "gsm8k")
    second = Response.objects.get(external_id="gsm8k:1")
    assert second.question.choices == ["shark", "whale", "trout"] and second.question.gold == "B"


def test_lm_eval_line_without_resps_is_named(write_jsonl):
    path = write_jsonl([{"doc_id": 0, "doc": {"question": "q"}, "target": "1"}], name="samples_t_2026-01-02T10-11-12.jsonl")
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(path), dataset="lm", fmt="lm-eval", no_progress=True)
    assert "line 1" in str(err.value) and "field 'resps'" in str(err.value)
