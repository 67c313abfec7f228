"""Waiting for workers: the commands that enqueue reader, judge and regeneration batches poll
here until every reading arrived, or until every task of the run has ended without them."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.core.management.base import CommandError
from tqdm import tqdm

from adjudication.pipeline.batches import BatchFailed
from adjudication.pipeline.selectors import BatchProgress, batch_progress, other_runs_active
from adjudication.pipeline.services import Enqueued


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
    """A run that enqueued batches and can count the readings it has so far (pipeline's ReadRun,
    judges' LLMRun)."""

    id: uuid.UUID
    dataset: Any
    kind: str
    enqueued: list[Enqueued]

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


Run = TypeVar("Run", bound=TrackedRun)


def run_with_progress(
    start: Callable[[Callable[[int], None] | None], Run],
    *,
    total: int,
    unit: str,
    desc: str,
    no_wait: bool,
    timeout: float,
    noun: str = "LLM task",
) -> Run:
    """Start a run (`start(on_enqueued)`) under a progress bar on stderr and, with real workers,
    wait for its readings unless `no_wait`. In eager mode the tasks run inside `start`, which moves
    the bar as each batch is read, and a failed one ends the command with its error."""
    eager = settings.CELERY_TASK_ALWAYS_EAGER
    bar = tqdm(total=total, unit=unit, file=sys.stderr, desc=desc, leave=False)
    try:
        run = start(bar.update if eager else None)
    except BatchFailed as exc:  # eager mode: the task ran, and failed, right here
        raise CommandError(str(exc)) from None
    if not eager and not no_wait:
        bar.update(run.total - sum(e.missing for e in run.enqueued) - bar.n)  # what was read before this run
        wait_for_run(run, bar=bar, timeout=timeout, noun=noun)
    bar.close()
    return run


def _failed_tasks(progress: BatchProgress, noun: str) -> str:
    n = progress.total
    return (
        f"{progress.failed} of {n} {noun}{'s' if n != 1 else ''} failed "
        f"(first error: {progress.errors[0] if progress.errors else 'unknown'})"
    )
