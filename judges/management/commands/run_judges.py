from __future__ import annotations

import time
from collections import Counter
from datetime import UTC
from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import add_enqueue_arguments, dataset_named
from adjudication.management.base import ApplicationCommand
from adjudication.pipeline.progress import run_with_progress
from adjudication.pipeline.selectors import subset_response_ids
from adjudication.pipeline.subsets import ResponseSubset
from judges.models import Judge, LLMAttempt
from judges.services.runs import dataset_judge


class Command(ApplicationCommand):
    help = (
        "Judge every response of a dataset, or a subset of it (--queue, --labelled, --sample N [--seed S], "
        "--ids FILE), with each named LLM judge: one reading per (response, judge); re-runs add only what is "
        "missing. --retry-errors also redoes readings whose calls failed."
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
        subset = parser.add_mutually_exclusive_group()
        subset.add_argument("--queue", metavar="Q", help="only the responses with an item in review queue Q")
        subset.add_argument(
            "--labelled",
            action="store_true",
            help="only the responses with a final human label (unanimous or adjudicated; not unresolved)",
        )
        subset.add_argument(
            "--sample",
            type=int,
            metavar="N",
            help="only a uniform random sample of N responses, the same for the same --seed on every machine",
        )
        subset.add_argument(
            "--ids",
            type=Path,
            metavar="FILE",
            help="only the responses whose external ids FILE lists, one a line (blank lines and # lines ignored)",
        )
        parser.add_argument("--seed", type=int, default=None, help="the --sample's seed (default 0)")
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
        queue: str | None,
        labelled: bool,
        sample: int | None,
        ids: Path | None,
        seed: int | None,
        **options,
    ) -> None:
        ds = dataset_named(dataset)
        subset = _subset(queue=queue, labelled=labelled, sample=sample, ids=ids, seed=seed)
        found = {j.name: j for j in Judge.objects.filter(name__in=judges).select_related("endpoint")}
        unknown = [n for n in judges if n not in found]
        if unknown:
            raise CommandError(f"unknown judge(s): {', '.join(unknown)}. Add one with `manage.py add_judge`.")
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        selected = [found[n] for n in dict.fromkeys(judges)]
        started = time.time()
        # The subset is resolved (and an unknown queue or id refused) before anything is enqueued.
        response_ids = None if subset.is_whole else subset_response_ids(dataset=ds, subset=subset)
        n_responses = ds.responses.count() if response_ids is None else len(response_ids)
        run = run_with_progress(
            lambda on_enqueued: dataset_judge(
                dataset=ds,
                judges=selected,
                retry_errors=retry_errors,
                batch_size=batch_size,
                on_enqueued=on_enqueued,
                subset=subset,
            ),
            total=n_responses * len(selected),
            unit="judgements",
            desc="judge",
            no_wait=no_wait,
            timeout=timeout,
        )
        where = "in all" if subset.is_whole else "in the subset"
        for e, plan in zip(run.enqueued, run.plans(), strict=True):
            spec = e.reader_spec
            readings = run.readings(spec)
            verdicts = Counter(readings.values_list("verdict", flat=True))
            unparsed = readings.filter(judgement__parse_status="unparsed").count()
            attempts = Counter(
                LLMAttempt.objects.filter(
                    reader_spec=spec, response__dataset=ds, started_at__gte=_aware(started)
                ).values_list("status", flat=True)
            )
            self.stdout.write(
                f"{spec.name:<28} {plan.to_judge:>7} enqueued, {plan.judged} already judged, "
                f"of {plan.responses} responses; {sum(verdicts.values())} readings {where}  "
                + " ".join(f"{k}={v}" for k, v in sorted(verdicts.items()))
                + (f"  (unparsed replies: {unparsed})" if unparsed else "")
                + (
                    "  attempts this run: " + " ".join(f"{k}={v}" for k, v in sorted(attempts.items()))
                    if attempts
                    else ""
                )
            )
        if not subset.is_whole:
            self.stdout.write(f"subset: {subset.describe()}: {run.responses} responses")


def _subset(
    *, queue: str | None, labelled: bool, sample: int | None, ids: Path | None, seed: int | None
) -> ResponseSubset:
    """The subset the options name (argparse lets at most one of them through); the whole dataset
    when none does."""
    if seed is not None and sample is None:
        raise CommandError("--seed draws a --sample: give --sample N with it")
    if queue is not None:
        return ResponseSubset.of_queue(queue)
    if labelled:
        return ResponseSubset.labelled()
    if sample is not None:
        return ResponseSubset.sample(sample, seed=0 if seed is None else seed)
    if ids is not None:
        try:
            text = ids.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise CommandError(f"--ids: cannot read {ids}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"--ids: {ids} is not UTF-8 text (byte {exc.start})") from None
        return ResponseSubset.listed(text, source=str(ids))
    return ResponseSubset.whole()


def _aware(ts: float):
    from datetime import datetime

    return datetime.fromtimestamp(ts - 1, tz=UTC)
