"""Fan-out: enqueue reader work so that every response gets one reading from every selected reader."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from django.db import transaction

from readers import registry as reader_registry

from ..models import Dataset, ReaderSpec, Response
from .readings import reader_spec_for


@dataclass
class Enqueued:
    reader_spec: ReaderSpec
    missing: int
    batches: int


def default_panel() -> list[str]:
    """Every registered rule reader (LLM readers need an endpoint and are opted into explicitly)."""
    names = []
    for name in reader_registry.names():
        if name.startswith("test-"):
            continue
        if reader_registry.get(name).kind == "rule":
            names.append(name)
    return names


def dataset_read(*, dataset: Dataset, reader_names: list[str], batch_size: int = 200,
                 on_enqueued: Callable[[str, int], None] | None = None) -> list[Enqueued]:
    """Enqueue `read_batch` tasks for every (response, reader) still missing a reading.

    The task re-checks what is missing when it runs, so enqueuing twice (a re-run while the first
    run is still in flight) costs a query, never a duplicate reading.
    """
    from ..tasks import read_batch

    if batch_size < 1:
        raise ValueError("batch size must be at least 1")
    out: list[Enqueued] = []
    for name in reader_names:
        spec = reader_spec_for(reader=reader_registry.get(name))
        missing_ids = list(
            Response.objects.filter(dataset=dataset).exclude(readings__reader_spec=spec)
            .order_by("id").values_list("id", flat=True)
        )
        chunks = [missing_ids[i:i + batch_size] for i in range(0, len(missing_ids), batch_size)]
        for chunk in chunks:
            # on_commit: a worker must never receive ids of rows it cannot see yet.
            transaction.on_commit(lambda spec_id=spec.id, ids=chunk: read_batch.delay(spec_id, ids))
            if on_enqueued:
                on_enqueued(name, len(chunk))
        out.append(Enqueued(reader_spec=spec, missing=len(missing_ids), batches=len(chunks)))
    return out
