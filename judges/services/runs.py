"""Fan-out of LLM reader work over a dataset: enqueue `llm`-queue tasks for what is missing.

A task carries one batch of response ids (and every selected judge) and the id of the batch's
TaskBatch row, which it marks running, done or failed; it re-checks what is missing when it runs.
Batches are sized so that one task keeps an endpoint's concurrency busy for a while yet finishes
well inside the broker's visibility timeout.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import QuerySet

from adjudication.models import Dataset, ReaderSpec, Reading, Response, TaskBatch
from adjudication.pipeline.batches import batch_task_id, batches_enqueue
from adjudication.pipeline.producers import JudgePlan
from adjudication.pipeline.selectors import subset_response_ids
from adjudication.pipeline.services import Enqueued
from adjudication.pipeline.subsets import ResponseSubset
from judges.models import Endpoint, Judge
from judges.services.judging import judge_spec_for
from judges.services.records import RETRYABLE_VERDICTS
from judges.services.regeneration import regeneration_spec_for

DEFAULT_BATCH = 200


@dataclass
class LLMRun:
    """What a run enqueued, and how to tell when the workers are done with it."""

    dataset: Dataset
    enqueued: list[Enqueued]
    tag: str = ""
    retrying: dict[int, list[int]] = field(default_factory=dict)  # spec id -> failed reading ids redone
    id: uuid.UUID = field(default_factory=uuid.uuid4)  # its tasks' TaskBatch rows carry it
    kind: str = TaskBatch.Kind.JUDGE
    resend: dict[int, Callable[[], None]] = field(default_factory=dict)  # batch id -> send it again
    subset: ResponseSubset = field(default_factory=ResponseSubset.whole)
    response_ids: list[int] | None = None  # the subset's responses; None: the whole dataset
    judged: dict[int, int] = field(default_factory=dict)  # spec id -> responses of the subset judged before, not redone

    @property
    def responses(self) -> int:
        """How many responses the run covers (the subset's, or the dataset's)."""
        return self.dataset.responses.count() if self.response_ids is None else len(self.response_ids)

    @property
    def total(self) -> int:
        return self.responses * len(self.enqueued)

    def readings(self, spec: ReaderSpec) -> QuerySet[Reading]:
        """The spec's readings of the responses the run covers."""
        readings = Reading.objects.filter(reader_spec=spec)
        if self.response_ids is None:
            return readings.filter(response__dataset=self.dataset)
        return readings.filter(response_id__in=self.response_ids)

    def plans(self) -> list[JudgePlan]:
        """Per reader spec: the responses the run covers, those judged before it (and not redone)
        and those it enqueued."""
        return [
            JudgePlan(
                judge=e.reader_spec.name,
                responses=self.responses,
                judged=self.judged.get(e.reader_spec.id, 0),
                to_judge=e.missing,
            )
            for e in self.enqueued
        ]

    def done(self) -> int:
        """Readings that exist and are not still waiting for their retry."""
        n = 0
        for e in self.enqueued:
            n += self.readings(e.reader_spec).count()
            waiting = self.retrying.get(e.reader_spec.id)
            if waiting:
                still = Reading.objects.filter(id__in=waiting, verdict__in=RETRYABLE_VERDICTS).values_list(
                    "detail", flat=True
                )
                n -= sum(1 for d in still if isinstance(d, dict) and "failed" in d and d.get("retry_tag") != self.tag)
        return n


def batch_size_default() -> int:
    return int(getattr(settings, "LLM_BATCH_SIZE", DEFAULT_BATCH))


def _failed(run: LLMRun, spec: ReaderSpec) -> dict[int, int]:
    """Response id -> reading id of the failed readings `--retry-errors` redoes."""
    failed = run.readings(spec).filter(verdict__in=RETRYABLE_VERDICTS, detail__has_key="failed")
    return dict(failed.values_list("response_id", "id"))


def _missing(run: LLMRun, spec: ReaderSpec) -> set[int]:
    responses = Response.objects.filter(dataset=run.dataset)
    if run.response_ids is not None:
        responses = responses.filter(id__in=run.response_ids)
    return set(responses.exclude(readings__reader_spec=spec).values_list("id", flat=True))


