"""Fan-out: enqueue reader work so that every response gets one reading from every selected reader."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from adjudication.models import Dataset, ReaderSpec, Response, TaskBatch
from adjudication.pipeline.batches import batch_task_id, batches_enqueue
from adjudication.pipeline.readings import reader_spec_for
from adjudication.pipeline.selectors import reading_counts
from adjudication.pipeline.tasks import read_batch
from readers import registry as reader_registry


@dataclass
class Enqueued:
    reader_spec: ReaderSpec
    missing: int
    batches: int


@dataclass
class ReadRun:
    """What one `dataset_read` enqueued; its tasks' TaskBatch rows carry `id`."""

    dataset: Dataset
    enqueued: list[Enqueued]
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    kind: str = TaskBatch.Kind.READ
    resend: dict[int, Callable[[], None]] = field(default_factory=dict)  # batch id -> send it again

    @property
    def total(self) -> int:
        return self.dataset.responses.count() * len(self.enqueued)

    def done(self) -> int:
        return sum(reading_counts(dataset=self.dataset, reader_spec=e.reader_spec) for e in self.enqueued)


def dataset_read(
    *,
    dataset: Dataset,
    reader_names: list[str],
    batch_size: int = 200,
    on_enqueued: Callable[[int], None] | None = None,
) -> ReadRun:
    """Enqueue `read_batch` tasks for every (response, reader) still missing a reading.

    A task carries a batch of response ids and every selected reader, so the responses are loaded
    once per batch. The task re-checks what is missing when it runs, so enqueuing twice (a re-run
    while the first run is still in flight, a redelivery) costs a query, never a duplicate reading.
    `on_enqueued(n_readings)` is called after each batch (in eager mode: after it was read).
    """
    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    specs = [reader_spec_for(reader=reader_registry.get(name)) for name in reader_names]
    response_ids = list(Response.objects.filter(dataset=dataset).order_by("id").values_list("id", flat=True))
    missing_by_spec: dict[int, set[int]] = {}
    for spec in specs:
        missing_by_spec[spec.id] = set(
            Response.objects.filter(dataset=dataset).exclude(readings__reader_spec=spec).values_list("id", flat=True)
        )
    run = ReadRun(dataset=dataset, enqueued=[])
    n_batches = batches_enqueue(
        run_id=run.id,
        kind=run.kind,
        dataset=dataset,
        todo=missing_by_spec,
        order=response_ids,
        batch_size=batch_size,
        on_enqueued=on_enqueued,
        send=lambda spec_ids, ids, batch_id: read_batch.apply_async(
            (spec_ids, ids, batch_id), task_id=batch_task_id(batch_id)
        ),
        taper=True,
        resend=run.resend,
    )
    run.enqueued = [Enqueued(reader_spec=s, missing=len(missing_by_spec[s.id]), batches=n_batches) for s in specs]
    return run
