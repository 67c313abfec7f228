"""Writing readings: every (response, reader spec) gets exactly one, whoever computes it."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction

from adjudication.fields import json_safe
from adjudication.models import ReaderSpec, Reading, Response
from adjudication.pipeline.selectors import missing_pairs
from adjudication.revisions import dataset_changed
from readers import Item
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


def item_for(response: Response) -> Item:
    q = response.question
    return Item(response=response.text, gold=q.gold, choices=tuple(q.choices), question=q.text)


def readings_create(*, reader_specs: Sequence[ReaderSpec], response_ids: Sequence[int]) -> int:
    """Read every response in `response_ids` that has no reading by each of `reader_specs` yet.

    Safe to run twice concurrently (a redelivered task, two workers): the unique constraint on
    (response, reader_spec) keeps one reading and `ignore_conflicts` drops the loser's row.
    Returns the number of readings computed here.
    """
    missing = missing_pairs(reader_specs=reader_specs, response_ids=response_ids)
    needed = sorted({rid for ids in missing.values() for rid in ids})
    if not needed:
        return 0
    responses = {r.id: r for r in Response.objects.filter(id__in=needed).select_related("question")}
    items = {rid: item_for(r) for rid, r in responses.items()}
    pool = _isolated_pool()
    rows = []
    for spec in reader_specs:
        ids = [rid for rid in missing[spec.id] if rid in responses]  # a response deleted meanwhile is skipped
        if not ids:
            continue
        results = pool.read_many(spec.name, [items[rid] for rid in ids])
        for rid, (reading, elapsed_ms) in zip(ids, results, strict=True):
            span = reading.span
            # The pool's worker made `canonical` (readers.canonical) within the reading's budget.
            rows.append(
                Reading(
                    response_id=rid,
                    reader_spec=spec,
                    answer=reading.answer,
                    normalized=reading.normalized,
                    canonical=reading.canonical,
                    verdict=reading.verdict,
                    span_start=span[0] if span else None,
                    span_end=span[1] if span else None,
                    detail=json_safe(reading.detail),
                    elapsed_ms=elapsed_ms,
                )
            )
    with transaction.atomic():
        Reading.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
        # Last, in id order (adjudication.revisions): the readings first, then each dataset's counter.
        for dataset_id in sorted({responses[r.response_id].dataset_id for r in rows}):
            dataset_changed(dataset_id=dataset_id)
    return len(rows)
