"""Importing on PostgreSQL: rows streamed with COPY into a temporary staging table, chunk by chunk,
and merged into runs, questions and responses by a few set-based statements per chunk.

Why: the ORM path spends most of an import building INSERT statements value by value (and the
server parsing them); COPY moves the same rows at a fraction of the cost, and the merge's joins
replace the per-batch look-ups. The semantics are the ORM path's (services._Importer), statement
for statement:
- a run per (model, checkpoint, benchmark, prompt), created in the order its first row appears;
- a question per fingerprint, from the first row carrying it (rows sharing a fingerprint carry the
  same question), meta {};
- a response per id: new ones inserted in file order; one whose row hash is unchanged counted and
  left alone (updated_at too); a changed one refused naming its line (the first in the chunk), or
  with `replace` overwritten: its readings deleted and, when its text or question changed, its
  review invalidated — as services._Importer._replace does, a chunk at a time.
Validation stays where it is (formats.iter_rows parses and checks every row before it is staged);
the caller's transaction makes the whole import one commit or nothing. Memory holds one chunk.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import timezone

from adjudication.fields import encode_verbatim
from adjudication.ingest.formats import Row, RowError
from adjudication.models import Dataset, Question, Reading, Response, Run
from adjudication.review.services import review_invalidate_replaced

if TYPE_CHECKING:
    from adjudication.ingest.services import ImportReport

# A chunk is staged, merged and emptied before the next is read: this bounds memory (the rows of
# one chunk in the driver's buffers, none in Python) and keeps the staging table in temp_buffers.
CHUNK_ROWS = 5000
CHUNK_CHARS = 16 << 20
QUESTIONS_REMEMBERED = 100_000

STAGING = "adjudication_import_staging"
_COLUMNS = (
    ("line", "integer"),
    ("external_id", "text"),
    ("model", "text"),
    ("checkpoint", "text"),
    ("benchmark", "text"),
    ("prompt", "text"),
    ("fingerprint", "text"),
    ("question", "text"),
    ("choices", "jsonb"),
    ("gold", "text"),
    ("response", "text"),
    ("prompt_text", "text"),
    ("content_hash", "text"),
    ("row_hash", "text"),
    ("meta", "jsonb"),
)
_CREATE = f"CREATE TEMPORARY TABLE {STAGING} ({', '.join(f'{n} {t}' for n, t in _COLUMNS)}) ON COMMIT DROP"
_COPY = f"COPY {STAGING} ({', '.join(n for n, _ in _COLUMNS)}) FROM STDIN"

_RUN = Run._meta.db_table
_QUESTION = Question._meta.db_table
_RESPONSE = Response._meta.db_table

# Every look-up below is a scalar subquery or a LATERAL ... LIMIT 1: PostgreSQL runs those as one
# index probe per staged row. As joins, the planner (which sees neither the staging table's size nor
# the rows this transaction added) may hash the dataset's whole response table for every chunk.
_RUN_ID = f"""(SELECT run.id FROM {_RUN} run WHERE run.dataset_id = %(dataset)s AND run.model = s.model
               AND run.checkpoint = s.checkpoint AND run.benchmark = s.benchmark AND run.prompt = s.prompt)"""
_QUESTION_ID = f"(SELECT q.id FROM {_QUESTION} q WHERE q.dataset_id = %(dataset)s AND q.fingerprint = s.fingerprint)"
_EXISTING_ROW = f"""LATERAL (SELECT r.id, r.row_hash, r.content_hash, r.question_id FROM {_RESPONSE} r
                           WHERE r.dataset_id = %(dataset)s AND r.external_id = s.external_id LIMIT 1) r"""

_MERGE_RUNS = f"""
    INSERT INTO {_RUN} (dataset_id, model, checkpoint, benchmark, prompt, generation_params, created_at)
    SELECT %(dataset)s, s.model, s.checkpoint, s.benchmark, s.prompt, '{{}}'::jsonb, %(now)s
    FROM (SELECT model, checkpoint, benchmark, prompt, min(line) AS first_line FROM {STAGING}
          GROUP BY model, checkpoint, benchmark, prompt) s
    WHERE {_RUN_ID} IS NULL
    ORDER BY s.first_line"""

# Only the first row of a question in the import carries its text (see _Chunks): the others
# stage NULL there and find the question by fingerprint.
_MERGE_QUESTIONS = f"""
    INSERT INTO {_QUESTION} (dataset_id, benchmark, text, choices, gold, meta, fingerprint)
    SELECT %(dataset)s, s.benchmark, s.question, s.choices, s.gold, '{{}}'::jsonb, s.fingerprint
    FROM (SELECT DISTINCT ON (fingerprint) line, benchmark, question, choices, gold, fingerprint
          FROM {STAGING} s WHERE s.question IS NOT NULL AND {_QUESTION_ID} IS NULL
          ORDER BY fingerprint, line) s
    ORDER BY s.line"""

# How the chunk's ids stand against the dataset: how many are there unchanged, and the first changed one.
_EXISTING = f"""
    SELECT count(*) FILTER (WHERE r.row_hash = s.row_hash),
           count(*) FILTER (WHERE r.row_hash <> s.row_hash),
           min(s.line) FILTER (WHERE r.row_hash <> s.row_hash)
    FROM {STAGING} s CROSS JOIN {_EXISTING_ROW}"""

_FIRST_CHANGED_ID = f"SELECT external_id FROM {STAGING} WHERE line = %(line)s"

_INSERT_NEW = f"""
    WITH created AS (
        INSERT INTO {_RESPONSE} (dataset_id, run_id, question_id, external_id, text, prompt_text,
                                 content_hash, row_hash, meta, created_at, updated_at)
        SELECT %(dataset)s, {_RUN_ID}, {_QUESTION_ID}, s.external_id, s.response, s.prompt_text,
               s.content_hash, s.row_hash, s.meta, %(now)s, %(now)s
        FROM {STAGING} s
        WHERE (SELECT 1 FROM {_RESPONSE} r WHERE r.dataset_id = %(dataset)s AND r.external_id = s.external_id) IS NULL
        ORDER BY s.line
        RETURNING run_id)
    SELECT run_id, count(*) FROM created GROUP BY run_id"""

# The changed responses of the chunk, in file order, and whether their review stands: labels judged
# the old text against the old question and gold (a change of model name or meta alone leaves them be).
_CHANGED = f"""
    SELECT r.id, (r.content_hash <> s.content_hash OR r.question_id <> {_QUESTION_ID})
    FROM {STAGING} s CROSS JOIN {_EXISTING_ROW}
    WHERE r.row_hash <> s.row_hash
    ORDER BY s.line"""

# QuerySet.update() in the ORM path leaves updated_at as it was; so does this.
_REPLACE = f"""
    UPDATE {_RESPONSE} r SET run_id = {_RUN_ID}, question_id = {_QUESTION_ID}, text = s.response,
                             prompt_text = s.prompt_text, content_hash = s.content_hash, row_hash = s.row_hash,
                             meta = s.meta
    FROM {STAGING} s
    WHERE r.id = ANY(%(ids)s) AND s.external_id = r.external_id"""


def _staged(row: Row, fingerprint: str, with_question: bool) -> tuple[Any, ...]:
    """A row as the staging table holds it: text columns as VerbatimTextField stores them (NUL and
    lone surrogates escaped), JSON as the JSONField sends it (formats checked it is jsonb-storable).
    Without `with_question` the question's own columns are NULL (an earlier row carried them)."""
    return (
        row.line,
        row.id,
        row.model,
        row.checkpoint,
        row.benchmark,
        row.prompt,
        fingerprint,
        encode_verbatim(row.question) if with_question else None,
        json.dumps(list(row.choices)) if with_question else None,
        encode_verbatim(row.gold) if with_question else None,
        encode_verbatim(row.response),
        None if row.prompt_text is None else encode_verbatim(row.prompt_text),
        row.content_hash,
        row.row_hash,
        json.dumps(row.meta),
    )


