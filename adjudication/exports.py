"""Every export the platform writes (readings, final labels, individual labels, analytics tables) goes
through here, as JSONL, CSV or Parquet.

Three promises: the bytes are valid UTF-8 text (or a valid Parquet file of UTF-8 strings), a CSV cell
never reaches a spreadsheet as a formula, and no export is ever half-written.
* JSONL keeps model text verbatim: a lone surrogate is written as its JSON escape (\\udXXX),
  which `json.loads` turns back into the same string. Nested values (a label's history) stay nested.
* CSV has flat columns only. Model text goes through `adjudication.text.escape_text` (a lone
  surrogate as \\udXXX, undone exactly by `unescape_text`), and a cell that a spreadsheet would run as
  a formula (=, +, -, @, tab, CR at the start) gets a leading apostrophe, as OWASP advises. A plain
  number ("-3", "+0.5") is left as it is: it is not a formula, and math answers are often negative.
* Parquet has typed columns (int64, float64, bool, UTC timestamps, strings). Strings go through the
  same `escape_text` (Parquet strings must be UTF-8; NUL is kept as it is) and no apostrophe is
  added, so `unescape_text` gives back the stored text exactly; the file's metadata says so.
  Rows are written in row groups of `PARQUET_BATCH_ROWS`, so memory stays bounded whatever the
  table's length.
* A download is made whole before its first byte is sent, so a failure is an error page, never
  half a file; a file export (the commands) is written beside its target and renamed into place.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any

from django.http import HttpResponse
from django.utils.http import content_disposition_header

from adjudication.text import escape_surrogates, escape_text

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")

FORMATS = ("jsonl", "csv", "parquet")
PARQUET_BATCH_ROWS = 50_000
# Written into every Parquet file's key-value metadata: how to get the verbatim text back.
PARQUET_TEXT_NOTE = (
    "string columns: lone surrogates written as \\udXXX and a backslash run before one (or before "
    "such an escape written literally) doubled; adjudication.text.unescape_text restores the text"
)


@dataclass(frozen=True)
class Column:
    """A column of an exported table and its type: text, int, float, bool or time (a UTC timestamp)."""

    name: str
    type: str = "text"


ColumnsLike = Sequence["Column | str"]


def as_columns(columns: ColumnsLike) -> tuple[Column, ...]:
    return tuple(c if isinstance(c, Column) else Column(c) for c in columns)


def _iso(value: datetime | date) -> str:
    return value.isoformat()


def csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (datetime, date)):
        return _iso(value)
    if isinstance(value, (dict, list)):
        # Kept for tables that are not ours (analytics); the label exports are flat.
        value = json_text(value)
    if not isinstance(value, str):
        return value
    value = escape_text(value)
    if value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


class _Line:
    def write(self, value: str) -> str:
        return value


def csv_lines(columns: ColumnsLike, rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The CSV text, a line at a time (header first), every cell through `csv_cell`."""
    names = [c.name for c in as_columns(columns)]
    writer = csv.writer(_Line())
    yield writer.writerow(names)
    for row in rows:
        yield writer.writerow([csv_cell(row.get(c)) for c in names])


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return _iso(value)
    return str(value)


def json_text(value: Any, **kwargs: Any) -> str:
    """JSON with non-ASCII kept readable and lone surrogates escaped, so the text is valid UTF-8."""
    return escape_surrogates(json.dumps(value, ensure_ascii=False, default=_json_default, **kwargs))


def jsonl_lines(rows: Iterable[Any]) -> Iterator[str]:
    for row in rows:
        yield json_text(row) + "\n"


def _arrow_type(kind: str) -> Any:
    # pyarrow is imported on the first Parquet export, not with this module: every web worker loads
    # exports.py, and pyarrow.parquet adds some 45 MB to each of them and slows their start.
    import pyarrow as pa

    types = {
        "text": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "time": pa.timestamp("us", tz="UTC"),
    }
    if kind not in types:
        raise ValueError(f"unknown column type {kind!r}")
    return types[kind]


def parquet_schema(columns: ColumnsLike) -> Any:
    import pyarrow as pa

    return pa.schema(
        [pa.field(c.name, _arrow_type(c.type)) for c in as_columns(columns)],
        metadata={b"adjudication.text": PARQUET_TEXT_NOTE.encode()},
    )


