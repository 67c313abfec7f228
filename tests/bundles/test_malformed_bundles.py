"""Thirteen kinds of malformed bundle, each of which ended `replay` in a traceback: every one is
refused with its member, its line (for table rows) and its field, and nothing is loaded. Each
hostile copy is re-hashed into its manifest, as a careful forger would make it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from adjudication.bundles.services import BundleError, bundle_replay
from adjudication.models import Dataset, Label, ReaderSpec, Response

from .conftest import edit_rows, jsonl, lines_of, rewrite

pytestmark = pytest.mark.django_db

RESPONSES = "tables/adjudication.Response.jsonl"
READINGS = "tables/adjudication.Reading.jsonl"
LABELS = "tables/adjudication.Label.jsonl"
QUEUES = "tables/adjudication.ReviewQueue.jsonl"
REPORT = "reports/00-agreement.json"


def first_row(key: str, value: Any) -> Callable[[bytes], bytes]:
    return edit_rows(lambda rows: rows[0].update({key: value}))


def nested_line(blob: bytes) -> bytes:
    depth = 100_000
    head, _, rest = blob.partition(b"\n")
    return head[:-1] + b',"meta":' + b"[" * depth + b"]" * depth + b"}\n" + rest


def report_field(**fields: Any) -> Callable[[bytes], bytes]:
    return lambda blob: json.dumps({**json.loads(blob), **fields}).encode("ascii")


CASES = [
    # (case, members to change, rewrite() options, the message)
    ("deeply nested line", {RESPONSES: nested_line}, {}, rf"{RESPONSES} line 1: JSON nested deeper than 64 levels"),
    ("manifest of 200k brackets", {}, {"manifest_bytes": b"[" * 200_000}, "manifest.json: JSON nested deeper than 64"),
    (
        "primary key of the wrong type",
        {RESPONSES: first_row("id", "r1")},
        {},
        rf"{RESPONSES} line 1: field 'id': must be an integer, not \"r1\"",
    ),
    (
        "primary key out of range",
        {RESPONSES: first_row("id", 2**70)},
        {},
        rf"{RESPONSES} line 1: field 'id': Ensure this value is less than or equal to 9223372036854775807",
    ),
    (
        "duplicated row",
        {RESPONSES: edit_rows(lambda rows: rows.insert(1, dict(rows[0])))},
        {},
        rf"{RESPONSES} line 2: field 'id': \d+ is also the key of line 1",
    ),
    (
        "row pointing at another dataset's ids",
        {READINGS: first_row("response_id", 987654)},
        {},
        rf"{READINGS} line 1: field 'response_id': 987654 is not a row of adjudication.Response in this bundle",
    ),
    (
        "wrong value type",
        {LABELS: first_row("confidence", "very")},
        {},
        rf"{LABELS} line 1: field 'confidence': must be an integer, not \"very\"",
    ),
    (
        "manifest names a dataset not in the rows",
        {},
        {"manifest": lambda m: {**m, "dataset": "other"}},
        "manifest.json: field 'dataset' is 'other', but tables/adjudication.Dataset.jsonl holds 'small'",
    ),
    ("member of the wrong JSON type", {"environment.json": b"[1, 2]"}, {}, "environment.json: not an object"),
    ("report of the wrong JSON type", {REPORT: b'"agreement"'}, {}, rf"{REPORT}: not an object"),
    (
        "report parameters of the wrong type",
        {REPORT: report_field(params=["run", 1])},
        {},
        rf"{REPORT}: field 'params' must be an object",
    ),
    (
        "manifest report entry of the wrong type",
        {},
        {"manifest": lambda m: {**m, "reports": [REPORT]}},
        r"manifest.json: field reports\[0\] must be an object",
    ),
    (
        "manifest member entry of the wrong type",
        {},
        {"manifest": lambda m: {**m, "members": {**m["members"], "environment.json": "0" * 64}}},
        r"manifest.json: field members\[\"environment.json\"\] must be an object",
    ),
]


@pytest.mark.parametrize(("case", "members", "options", "message"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_bundle_is_refused_with_member_line_and_field_and_nothing_is_loaded(
    small_bundle, tmp_path, case, members, options, message
):
    hostile = rewrite(small_bundle, tmp_path / "bad.zip", members, **options)
    with pytest.raises(BundleError, match=rf"^{tmp_path / 'bad.zip'}: .*{message}"):
        bundle_replay(path=hostile)
    assert not Dataset.objects.exists() and not Response.objects.exists() and not ReaderSpec.objects.exists()


def test_the_small_bundle_itself_replays(small_bundle):
    result = bundle_replay(path=small_bundle)
    assert result.ok, [r.error for r in result.reports] + [str(d) for r in result.reports for d in r.differences]
    assert Label.objects.filter(confidence=4).exists()


def test_a_second_dataset_in_the_rows_is_refused(small_bundle, tmp_path):
    def second(blob: bytes) -> bytes:
        rows = lines_of(blob)
        return jsonl([*rows, {**rows[0], "id": rows[0]["id"] + 1, "name": "other"}])

    hostile = rewrite(small_bundle, tmp_path / "two.zip", {"tables/adjudication.Dataset.jsonl": second})
    with pytest.raises(BundleError, match=r"holds 'small', 'other' \(a bundle carries exactly its one dataset\)"):
        bundle_replay(path=hostile)
    assert not Dataset.objects.exists()


@pytest.mark.parametrize(
    ("table", "key", "value", "message"),
    [
        (LABELS, "correctness", "sort of", r"field 'correctness': \"sort of\" is not one of"),
        (LABELS, "confidence", 9, r"database refuses the row .*label_confidence_1_5"),
        (LABELS, "note", "nul \x00 here", "field 'note': holds NUL or a lone surrogate"),
        (LABELS, "seconds_spent", True, r"field 'seconds_spent': must be a finite number, not true"),
        (LABELS, "created_at", "yesterday", r"field 'created_at': not a date-time: \"yesterday\""),
        (LABELS, "queue_id", None, "field 'queue_id': must not be null"),
        (READINGS, "span_start", -1, r"field 'span_start': Ensure this value is greater than or equal to 0"),
        (RESPONSES, "external_id", "x" * 501, "field 'external_id': Ensure this value has at most 500 characters"),
        # a name is printed by commands: a terminal's escape sequence is refused, as the import refuses it
        (QUEUES, "name", "round \x1b[31m1", r"field 'name': must be one line of printable text \(found U\+001B\)"),
    ],
)
def test_every_column_is_checked_against_its_model_field(small_bundle, tmp_path, table, key, value, message):
    hostile = rewrite(small_bundle, tmp_path / "col.zip", {table: first_row(key, value)})
    with pytest.raises(BundleError, match=rf"{table} line 1: .*{message}"):
        bundle_replay(path=hostile)
    assert not Dataset.objects.exists()


def test_a_unique_constraint_the_database_keeps_is_named_by_its_line(small_bundle, tmp_path):
    def twin(rows: list[dict[str, Any]]) -> None:
        rows[1]["external_id"] = rows[0]["external_id"]

    hostile = rewrite(small_bundle, tmp_path / "twin.zip", {RESPONSES: edit_rows(twin)})
    with pytest.raises(BundleError, match=rf"{RESPONSES} line 2: the database refuses the row .*response_external_id"):
        bundle_replay(path=hostile)
    assert not Dataset.objects.exists()


def test_a_key_to_a_table_loaded_later_is_checked_when_it_is_loaded(small_bundle, tmp_path):
    """A label may revise another label (its own table): checked once the table is in."""
    hostile = rewrite(small_bundle, tmp_path / "rev.zip", {LABELS: first_row("revises_id", 424242)})
    with pytest.raises(
        BundleError, match=rf"{LABELS} line 1: field 'revises_id': 424242 is not a row of adjudication.Label"
    ):
        bundle_replay(path=hostile)
    assert not Dataset.objects.exists()
