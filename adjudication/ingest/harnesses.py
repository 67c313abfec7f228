"""Logs of evaluation harnesses other than lm-eval: lighteval `details` and inspect-ai eval logs.

Pure Python (no ORM), like formats.py: the file-only commands read these files too. Each record of a
log becomes the same `Row` as a canonical line (built and checked by formats.canonical_row, so every
limit of the canonical format holds), plus what the harness itself made of the response: its
extracted answer and its score, per metric or scorer, as `HarnessReading`s. The importer stores
those as readings of a reader named after the harness (`lighteval:<metric>`, `inspect:<scorer>`),
so that "what the harness said" is one more reader in the panel. The readings go in the response's
`meta` too (as lm-eval's `filtered_resps` do): they are part of the row, and a changed score is a
changed row.

The readers for each harness are in ingest/lighteval.py and ingest/inspect_logs.py, and what they
share (the record error, the reading, a row from a record's fields) in ingest/records.py; this module
tells a file's format and streams its rows, whatever the format (`iter_rows`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from adjudication.ingest import formats, inspect_logs, lighteval
from adjudication.ingest.formats import Row, identity_problem
from adjudication.ingest.records import ZIP_MAGIC, HarnessReading, RecordError, zip_log

HARNESS_FORMATS = ("lighteval", "inspect")
FORMATS = ("canonical", "lm-eval", *HARNESS_FORMATS)

_PARQUET_MAGIC = b"PAR1"
# inspect-ai writes its JSON logs with pydantic, fields in EvalLog's order: the object opens with
# "version" (an integer) and then "status" (inspect_ai/log/_log.py, EvalLog).
_INSPECT_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


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
    if head.startswith(ZIP_MAGIC) or path.suffix == ".eval":
        return "inspect"
    if _INSPECT_JSON_HEAD.match(head):
        return "inspect"
    return "canonical"


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
        records = lighteval.iter_records(path, model=model, task=task, max_lengths=max_lengths)
        unit = "row"
    elif fmt == "inspect":
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


def iter_rows(path: Path, *, fmt: str | None = "canonical", **options: Any) -> Iterator[Row]:
    """Stream validated rows from a file of any format, with formats.iter_rows's options; `fmt=None`
    tells the format from the file (detect_format). A harness log's rows are its records' rows,
    whose repeated ids iter_records finds itself (`duplicates` is for JSON lines)."""
    if fmt is None:
        fmt = detect_format(path)
    if fmt in HARNESS_FORMATS:
        options.pop("duplicates", None)
        # A harness log's ids hold its checkpoint already: a pairing only checks it (--checkpoint sets it).
        pairs = options.pop("pairs", None) or {}
        for row, _readings in iter_records(path, fmt=fmt, **options):
            yield formats.paired_checkpoint(row, pairs, path) if row.checkpoint else row
        return
    yield from formats.iter_rows(path, fmt=fmt, **options)


def record_count(path: Path, fmt: str) -> int | None:
    """How many records the log holds, when that is cheap to know (a progress bar's total)."""
    try:
        if fmt == "lighteval":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
        if fmt == "inspect" and zip_log(path):
            return inspect_logs.zip_sample_count(path)
    except Exception:  # noqa: BLE001 - a total is an aid; the import itself reports a bad file
        return None
    return None
