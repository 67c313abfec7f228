"""Reads: queries the views, commands and exports share."""

from __future__ import annotations

import hashlib
import heapq
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from adjudication.exports import Column
from adjudication.models import (
    Dataset,
    FinalLabel,
    QueueItem,
    ReaderSpec,
    Reading,
    Response,
    ReviewQueue,
    TaskBatch,
)
from adjudication.pipeline.subsets import ResponseSubset, SubsetError
from readers import registry as reader_registry
from readers.base import Item as ReaderItem
from readers.summary import Row as SummaryRow
from readers.summary import summarise
from readers.tasks import is_task_type, task_type_of


def dataset_get(*, name: str) -> Dataset:
    return Dataset.objects.get(name=name)


def dataset_progress(*, dataset: Dataset, reader_names: list[str] | None = None) -> dict:
    """Readings done per reader: every reader with readings in the dataset, or the named ones
    (in their registry version and config, whether or not any reading exists yet)."""
    from django.db.models import Count

    from readers import registry as reader_registry

    responses = dataset.responses.count()
    counts = dict(
        Reading.objects.filter(response__dataset=dataset)
        .values("reader_spec")
        .annotate(n=Count("id"))
        .values_list("reader_spec", "n")
    )
    # (spec id, name, version, config hash); a named reader with no spec yet has no id.
    identities: list[tuple[int | None, str, str, str]]
    if reader_names is None:
        identities = list(ReaderSpec.objects.filter(id__in=counts).values_list("id", "name", "version", "config_hash"))
    else:
        identities = []
        for name in reader_names:
            reader = reader_registry.get(name)
            spec_id = (
                ReaderSpec.objects.filter(name=reader.name, version=reader.version, config_hash=reader.config_hash)
                .values_list("id", flat=True)
                .first()
            )
            identities.append((spec_id, reader.name, reader.version, reader.config_hash))
    readers = [
        {
            "reader": name,
            "version": version,
            "config_hash": config_hash,
            "done": 0 if spec_id is None else counts.get(spec_id, 0),
            "total": responses,
        }
        for spec_id, name, version, config_hash in sorted(identities, key=lambda t: t[1])
    ]
    return {
        "dataset": dataset.name,
        "responses": responses,
        "readers": readers,
        "done": sum(r["done"] for r in readers),
        "total": responses * len(readers),
    }


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


# `canonical` (the platform's one form of the answer, readers.answer.canonical) sits beside `answer` (the raw
# text the reader extracted) and its span; `normalized` is the reader's own compared form.
EXPORT_COLUMNS = (
    Column("response_id"),
    Column("model"),
    Column("checkpoint"),
    Column("benchmark"),
    Column("prompt"),
    Column("reader"),
    Column("version"),
    Column("config_hash"),
    Column("canonical"),
    Column("answer"),
    Column("span_start", "int"),
    Column("span_end", "int"),
    Column("normalized"),
    Column("verdict"),
    Column("elapsed_ms", "float"),
)
EXPORT_FIELDS = tuple(c.name for c in EXPORT_COLUMNS)


def export_rows(*, dataset: Dataset) -> Iterator[dict]:
    for r in readings_for_export(dataset=dataset).iterator(chunk_size=2000):
        run = r.response.run
        yield {
            "response_id": r.response.external_id,
            "model": run.model,
            "checkpoint": run.checkpoint,
            "benchmark": run.benchmark,
            "prompt": run.prompt,
            "reader": r.reader_spec.name,
            "version": r.reader_spec.version,
            "config_hash": r.reader_spec.config_hash,
            "canonical": r.canonical,
            "answer": r.answer,
            "span_start": r.span_start,
            "span_end": r.span_end,
            "normalized": r.normalized,
            "verdict": r.verdict,
            "elapsed_ms": round(r.elapsed_ms, 3),
        }


_ACTIVE_BATCH = (TaskBatch.Status.QUEUED, TaskBatch.Status.RUNNING)


@dataclass
class BatchProgress:
    total: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # of the failed batches, oldest first

    @property
    def failed(self) -> int:
        return self.by_status.get(TaskBatch.Status.FAILED, 0)

    @property
    def finished(self) -> bool:
        """Every task ran to its end, done or failed."""
        return self.total > 0 and not any(self.by_status.get(s, 0) for s in _ACTIVE_BATCH)


def batch_progress(*, run_id: uuid.UUID) -> BatchProgress:
    progress = BatchProgress()
    for status, error in TaskBatch.objects.filter(run=run_id).order_by("id").values_list("status", "error"):
        progress.total += 1
        progress.by_status[status] = progress.by_status.get(status, 0) + 1
        if status == TaskBatch.Status.FAILED:
            progress.errors.append(error)
    return progress


