"""Waiting for workers: the commands that enqueue reader, judge and regeneration batches poll
here until every reading arrived, or until every task of the run has ended without them."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from django.core.management.base import CommandError
from tqdm import tqdm

from adjudication.pipeline.selectors import BatchProgress, batch_progress, other_runs_active


def wait_for_readings(
    *,
    run_id: uuid.UUID,
    dataset_id: int,
    kind: str,
    done: Callable[[], int],
    total: int,
    bar: tqdm,
    timeout: float,
    noun: str = "task",
) -> None:
    """Poll until `done()` reaches `total`. Stops with a CommandError when every task of the run
    ended and some failed (their TaskBatch rows say why), when every task ended without writing
    everything (and no other run is still at work on the dataset), or after `timeout` seconds
    (0 = never). Never waits forever on work nobody is doing."""
    started = time.monotonic()
    last = bar.n
    warned = 0
    while True:
        # Batch states first, readings second: a batch marked ended has committed its readings.
        progress = batch_progress(run_id=run_id)
        count = done()
        bar.update(count - last)
        last = count
        if count >= total:
            return
        if progress.failed > warned:
            warned = progress.failed
            tqdm.write(f"warning: {_failed_tasks(progress, noun)}; waiting for the other tasks", file=sys.stderr)
        if progress.finished:
            if progress.failed:
                raise CommandError(
                    f"{_failed_tasks(progress, noun)}; {count}/{total} readings written. Re-run the "
                    "command once the cause is fixed: only the missing readings are redone"
                )
            # A task finds nothing to do when another run's task holds the same work: wait for that one.
            if not other_runs_active(run_id=run_id, dataset_id=dataset_id, kind=kind):
                raise CommandError(
                    f"every {noun} finished but {total - count} of {total} readings are missing "
                    "(a reader, judge or endpoint deleted meanwhile?); re-run the command to redo them"
                )
        if timeout and time.monotonic() - started > timeout:
            raise CommandError(f"timed out after {timeout:.0f}s with {count}/{total} readings; workers keep going")
        time.sleep(0.5)


class TrackedRun(Protocol):
    """A run that enqueued batches and can count the readings it has so far (judges' LLMRun)."""

    id: uuid.UUID
    dataset: Any
    kind: str

    @property
    def total(self) -> int: ...

    def done(self) -> int: ...


def wait_for_run(run: TrackedRun, *, bar: tqdm, timeout: float, noun: str = "LLM task") -> None:
    wait_for_readings(
        run_id=run.id,
        dataset_id=run.dataset.pk,
        kind=run.kind,
        done=run.done,
        total=run.total,
        bar=bar,
        timeout=timeout,
        noun=noun,
    )


def _failed_tasks(progress: BatchProgress, noun: str) -> str:
    n = progress.total
    return (
        f"{progress.failed} of {n} {noun}{'s' if n != 1 else ''} failed "
        f"(first error: {progress.errors[0] if progress.errors else 'unknown'})"
    )
