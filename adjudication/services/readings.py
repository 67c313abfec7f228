"""Writing readings: every (response, reader spec) gets exactly one, whoever computes it."""
from __future__ import annotations

import atexit
import threading
from typing import Sequence

from django.conf import settings
from django.db import transaction

from readers import Item
from readers import registry as reader_registry
from readers.base import Reader

from ..fields import json_safe
from ..models import ReaderSpec, Reading, Response

_pool_lock = threading.Lock()
_pool = None


def _isolated_pool():
    """One isolation pool per process (a Celery prefork child, or the CLI), created on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            from readers.isolation import IsolatedPool

            _pool = IsolatedPool(
                processes=settings.READER_PROCESSES,
                budget_s=settings.READER_BUDGET_SECONDS,
            )
            atexit.register(_pool.close)
        return _pool


def reader_spec_for(*, reader: Reader) -> ReaderSpec:
    spec, _ = ReaderSpec.objects.get_or_create(
        name=reader.name, version=reader.version, config_hash=reader.config_hash,
        defaults={"config": json_safe(reader.config_dict()), "kind": reader.kind},
    )
    return spec


def reader_spec_by_name(*, name: str) -> ReaderSpec:
    """The spec of the registry's current version and default config of a reader."""
    return reader_spec_for(reader=reader_registry.get(name))


def item_for(response: Response) -> Item:
    q = response.question
    return Item(response=response.text, gold=q.gold, choices=tuple(q.choices), question=q.text)


def responses_missing_reading(*, reader_spec: ReaderSpec, response_ids: Sequence[int]) -> list[Response]:
    return list(
        Response.objects.filter(id__in=list(response_ids))
        .exclude(readings__reader_spec=reader_spec)
        .select_related("question")
        .order_by("id")
    )


def readings_create(*, reader_spec: ReaderSpec, response_ids: Sequence[int]) -> int:
    """Read every response in `response_ids` that has no reading by `reader_spec` yet.

    Safe to run twice concurrently (a redelivered task, two workers): the unique constraint on
    (response, reader_spec) keeps one reading and `ignore_conflicts` drops the loser's row.
    Returns the number of responses read here.
    """
    responses = responses_missing_reading(reader_spec=reader_spec, response_ids=response_ids)
    if not responses:
        return 0
    results = _isolated_pool().read_many(reader_spec.name, [item_for(r) for r in responses])
    rows = []
    for response, (reading, elapsed_ms) in zip(responses, results, strict=True):
        span = reading.span
        rows.append(Reading(
            response=response, reader_spec=reader_spec, answer=reading.answer, normalized=reading.normalized,
            verdict=reading.verdict, span_start=span[0] if span else None, span_end=span[1] if span else None,
            detail=json_safe(reading.detail), elapsed_ms=elapsed_ms,
        ))
    with transaction.atomic():
        Reading.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
    return len(rows)