def _start(*, dataset: Dataset, kind: str, batch_size: int | None, retry_errors: bool) -> tuple[LLMRun, int]:
    """A new run (tagged when it redoes failed readings) and its batch size (the setting's by default)."""
    batch_size = batch_size or batch_size_default()
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    return LLMRun(dataset=dataset, enqueued=[], tag=uuid.uuid4().hex if retry_errors else "", kind=kind), batch_size


def _todo(run: LLMRun, spec: ReaderSpec, *, retry_errors: bool) -> set[int]:
    """The responses `spec` has no reading of; with retry_errors, also those whose calls failed,
    which the run records so that it waits for their redo."""
    todo = _missing(run, spec)
    if retry_errors:
        failed = _failed(run, spec)
        todo |= set(failed)
        run.retrying[spec.id] = list(failed.values())
    run.judged[spec.id] = run.responses - len(todo)
    return todo


def dataset_judge(
    *,
    dataset: Dataset,
    judges: Sequence[Judge],
    retry_errors: bool = False,
    batch_size: int | None = None,
    on_enqueued: Callable[[int], None] | None = None,
    subset: ResponseSubset | None = None,
) -> LLMRun:
    """Enqueue `judge_batch` tasks so every response of the dataset (or of `subset`) gets one
    reading by every judge. The subset is resolved, and refused (a SubsetError) if it names what
    the dataset has not, before anything is enqueued."""
    from judges.tasks import judge_batch

    subset = subset or ResponseSubset.whole()
    response_ids = None if subset.is_whole else subset_response_ids(dataset=dataset, subset=subset)
    run, batch_size = _start(
        dataset=dataset, kind=TaskBatch.Kind.JUDGE, batch_size=batch_size, retry_errors=retry_errors
    )
    run.subset, run.response_ids = subset, response_ids
    specs = [(judge, judge_spec_for(judge)) for judge in judges]
    todo = {judge.pk: _todo(run, spec, retry_errors=retry_errors) for judge, spec in specs}
    order = sorted(set().union(*todo.values()))
    n_batches = batches_enqueue(
        run_id=run.id,
        kind=run.kind,
        dataset=dataset,
        todo=todo,
        order=order,
        batch_size=batch_size,
        on_enqueued=on_enqueued,
        send=lambda judge_ids, ids, batch_id: judge_batch.apply_async(
            (judge_ids, ids, retry_errors, run.tag, batch_id), task_id=batch_task_id(batch_id)
        ),
        resend=run.resend,
    )
    run.enqueued = [Enqueued(reader_spec=spec, missing=len(todo[judge.pk]), batches=n_batches) for judge, spec in specs]
    return run


def dataset_regenerate(
    *,
    dataset: Dataset,
    endpoint: Endpoint,
    retry_errors: bool = False,
    batch_size: int | None = None,
    on_enqueued: Callable[[int], None] | None = None,
    instruction: str | None = None,
) -> LLMRun:
    """Enqueue `regenerate_batch` tasks so every response gets one `regeneration` reading by this
    endpoint's model (and `instruction`, when one is added before "Answer:")."""
    from judges.tasks import regenerate_batch

    run, batch_size = _start(
        dataset=dataset, kind=TaskBatch.Kind.REGENERATE, batch_size=batch_size, retry_errors=retry_errors
    )
    spec = regeneration_spec_for(endpoint, instruction)
    todo = _todo(run, spec, retry_errors=retry_errors)
    n_batches = batches_enqueue(
        run_id=run.id,
        kind=run.kind,
        dataset=dataset,
        todo={spec.id: todo},
        order=sorted(todo),
        batch_size=batch_size,
        on_enqueued=on_enqueued,
        send=lambda _specs, ids, batch_id: regenerate_batch.apply_async(
            (endpoint.pk, ids, retry_errors, run.tag, batch_id, instruction), task_id=batch_task_id(batch_id)
        ),
        resend=run.resend,
    )
    run.enqueued = [Enqueued(reader_spec=spec, missing=len(todo), batches=n_batches)]
    return run
