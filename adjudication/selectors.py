"""Reads: queries the views, commands and exports share."""
from __future__ import annotations

from typing import Iterator

from django.db.models import QuerySet

from readers.summary import Row as SummaryRow
from readers.summary import summarise

from .models import Dataset, ReaderSpec, Reading, Response


def dataset_get(*, name: str) -> Dataset:
    return Dataset.objects.get(name=name)


def dataset_response_ids(*, dataset: Dataset) -> list[int]:
    return list(Response.objects.filter(dataset=dataset).order_by("id").values_list("id", flat=True))


def reading_counts(*, dataset: Dataset, reader_spec: ReaderSpec) -> int:
    return Reading.objects.filter(response__dataset=dataset, reader_spec=reader_spec).count()


SUMMARY_GROUPS = {
    "checkpoint": ("response__run__checkpoint",),
    "model": ("response__run__model",),
    "benchmark": ("response__run__benchmark",),
    "benchmark/checkpoint": ("response__run__benchmark", "response__run__checkpoint"),
    "model/checkpoint": ("response__run__model", "response__run__checkpoint"),
}


def reader_summary(*, dataset: Dataset, by: str = "benchmark/checkpoint") -> list[SummaryRow]:
    """Coverage, extraction rate and accuracy per reader and per run attribute(s) (`by`)."""
    fields = SUMMARY_GROUPS[by]
    records = Reading.objects.filter(response__dataset=dataset).values_list("reader_spec__name", "verdict", *fields)
    return summarise((name, "/".join(group), verdict) for name, verdict, *group in records.iterator(chunk_size=5000))


def readings_for_export(*, dataset: Dataset) -> QuerySet:
    return (
        Reading.objects.filter(response__dataset=dataset)
        .select_related("reader_spec", "response__run")
        .defer("response__text", "response__meta", "detail")
        .order_by("response_id", "reader_spec__name")
    )


EXPORT_FIELDS = ("response_id", "model", "checkpoint", "benchmark", "prompt", "reader", "version", "config_hash",
                 "answer", "normalized", "verdict", "span_start", "span_end", "elapsed_ms")


def export_rows(*, dataset: Dataset) -> Iterator[dict]:
    for r in readings_for_export(dataset=dataset).iterator(chunk_size=2000):
        run = r.response.run
        yield {
            "response_id": r.response.external_id, "model": run.model, "checkpoint": run.checkpoint,
            "benchmark": run.benchmark, "prompt": run.prompt, "reader": r.reader_spec.name,
            "version": r.reader_spec.version, "config_hash": r.reader_spec.config_hash, "answer": r.answer,
            "normalized": r.normalized, "verdict": r.verdict, "span_start": r.span_start, "span_end": r.span_end,
            "elapsed_ms": round(r.elapsed_ms, 3),
        }