@dataclass(frozen=True)
class UnfinishedBatch:
    id: int
    status: str
    claimed_by: str


def unfinished_batches(*, run_id: uuid.UUID) -> list[UnfinishedBatch]:
    """The run's batches still queued or running (a running one names the worker that took it)."""
    rows = TaskBatch.objects.filter(run=run_id, status__in=_ACTIVE_BATCH).order_by("id")
    return [UnfinishedBatch(*row) for row in rows.values_list("id", "status", "claimed_by")]


def other_runs_active(*, run_id: uuid.UUID, dataset_id: int, kind: str) -> bool:
    """Another run's tasks of the same kind on the same dataset still queued or running: they may
    be writing the readings this run's tasks found already claimed."""
    return (
        TaskBatch.objects.filter(dataset_id=dataset_id, kind=kind, status__in=_ACTIVE_BATCH)
        .exclude(run=run_id)
        .exists()
    )


def default_panel(*, task_types: Iterable[str] | None = None) -> list[str]:
    """The rule readers a dataset is read with when no reader is named: those in the default panel
    (readers.Reader.in_default_panel; the seed-convention variants run when named) that apply to
    one of `task_types` (readers.tasks; None: any). LLM readers need an endpoint and are opted
    into explicitly."""
    wanted = None if task_types is None else frozenset(task_types)
    return [
        name
        for name in reader_registry.names()
        if (reader := reader_registry.get(name)).kind == "rule"
        and reader.in_default_panel
        and (wanted is None or reader.applicable_task_types() & wanted)
    ]


def question_task_type(*, choices: Sequence[str], gold: str, meta: dict[str, Any] | None = None) -> str:
    """A stored question's task type: the one its import declared (meta "task_type"), else read
    off its options and gold (readers.tasks.task_type_of)."""
    declared = (meta or {}).get("task_type")
    item = ReaderItem(response="", gold=gold, choices=tuple(choices))
    return task_type_of(item, declared if isinstance(declared, str) and is_task_type(declared) else None)


def dataset_task_types(*, dataset_id: int) -> dict[str, int]:
    """How many of a dataset's questions are of each task type, most common first."""
    from collections import Counter

    from adjudication.models import Question

    counts: Counter[str] = Counter(
        question_task_type(choices=choices or [], gold=gold, meta=meta)
        for choices, gold, meta in Question.objects.filter(dataset_id=dataset_id).values_list("choices", "gold", "meta")
    )
    return dict(counts.most_common())


def dataset_default_panel(*, dataset_id: int) -> list[str]:
    """The default panel for one dataset: the readers that apply to its questions' task types."""
    return default_panel(task_types=dataset_task_types(dataset_id=dataset_id))


def missing_pairs(*, reader_specs: Sequence[ReaderSpec], response_ids: Sequence[int]) -> dict[int, list[int]]:
    """For each reader spec, the ids (of `response_ids`) that have no reading by it yet."""
    have: dict[int, set[int]] = {spec.id: set() for spec in reader_specs}
    for spec_id, response_id in Reading.objects.filter(
        reader_spec__in=list(reader_specs), response_id__in=list(response_ids)
    ).values_list("reader_spec_id", "response_id"):
        have[spec_id].add(response_id)
    return {spec.id: [rid for rid in response_ids if rid not in have[spec.id]] for spec in reader_specs}


@dataclass(frozen=True)
class DatasetCounts:
    """What a dataset holds at each stage: responses, readings, responses routed to review as
    disputed, responses in some review queue, responses with a final human label."""

    responses: int = 0
    readings: int | None = None  # None: not counted here (see dataset_counts)
    disputed: int = 0
    queued: int = 0
    labelled: int = 0


