"""Every export the platform writes (readings, final labels, analytics tables) goes through here.

Two promises: the bytes are valid UTF-8, and a CSV cell never reaches a spreadsheet as a formula.
* JSONL keeps model text verbatim: a lone surrogate is written as its JSON escape (\\udXXX),
  which `json.loads` turns back into the same string.
* CSV escapes what UTF-8 cannot carry as visible text (\\udXXX), and prefixes a cell that a
  spreadsheet would run as a formula (=, +, -, @, tab, CR at the start) with an apostrophe, as
  OWASP advises. A plain number ("-3", "+0.5") is left as it is: it is not a formula, and math
  answers are often negative. The JSONL export is the lossless one.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.http import HttpResponse
from django.utils.http import content_disposition_header

from adjudication.text import escape_surrogates

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        value = json_text(value)
    if not isinstance(value, str):
        return value
    value = escape_surrogates(value)
    if value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


class _Line:
    def write(self, value: str) -> str:
        return value


def csv_lines(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The CSV text, a line at a time (header first), every cell through `csv_cell`."""
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([csv_cell(row.get(c)) for c in columns])


def json_text(value: Any, **kwargs: Any) -> str:
    """JSON with non-ASCII kept readable and lone surrogates escaped, so the text is valid UTF-8."""
    return escape_surrogates(json.dumps(value, ensure_ascii=False, default=str, **kwargs))


def jsonl_lines(rows: Iterable[Any]) -> Iterator[str]:
    for row in rows:
        yield json_text(row) + "\n"


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
}


def table_download(
    *, fmt: str, filename_stem: str, rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> HttpResponse:
    """rows as a CSV (columns required) or JSONL download. The body is made whole before the first
    byte is sent, so a failure is an error page, never half a file."""
    if fmt == "csv":
        if columns is None:
            raise ValueError("a CSV export needs its columns")
        body: Iterator[str] = csv_lines(columns, rows)
    elif fmt == "jsonl":
        body = jsonl_lines(rows)
    else:
        raise ValueError(f"unknown export format {fmt!r}")
    return attachment(HttpResponse("".join(body), content_type=CONTENT_TYPES[fmt]), download_name(filename_stem, fmt))
