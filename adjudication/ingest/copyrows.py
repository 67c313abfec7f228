"""Parsed rows as PostgreSQL COPY takes them, a chunk at a time, in this process or in a child one.

No ORM and no database here (the child process never sets Django up): formats parses and checks
the rows, fields.encode_verbatim gives text columns their stored form, and this module writes them
in COPY's text format. adjudication/ingest/staging.py writes the chunks to the database.

Why a child process: parsing, checking and hashing a row costs the importer more CPU than the
server spends storing it, and in one process the two only take turns. In a process of its own the
parser keeps one core busy while PostgreSQL works on the other (a thread would share the GIL with
the importer's COPY and merge work). Small files are parsed in-process: starting an interpreter
costs more than their parsing.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from adjudication.fields import encode_verbatim
from adjudication.ingest.formats import Row, RowError

# A chunk is staged, merged and written before the next one: memory holds the chunk being written,
# the one in the pipe and the one being parsed, whatever the file's size.
CHUNK_ROWS = 5000
CHUNK_CHARS = 8 << 20
# Questions whose text a row staged already: later rows of the same question stage only its
# fingerprint. Bounded: past the limit a question's text is merely staged again.
QUESTIONS_REMEMBERED = 100_000

RunKey = tuple[str, str, str, str]


def copy_text(value: str | None) -> str:
    """One column in COPY's text format: \\N for NULL; backslash, newline, carriage return and tab
    (the delimiter) escaped with a backslash. Values hold no NUL: encode_verbatim escapes text that
    has one, and formats refuses it in names and JSON."""
    if value is None:
        return "\\N"
    if "\\" in value:
        value = value.replace("\\", "\\\\")
    if "\n" in value:
        value = value.replace("\n", "\\n")
    if "\r" in value:
        value = value.replace("\r", "\\r")
    if "\t" in value:
        value = value.replace("\t", "\\t")
    return value


@dataclass
class Chunk:
    """One chunk of parsed rows: the staging table's COPY data, and per row what writing it needs."""

    staging: bytes = b""
    # Per row, the response columns after its dataset, run and question ids, in COPY text, no newline:
    # external_id, text, prompt_text, content_hash, row_hash, meta.
    responses: list[str] = field(default_factory=list)
    runs: list[RunKey] = field(default_factory=list)
    fingerprints: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.lines)


def chunks(rows: Iterable[Row]) -> Iterator[Chunk]:
    """The rows in chunks, in file order. A bad row's RowError is raised after the chunk of the rows
    before it (cut short there), so that what is wrong with those (a repeated id, a changed response,
    which the writer finds) is reported first, as it comes first in the file."""
    questions_staged: set[str] = set()
    staging: list[str] = []
    chunk, chars = Chunk(), 0
    iterator = iter(rows)
    while True:
        try:
            row = next(iterator, None)
        except RowError:
            if len(chunk):
                chunk.staging = "".join(staging).encode("utf-8")
                yield chunk
            raise
        if row is None:
            break
        fingerprint = row.question_fingerprint
        with_question = fingerprint not in questions_staged
        if with_question:
            if len(questions_staged) >= QUESTIONS_REMEMBERED:
                questions_staged.clear()
            questions_staged.add(fingerprint)
        chars += _add(chunk, staging, row, fingerprint, with_question)
        if len(chunk) >= CHUNK_ROWS or chars >= CHUNK_CHARS:
            chunk.staging = "".join(staging).encode("utf-8")
            yield chunk
            staging, chunk, chars = [], Chunk(), 0
    if len(chunk):
        chunk.staging = "".join(staging).encode("utf-8")
        yield chunk


def _add(chunk: Chunk, staging: list[str], row: Row, fingerprint: str, with_question: bool) -> int:
    """Put `row` in the chunk: text columns as VerbatimTextField stores them (NUL and lone
    surrogates escaped), JSON as the JSONField sends it (formats checked it is jsonb-storable).
    Without `with_question` the question's own columns stage NULL (an earlier row carried them).
    Returns the characters added (what bounds a chunk)."""
    external_id = copy_text(row.id)
    content_hash, row_hash = row.content_hash, row.row_hash
    if with_question:
        question = "\t".join(
            (
                copy_text(row.benchmark),
                copy_text(encode_verbatim(row.question)),
                copy_text(json.dumps(list(row.choices))),
                copy_text(encode_verbatim(row.gold)),
            )
        )
    else:
        question = "\\N\t\\N\t\\N\t\\N"
    # Staging columns: line, external_id, fingerprint, benchmark, question, choices, gold, content_hash, row_hash.
    staging.append(f"{row.line}\t{external_id}\t{fingerprint}\t{question}\t{content_hash}\t{row_hash}\n")
    prompt_text = None if row.prompt_text is None else encode_verbatim(row.prompt_text)
    meta = copy_text(json.dumps(row.meta)) if row.meta else "{}"
    chunk.responses.append(
        "\t".join(
            (
                external_id,
                copy_text(encode_verbatim(row.response)),
                copy_text(prompt_text),
                content_hash,
                row_hash,
                meta,
            )
        )
    )
    chunk.runs.append((row.model, row.checkpoint, row.benchmark, row.prompt))
    chunk.fingerprints.append(fingerprint)
    chunk.ids.append(row.id)
    chunk.lines.append(row.line)
    return len(row.response) + len(row.prompt_text or "") + (len(row.question) if with_question else 0)


def main() -> None:
    """The child process (`python -c "from adjudication.ingest.copyrows import main; main()"`): reads
    the pickled rows callable from stdin and writes pickled messages to stdout: ("chunk", Chunk)
    each, then ("end",); or ("row_error", RowError) for a bad row, or ("error", traceback text) if
    parsing itself failed. An importer that stopped reading (a broken pipe) ends it."""
    # The messages own the real stdout; anything else printed goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    rows: Callable[[], Iterable[Row]] = pickle.load(sys.stdin.buffer)
    try:
        for chunk in chunks(rows()):
            pickle.dump(("chunk", chunk), out, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.dump(("end",), out)
        out.flush()
    except BrokenPipeError:
        return
    except RowError as exc:
        _send_quietly(out, ("row_error", exc))
    except BaseException:  # noqa: BLE001 - reported to the importer, which raises it
        _send_quietly(out, ("error", traceback.format_exc()))


def _send_quietly(out: BinaryIO, message: tuple[Any, ...]) -> None:
    with contextlib.suppress(OSError):  # the importer is gone: nobody to tell
        pickle.dump(message, out)
        out.flush()