def dataset_counts(*, dataset_ids: Sequence[int], readings: dict[int, int] | None = None) -> dict[int, DatasetCounts]:
    """Counts per dataset in one grouped statement per stage, whatever the number of datasets.
    Readings are the one table of millions of rows: counting them joins every reading to its
    response, so the caller passes the counts it already has (a stored report's) where it can;
    only the datasets missing from `readings` are counted here."""
    from django.db.models import Count

    from adjudication.models import FinalLabel, QueueItem, Response, ReviewItem

    ids = list(dataset_ids)
    per: dict[str, dict[int, int]] = {
        "responses": dict(
            Response.objects.filter(dataset_id__in=ids)
            .values("dataset_id")
            .annotate(n=Count("id"))
            .values_list("dataset_id", "n")
        ),
        "disputed": dict(
            # As analytics.selectors.disputed_by_benchmark counts them for the headline: an item an
            # information policy routed by label value is no dispute.
            ReviewItem.objects.filter(policy__dataset_id__in=ids, is_control=False)
            .exclude(policy__priority="information")
            .exclude(stratum=ReviewItem.Stratum.UNREADABLE)  # drawn at random, not disputed
            .values("policy__dataset_id")
            .annotate(n=Count("response_id", distinct=True))
            .values_list("policy__dataset_id", "n")
        ),
        "queued": dict(
            QueueItem.objects.filter(queue__dataset_id__in=ids)
            .values("queue__dataset_id")
            .annotate(n=Count("review_item__response_id", distinct=True))
            .values_list("queue__dataset_id", "n")
        ),
        "labelled": dict(
            FinalLabel.objects.filter(item__queue__dataset_id__in=ids)
            .values("item__queue__dataset_id")
            .annotate(n=Count("item__review_item__response_id", distinct=True))
            .values_list("item__queue__dataset_id", "n")
        ),
    }
    known = dict(readings or {})
    unknown = [i for i in ids if i not in known]
    if unknown:
        known.update(
            Reading.objects.filter(response__dataset_id__in=unknown)
            .values("response__dataset_id")
            .annotate(n=Count("id"))
            .values_list("response__dataset_id", "n")
        )
    return {
        i: DatasetCounts(
            responses=per["responses"].get(i, 0),
            readings=known.get(i, 0),
            disputed=per["disputed"].get(i, 0),
            queued=per["queued"].get(i, 0),
            labelled=per["labelled"].get(i, 0),
        )
        for i in ids
    }


def dataset_queue_names(*, dataset: Dataset) -> list[str]:
    return list(ReviewQueue.objects.filter(dataset=dataset).order_by("name").values_list("name", flat=True))


def subset_response_ids(*, dataset: Dataset, subset: ResponseSubset) -> list[int]:
    """The ids of the dataset's responses in `subset`, in id order (the order runs batch them in).
    Refuses, naming what is wrong, a queue the dataset has not and listed ids it holds no response
    of (every unknown one counted, the first named with its line), so nothing is enqueued for a
    list with a typo in it."""
    responses = Response.objects.filter(dataset=dataset)
    if subset.kind == "queue":
        queue = ReviewQueue.objects.filter(dataset=dataset, name=subset.queue).first()
        if queue is None:
            names = sorted(ReviewQueue.objects.filter(dataset=dataset).values_list("name", flat=True))
            raise SubsetError(
                f"queue: no review queue named {subset.queue!r} in dataset {dataset.name!r}"
                + (f" (its queues: {', '.join(names)})" if names else " (it has no queue)"),
                field="queue",
            )
        responses = responses.filter(id__in=QueueItem.objects.filter(queue=queue).values("review_item__response_id"))
    elif subset.kind == "labelled":
        # FinalLabel.objects sees only standing labels; "unresolved" is an adjudicator declining
        # to decide, which gives a judge nothing to be compared with.
        responses = responses.filter(
            id__in=FinalLabel.objects.filter(item__queue__dataset=dataset)
            .exclude(provenance=FinalLabel.Provenance.UNRESOLVED)
            .values("item__review_item__response_id")
        )
    elif subset.kind == "sample":
        return _sample(dict(responses.values_list("id", "external_id")), size=subset.size, seed=subset.seed)
    elif subset.kind == "ids":
        return _listed(dataset, subset)
    return list(responses.order_by("id").values_list("id", flat=True))


def _sample(external_ids: dict[int, str], *, size: int, seed: int) -> list[int]:
    """The `size` responses whose sha256 of (seed, external id) is smallest: a uniform sample
    without replacement that depends on nothing but the seed and the ids (not on the database's
    row order or Python's random), and grows by adding responses as `size` grows."""

    def rank(response_id: int) -> bytes:
        return hashlib.sha256(f"{seed}\x00{external_ids[response_id]}".encode("utf-8", "surrogatepass")).digest()

    return sorted(heapq.nsmallest(size, external_ids, key=rank))


def _listed(dataset: Dataset, subset: ResponseSubset) -> list[int]:
    wanted = {line.external_id for line in subset.ids}
    found: dict[str, int] = {}
    for chunk in _chunks(sorted(wanted), 5000):
        found.update(Response.objects.filter(dataset=dataset, external_id__in=chunk).values_list("external_id", "id"))
    unknown = [line for line in subset.ids if line.external_id not in found]
    if unknown:
        first = unknown[0]
        more = len({line.external_id for line in unknown}) - 1
        raise SubsetError(
            f"{subset.source}, line {first.line}: no response {first.external_id!r} in dataset {dataset.name!r}"
            + (f" (and {more} more unknown id{'s' if more != 1 else ''})" if more else "")
            + "; nothing was enqueued",
            field="ids",
        )
    return sorted(found.values())


def _chunks(values: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