def staged_rows_import(
    *,
    dataset: Dataset,
    rows: Iterable[Row],
    path: Path,
    replace: bool,
    report: ImportReport,
    progress: Callable[[int], None] | None,
) -> None:
    """Stage and merge `rows` chunk by chunk into `dataset` (inside the caller's transaction)."""
    import psycopg

    connection.ensure_connection()
    with (
        _Chunks(rows) as chunks,
        connection.wrap_database_errors,
        psycopg.Cursor(connection.connection) as cursor,
    ):
        restore = _set_locally(cursor, _SETTINGS)
        cursor.execute(_CREATE)
        merge = _ChunkMerge(cursor, dataset, path, replace, report)
        seen_any = False
        for chunk in chunks:
            seen_any = True
            with cursor.copy(_COPY) as copy:
                for staged in chunk:
                    copy.write_row(staged)
            merge.chunk()
            cursor.execute(f"TRUNCATE {STAGING}")
            if progress:
                progress(len(chunk))
        if not seen_any:
            # An empty file is almost always a failed export upstream; importing it would only create an empty dataset.
            raise RowError(path, 0, None, "no rows to import: the file is empty or holds only blank lines")
        cursor.execute(f"DROP TABLE {STAGING}")
        _set_locally(cursor, restore)


# For the import's own statements, then set back to what the caller's transaction had (a failed
# import's rollback undoes them by itself):
# - jit off: the planner cannot know the staging table's size and guesses costs high enough to
#   compile every merge statement, which took longer (0.5 s a chunk) than running it;
# - work_mem: the merge sorts a chunk by line number; in memory rather than in temporary files.
_SETTINGS = {"jit": "off", "work_mem": "64MB"}


