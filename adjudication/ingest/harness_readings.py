"""Storing what a harness said (lighteval, inspect-ai) as readings, inside the import's transaction.

The rows of the log are imported first, by the same write path as every format; then the log is
streamed once more (memory stays bounded) and each record's harness readings are written for the
response of its id. A reading that exists is kept (one per response and reader spec, as the pipeline
writes them): re-importing a file adds nothing, and a response replaced with --replace has lost its
readings with its old text, so it gets the new file's.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from adjudication.ingest.harnesses import iter_records
from adjudication.ingest.records import HarnessReading
from adjudication.models import Dataset, ReaderSpec, Reading, Response
from adjudication.pipeline.readings import reader_spec_get_or_create
from adjudication.pipeline.store import ReadingRow, readings_write
from readers.base import Reading as ReaderReading
from readers.base import Verdict, config_hash

BATCH = 1000
KIND = "harness"


def harness_readings_store(
    *, dataset: Dataset, path: Path, fmt: str, model: str = "", checkpoint: str = "", task: str | None = None
) -> int:
    """Write the harness's readings of the log's rows (already imported into `dataset`); returns how
    many were new. Runs in the caller's transaction: a failure rolls back the import with it."""
    specs: dict[tuple[str, str, str], ReaderSpec] = {}
    created = 0
    batch: list[tuple[str, HarnessReading]] = []
    for row, readings in iter_records(path, fmt=fmt, model=model, checkpoint=checkpoint, task=task):
        batch.extend((row.id, reading) for reading in readings)
        if len(batch) >= BATCH:
            created += _flush(dataset, batch, specs)
            batch = []
    return created + _flush(dataset, batch, specs)


def _spec(reading: HarnessReading, specs: dict[tuple[str, str, str], ReaderSpec]) -> ReaderSpec:
    digest = config_hash(reading.config)
    key = (reading.reader, reading.version, digest)
    if key not in specs:
        specs[key] = reader_spec_get_or_create(
            name=reading.reader, version=reading.version, config=reading.config, config_hash=digest, kind=KIND
        )
    return specs[key]


def _flush(dataset: Dataset, batch: list[tuple[str, HarnessReading]], specs: dict) -> int:
    if not batch:
        return 0
    ids = dict(
        Response.objects.filter(dataset=dataset, external_id__in={rid for rid, _ in batch}).values_list(
            "external_id", "id"
        )
    )
    pairs = [(ids[external_id], _spec(reading, specs), reading) for external_id, reading in batch]
    have = set(
        Reading.objects.filter(
            response_id__in={rid for rid, _, _ in pairs}, reader_spec__in={spec.pk for _, spec, _ in pairs}
        ).values_list("response_id", "reader_spec_id")
    )
    rows = [
        ReadingRow(
            response_id,
            spec.pk,
            ReaderReading(
                cast(Verdict, reading.verdict),
                answer=reading.answer,
                normalized=reading.normalized,
                detail=reading.detail,
            ),
            item=reading.item,
        )
        for response_id, spec, reading in pairs
        if (response_id, spec.pk) not in have
    ]
    # Imports into one dataset take turns (the dataset row is locked), so nothing else writes these
    # pairs meanwhile; the store keeps the pipeline's rule of one reading per pair. The import raises
    # the data version once, last (services.responses_import).
    readings_write(rows=rows, record_change=False)
    return len(rows)