def _parquet_value(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "text":
        return escape_text(value if isinstance(value, str) else str(value))
    return value


def write_parquet(target: str | Path | IO[bytes], columns: ColumnsLike, rows: Iterable[Mapping[str, Any]]) -> int:
    """rows as a Parquet file, one row group per PARQUET_BATCH_ROWS rows (memory bounded by a batch,
    not the table). Returns the number of rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = as_columns(columns)
    schema = parquet_schema(cols)
    types = [_arrow_type(c.type) for c in cols]
    n, groups = 0, 0
    # Column lists, filled a row at a time: a batch holds its values, not a dict per row.
    values: list[list[Any]] = [[] for _ in cols]

    def flush(writer: Any) -> None:
        nonlocal groups
        arrays = [pa.array(column, kind) for column, kind in zip(values, types)]
        writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
        groups += 1
        for column in values:
            column.clear()

    with pq.ParquetWriter(target, schema, compression="zstd") as writer:
        for row in rows:
            for column, c in zip(values, cols):
                column.append(_parquet_value(row.get(c.name), c.type))
            n += 1
            if n % PARQUET_BATCH_ROWS == 0:
                flush(writer)
        if n % PARQUET_BATCH_ROWS or not groups:  # the rest; an empty table is still a file with its schema
            flush(writer)
    return n


def download_name(stem: str, ext: str) -> str:
    """A file name safe in a Content-Disposition header, whatever the dataset or queue is called."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "export"
    return f"{safe}.{ext}"


def attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}


def _write(handle: IO[bytes], fmt: str, columns: ColumnsLike | None, rows: Iterable[Mapping[str, Any]]) -> int:
    """rows into a binary handle in `fmt`; the number of rows."""
    if fmt == "parquet":
        if columns is None:
            raise ValueError("a Parquet export needs its columns")
        return write_parquet(handle, columns, rows)
    if fmt == "csv":
        if columns is None:
            raise ValueError("a CSV export needs its columns")
        lines: Iterator[str] = csv_lines(columns, rows)
        n = -1  # the header is a line too
    elif fmt == "jsonl":
        lines, n = jsonl_lines(rows), 0
    else:
        raise ValueError(f"unknown export format {fmt!r}")
    text = io.TextIOWrapper(handle, encoding="utf-8", newline="", write_through=True)
    try:
        for line in lines:
            text.write(line)
            n += 1
        text.flush()
    finally:
        text.detach()  # the caller owns the handle
    return n


def table_download(
    *, fmt: str, filename_stem: str, rows: Iterable[Mapping[str, Any]], columns: ColumnsLike | None = None
) -> HttpResponse:
    """rows as a CSV (columns required), JSONL or Parquet (typed columns) download. The body is made
    whole before the first byte is sent, so a failure is an error page, never half a file."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    body = io.BytesIO()
    _write(body, fmt, columns, rows)
    response = HttpResponse(body.getvalue(), content_type=CONTENT_TYPES[fmt])
    return attachment(response, download_name(filename_stem, fmt))


def file_export(
    *,
    fmt: str,
    rows: Iterable[Mapping[str, Any]],
    columns: ColumnsLike | None,
    out: Path | None,
    stdout: Callable[[str], Any] | None = None,
) -> int:
    """rows to the file `out` in `fmt`, written to a temporary file beside it and renamed into place,
    so that a failure midway never leaves half an export (or clobbers an older one). Without `out`
    the finished file is copied to `stdout` (a text format only: Parquet is binary and needs `out`).
    Returns the number of rows."""
    if out is None and fmt == "parquet":
        raise ValueError("a Parquet export needs an output file (--out)")
    directory = out.resolve().parent if out else None
    fd, name = tempfile.mkstemp(dir=directory, prefix=".export-", suffix=".partial")
    staged = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            n = _write(handle, fmt, columns, rows)
        if out is not None:
            staged.replace(out)
            return n
        assert stdout is not None
        with open(staged, encoding="utf-8", newline="") as source:
            for chunk in iter(lambda: source.read(1 << 16), ""):
                stdout(chunk)
        return n
    finally:
        staged.unlink(missing_ok=True)
