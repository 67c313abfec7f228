"""Import: all-or-nothing, line-numbered errors, idempotent re-import, verbatim storage."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from django.core.management.base import CommandError

from adjudication.models import Dataset, Question, ReaderSpec, Reading, Response, Run

from ..conftest import lm_eval_sample, manage, math_row, mc_row, project_table_counts, run_command

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
        run_command(
            "import_responses", str(write_jsonl([mc_row(0), mc_row(1), mc_row(0)])), dataset="d", no_progress=True
        )
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
    run_command(
        "import_responses",
        str(write_jsonl([{"id": 7, "question": "2+2?", "gold": 4, "response": "4"}])),
        dataset="d",
        model="m",
        checkpoint="base",
        no_progress=True,
    )
    r = Response.objects.get()
    assert r.external_id == "7" and r.question.gold == "4" and r.question.choices == []
    assert (r.run.model, r.run.checkpoint) == ("m", "base")


def test_lm_eval_samples_import_with_model_and_checkpoint_from_the_command_line(write_jsonl):
    samples = [
        {
            "doc_id": 0,
            "doc": {"question": "Janet has 3 apples...", "answer": "She has 3+4=7.\n#### 7"},
            "target": "She has 3+4=7.\n#### 7",
            "arguments": [["Q: ...\nA:", {"until": ["Q:"]}]],
            "resps": [["She buys 4 more. The answer is 7."]],
            "filtered_resps": ["7"],
            "doc_hash": "d0",
            "prompt_hash": "p0",
            "target_hash": "t0",
        },
        {
            "doc_id": 1,
            "doc": {"question": "Which is a mammal?", "choices": ["shark", "whale", "trout"], "answer": 1},
            "target": 1,
            "resps": [["The answer is (B)."]],
            "filtered_resps": ["(B)"],
            "prompt_hash": "p1",
        },
    ]
    path = write_jsonl(samples, name="samples_gsm8k_2026-01-02T10-11-12.123456.jsonl")
    run_command(
        "import_responses", str(path), dataset="lm", fmt="lm-eval", model="qwen-7b", checkpoint="rl", no_progress=True
    )
    first = Response.objects.get(external_id="gsm8k:0")
    assert first.question.gold == "7" and first.text == "She buys 4 more. The answer is 7."
    assert (first.run.model, first.run.checkpoint, first.run.benchmark) == ("qwen-7b", "rl", "gsm8k")
    second = Response.objects.get(external_id="gsm8k:1")
    assert second.question.choices == ["shark", "whale", "trout"] and second.question.gold == "B"


def test_lm_eval_line_without_resps_is_named(write_jsonl):
    path = write_jsonl(
        [{"doc_id": 0, "doc": {"question": "q"}, "target": "1"}], name="samples_t_2026-01-02T10-11-12.jsonl"
    )
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(path), dataset="lm", fmt="lm-eval", no_progress=True)
    assert "line 1" in str(err.value) and "field 'resps'" in str(err.value)


# --- Hostile input: every field is checked against what its column can hold (issue 12, items 16, 17, 23) ---

ERROR_FORM = r"[^,]+\.jsonl, line \d+(, field '[^']+')?: \S"


def import_error(path, **options) -> str:
    """Run the import expecting a clean CommandError; the database must be exactly as before."""
    before = project_table_counts()
    options.setdefault("dataset", "d")
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(path), no_progress=True, **options)
    assert project_table_counts() == before
    return str(err.value)


@pytest.mark.parametrize("field", ["id", "model", "checkpoint", "benchmark", "prompt"])
@pytest.mark.parametrize(("bad_char", "reason"), [("\x00", "NUL"), ("\ud800", "lone surrogate")])
def test_an_identity_field_with_nul_or_a_lone_surrogate_is_named(write_jsonl, field, bad_char, reason):
    rows = [mc_row(0), mc_row(1, **{field: f"bad{bad_char}value"})]
    message = import_error(write_jsonl(rows))
    assert re.match(ERROR_FORM, message.split("written: ", 1)[1])
    assert "line 2" in message and f"field '{field}'" in message and reason in message


# A `prompt` longer than its column is the rendered prompt (test_import_prompt_text.py, issue 36 item 2).
@pytest.mark.parametrize(("field", "limit"), [("id", 500), ("model", 200), ("checkpoint", 100), ("benchmark", 100)])
def test_an_identity_field_longer_than_its_column_is_named_and_one_that_fits_is_stored(write_jsonl, field, limit):
    message = import_error(write_jsonl([mc_row(0), mc_row(1, **{field: "x" * (limit + 1)})]))
    assert "line 2" in message and f"field '{field}'" in message and f"at most {limit} characters" in message
    run_command(
        "import_responses",
        str(write_jsonl([mc_row(0, **{field: "x" * limit})], name="fits.jsonl")),
        dataset="d",
        no_progress=True,
    )
    assert Response.objects.count() == 1


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        ({"meta": {"score": float("nan")}}, "meta", "NaN"),
        ({"meta": {"score": float("inf")}}, "meta", "Infinity"),
        ({"meta": {"scores": [1, float("-inf")]}}, "meta", "Infinity"),
        ({"meta": {"note": "lone \ud800 surrogate"}}, "meta", "lone surrogate"),
        ({"meta": {"key \udc80": 1}}, "meta", "lone surrogate"),
        ({"meta": {"key \x00": 1}}, "meta", "NUL"),
        ({"choices": ["Durkheim", "We\udcffber", "Merton", "Parsons"]}, "choices", "lone surrogate"),
        ({"choices": ["Durkheim", "We\x00ber", "Merton", "Parsons"]}, "choices", "NUL"),
        ({"logprob": float("nan")}, "logprob", "NaN"),
        ({"trace": ["\udfff"]}, "trace", "lone surrogate"),
        ({"meta": {"deep": json.loads("[" * 150 + "]" * 150)}}, "meta.deep[0][0]…", "nested more than"),
    ],
)
def test_a_json_field_holding_what_jsonb_cannot_store_is_named(write_jsonl, overrides, field, needle):
    message = import_error(write_jsonl([mc_row(0), mc_row(1, **overrides)]))
    assert "line 2" in message and f"field '{field}'" in message and needle in message


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("field", ["id", "gold"])
def test_a_non_finite_number_is_not_accepted_as_an_id_or_gold(write_jsonl, field, value):
    message = import_error(write_jsonl([math_row(0), math_row(1, **{field: value})]))
    assert "line 2" in message and f"field '{field}'" in message and "finite" in message


@pytest.mark.parametrize(
    "line",
    [
        '{"id": "m-9", "question": "q", "gold": "1", "response": "r", "meta": {"n": ' + "9" * 5000 + "}}",
        '{"id": ' + "7" * 5000 + ', "question": "q", "gold": "1", "response": "r"}',
        '{"id": "m-9", "question": "q", "gold": "1", "response": "r", "meta": {"p": 1e400}}',
        "[" * 100_000 + "]" * 100_000,
        '{"id": "deep", "question": "q", "gold": "1", "response": "r", "meta": '
        + '{"a": ' * 100_000
        + "1"
        + "}" * 100_001,
    ],
    ids=[
        "5000-digit-in-meta",
        "5000-digit-id",
        "float-overflowing-to-infinity",
        "nested-100k-list",
        "nested-100k-in-meta",
    ],
)
def test_json_the_parser_cannot_hold_is_a_line_error(write_jsonl, line):
    message = import_error(write_jsonl([json.dumps(math_row(0)), line]))
    assert re.match(ERROR_FORM, message.split("written: ", 1)[1]) and "line 2" in message


def test_a_number_of_many_digits_that_fits_is_stored_exactly(write_jsonl):
    big = int("9" * 4000)
    run_command("import_responses", str(write_jsonl([math_row(0, meta={"n": big})])), dataset="d", no_progress=True)
    assert Response.objects.get().meta == {"n": big}


def test_a_dataset_name_longer_than_its_column_is_an_error(write_jsonl):
    message = import_error(write_jsonl([mc_row(0)]), dataset="d" * 201)
    assert "--dataset" in message and "at most 200 characters" in message
    run_command("import_responses", str(write_jsonl([mc_row(0)])), dataset="d" * 200, no_progress=True)
    assert Dataset.objects.get().name == "d" * 200


@pytest.mark.parametrize(
    ("name", "needle"), [("", "blank"), ("   ", "blank"), ("a\x00b", "NUL"), ("a\udc80b", "lone surrogate")]
)
def test_a_blank_or_unstorable_dataset_name_is_an_error(write_jsonl, name, needle):
    message = import_error(write_jsonl([mc_row(0)]), dataset=name)
    assert "--dataset" in message and needle in message


@pytest.mark.parametrize("name", ["a\rb", "a\nb", "bell\x07", "a\tb", "del\x7f", "\u202eevil", " padded"])
def test_a_dataset_name_with_control_characters_is_refused_without_printing_them(write_jsonl, name):
    message = import_error(write_jsonl([mc_row(0)]), dataset=name)
    assert "--dataset" in message and ("printable" in message or "spaces" in message)
    # The name is shown escaped: the message itself is one printable line.
    assert message.isprintable()
    assert not Dataset.objects.exists()


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("model", "m" * 201, "at most 200"),
        ("checkpoint", "rl\udcff", "lone surrogate"),
        ("task", "t" * 101, "at most 100"),
    ],
)
def test_an_unstorable_command_line_identity_is_an_error(write_jsonl, option, value, needle):
    samples = [{"doc_id": 0, "doc": {"question": "q"}, "target": "1", "resps": [["1"]]}]
    path = write_jsonl(samples, name="samples_t_2026-01-02T10-11-12.jsonl")
    message = import_error(path, fmt="lm-eval", **{option: value})
    assert f"--{option}" in message and needle in message


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        (
            {"doc": {"question": "q", "choices": [f"o{i}" for i in range(30)]}, "target": 28},
            "doc.choices",
            "at most 26",
        ),
        ({"doc": {"question": "q", "choices": [f"o{i}" for i in range(27)]}, "target": 0}, "doc.choices", "at most 26"),
        ({"doc": {"question": "q", "choices": ["a", "b\x00"]}, "target": 0}, "doc.choices", "NUL"),
        ({"filtered_resps": ["B\x00"]}, "filtered_resps", "NUL"),
        ({"filtered_resps": ["\ud83d"]}, "filtered_resps", "lone surrogate"),
        ({"doc_hash": float("nan")}, "doc_hash", "NaN"),
        ({"doc_id": {"nested": [1, 2]}}, "doc_id", "must be an integer or a string"),
        ({"doc_id": "x" * 600}, "doc_id", "at most 500"),
        ({"prompt_hash": "p\x00"}, "prompt_hash", "NUL"),
    ],
)
def test_an_lm_eval_field_the_database_cannot_hold_is_named(write_jsonl, overrides, field, needle):
    path = write_jsonl(
        [lm_eval_sample(0), lm_eval_sample(**{"doc_id": 1, **overrides})], name="samples_arc_2026-01-02T10-11-12.jsonl"
    )
    message = import_error(path, fmt="lm-eval")
    assert "line 2" in message and f"field '{field}'" in message and needle in message


_NO_ANSWER_DOC = {"question": "q", "choices": ["a", "b", "c", "d"]}


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"target": 7, "doc": _NO_ANSWER_DOC}, "index 7 is out of range for 4 choices"),
        ({"target": -1, "doc": _NO_ANSWER_DOC}, "index -1 is out of range for 4 choices"),
        # doc.answer must not stand in silently for lm-eval's own (bad) gold.
        ({"target": 7, "doc": {**_NO_ANSWER_DOC, "answer": 1}}, "index 7 is out of range for 4 choices"),
        ({"target": "E", "doc": _NO_ANSWER_DOC}, "must be a letter A–D or one of the choices"),
        ({"target": 2.0, "doc": _NO_ANSWER_DOC}, "must be a letter A–D or one of the choices"),
    ],
)
def test_an_lm_eval_multiple_choice_target_out_of_range_is_named(write_jsonl, overrides, needle):
    path = write_jsonl(
        [lm_eval_sample(0), lm_eval_sample(**{"doc_id": 1, **overrides})], name="samples_arc_2026-01-02T10-11-12.jsonl"
    )
    message = import_error(path, fmt="lm-eval")
    assert "samples_arc_2026-01-02T10-11-12.jsonl, line 2, field 'target'" in message and needle in message


@pytest.mark.parametrize(("target", "gold"), [(3, "D"), ("(C)", "C"), ("b-text", "B")])
def test_an_lm_eval_target_in_range_a_letter_or_a_choice_text_is_the_gold_letter(write_jsonl, target, gold):
    # lm-eval itself reads a string target naming an option by its text as that option (choices.index).
    doc = {"question": "q", "choices": ["a-text", "b-text", "c-text", "d-text"]}
    path = write_jsonl([lm_eval_sample(0, target=target, doc=doc)], name="samples_arc_2026-01-02T10-11-12.jsonl")
    run_command("import_responses", str(path), dataset="d", fmt="lm-eval", no_progress=True)
    assert Question.objects.get().gold == gold


def test_an_lm_eval_line_nested_past_the_bound_in_a_field_it_does_not_keep_is_named(write_jsonl):
    deep: list = []
    for _ in range(120):  # a bit over the bound of 100 levels, far under what json.loads refuses
        deep = [deep]
    doc = {"question": "q", "choices": ["a", "b", "c"], "answer": 1, "unused": deep}
    path = write_jsonl([lm_eval_sample(0), lm_eval_sample(1, doc=doc)], name="samples_arc_2026-01-02T10-11-12.jsonl")
    message = import_error(path, fmt="lm-eval")
    assert "line 2, field 'doc.unused[0][0]…'" in message and "nested more than 100 levels deep" in message


def test_lm_eval_text_fields_keep_nul_and_lone_surrogates_verbatim(write_jsonl):
    nasty = "NUL\x00 and \ud800"
    doc = {"question": nasty, "choices": ["a", "b"], "answer": 0}
    path = write_jsonl([lm_eval_sample(0, resps=[[nasty]], doc=doc)], name="samples_arc_2026-01-02T10-11-12.jsonl")
    run_command("import_responses", str(path), dataset="d", fmt="lm-eval", no_progress=True)
    stored = Response.objects.get()
    assert stored.text == nasty and stored.question.text == nasty


def test_invalid_utf8_names_the_line_it_is_on(tmp_path):
    lines = [json.dumps(math_row(i)).encode() for i in range(5000)]
    lines[2] = lines[2].replace(b"Adding", b"Add\xffing")
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"\n".join(lines[:4]) + b"\n")
    message = import_error(small)
    assert "small.jsonl, line 3: not valid UTF-8" in message
    lines[2], lines[4999] = json.dumps(math_row(2)).encode(), lines[4999].replace(b"cancels", b"cancels \xc3(")
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"\n".join(lines) + b"\n")
    assert "big.jsonl, line 5000: not valid UTF-8" in import_error(big)


def test_an_encoded_surrogate_is_invalid_utf8_not_a_stored_character(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(json.dumps(math_row(0)).encode().replace(b"Adding", b"Add\xed\xa0\x80ing") + b"\n")
    assert "in.jsonl, line 1: not valid UTF-8" in import_error(path)


@pytest.mark.parametrize("content", ["", "\n\n   \n"], ids=["empty", "blank-lines"])
def test_an_empty_file_is_an_error_and_creates_no_dataset(tmp_path, content):
    path = tmp_path / "in.jsonl"
    path.write_text(content)
    message = import_error(path)
    assert "in.jsonl" in message and "no rows" in message
    assert not Dataset.objects.exists()


HOSTILE_FILES = {
    "nul-in-id": json.dumps(math_row(0, id="a\x00b")),
    "surrogate-in-model": json.dumps(math_row(0, model="m\ud800")),
    "long-benchmark": json.dumps(math_row(0, benchmark="b" * 101)),
    "nan-in-meta": json.dumps(math_row(0, meta={"x": float("nan")})),
    "5000-digits": '{"id": 1, "question": "q", "gold": "1", "response": "r", "meta": ' + "9" * 5000 + "}",
    "nested-100k": "[" * 100_000 + "]" * 100_000,
    "bad-utf8": json.dumps(math_row(0)).replace("Adding", "Add\udcffing"),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_the_real_command_in_a_subprocess_exits_non_zero_without_a_traceback(tmp_path, service_env, name):
    path = tmp_path / "in.jsonl"
    path.write_bytes(
        json.dumps(math_row(1)).encode() + b"\n" + HOSTILE_FILES[name].encode("utf-8", "surrogateescape") + b"\n"
    )
    before = project_table_counts()
    proc = manage("import_responses", str(path), "--dataset", "d", "--no-progress", env=service_env)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert re.search(
        r"CommandError: import aborted, nothing was written: in\.jsonl, line 2(, field '[^']+')?: \S", proc.stderr
    ), proc.stderr
    assert project_table_counts() == before
