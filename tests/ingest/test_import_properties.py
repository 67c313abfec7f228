"""Property: no input makes `import_responses` crash.

Whatever JSON lines (or bytes) a file holds, and whatever names the command is given, the real command
either imports every row or refuses with `file, line N[, field 'x']: reason` (a CommandError, so a
non-zero exit from manage.py) and leaves the database exactly as it was. Never a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from adjudication.ingest import formats as rows
from adjudication.models import Dataset, Response

from ..conftest import project_table_counts

pytestmark = pytest.mark.django_db

# A line and a field where there is one; the file alone when it is the whole file (empty, unreadable).
ROW_ERROR = re.compile(
    r"^import aborted, nothing was written: (in\.jsonl|samples_[^,]+\.jsonl)(, line \d+)?"
    r"(, field '.*')?: \S"
)
# A name given on the command line: ours, or argparse's own usage error (a name starting with "-").
ARGUMENT_ERROR = re.compile(
    r"^(import aborted, nothing was written: |Error: argument )"
    r"--(dataset|model|checkpoint|task): \S"
)

PROPERTY_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Every code point, NUL and lone surrogates included: untrusted files hold them.
any_text = st.text(st.characters(exclude_categories=[]), max_size=12)
# Text a name column can hold (no NUL, no lone surrogate), short enough for every column.
name_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text
)
any_json = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4), max_leaves=12
)
storable_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | name_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(name_text, inner, max_size=3),
    max_leaves=8,
)
identity = st.sampled_from(["", " ", "a", "x" * 100, "x" * 101, "x" * 200, "x" * 201, "x" * 501]) | any_text
nonblank_text = st.tuples(st.sampled_from("QqЖ🙂"), any_text).map("".join)
# How many fields of a line to spoil: most lines are good, so that files import and the bad values are
# met deep inside otherwise valid rows rather than at the door.
spoil_count = st.sampled_from([0, 0, 0, 0, 1, 1, 2])


@st.composite
def canonical_row(draw: st.DrawFn, index: int) -> dict:
    choices = draw(st.lists(name_text, min_size=2, max_size=5) | st.just([]))
    gold = draw(st.sampled_from("ABCD"[: len(choices)])) if choices else draw(nonblank_text | st.integers())
    row: dict = {"id": f"r-{index}", "question": draw(nonblank_text), "response": draw(any_text), "gold": gold}
    if choices:
        row["choices"] = choices
    for key in ("model", "checkpoint", "benchmark", "prompt"):
        if draw(st.booleans()):
            row[key] = draw(name_text)
    if draw(st.booleans()):
        row["meta"] = draw(st.dictionaries(name_text, storable_json, max_size=3))
    hostile = {
        "id": any_json | identity,
        "question": any_json,
        "gold": any_json,
        "response": any_json,
        "model": identity | any_json,
        "checkpoint": identity | any_json,
        "benchmark": identity | any_json,
        "prompt": identity | any_json,
        "choices": st.lists(any_text, max_size=28) | any_json,
        "meta": st.dictionaries(any_text, any_json, max_size=3) | any_json,
    }
    for key in draw(st.lists(st.sampled_from([*hostile, "drop", "extra"]), max_size=draw(spoil_count), unique=True)):
        if key == "drop":
            row.pop(draw(st.sampled_from(sorted(row))))
        elif key == "extra":
            row[draw(any_text)] = draw(any_json)
        else:
            row[key] = draw(hostile[key])
    return row


@st.composite
def lm_eval_row(draw: st.DrawFn, index: int) -> dict:
    doc: dict = {draw(st.sampled_from(["question", "problem", "query", "input"])): draw(nonblank_text)}
    choices = draw(st.lists(name_text | st.integers(), min_size=2, max_size=5) | st.just([]))
    if choices:
        doc[draw(st.sampled_from(["choices", "options"]))] = choices
        doc["answer"] = draw(st.integers(0, len(choices) - 1))
    sample: dict = {
        "doc_id": index,
        "doc": doc,
        "target": draw(st.integers(0, max(len(choices) - 1, 0)) | any_text) if choices else draw(any_text),
        "resps": [[draw(any_text)]],
        "filtered_resps": [draw(name_text)],
        "prompt_hash": draw(name_text),
    }
    hostile = {
        "doc_id": any_json,
        "doc": any_json,
        "target": any_json | st.integers(-1, 30),
        "resps": any_json,
        "filtered_resps": any_json,
        "doc_hash": any_json,
        "prompt_hash": any_json | identity,
        "doc.choices": st.lists(any_text | scalars, max_size=30) | any_json,
        "doc.answer": any_json,
    }
    for key in draw(st.lists(st.sampled_from([*hostile, "drop"]), max_size=draw(spoil_count), unique=True)):
        if key == "drop":
            sample.pop(draw(st.sampled_from(sorted(sample))))
        elif key.startswith("doc.") and isinstance(sample.get("doc"), dict):
            sample["doc"][key[4:]] = draw(hostile[key])
        elif not key.startswith("doc."):
            sample[key] = draw(hostile[key])
    return sample


def json_lines(row: Callable[[int], st.SearchStrategy[dict]]) -> st.SearchStrategy[list[str]]:
    """A file's lines: rows numbered by position (so ids are unique), now and then a non-row line."""
    return st.integers(0, 5).flatmap(
        lambda n: st.tuples(
            *[
                row(i).map(json_line) | any_json.map(json_line) | raw_lines if i % 3 == 2 else row(i).map(json_line)
                for i in range(n)
            ]
        ).map(list)
    )


