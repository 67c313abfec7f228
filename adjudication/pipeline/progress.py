"""Waiting for workers: the commands that enqueue reader, judge and regeneration batches poll
here until every reading arrived, or until every task of the run has ended without them. A batch
the broker lost (Redis restarted without persistence) is noticed and sent again."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.core.management.base import CommandError
from tqdm import tqdm

from adjudication.models import TaskBatch
from adjudication.pipeline.batches import BatchFailed
from adjudication.pipeline.broker import batches_held
from adjudication.pipeline.selectors import BatchProgress, batch_progress, other_runs_active, unfinished_batches
from adjudication.pipeline.services import Enqueued

# How often a waiting command asks the broker which of its batches it still holds. A batch is lost
# when two looks this far apart find its message nowhere (one look could fall in the instant
# between a worker taking a message and recording it as taken).
LOST_LOOK_S = 5.0


class LostBatches:
    """Notices a run's batches that the broker no longer holds (pipeline.broker) and sends them
    again. Safe: a task re-checks what is still missing, and readings are written once, so a batch
    sent twice (its worker still had it in hand) costs a query, never a duplicate reading."""

    def __init__(self, *, run_id: uuid.UUID, resend: Mapping[int, Callable[[], None]], noun: str) -> None:
        self.run_id = run_id
        self.resend = resend
        self.noun = noun
        self.suspects: set[int] = set()
        self.next_look = 0.0

    def look(self) -> None:
        now = time.monotonic()
        if now < self.next_look:
            return
        self.next_look = now + LOST_LOOK_S
        unfinished = {b.id for b in unfinished_batches(run_id=self.run_id)}  # the database first: see below
        held = batches_held() if unfinished else set()
        if held is None:  # no Redis broker, or it does not answer now: nothing known lost
            return
        # A batch that ended between the two reads is simply not unfinished at the next look.
        missing = unfinished - held
        lost = sorted(missing & self.suspects)
        self.suspects = missing - set(lost)
        if not lost:
            return
        unsendable = [b for b in lost if b not in self.resend]
        if unsendable:
            raise CommandError(
                f"the broker lost {len(unsendable)} {self.noun}(s) of this run (TaskBatch {_ids(unsendable)}): "
                "Redis restarted without its append-only file, or its queue was purged. Re-run the command: "
                "it enqueues only what is still missing"
            )
        for batch_id in lost:
            self.resend[batch_id]()
        tqdm.write(
            f"warning: the broker no longer held {len(lost)} {self.noun}(s) of this run (TaskBatch {_ids(lost)}): "
            "Redis restarted without its append-only file, or its queue was purged? Sent again; readings "
            "already written are not redone",
            file=sys.stderr,
        )


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
    resend: Mapping[int, Callable[[], None]] | None = None,
) -> None:
    """Poll until `done()` reaches `total`. Stops with a CommandError when every task of the run
    ended and some failed (their TaskBatch rows say why), when every task ended without writing
    everything (and no other run is still at work on the dataset), or after `timeout` seconds
    (0 = never). With `resend` (batch id -> send it again), a batch the broker lost is sent again
    (LostBatches). Never waits forever on work nobody is doing."""
    started = time.monotonic()
    last = bar.n
    warned = 0
    lost = LostBatches(run_id=run_id, resend=resend, noun=noun) if resend is not None else None
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
        if lost is not None:
            lost.look()
        if timeout and time.monotonic() - started > timeout:
            raise CommandError(
                f"timed out after {timeout:.0f}s with {count}/{total} readings; {_still_out(run_id, noun)}"
            )
        time.sleep(0.5)


def _still_out(run_id: uuid.UUID, noun: str) -> str:
    """What became of the run's unfinished tasks, as far as the database and the broker tell."""
    unfinished = unfinished_batches(run_id=run_id)
    queued = [b.id for b in unfinished if b.status == TaskBatch.Status.QUEUED]
    running = [b for b in unfinished if b.status == TaskBatch.Status.RUNNING]
    held = batches_held()
    parts = []
    if queued:
        waiting = f"{len(queued)} {noun}(s) not started by any worker"
        if held is not None and not held.issuperset(queued):
            gone = sorted(set(queued) - held)
            waiting += f", of which {len(gone)} the broker no longer holds (TaskBatch {_ids(gone)}: lost)"
        parts.append(waiting + ("" if running else ": is a worker consuming their queue?"))
    if running:
        workers = ", ".join(sorted({b.claimed_by or "?" for b in running}))
        parts.append(f"{len(running)} still running (or their worker died) on {workers}")
    return (
        "; ".join(parts)
        + ". Those the broker holds go on without this command; re-run it to wait again (it enqueues only "
        "what is still missing, lost work included)"
    )


def _ids(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:10])
    return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


class TrackedRun(Protocol):
    """A run that enqueued batches and can count the readings it has so far (pipeline's ReadRun,
    judges' LLMRun)."""

    id: uuid.UUID
    dataset: Any
    kind: str
    enqueued: list[Enqueued]
    resend: dict[int, Callable[[], None]]

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
        resend=run.resend,
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
