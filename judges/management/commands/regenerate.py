"""`manage.py regenerate --dataset NAME --endpoint NAME`: Answer Regeneration (seed 002) over a
dataset. `run_readers --reader regeneration --endpoint NAME` runs the same (judges.management.regeneration)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandParser

from adjudication.management.arguments import add_enqueue_arguments, add_regen_instruction_argument
from adjudication.management.base import ApplicationCommand
from adjudication.pipeline.producers import EndpointRun
from judges.management.regeneration import regeneration_run


class Command(ApplicationCommand):
    help = (
        'Answer Regeneration: send each response\'s stored prompt and output plus "Answer:" to an LLM endpoint '
        "and read the short answer it gives (one reading per response; re-runs add only what is missing)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--endpoint", required=True, help="LLM endpoint name (see `manage.py add_endpoint`)")
        add_regen_instruction_argument(parser)
        add_enqueue_arguments(parser, batch_size_default=settings.READER_BATCH_SIZE)

    def handle(self, *args, **options) -> None:
        regeneration_run(EndpointRun.from_options(options, stdout=self.stdout))
