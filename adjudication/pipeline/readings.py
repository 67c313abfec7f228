"""Writing readings: every (response, reader spec) gets exactly one, whoever computes it."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence
from typing import NamedTuple

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from psycopg.errors import UniqueViolation

from adjudication.fields import encode_verbatim, json_safe, json_text
from adjudication.models import Question, ReaderSpec, Reading, Response
from adjudication.pipeline.selectors import missing_pairs
from adjudication.revisions import dataset_changed
from readers import Item
from readers import Reading as ReaderReading
from readers import registry as reader_registry
from readers.base import Reader

_pool_lock = threading.Lock()
_pool = None


def _isolated_pool():
    """One isolation pool per process (a Celery prefork child, or the CLI), created on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            from readers.isolation.pool import IsolatedPool

            _pool = IsolatedPool(
                processes=settings.READER_PROCESSES,
                budget_s=settings.READER_BUDGET_SECONDS,
            )
            atexit.register(_pool.close)
        return _pool


def reader_spec_get_or_create(*, name: str, version: str, config: dict, config_hash: str, kind: str) -> ReaderSpec:
    """The one row for a producer's identity (rule reader, regeneration or judge). The unique
    constraint on (name, version, config_hash) makes concurrent callers converge on one row."""
    spec, _ = ReaderSpec.objects.get_or_create(
        name=name,
        version=version,
        config_hash=config_hash,
        defaults={"config": json_safe(config), "kind": kind},
    )
    return spec


def reader_spec_for(*, reader: Reader) -> ReaderSpec:
    return reader_spec_get_or_create(
        name=reader.name,
        version=reader.version,
        config=reader.config_dict(),
        config_hash=reader.config_hash,
        kind=reader.kind,
    )


def reader_spec_by_name(*, name: str) -> ReaderSpec:
    """The spec of the registry's current version and default config of a reader."""
    return reader_spec_for(reader=reader_registry.get(name))


def readings_create(*, reader_specs: Sequence[ReaderSpec], response_ids: Sequence[int]) -> int:
    """Read every response in `response_ids` that has no reading by each of `reader_specs` yet.

    Safe to run twice concurrently (a redelivered task, two workers): the unique constraint on
    (response, reader_spec) keeps one reading and the loser's rows are dropped (readings_write).
    Returns the number of readings computed here.
    """
    missing = missing_pairs(reader_specs=reader_specs, response_ids=response_ids)
    needed = sorted({rid for ids in missing.values() for rid in ids})
    if not needed:
        return 0
    responses = {
        rid: (qid, dataset_id, text)
        for rid, qid, dataset_id, text in Response.objects.filter(id__in=needed).values_list(
            "id", "question_id", "dataset_id", "text"
        )
    }
    questions = {
        qid: (gold, tuple(choices), text)
        for qid, gold, choices, text in Question.objects.filter(
            id__in={qid for qid, _, _ in responses.values()}
        ).values_list("id", "gold", "choices", "text")
    }
    # One Item per response; a question's fields (its choices tuple too) are shared by its responses.
    items = {rid: _item(text, questions[qid]) for rid, (qid, _, text) in responses.items()}
    # Every reader's items in one pool run: the reader processes go from one reader's batches
    # straight on to the next one's (read_panel), instead of idling at the end of each reader.
    todo = [
        (spec, [rid for rid in missing[spec.id] if rid in responses])  # a response deleted meanwhile is skipped
        for spec in reader_specs
    ]
    todo = [(spec, ids) for spec, ids in todo if ids]
    results = _isolated_pool().read_panel([(spec.name, [items[rid] for rid in ids]) for spec, ids in todo])
    # The pool's worker made `canonical` (readers.canonical) within each reading's budget.
    rows = [
        ReadingRow(rid, spec.id, reading, elapsed_ms)
        for (spec, ids), readings in zip(todo, results, strict=True)
        for rid, (reading, elapsed_ms) in zip(ids, readings, strict=True)
    ]
    with transaction.atomic():
        readings_write(rows=rows)
        # Last, in id order (adjudication.revisions): the readings first, then each dataset's counter.
        for dataset_id in sorted({responses[row.response_id][1] for row in rows}):
            dataset_changed(dataset_id=dataset_id)
    return len(rows)


