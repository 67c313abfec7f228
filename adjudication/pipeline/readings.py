"""The rule readers' readings: reader specs, and reading responses in the isolation pool; the
readings are stored through the one readings store (pipeline.store)."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence

from django.conf import settings

from adjudication.fields import json_safe
from adjudication.models import Question, ReaderSpec, Response
from adjudication.pipeline.selectors import missing_pairs, question_task_type
from adjudication.pipeline.store import ReadingRow, readings_write
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
    (response, reader_spec) keeps one reading and the loser's rows are dropped (pipeline.store).
    Returns the number of readings computed here.
    """
    missing = missing_pairs(reader_specs=reader_specs, response_ids=response_ids)
    needed = sorted({rid for ids in missing.values() for rid in ids})
    if not needed:
        return 0
    responses = {
        rid: (qid, text)
        for rid, qid, text in Response.objects.filter(id__in=needed).values_list("id", "question_id", "text")
    }
    questions = {
        qid: (gold, tuple(choices), text, meta)
        for qid, gold, choices, text, meta in Question.objects.filter(
            id__in={qid for qid, _ in responses.values()}
        ).values_list("id", "gold", "choices", "text", "meta")
    }
    # One Item per response; a question's fields (its choices tuple too) are shared by its responses.
    items = {rid: _item(text, questions[qid]) for rid, (qid, text) in responses.items()}
    # Every reader's items in one pool run: the reader processes go from one reader's batches
    # straight on to the next one's (read_panel), instead of idling at the end of each reader.
    todo = [
        (spec, [rid for rid in missing[spec.id] if rid in responses])  # a response deleted meanwhile is skipped
        for spec in reader_specs
    ]
    todo = [(spec, ids) for spec, ids in todo if ids]
    results = _isolated_pool().read_panel([(spec.name, [items[rid] for rid in ids]) for spec, ids in todo])
    # The pool's worker made `canonical` (readers.answer.canonical) within each reading's budget: no item.
    rows = [
        ReadingRow(rid, spec.id, reading, elapsed_ms)
        for (spec, ids), readings in zip(todo, results, strict=True)
        for rid, (reading, elapsed_ms) in zip(ids, readings, strict=True)
    ]
    readings_write(rows=rows)
    return len(rows)


def _item(text: str, question: tuple[str, tuple[str, ...], str, dict | None]) -> Item:
    gold, choices, question_text, meta = question
    # The task type goes with the item: the pool answers not_applicable for a reader outside it.
    task_type = question_task_type(choices=choices, gold=gold, meta=meta)
    return Item(response=text, gold=gold, choices=choices, question=question_text, task_type=task_type)


def stored_item(*, text: str, gold: str, choices: Sequence[str], question: str, meta: dict | None = None) -> Item:
    """A stored response as the pipeline hands it to its readers (its question's `meta` may
    declare its task type)."""
    return _item(text, (gold, tuple(choices), question, meta))


def panel_read(requests: Sequence[tuple[str, Sequence[Item]]]) -> list[list[tuple[ReaderReading, float]]]:
    """Read items the way readings_create does (this process's isolation pool, its budgets),
    without storing anything: for each (reader name, items), (reading, elapsed_ms) per item."""
    return _isolated_pool().read_panel(requests)
