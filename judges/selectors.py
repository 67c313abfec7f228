"""Reads for the LLM commands: how the tasks of a run are doing."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from .models import LLMBatch

_ACTIVE = (LLMBatch.Status.QUEUED, LLMBatch.Status.RUNNING)


@dataclass
class BatchProgress:
    total: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # of the failed batches, oldest first

    @property
    def failed(self) -> int:
        return self.by_status.get(LLMBatch.Status.FAILED, 0)

    @property
    def finished(self) -> bool:
        """Every task ran to its end, done or failed."""
        return self.total > 0 and not any(self.by_status.get(s, 0) for s in _ACTIVE)


def batch_progress(*, run_id: uuid.UUID) -> BatchProgress:
    progress = BatchProgress()
    for status, error in LLMBatch.objects.filter(run=run_id).order_by("id").values_list("status", "error"):
        progress.total += 1
        progress.by_status[status] = progress.by_status.get(status, 0) + 1
        if status == LLMBatch.Status.FAILED:
            progress.errors.append(error)
    return progress


def other_runs_active(*, run_id: uuid.UUID, dataset_id: int) -> bool:
    """Another run's tasks on the same dataset still queued or running: they may be writing the
    readings this run's tasks found already claimed."""
    return LLMBatch.objects.filter(dataset_id=dataset_id, status__in=_ACTIVE).exclude(run=run_id).exists()
