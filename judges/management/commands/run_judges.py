from __future__ import annotations

import time
from collections import Counter
from datetime import UTC

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import add_enqueue_arguments, dataset_named
from adjudication.management.base import ApplicationCommand
from adjudication.models import Reading
from adjudication.pipeline.progress import run_with_progress
from judges.models import Judge, LLMAttempt
from judges.services.runs import dataset_judge


class Command(ApplicationCommand):
    help = (
        "Judge every response of a dataset with each named LLM judge: one reading per (response, judge); "
        "re-runs add only what is missing. --retry-errors also redoes readings whose calls failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument(
            "--judge",
            action="extend",
            nargs="+",
            dest="judges",
            required=True,
            help="judge name(s); repeatable (--judge a --judge b) or listed (--judge a b)",
        )
        parser.add_argument(
            "--retry-errors",
            action="store_true",
            help="also redo readings whose calls all failed (verdict error/timeout); "
            "replies that were received, parsed or not, are never redone",
        )
        add_enqueue_arguments(parser, batch_size_default=None, batch_size_help="responses per task (default 200)")

    def handle(
        self,
        *args,
        dataset: str,
        judges: list[str],
        retry_errors: bool,
        batch_size: int | None,
        no_wait: bool,
        timeout: float,
        **options,
    ) -> None:
        ds = dataset_named(dataset)
        found = {j.name: j for j in Judge.objects.filter(name__in=judges).select_related("endpoint")}
        unknown = [n for n in judges if n not in found]
        if unknown:
            raise CommandError(f"unknown judge(s): {', '.join(unknown)}. Add one with `manage.py add_judge`.")
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        selected = [found[n] for n in dict.fromkeys(judges)]
        started = time.time()
        run = run_with_progress(
            lambda on_enqueued: dataset_judge(
                dataset=ds, judges=selected, retry_errors=retry_errors, batch_size=batch_size, on_enqueued=on_enqueued
            ),
            total=ds.responses.count() * len(selected),
            unit="judgements",
            desc="judge",
            no_wait=no_wait,
            timeout=timeout,
        )
        for e in run.enqueued:
            spec = e.reader_spec
            readings = Reading.objects.filter(response__dataset=ds, reader_spec=spec)
            verdicts = Counter(readings.values_list("verdict", flat=True))
            unparsed = readings.filter(judgement__parse_status="unparsed").count()
            attempts = Counter(
                LLMAttempt.objects.filter(
                    reader_spec=spec, response__dataset=ds, started_at__gte=_aware(started)
                ).values_list("status", flat=True)
            )
            self.stdout.write(
                f"{spec.name:<28} {e.missing:>7} judged now, {sum(verdicts.values()):>7} readings in all  "
                + " ".join(f"{k}={v}" for k, v in sorted(verdicts.items()))
                + (f"  (unparsed replies: {unparsed})" if unparsed else "")
                + (
                    "  attempts this run: " + " ".join(f"{k}={v}" for k, v in sorted(attempts.items()))
                    if attempts
                    else ""
                )
            )


def _aware(ts: float):
    from datetime import datetime

    return datetime.fromtimestamp(ts - 1, tz=UTC)