# Lines the JSON encoder would never write but files in the wild hold.
raw_lines = st.sampled_from(
    [
        "",
        "   ",
        "{",
        "nul\x00",
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' * 50_000 + "1" + "}" * 50_000,
        '{"id": "x", "question": "q", "gold": "1", "response": "r", "meta": {"n": ' + "9" * 5000 + "}}",
        '{"id": 1e400, "question": "q", "gold": -1e400, "response": "r"}',
        "\ufeff{}",
        "NaN",
        '"\\ud800"',
    ]
)


def json_line(value: object) -> str:
    # ensure_ascii: lone surrogates become \\udXXX escapes, which the reader turns back into lone surrogates.
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def run_import(path: Path, **options: object) -> tuple[bool, str]:
    """(imported, message) from the real management command, in a savepoint undone afterwards so every
    example starts from the same database. Anything but a CommandError propagates and fails the test.
    A success must have stored one response per non-blank line."""
    before = project_table_counts()
    with transaction.atomic():
        try:
            call_command(
                "import_responses", str(path), no_progress=True, stdout=StringIO(), stderr=StringIO(), **options
            )
        except CommandError as exc:
            assert project_table_counts() == before, "a refused import changed the database"
            return False, str(exc)
        else:
            rows = [line for line in path.read_bytes().split(b"\n") if line.decode("utf-8").strip()]
            assert Response.objects.filter(dataset__name=options["dataset"]).count() == len(rows) > 0
        finally:
            transaction.set_rollback(True)
    return True, ""


def assert_imported_or_refused_cleanly(imported: bool, message: str) -> None:
    # --hypothesis-show-statistics shows how the examples split, so the generators can be kept honest.
    event("imported" if imported else "refused: " + message.split(": ")[-1][:40])
    if not imported:
        assert ROW_ERROR.match(message) or ARGUMENT_ERROR.match(message), message


