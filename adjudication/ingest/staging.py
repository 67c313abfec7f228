"""Importing on PostgreSQL: rows streamed with COPY, chunk by chunk. Each chunk's identities (id,
run, question, hashes) go into a temporary staging table and are merged in SQL into runs and
questions and matched against the dataset's responses; its new responses are then COPYed straight
into the response table.

Why: the ORM path spends most of an import building INSERT statements value by value and the
server parsing them. COPY moves rows at a fraction of that, and the set-based merge replaces the
per-batch look-ups. The response text goes over once, into its own table: staged and then copied
across with INSERT ... SELECT, every byte of it would be written, read and sorted a second time
(measured on bench/import_bench.py's rows, same run: 41-45 µs of server CPU a row that way, 38-39 µs
this way; most of either is the response table's five indexes and three foreign-key checks).

The semantics are the ORM path's (services._Importer):
- a run per (model, checkpoint, benchmark, prompt), created in the order its first row appears;
- a question per fingerprint, from the first row carrying it (rows sharing a fingerprint carry the
  same question), meta {};
- a response per id: new ones inserted in file order; one whose row hash is unchanged counted and
  left alone (updated_at too); a changed one refused naming its line (the first in its chunk), or
  with `replace` overwritten, and then the one rule for replaced responses (ingest.replaced) applied
  to the chunk's replaced ones, as services._Importer._replace applies it to each.
Validation stays in formats.iter_rows, which parses and checks every row before it is staged; the
caller's transaction makes the whole import one commit or nothing. Memory holds a few chunks.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import timezone

from adjudication.ingest import copyrows
from adjudication.ingest.copyrows import Chunk, RunKey
from adjudication.ingest.formats import Row, RowError, duplicate_id
from adjudication.ingest.replaced import Replaced, replaced_responses_invalidate
from adjudication.models import Dataset, Question, Response, Run

if TYPE_CHECKING:
    from adjudication.ingest.services import ImportReport

# Files from this size on are parsed in a child process (see copyrows); smaller ones in-process,
# where a child's start-up (0.3 s) would cost more than it saves.
PARSE_IN_CHILD_FROM_BYTES = 16 << 20
# Run and question ids held to resolve the rows of later chunks without asking; past the limit the
# memo starts afresh, so memory stays bounded however many an import meets.
IDS_REMEMBERED = 200_000

STAGING = "adjudication_import_staging"
REPLACING = "adjudication_import_replacing"
SEEN = "adjudication_import_seen"
_RUN = Run._meta.db_table
_QUESTION = Question._meta.db_table
_RESPONSE = Response._meta.db_table

# In the order copyrows writes them.
_STAGING_COLUMNS = (
    ("line", "integer"),
    ("external_id", "text"),
    ("fingerprint", "text"),
    ("benchmark", "text"),
    ("question", "text"),
    ("choices", "jsonb"),
    ("gold", "text"),
    ("content_hash", "text"),
    ("row_hash", "text"),
)
_RESPONSE_COLUMNS = "external_id, text, prompt_text, content_hash, row_hash, meta"

_CREATE_STAGING = (
    f"CREATE TEMPORARY TABLE {STAGING} ({', '.join(f'{n} {t}' for n, t in _STAGING_COLUMNS)}) ON COMMIT DROP"
)
_COPY_STAGING = f"COPY {STAGING} ({', '.join(n for n, _ in _STAGING_COLUMNS)}) FROM STDIN"
# The ids of the import's earlier chunks and their lines: a repeated id is an error naming both lines.
_CREATE_SEEN = f"CREATE TEMPORARY TABLE {SEEN} (external_id text PRIMARY KEY, line integer) ON COMMIT DROP"
_SEEN_BEFORE = f"""
    SELECT s.line, s.external_id, seen.line FROM {STAGING} s
    CROSS JOIN LATERAL (SELECT line FROM {SEEN} seen WHERE seen.external_id = s.external_id LIMIT 1) seen
    ORDER BY s.line LIMIT 1"""
_REMEMBER_SEEN = f"INSERT INTO {SEEN} (external_id, line) SELECT external_id, line FROM {STAGING}"
_COPY_RESPONSES = (
    f"COPY {_RESPONSE} (dataset_id, run_id, question_id, {_RESPONSE_COLUMNS}, created_at, updated_at) FROM STDIN"
)

_RUN_IDS = f"""
    SELECT id, model, checkpoint, benchmark, prompt FROM {_RUN} run
    WHERE dataset_id = %(dataset)s AND (model, checkpoint, benchmark, prompt) IN (SELECT * FROM unnest(
          %(models)s::text[], %(checkpoints)s::text[], %(benchmarks)s::text[], %(prompts)s::text[]))"""
_CREATE_RUN = f"""
    INSERT INTO {_RUN} (dataset_id, model, checkpoint, benchmark, prompt, family, generation_params, created_at)
    VALUES (%(dataset)s, %(model)s, %(checkpoint)s, %(benchmark)s, %(prompt)s, '', '{{}}'::jsonb, %(now)s)
    RETURNING id"""

# Look-ups are scalar subqueries or LATERAL ... LIMIT 1, which PostgreSQL runs as one index probe
# per staged row. As joins, the planner (which sees neither the staging table's size nor the rows
# this transaction added) may hash the dataset's whole response table for every chunk.
# Rows of a question already staged carry NULL text (see copyrows.chunks): they find it by fingerprint.
_MERGE_QUESTIONS = f"""
    INSERT INTO {_QUESTION} (dataset_id, benchmark, text, choices, gold, meta, fingerprint)
    SELECT %(dataset)s, s.benchmark, s.question, s.choices, s.gold, '{{}}'::jsonb, s.fingerprint
    FROM (SELECT DISTINCT ON (fingerprint) line, benchmark, question, choices, gold, fingerprint
          FROM {STAGING} s
          WHERE s.question IS NOT NULL
            AND (SELECT 1 FROM {_QUESTION} q WHERE q.dataset_id = %(dataset)s AND q.fingerprint = s.fingerprint) IS NULL
          ORDER BY fingerprint, line) s
    ORDER BY s.line
    RETURNING fingerprint, id"""
_QUESTION_IDS = f"""
    SELECT fingerprint, id FROM {_QUESTION} WHERE dataset_id = %(dataset)s AND fingerprint = ANY(%(fingerprints)s)"""

# The chunk's rows whose id the dataset holds already, in file order: the response, whether the row
# is unchanged, and (for a changed one) whether its text changed and which question it had.
_EXISTING = f"""
    SELECT s.line, r.id, r.row_hash = s.row_hash, r.content_hash <> s.content_hash, r.question_id
    FROM {STAGING} s
    CROSS JOIN LATERAL (SELECT r.id, r.row_hash, r.content_hash, r.question_id FROM {_RESPONSE} r
                        WHERE r.dataset_id = %(dataset)s AND r.external_id = s.external_id LIMIT 1) r
    ORDER BY s.line"""

_CREATE_REPLACING = (
    f"CREATE TEMPORARY TABLE IF NOT EXISTS {REPLACING} (id integer, run_id integer, question_id integer, "
    "external_id text, text text, prompt_text text, content_hash text, row_hash text, meta jsonb) ON COMMIT DROP"
)
_COPY_REPLACING = f"COPY {REPLACING} (id, run_id, question_id, {_RESPONSE_COLUMNS}) FROM STDIN"
# QuerySet.update() in the ORM path leaves updated_at as it was; so does this.
_REPLACE = f"""
    UPDATE {_RESPONSE} r SET run_id = n.run_id, question_id = n.question_id, text = n.text,
                             prompt_text = n.prompt_text, content_hash = n.content_hash, row_hash = n.row_hash,
                             meta = n.meta
    FROM {REPLACING} n WHERE r.id = n.id"""

# For the import's own statements, then set back to what the caller's transaction had (a failed
# import's rollback undoes them by itself):
# - jit off: the planner cannot know the staging table's size and guesses costs high enough to
#   compile every merge statement, which took longer (0.5 s a chunk) than running it;
# - work_mem: the merge sorts a chunk by line number, in memory rather than in temporary files.
_SETTINGS = {"jit": "off", "work_mem": "32MB"}


def staged_rows_import(
    *,
    dataset: Dataset,
    rows: Callable[[], Iterable[Row]],
    path: Path,
    replace: bool,
    report: ImportReport,
    progress: Callable[[int], None] | None,
) -> None:
    """Stage, merge and write the rows `rows()` yields, chunk by chunk, into `dataset` (inside the
    caller's transaction). `rows` is called here or, for a large file, in a child process (so it
    must pickle: a module-level function or a functools.partial of one)."""
    import psycopg

    connection.ensure_connection()
    with (
        _parsed_chunks(rows, path) as chunks,
        connection.wrap_database_errors,
        psycopg.Cursor(connection.connection) as cursor,
    ):
        restore = _set_locally(cursor, _SETTINGS)
        defer_again = _foreign_keys_checked_now(cursor)
        cursor.execute(_CREATE_STAGING)
        cursor.execute(_CREATE_SEEN)
        writer = _ChunkWriter(cursor, dataset, path, replace, report)
        seen_any = False
        for chunk in chunks:
            seen_any = True
            writer.write(chunk)
            if progress:
                progress(len(chunk))
        if not seen_any:
            # An empty file is almost always a failed export upstream; importing it would only create an empty dataset.
            raise RowError(path, 0, None, "no rows to import: the file is empty or holds only blank lines")
        cursor.execute(f"DROP TABLE {STAGING}, {SEEN}")
        cursor.execute(f"DROP TABLE IF EXISTS {REPLACING}")
        cursor.execute(defer_again)
        _set_locally(cursor, restore)


class _parsed_chunks:  # noqa: N801 - used as a context manager, like contextlib's
    """The chunks of `rows()`: parsed here for a small file, in a child process for a large one.

    The child is a fresh interpreter running copyrows.main and nothing else: not a fork (which
    would inherit the open database connection and whatever locks other threads hold), nor
    multiprocessing's spawn (which re-runs the importing program's main module: a script without a
    __main__ guard would import again and wait on its own dataset lock)."""

    def __init__(self, rows: Callable[[], Iterable[Row]], path: Path) -> None:
        self.rows, self.path = rows, path
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Iterator[Chunk]:
        try:
            large = self.path.stat().st_size >= PARSE_IN_CHILD_FROM_BYTES
        except OSError:
            large = False  # the parser reports an unreadable file, with its reason
        try:
            # The child imports the callable by name: a lambda or a closure cannot go.
            payload = pickle.dumps(self.rows) if large else b""
        except (pickle.PicklingError, AttributeError, TypeError):
            large = False
        if not large:
            return copyrows.chunks(self.rows())
        root = str(Path(copyrows.__file__).resolve().parents[2])  # the folder holding `adjudication`
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from adjudication.ingest.copyrows import main; main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.process.stdin is not None
        with self.process.stdin as stdin:
            stdin.write(payload)
        return self._received()

    def _received(self) -> Iterator[Chunk]:
        assert self.process is not None and self.process.stdout is not None
        while True:
            try:
                message = pickle.load(self.process.stdout)
            except EOFError:
                raise RuntimeError(
                    f"the parsing process ended without finishing (exit code {self.process.wait()})"
                ) from None
            kind = message[0]
            if kind == "chunk":
                yield message[1]
            elif kind == "end":
                return
            elif kind == "row_error":
                raise message[1]
            else:
                raise RuntimeError(f"the parsing process failed:\n{message[1]}")

    def __exit__(self, *exc_info: object) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()  # the import stopped early: the rest of the file is not wanted
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _foreign_keys_checked_now(cursor: Any) -> Any:
    """Check the response table's foreign keys as each statement ends rather than at commit; the
    statement that defers them again afterwards (they are all DEFERRABLE INITIALLY DEFERRED, as
    Django declares them; a failed import's rollback restores the mode by itself).

    Why: checked at commit, they are a second pass over every new row (a third of the server's work)
    during which nothing else runs; checked as each chunk is written, PostgreSQL does them while
    the parser works on the next chunk."""
    import psycopg

    cursor.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f' AND condeferred",
        [_RESPONSE],
    )
    names = psycopg.sql.SQL(", ").join(psycopg.sql.Identifier(name) for (name,) in cursor.fetchall())
    cursor.execute(psycopg.sql.SQL("SET CONSTRAINTS {} IMMEDIATE").format(names))
    return psycopg.sql.SQL("SET CONSTRAINTS {} DEFERRED").format(names)


def _set_locally(cursor: Any, settings: dict[str, str]) -> dict[str, str]:
    """SET LOCAL each setting; the values they had before."""
    before = {}
    for name, value in settings.items():
        cursor.execute("SELECT current_setting(%s)", [name])
        before[name] = cursor.fetchone()[0]
        cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
    return before


class _BoundedCache(dict):
    """A dict that forgets everything when it reaches `limit` entries: look-ups of what it forgot
    go to the database again, and memory stays bounded however many keys an import meets."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: Any, value: Any) -> None:
        if len(self) >= self.limit and key not in self:
            self.clear()
        super().__setitem__(key, value)


class _ChunkWriter:
    def __init__(self, cursor: Any, dataset: Dataset, path: Path, replace: bool, report: ImportReport) -> None:
        self.cursor, self.dataset, self.path, self.replace, self.report = cursor, dataset, path, replace, report
        self.run_ids: dict[RunKey, int] = _BoundedCache(IDS_REMEMBERED)
        self.question_ids: dict[str, int] = _BoundedCache(IDS_REMEMBERED)
        self.run_names: dict[int, str] = _BoundedCache(IDS_REMEMBERED)

    def write(self, chunk: Chunk) -> None:
        cursor, report = self.cursor, self.report
        params: dict[str, Any] = {"dataset": self.dataset.pk, "now": timezone.now()}
        with cursor.copy(_COPY_STAGING) as copy:
            copy.write(chunk.staging)
        repeated = self._repeated_id(chunk)
        run_ids = self._run_ids(chunk.runs, params)
        question_ids = self._question_ids(chunk.fingerprints, params)
        cursor.execute(_EXISTING, params)
        existing = {line: found for line, *found in cursor.fetchall()}
        changed = [i for i, line in enumerate(chunk.lines) if line in existing and not existing[line][1]]
        # Of the chunk's errors, the one on the earliest line (a repeated id also matches the response
        # its first row made: it is the repetition that is wrong).
        if changed and not self.replace and not (repeated and repeated.line <= chunk.lines[changed[0]]):
            first = changed[0]
            raise RowError(
                self.path,
                chunk.lines[first],
                "id",
                f"response {chunk.ids[first]!r} already exists in dataset {self.dataset.name!r} with different "
                "content; pass --replace to overwrite it (its readings are then discarded)",
            )
        if repeated:
            raise repeated
        cursor.execute(_REMEMBER_SEEN)
        cursor.execute(f"TRUNCATE {STAGING}")
        if changed:
            self._replace(chunk, existing, changed, run_ids, question_ids)
        dataset_id, now = self.dataset.pk, params["now"].isoformat()
        created: dict[int, int] = {}
        lines: list[str] = []
        for line, run_id, question_id, response in zip(
            chunk.lines, run_ids, question_ids, chunk.responses, strict=True
        ):
            if line not in existing:
                lines.append(f"{dataset_id}\t{run_id}\t{question_id}\t{response}\t{now}\t{now}\n")
                created[run_id] = created.get(run_id, 0) + 1
        if lines:
            with cursor.copy(_COPY_RESPONSES) as copy:
                copy.write("".join(lines).encode("utf-8"))
        report.unchanged += len(existing) - len(changed)
        for run_id, count in created.items():
            report.by_run[self._run_name(run_id)] += count
            report.created += count

    def _repeated_id(self, chunk: Chunk) -> RowError | None:
        """The first row of the chunk whose id an earlier row of the file had, as formats.iter_rows
        words it (which leaves this to the database here: see services.responses_import)."""
        first_lines: dict[str, int] = {}
        found: tuple[int, str, int] | None = None
        for row_id, line in zip(chunk.ids, chunk.lines, strict=True):
            if row_id in first_lines:
                found = (line, row_id, first_lines[row_id])
                break
            first_lines[row_id] = line
        self.cursor.execute(_SEEN_BEFORE)
        earlier = self.cursor.fetchone()
        if earlier and (found is None or earlier[0] < found[0]):
            found = earlier
        if found is None:
            return None
        line, row_id, first_line = found
        return RowError(self.path, line, "id", duplicate_id(row_id, first_line))

    def _run_ids(self, keys: list[RunKey], params: dict[str, Any]) -> list[int]:
        """The run of each row, created (in the order its first row comes) where the dataset has none."""
        missing = list(dict.fromkeys(key for key in keys if key not in self.run_ids))
        if missing:
            self.cursor.execute(
                _RUN_IDS,
                {**params, **dict(zip(("models", "checkpoints", "benchmarks", "prompts"), map(list, zip(*missing))))},
            )
            for run_id, *key in self.cursor.fetchall():
                self.run_ids[tuple(key)] = run_id
            for key in missing:
                if key not in self.run_ids:
                    names = dict(zip(("model", "checkpoint", "benchmark", "prompt"), key))
                    self.cursor.execute(_CREATE_RUN, {**params, **names})
                    self.run_ids[key] = self.cursor.fetchone()[0]
                    self.report.runs_created += 1
        return [self.run_ids[key] for key in keys]

    def _question_ids(self, fingerprints: list[str], params: dict[str, Any]) -> list[int]:
        """The question of each row, created from the staged texts where the dataset has none."""
        self.cursor.execute(_MERGE_QUESTIONS, params)
        for fingerprint, question_id in self.cursor.fetchall():
            self.question_ids[fingerprint] = question_id
            self.report.questions_created += 1
        missing = list({fp for fp in fingerprints if fp not in self.question_ids})
        if missing:
            self.cursor.execute(_QUESTION_IDS, {**params, "fingerprints": missing})
            for fingerprint, question_id in self.cursor.fetchall():
                self.question_ids[fingerprint] = question_id
        return [self.question_ids[fp] for fp in fingerprints]

    def _replace(
        self,
        chunk: Chunk,
        existing: dict[int, list[Any]],
        changed: list[int],
        run_ids: list[int],
        question_ids: list[int],
    ) -> None:
        cursor = self.cursor
        ids = [existing[chunk.lines[i]][0] for i in changed]
        cursor.execute(_CREATE_REPLACING)
        with cursor.copy(_COPY_REPLACING) as copy:
            data = "".join(
                f"{response_id}\t{run_ids[i]}\t{question_ids[i]}\t{chunk.responses[i]}\n"
                for i, response_id in zip(changed, ids, strict=True)
            )
            copy.write(data.encode("utf-8"))
        cursor.execute(_REPLACE)
        cursor.execute(f"TRUNCATE {REPLACING}")
        replaced = []
        for i, response_id in zip(changed, ids, strict=True):
            _, _, text_changed, old_question = existing[chunk.lines[i]]
            replaced.append(Replaced(response_id, text_changed, question_changed=old_question != question_ids[i]))
        replaced_responses_invalidate(replaced=replaced, review=self.report.review)
        self.report.replaced += len(ids)

    def _run_name(self, run_id: int) -> str:
        name = self.run_names.get(run_id)
        if name is None:
            name = self.run_names[run_id] = str(Run.objects.get(pk=run_id))
        return name
