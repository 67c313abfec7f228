from __future__ import annotations

import sys
import time
from collections import Counter

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from adjudication.models import Dataset, Reading
from adjudication.selectors import dataset_get
from judges.models import Judge, LLMAttempt
from judges.selectors import BatchProgress, batch_progress, other_runs_active
from judges.services.batches import LLMBatchFailed
from judges.services.runs import LLMRun, dataset_judge


def wait_for(run: LLMRun, bar: tqdm, timeout: float) -> None:
    """Poll the database until every enqueued reading arrived (workers do the work), or until every
    task of the run has ended without them: a failed task (its LLMBatch row says why) or a task
    that found nothing to do. Never waits forever on work nobody is doing."""
    started = time.monotonic()
    last = bar.n
    warned = 0
    while True:
        # Batch states first, readings second: a batch marked ended has committed its readings.
        progress = batch_progress(run_id=run.id)
        done = run.done()
        bar.update(done - last)
        last = done
        if done >= run.total:
            return
        if progress.failed > warned:
            warned = progress.failed
            tqdm.write(f"warning: {_failed_tasks(progress)}; waiting for the other tasks", file=sys.stderr)
        if progress.finished:
            if progress.failed:
                raise CommandError(f"{_failed_tasks(progress)}; {done}/{run.total} readings written. Re-run the "
                                   "command once the cause is fixed: only the missing readings are redone")
            # A task finds nothing to do when another run's task holds the same work: wait for that one.
            if not other_runs_active(run_id=run.id, dataset_id=run.dataset.pk):
                raise CommandError(f"every LLM task finished but {run.total - done} of {run.total} readings are "
                                   "missing (a judge or endpoint deleted meanwhile?); re-run the command to redo "
                                   "them")
        if timeout and time.monotonic() - started > timeout:
            raise CommandError(f"timed out after {timeout:.0f}s with {done}/{run.total} readings; workers keep going")
        time.sleep(0.5)


def _failed_tasks(progress: BatchProgress) -> str:
    n = progress.total
    return (f"{progress.failed} of {n} LLM task{'s' if n != 1 else ''} failed "
            f"(first error: {progress.errors[0] if progress.errors else 'unknown'})")


class Command(BaseCommand):
    help = ("Judge every response of a dataset with each named LLM judge: one reading per (response, judge); "
            "re-runs add only what is missing. --retry-errors also redoes readings whose calls failed.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--judge", action="extend", nargs="+", dest="judges", required=True,
                            help="judge name(s); repeatable (--judge a --judge b) or listed (--judge a b)")
        parser.add_argument("--retry-errors", action="store_true",
                            help="also redo readings whose calls all failed (verdict error/timeout); "
                                 "replies that were received, parsed or not, are never redone")
        parser.add_argument("--batch-size", type=int, default=None, help="responses per task (default 200)")
        parser.add_argument("--no-wait", action="store_true", help="enqueue and return without waiting for workers")
        parser.add_argument("--timeout", type=float, default=0,
                            help="give up waiting after this many seconds (0 = never)")

    def handle(self, *args, dataset: str, judges: list[str], retry_errors: bool, batch_size: int | None,
               no_wait: bool, timeout: float, **options) -> None:
        try:
            ds = dataset_get(name=dataset)
        except Dataset.DoesNotExist:
            raise CommandError(f"no dataset named {dataset!r}") from None
        found = {j.name: j for j in Judge.objects.filter(name__in=judges).select_related("endpoint")}
        unknown = [n for n in judges if n not in found]
        if unknown:
            raise CommandError(f"unknown judge(s): {', '.join(unknown)}. Add one with `manage.py add_judge`.")
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        selected = [found[n] for n in dict.fromkeys(judges)]
        eager = settings.CELERY_TASK_ALWAYS_EAGER
        started = time.time()
        bar = tqdm(total=ds.responses.count() * len(selected), unit="judgements", file=sys.stderr, desc="judge",
                   leave=False)
        try:
            run = dataset_judge(dataset=ds, judges=selected, retry_errors=retry_errors, batch_size=batch_size,
                                on_enqueued=bar.update if eager else None)
        except LLMBatchFailed as exc:  # eager mode: the task ran, and failed, right here
            raise CommandError(str(exc)) from None
        if eager:
            bar.update(max(0, run.total - bar.n))
        elif not no_wait:
            bar.update(run.total - sum(e.missing for e in run.enqueued) - bar.n)
            wait_for(run, bar, timeout)
        bar.close()
        for e in run.enqueued:
            spec = e.reader_spec
            readings = Reading.objects.filter(response__dataset=ds, reader_spec=spec)
            verdicts = Counter(readings.values_list("verdict", flat=True))
            unparsed = readings.filter(judgement__parse_status="unparsed").count()
            attempts = Counter(LLMAttempt.objects.filter(reader_spec=spec, response__dataset=ds,
                                                         started_at__gte=_aware(started))
                               .values_list("status", flat=True))
            self.stdout.write(
                f"{spec.name:<28} {e.missing:>7} judged now, {sum(verdicts.values()):>7} readings in all  "
                + " ".join(f"{k}={v}" for k, v in sorted(verdicts.items()))
                + (f"  (unparsed replies: {unparsed})" if unparsed else "")
                + ("  attempts this run: " + " ".join(f"{k}={v}" for k, v in sorted(attempts.items()))
                   if attempts else ""))


def _aware(ts: float):
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts - 1, tz=timezone.utc)