@PROPERTY_SETTINGS
@given(lines=json_lines(canonical_row))
def test_any_canonical_json_lines_import_or_fail_with_a_line_error(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    assert_imported_or_refused_cleanly(*run_import(path, dataset="props"))


@PROPERTY_SETTINGS
@given(lines=json_lines(lm_eval_row))
def test_any_lm_eval_json_lines_import_or_fail_with_a_line_error(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "samples_gsm8k_2026-01-02T10-11-12.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    assert_imported_or_refused_cleanly(*run_import(path, dataset="props", fmt="lm-eval", model="m", checkpoint="rl"))


@PROPERTY_SETTINGS
@given(data=st.lists(st.binary(max_size=40), max_size=4))
def test_any_bytes_import_or_fail_with_a_line_error(tmp_path: Path, data: list[bytes]) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(data))
    assert_imported_or_refused_cleanly(*run_import(path, dataset="props"))


@PROPERTY_SETTINGS
@given(dataset=identity, model=identity, checkpoint=identity)
def test_any_names_on_the_command_line_import_or_fail_with_a_clear_error(
    tmp_path: Path, dataset: str, model: str, checkpoint: str
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json_line({"id": "r-1", "question": "Q?", "gold": "7", "response": "7"}) + "\n")
    imported, message = run_import(path, dataset=dataset, model=model, checkpoint=checkpoint)
    assert_imported_or_refused_cleanly(imported, message)


@settings(max_examples=1000, deadline=None, database=None)
@given(value=any_json | canonical_row(0), ensure_ascii=st.booleans())
def test_a_line_the_quick_scan_passes_holds_nothing_the_database_refuses(value: object, ensure_ascii: bool) -> None:
    """rows.py walks a line's values only when its raw text shows a \\u escape, NaN, Infinity or many
    brackets; this is the claim that makes skipping the walk safe."""
    text = json.dumps(value, ensure_ascii=ensure_ascii, allow_nan=True)
    assume(_utf8_encodable(text))  # a line read from a file was valid UTF-8
    if not rows._values_need_checking(text):
        assert rows.json_problem(rows._parse_json(text, Path("in.jsonl"), 1)) is None


def _utf8_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_a_successful_example_really_imports(tmp_path: Path) -> None:
    """The properties above accept success; make sure success means the rows are there."""
    path = tmp_path / "in.jsonl"
    path.write_text(json_line({"id": "r-1", "question": "Q?", "gold": "7", "response": "nul\x00 \ud800"}) + "\n")
    call_command("import_responses", str(path), dataset="props", no_progress=True, stdout=StringIO())
    assert Dataset.objects.get().name == "props" and Response.objects.get().text == "nul\x00 \ud800"


# Harness logs (issue 32): inspect-ai .json and .eval logs and lighteval details, spoiled the same way.
HARNESS_ERROR = re.compile(
    r"^import aborted, nothing was written: (log\.json|log\.eval|details_[^,]+\.parquet)"
    r"(, (sample|row) \d+( \([^)]*\))?)?(, field '.*')?: \S"
)
# Inputs stay far under what could hurt the machine even if a reader misbehaved; the memory an
# import takes is then checked against a bound that holds whatever the nesting.
HARNESS_MEMORY_BOUND = 64 << 20


def nested(value: object, depth: int) -> object:
    for _ in range(depth):
        value = [value]
    return value


# Values that nest around the bound of formats.MAX_JSON_DEPTH, and past it.
around_the_bound = st.integers(min_value=rows.MAX_JSON_DEPTH - 3, max_value=rows.MAX_JSON_DEPTH + 3)
deep_json = st.builds(nested, any_json, around_the_bound)
spoiled = any_json | deep_json


@st.composite
def inspect_sample(draw: st.DrawFn, index: int) -> dict:
    choices = draw(st.sampled_from([None, ["a", "b", "c"]]))
    sample: dict = {
        "id": draw(st.sampled_from([f"s{index}", index]) | any_text),
        "epoch": 1,
        "input": draw(nonblank_text),
        "choices": choices,
        "target": draw(st.sampled_from(["B", "C"]) if choices else nonblank_text),
        "output": {"completion": draw(any_text)},
        "scores": {"choice": {"value": draw(st.sampled_from(["C", "I", 1, 0.5])), "answer": draw(any_text)}},
        "metadata": draw(st.dictionaries(name_text, storable_json, max_size=2)),
        "events": draw(st.lists(storable_json, max_size=2)),
    }
    for key in draw(st.lists(st.sampled_from(sorted(sample)), max_size=draw(spoil_count))):
        sample[key] = draw(spoiled)
    return sample


def inspect_header() -> dict:
    return {
        "version": 2,
        "status": "success",
        "eval": {"task": "props_task", "model": "mock/model", "packages": {"inspect_ai": "0.3.0"}, "config": {}},
    }


def run_harness_import(path: Path, samples: int, **options: object) -> tuple[bool, str]:
    """(imported, message) from the real command in a savepoint undone afterwards; a success stored one
    response per record, a refusal left the database as it was, and either stayed within the bound."""
    import tracemalloc

    before = project_table_counts()
    tracemalloc.start()
    try:
        with transaction.atomic():
            try:
                call_command(
                    "import_responses", str(path), dataset="props", no_progress=True, stdout=StringIO(), **options
                )
            except CommandError as exc:
                assert project_table_counts() == before, "a refused import changed the database"
                return False, str(exc)
            else:
                assert Response.objects.filter(dataset__name="props").count() == samples > 0
            finally:
                transaction.set_rollback(True)
        return True, ""
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < HARNESS_MEMORY_BOUND, f"{peak} bytes for a file of {path.stat().st_size}"


def assert_harness_imported_or_refused_cleanly(imported: bool, message: str) -> None:
    event("imported" if imported else "refused: " + message.split(": ")[-1][:40])
    if not imported:
        assert HARNESS_ERROR.match(message), message


HARNESS_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=60)


