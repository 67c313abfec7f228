"""`manage.py regenerate --dataset NAME --endpoint NAME`: Answer Regeneration (seed 002) over a
dataset. `run_readers --reader regeneration --endpoint NAME` calls this command."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from adjudication.management.arguments import add_enqueue_arguments, add_regen_instruction_argument, dataset_named
from adjudication.pipeline.progress import run_with_progress
from adjudication.pipeline.selectors import reading_counts
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
        add_regen_instruction_argument(parser)
        add_enqueue_arguments(parser, batch_size_default=settings.READER_BATCH_SIZE)

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
        ds = dataset_named(dataset)
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
        run = run_with_progress(
            lambda on_enqueued: dataset_regenerate(
                dataset=ds, endpoint=ep, batch_size=batch_size, on_enqueued=on_enqueued, instruction=instruction
            ),
            total=ds.responses.count(),
            unit="readings",
            desc="regenerate",
            no_wait=no_wait,
            timeout=timeout,
        )
        for e in run.enqueued:
            n = reading_counts(dataset=ds, reader_spec=e.reader_spec)
            self.stdout.write(
                f"{e.reader_spec.name:<28} {e.missing:>7} read now, {n:>7} readings in all ({ep.model} via {ep.name})"
            )
