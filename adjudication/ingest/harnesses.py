"""Logs of evaluation harnesses other than lm-eval: lighteval `details` and inspect-ai eval logs.

Pure Python (no ORM), like formats.py: the file-only commands read these files too. Each record of a
log becomes the same `Row` as a canonical line (built and checked by formats.canonical_row, so every
limit of the canonical format holds), plus what the harness itself made of the response: its
extracted answer and its score, per metric or scorer, as `HarnessReading`s. The importer stores
those as readings of a reader named after the harness (`lighteval:<metric>`, `inspect:<scorer>`),
so that "what the harness said" is one more reader in the panel. The readings go in the response's
`meta` too (as lm-eval's `filtered_resps` do): they are part of the row, and a changed score is a
changed row.

The readers for each harness are in ingest/lighteval.py and ingest/inspect_logs.py; this module has
what they share: the record error, the reading, format detection and the row stream.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from adjudication.ingest.formats import Row, RowError, canonical_row, identity_problem
from readers.base import Item
from readers.canonical import canonical_answer

HARNESS_FORMATS = ("lighteval", "inspect")
FORMATS = ("canonical", "lm-eval", *HARNESS_FORMATS)

_PARQUET_MAGIC = b"PAR1"
_ZIP_MAGIC = b"PK\x03\x04"
# inspect-ai writes its JSON logs with pydantic, fields in EvalLog's order: the object opens with
# "version" (an integer) and then "status" (inspect_ai/log/_log.py, EvalLog).
_INSPECT_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


class RecordError(RowError):
    """A bad record of a harness log, named like a bad line: file, record ("row 3" of a parquet
    file, "sample 2" of an eval log) and field, the field named as the harness names it."""

    def __init__(
        self, path: str | Path, index: int, field_name: str | None, message: str, *, unit: str, entry: str | None = None
    ) -> None:
        super().__init__(path, index, field_name, message)
        # RowError says "line N"; a parquet row or a log's sample is not a line. An archive's entry
        # (samples/<id>_epoch_<n>.json) is named too.
        text = str(self)
        if index > 0:
            where = f", {unit} {index}" + (f" ({entry})" if entry else "")
            text = text.replace(f", line {index}", where, 1)
        self.args = (text,)


@dataclass(frozen=True)
class HarnessReading:
    """What the harness made of one response under one metric or scorer."""

    reader: str  # "lighteval:extractive_match", "inspect:choice"
    version: str  # the harness's version (or, where the log does not record it, its layout's)
    config: dict[str, Any]  # what the score depends on besides the response: metric or scorer, options
    verdict: str  # correct | incorrect | no_answer
    answer: str | None = None  # the harness's extracted answer, as it recorded it
    normalized: str | None = None  # the harness's own compared form, where it records one
    canonical: str | None = None  # readers.canonical's form of `answer`
    detail: dict[str, Any] = field(default_factory=dict)  # the score as the harness wrote it


# Numbers and words a harness writes for a binary score; anything else (a partial 0.5, an F1 of 0.6,
# a dict of sub-scores) is no verdict and makes no reading (the score stays in the response's meta).
def binary_verdict(value: Any) -> str | None:
    if isinstance(value, bool):
        return "correct" if value else "incorrect"
    if isinstance(value, (int, float)):
        if value == 1:
            return "correct"
        if value == 0:
            return "incorrect"
    return None


def harness_reading(
    *,
    reader: str,
    version: str,
    config: dict[str, Any],
    verdict: str,
    answer: str | None,
    normalized: str | None,
    detail: dict[str, Any],
    row: Row,
    found_nothing: bool = False,
) -> HarnessReading:
    """A reading with its canonical answer (readers.canonical, bounded and total). A score of
    "incorrect" where the harness says it found no answer (`found_nothing`) is the platform's
    no_answer: a harness scores no answer as wrong, the platform keeps the two apart (the harness's
    own score stays in `detail`)."""
    if answer is not None and not answer.strip():
        answer = None
    if verdict == "incorrect" and answer is None and found_nothing:
        verdict = "no_answer"
    item = Item(response=row.response, gold=row.gold, choices=row.choices, question=row.question)
    canonical = canonical_answer(answer, item) if answer is not None else None
    return HarnessReading(
        reader=reader,
        version=version,
        config=config,
        verdict=verdict,
        answer=answer,
        normalized=normalized,
        canonical=canonical,
        detail=detail,
    )


def detect_format(path: Path) -> str:
    """The format of a file from its content (and name): a parquet file is lighteval details, a
    zip archive (.eval) or a JSON object opening as inspect-ai's EvalLog is an inspect log, and
    anything else is canonical JSONL. lm-eval samples are JSON lines too and are only read with
    --format lm-eval, as before."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return "canonical"  # the reader reports the unreadable file, with its reason
    if head.startswith(_PARQUET_MAGIC):
        return "lighteval"
    if head.startswith(_ZIP_MAGIC) or path.suffix == ".eval":
        return "inspect"
    if _INSPECT_JSON_HEAD.match(head):
        return "inspect"
    return "canonical"