def _item(text: str, question: tuple[str, tuple[str, ...], str]) -> Item:
    gold, choices, question_text = question
    return Item(response=text, gold=gold, choices=choices, question=question_text)


def stored_item(*, text: str, gold: str, choices: Sequence[str], question: str) -> Item:
    """A stored response as the pipeline hands it to its readers."""
    return _item(text, (gold, tuple(choices), question))


def panel_read(requests: Sequence[tuple[str, Sequence[Item]]]) -> list[list[tuple[ReaderReading, float]]]:
    """Read items the way readings_create does (this process's isolation pool, its budgets),
    without storing anything: for each (reader name, items), (reading, elapsed_ms) per item."""
    return _isolated_pool().read_panel(requests)


class ReadingRow(NamedTuple):
    """A reading about to be stored: whose, by which spec, and what the reader said."""

    response_id: int
    reader_spec_id: int
    reading: ReaderReading
    elapsed_ms: float


_COPY_COLUMNS = (
    "response_id",
    "reader_spec_id",
    "answer",
    "normalized",
    "canonical",
    "verdict",
    "span_start",
    "span_end",
    "detail",
    "elapsed_ms",
    "created_at",
)
# The detail goes as text (already JSON): the server parses it into jsonb.
_COPY_TYPES = ("int8", "int8", "text", "text", "text", "text", "int4", "int4", "text", "float8", "timestamptz")


def _verbatim(value: str | None) -> str | None:
    return encode_verbatim(value) if isinstance(value, str) else value


def readings_write(*, rows: Sequence[ReadingRow]) -> None:
    """Store `rows`; a (response, reader spec) that already has a reading keeps it.

    On PostgreSQL the rows go in with one COPY (profiled: the ORM's bulk_create spent ~60 us a row
    building model instances and quoting arrays in Python, as much as a fast reader takes to read).
    COPY cannot skip conflicts, so it runs in a savepoint: when another worker stored some of these
    readings first (two deliveries of one batch at once), the savepoint is undone and the rows go
    through bulk_create(ignore_conflicts=True), which keeps the readings already there.
    """
    if not rows:
        return
    if connection.vendor == "postgresql":
        try:
            with transaction.atomic():
                _copy_rows(rows)
            return
        except IntegrityError as exc:
            if not isinstance(exc.__cause__, UniqueViolation):
                raise
    Reading.objects.bulk_create(
        [
            Reading(
                response_id=row.response_id,
                reader_spec_id=row.reader_spec_id,
                answer=row.reading.answer,
                normalized=row.reading.normalized,
                canonical=row.reading.canonical,
                verdict=row.reading.verdict,
                span_start=row.reading.span[0] if row.reading.span else None,
                span_end=row.reading.span[1] if row.reading.span else None,
                detail=json_safe(row.reading.detail),
                elapsed_ms=row.elapsed_ms,
            )
            for row in rows
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )


def _copy_rows(rows: Sequence[ReadingRow]) -> None:
    now = timezone.now()
    table = Reading._meta.db_table
    # wrap_database_errors: a failure surfaces as Django's exception, as from any other query.
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.copy(f"COPY {table} ({', '.join(_COPY_COLUMNS)}) FROM STDIN") as copy,
    ):
        # Declared once, psycopg picks each column's dumper once instead of per value.
        copy.set_types(_COPY_TYPES)
        for rid, spec_id, r, elapsed_ms in rows:
            span = r.span
            copy.write_row(
                (
                    rid,
                    spec_id,
                    _verbatim(r.answer),
                    _verbatim(r.normalized),
                    _verbatim(r.canonical),
                    r.verdict,
                    span[0] if span else None,
                    span[1] if span else None,
                    json_text(r.detail),
                    elapsed_ms,
                    now,
                )
            )