def _set_locally(cursor: Any, settings: dict[str, str]) -> dict[str, str]:
    """SET LOCAL each setting; the values they had before."""
    before = {}
    for name, value in settings.items():
        cursor.execute("SELECT current_setting(%s), set_config(%s, %s, true)", [name, name, value])
        before[name] = cursor.fetchone()[0]
    return before


class _Chunks:
    """The rows parsed, checked, hashed and put in staging form by a thread of their own, a chunk at
    a time, while this thread waits on PostgreSQL merging the chunk before: parsing is the Python
    half of an import and the merge the server's, and the two overlap.

    At most QUEUED chunks wait; a RowError (or any error) of the parser is raised here, in file order
    with the chunks before it. Leaving the `with` early (a merge failed) stops the parser."""

    QUEUED = 2
    _END = object()

    def __init__(self, rows: Iterable[Row]) -> None:
        self._rows = rows
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=self.QUEUED)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._parse, name="import-parse", daemon=True)

    def __enter__(self) -> _Chunks:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        while self._thread.is_alive():
            # Unblock a parser waiting to hand over a chunk nobody will take.
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.05)
        self._thread.join()

    def __iter__(self) -> Iterator[list[tuple[Any, ...]]]:
        while True:
            item = self._queue.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _parse(self) -> None:
        try:
            chunk: list[tuple[Any, ...]] = []
            chars = 0
            # The questions whose text an earlier row staged: by the time a later chunk is merged
            # they exist. Bounded: past the limit a question's text is merely staged again.
            questions_staged: set[str] = set()
            for row in self._rows:
                fingerprint = row.question_fingerprint
                with_question = fingerprint not in questions_staged
                if with_question:
                    if len(questions_staged) >= QUESTIONS_REMEMBERED:
                        questions_staged.clear()
                    questions_staged.add(fingerprint)
                chunk.append(_staged(row, fingerprint, with_question))
                chars += len(row.response) + len(row.question) + len(row.prompt_text or "")
                if len(chunk) >= CHUNK_ROWS or chars >= CHUNK_CHARS:
                    if not self._put(chunk):
                        return
                    chunk, chars = [], 0
            if chunk and not self._put(chunk):
                return
            self._put(self._END)
        except BaseException as exc:  # noqa: BLE001 - handed to the importing thread, which raises it
            self._put(exc)


class _ChunkMerge:
    def __init__(self, cursor: Any, dataset: Dataset, path: Path, replace: bool, report: ImportReport) -> None:
        self.cursor, self.dataset, self.path, self.replace, self.report = cursor, dataset, path, replace, report
        self.run_names: dict[int, str] = {}

    def chunk(self) -> None:
        params: dict[str, Any] = {"dataset": self.dataset.pk, "now": timezone.now()}
        cursor, report = self.cursor, self.report
        cursor.execute(_MERGE_RUNS, params)
        report.runs_created += cursor.rowcount
        cursor.execute(_MERGE_QUESTIONS, params)
        report.questions_created += cursor.rowcount
        cursor.execute(_EXISTING, params)
        unchanged, changed, first_changed = cursor.fetchone()
        if changed and not self.replace:
            cursor.execute(_FIRST_CHANGED_ID, {"line": first_changed})
            (external_id,) = cursor.fetchone()
            raise RowError(
                self.path,
                first_changed,
                "id",
                f"response {external_id!r} already exists in dataset {self.dataset.name!r} with different "
                "content; pass --replace to overwrite it (its readings are then discarded)",
            )
        report.unchanged += unchanged
        if changed:
            self._replace(params)
        cursor.execute(_INSERT_NEW, params)
        for run_id, created in cursor.fetchall():
            report.by_run[self._run_name(run_id)] += created
            report.created += created

    def _replace(self, params: dict[str, Any]) -> None:
        self.cursor.execute(_CHANGED, params)
        changed = self.cursor.fetchall()
        ids = [pk for pk, _ in changed]
        # Readings describe the old text; keeping them would attach verdicts to words never read.
        Reading.objects.filter(response_id__in=ids).delete()
        self.cursor.execute(_REPLACE, {**params, "ids": ids})
        stale = [pk for pk, review_stale in changed if review_stale]
        if stale:
            found = review_invalidate_replaced(response_ids=stale, record_change=False)
            self.report.review.labels += found.labels
            self.report.review.final_labels += found.final_labels
            self.report.review.items_reopened += found.items_reopened
        self.report.replaced += len(ids)

    def _run_name(self, run_id: int) -> str:
        name = self.run_names.get(run_id)
        if name is None:
            name = self.run_names[run_id] = str(Run.objects.get(pk=run_id))
        return name