def row_from_fields(
    fields: dict[str, Any],
    path: Path,
    index: int,
    *,
    unit: str,
    names: Mapping[str, str],
    max_lengths: Mapping[str, int] | None,
    entry: str | None = None,
) -> Row:
    """A Row checked exactly like a canonical line; an error names the harness's own field
    (`names`: canonical field -> the log's field) and the record."""
    try:
        return canonical_row(fields, path, index, max_lengths=max_lengths)
    except RowError as exc:
        where = str(RowError(exc.path, exc.line, exc.field_name, ""))
        message = str(exc)[len(where) :]
        field_name = names.get(exc.field_name or "", exc.field_name)
        raise RecordError(path, index, field_name, message, unit=unit, entry=entry) from exc


def iter_records(
    path: Path,
    *,
    fmt: str,
    model: str = "",
    checkpoint: str = "",
    task: str | None = None,
    max_lengths: Mapping[str, int] | None = None,
) -> Iterator[tuple[Row, tuple[HarnessReading, ...]]]:
    """(row, the harness's readings of it) per record, streaming; RecordError at the first bad one,
    including a repeated id. `model` and `checkpoint` fill what the log does not carry."""
    if fmt == "lighteval":
        from adjudication.ingest import lighteval

        records = lighteval.iter_records(path, model=model, task=task, max_lengths=max_lengths)
        unit = "row"
    elif fmt == "inspect":
        from adjudication.ingest import inspect_logs

        records = inspect_logs.iter_records(path, task=task, max_lengths=max_lengths)
        unit = "sample"
    else:
        raise ValueError(f"not a harness format: {fmt!r}")
    seen: dict[str, int] = {}
    for row, readings in records:
        if not row.model and model:
            row = replace(row, model=model)
        if not row.checkpoint and checkpoint:
            row = replace(row, checkpoint=checkpoint)
        row = _with_run_id(row, path, unit, max_lengths)
        if row.id in seen:
            raise RecordError(
                path, row.line, "id", f"duplicate id {row.id!r} (first seen at {unit} {seen[row.id]})", unit=unit
            )
        seen[row.id] = row.line
        yield row, readings


def _with_run_id(row: Row, path: Path, unit: str, max_lengths: Mapping[str, int] | None) -> Row:
    """The id under the run's name: <model>:<checkpoint>:<task>:<sample> (empty parts left out). A
    harness numbers the samples of a task, not of a run, and a dataset compares runs (base and RL
    checkpoints, several models) on the same questions: without the run in the id the second run's
    samples would collide with the first's."""
    row_id = ":".join([p for p in (row.model, row.checkpoint) if p] + [row.id])
    problem = identity_problem(row_id, (max_lengths or {}).get("id"))
    if problem:
        raise RecordError(path, row.line, "id", f"the id {row_id[:80]!r} {problem}", unit=unit)
    return replace(row, id=row_id)


def iter_rows(path: Path, **options: Any) -> Iterator[Row]:
    for row, _readings in iter_records(path, **options):
        yield row


def record_count(path: Path, fmt: str) -> int | None:
    """How many records the log holds, when that is cheap to know (a progress bar's total)."""
    try:
        if fmt == "lighteval":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
        if fmt == "inspect" and zip_log(path):
            from adjudication.ingest import inspect_logs

            return inspect_logs.zip_sample_count(path)
    except Exception:  # noqa: BLE001 - a total is an aid; the import itself reports a bad file
        return None
    return None


def zip_log(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == _ZIP_MAGIC
    except OSError:
        return False


def text_of(value: Any) -> str | None:
    """The text of a chat message's content: a string, or the text parts of a list of parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") for p in value if isinstance(p, dict) and p.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        return "\n".join(texts) if texts else None
    return None
