from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import (
    add_enqueue_arguments,
    add_reader_argument,
    add_regen_instruction_argument,
    dataset_named,
)
from adjudication.management.base import ApplicationCommand
from adjudication.pipeline.producers import EndpointRun, ProducerUnavailable, endpoint_producer
from adjudication.pipeline.progress import run_with_progress
from adjudication.pipeline.selectors import dataset_default_panel, reading_counts
from adjudication.pipeline.services import dataset_read
from readers import registry as reader_registry


class Command(ApplicationCommand):
    help = (
        "Read every response of a dataset with every selected reader (one reading each; re-runs add only "
        "what is missing)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        add_reader_argument(
            parser,
            required=False,
            help=(
                "reader name (repeatable); default: the dataset's rule-reader panel, the readers that apply "
                "to its questions' task types (multiple choice, maths, free-form; the seed-convention "
                "variants run when named); 'all' = the same panel"
            ),
        )
        add_enqueue_arguments(parser, batch_size_default=settings.READER_BATCH_SIZE)
        parser.add_argument(
            "--endpoint",
            default=None,
            help="LLM endpoint (see add_endpoint) for the `regeneration` reader: Answer Regeneration",
        )
        add_regen_instruction_argument(parser)

    def handle(self, *args, **options) -> None:
        dataset: str = options["dataset"]
        readers: list[str] | None = options["readers"]
        batch_size: int = options["batch_size"]
        endpoint: str | None = options["endpoint"]
        regen_instruction: str | None = options["regen_instruction"]
        ds = dataset_named(dataset)
        if readers and "regeneration" in readers:
            # Answer Regeneration is an LLM reader: the judges app produces it on the `llm` queue
            # (registered at start-up, pipeline.producers). Unknown rule-reader names fail before
            # any model is called.
            readers = [r for r in readers if r != "regeneration"]
            _require_readers([n for n in readers if n != "all"])
            if not endpoint:
                raise CommandError(
                    "the regeneration reader calls a model: give --endpoint NAME (see `manage.py add_endpoint`)"
                )
            try:
                regenerate = endpoint_producer("regeneration")
            except ProducerUnavailable as exc:
                raise CommandError(str(exc)) from None
            regenerate(EndpointRun.from_options(options, stdout=self.stdout))
            if not readers:
                return
        elif endpoint or regen_instruction is not None:
            option = "--endpoint" if endpoint else "--regen-instruction"
            raise CommandError(f"{option} is for the LLM reader: add --reader regeneration")
        # The default panel follows the dataset's task types (readers.tasks): a multiple-choice
        # dataset is not read by the GSM8K regexes or the SymPy cascades unless they are named.
        names = dataset_default_panel(dataset_id=ds.pk) if not readers or readers == ["all"] else readers
        names = _require_readers(names)
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        # Outside a transaction on_commit fires at once: in eager mode each batch is read right
        # here; with real workers this only enqueues.
        run = run_with_progress(
            lambda on_enqueued: dataset_read(
                dataset=ds, reader_names=names, batch_size=batch_size, on_enqueued=on_enqueued
            ),
            total=ds.responses.count() * len(names),
            unit="readings",
            desc="read",
            no_wait=options["no_wait"],
            timeout=options["timeout"],
            noun="reader task",
        )
        for e in run.enqueued:
            self.stdout.write(
                f"{e.reader_spec.name:<28} {e.missing:>7} read now, "
                f"{reading_counts(dataset=ds, reader_spec=e.reader_spec):>7} readings in all"
            )


def _require_readers(names: list[str]) -> list[str]:
    try:
        return reader_registry.require(names)
    except reader_registry.UnknownReader as exc:
        raise CommandError(str(exc)) from None