@HARNESS_SETTINGS
@given(data=st.data(), count=st.integers(min_value=0, max_value=3), header_spoil=st.none() | spoiled)
def test_any_inspect_log_json_or_eval_imports_or_fails_with_a_sample_error(
    tmp_path: Path, data: st.DataObject, count: int, header_spoil: object
) -> None:
    import zipfile

    samples = [data.draw(inspect_sample(i)) for i in range(count)]
    header = inspect_header()
    if header_spoil is not None:
        header[data.draw(st.sampled_from(["eval", "version", "status"]))] = header_spoil
    # inspect-ai's field order: the header's fields, then the samples.
    log = json.dumps({**header, "samples": samples}, ensure_ascii=True, allow_nan=True)
    json_path = tmp_path / "log.json"
    json_path.write_text(log)
    eval_path = tmp_path / "log.eval"
    with zipfile.ZipFile(eval_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json_line(header))
        for i, sample in enumerate(samples):
            archive.writestr(f"samples/{i}_epoch_1.json", json_line(sample))
    outcomes = []
    for path in (json_path, eval_path):
        # The format named: a spoiled header is no longer told apart from JSON lines by its opening.
        imported, message = run_harness_import(path, len(samples), fmt="inspect")
        assert_harness_imported_or_refused_cleanly(imported, message)
        outcomes.append(imported)
    # The two formats of one log are read alike.
    assert outcomes[0] == outcomes[1]


@st.composite
def lighteval_row(draw: st.DrawFn, index: int) -> dict:
    row: dict = {
        "doc": {
            "query": draw(nonblank_text),
            "choices": ["A", "B", "C", "D"],
            "gold_index": draw(st.integers(min_value=-1, max_value=4)),
            "id": f"d{index}",
            "specific": json.dumps(draw(st.none() | spoiled), allow_nan=True),
        },
        "model_response": {"text": [draw(any_text)]},
        "metric": {"extractive_match": draw(st.sampled_from([0.0, 1.0, 0.5]))},
    }
    return row


@HARNESS_SETTINGS
@given(data=st.data(), count=st.integers(min_value=1, max_value=3), stringified=st.booleans())
def test_any_lighteval_details_import_or_fail_with_a_row_error(
    tmp_path: Path, data: st.DataObject, count: int, stringified: bool
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The str() cells of earlier releases: any value (NaN, deep nesting, lone surrogates) as Python wrote it.
    records = [
        {
            "example": data.draw(nonblank_text),
            "predictions": str([data.draw(any_text)]),
            "gold": str([data.draw(nonblank_text)]),
            "choices": str([]),
            "gold_index": str([]),
            "metrics": str({"em": data.draw(st.sampled_from([0.0, 1.0, float("nan")]))}),
            "specifics": str(data.draw(st.none() | spoiled)),
        }
        if stringified
        else data.draw(lighteval_row(i))
        for i in range(count)
    ]
    path = tmp_path / "details_lighteval|props|0_2025-06-01T10-11-12.123456.parquet"
    try:
        table = pa.Table.from_pylist(records)
        pq.write_table(table, path)
    except (pa.ArrowException, UnicodeEncodeError):
        assume(False)  # pyarrow could not write it: no file for lighteval to have made
    assert_harness_imported_or_refused_cleanly(*run_harness_import(path, count))
