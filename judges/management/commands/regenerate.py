"""`manage.py regenerate --dataset NAME --endpoint NAME`: Answer Regeneration (seed 002) over a
dataset. `run_readers --reader regeneration --endpoint NAME` calls this command."""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from adjudication.management.arguments import add_wait_arguments
from adjudication.models import Dataset, Reading
from adjudication.pipeline.batches import BatchFailed
from adjudication.pipeline.progress import wait_for_run
from adjudication.pipeline.selectors import dataset_get
from judges.models import Endpoint
from judges.services.regeneration import check_instruction
from judges.services.runs import dataset_regenerate


class Command(BaseCommand):
    help = (
        'Answer Regeneration: send each response\'s stored prompt and output plus "Answer:" to an LLM endpoint '
        "and read the short answer it gives (one reading per response; re-runs add only what is missing)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--endpoint", required=True, help="LLM endpoint name (see `manage.py add_endpoint`)")
        parser.add_argument(
            "--regen-instruction",
            default=None,
            help='text added before "Answer:" in regeneration requests (default: none, as seed 002 '
            "specifies); part of the reader's config hash, so a separate set of readings",
        )
        parser.add_argument("--batch-size", type=int, default=settings.READER_BATCH_SIZE)
        add_wait_arguments(parser)

    def handle(
        self,
        *args,
        dataset: str,
        endpoint: str,
        regen_instruction: str | None,
        batch_size: int,
        no_wait: bool,
        timeout: float,
        **options,
    ) -> None:
        try:
            ds = dataset_get(name=dataset)
        except Dataset.DoesNotExist:
            raise CommandError(f"no dataset named {dataset!r}") from None
        if not endpoint:
            raise CommandError(
                "the regeneration reader calls a model: give --endpoint NAME (see `manage.py add_endpoint`)"
            )
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            instruction = check_instruction(regen_instruction)
        except ValueError as exc:
            raise CommandError(f"--regen-instruction: {exc}") from None
        ep = Endpoint.objects.filter(name=endpoint).first()
        if ep is None:
            raise CommandError(f"no endpoint named {endpoint!r}; add it with `manage.py add_endpoint`")
        eager = settings.CELERY_TASK_ALWAYS_EAGER
        bar = tqdm(total=ds.responses.count(), unit="readings", file=sys.stderr, desc="regenerate", leave=False)
        try:
            run = dataset_regenerate(
                dataset=ds,
                endpoint=ep,
                batch_size=batch_size,
                on_enqueued=bar.update if eager else None,
                instruction=instruction,
            )
        except BatchFailed as exc:  # eager mode: the task ran, and failed, right here
            raise CommandError(str(exc)) from None
        if not eager and not no_wait:
            bar.update(run.total - sum(e.missing for e in run.enqueued))
            wait_for_run(run, bar=bar, timeout=timeout)
        bar.close()
        for e in run.enqueued:
            n = Reading.objects.filter(response__dataset=ds, reader_spec=e.reader_spec).count()
            self.stdout.write(
                f"{e.reader_spec.name:<28} {e.missing:>7} read now, {n:>7} readings in all ({ep.model} via {ep.name})"
            )
