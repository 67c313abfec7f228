from __future__ import annotations

import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from adjudication.management.arguments import add_wait_arguments
from adjudication.models import Dataset
from adjudication.pipeline.batches import BatchFailed
from adjudication.pipeline.progress import wait_for_readings
from adjudication.pipeline.selectors import dataset_get, default_panel, reading_counts
from adjudication.pipeline.services import dataset_read
from readers import registry as reader_registry


class Command(BaseCommand):
    help = (
        "Read every response of a dataset with every selected reader (one reading each; re-runs add only "
        "what is missing)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument(
            "--reader",
            action="append",
            dest="readers",
            default=None,
            help="reader name (repeatable); default: the whole rule-reader panel; 'all' = every rule reader",
        )
        parser.add_argument("--batch-size", type=int, default=settings.READER_BATCH_SIZE)
        add_wait_arguments(parser)
        parser.add_argument(
            "--endpoint",
            default=None,
            help="LLM endpoint (see add_endpoint) for the `regeneration` reader: Answer Regeneration",
        )
        parser.add_argument(
            "--regen-instruction",
            default=None,
            help='text added before "Answer:" in regeneration requests (default: none, as seed 002 '
            "specifies); part of the reader's config hash, so a separate set of readings",
        )

    def handle(
        self,
        *args,
        dataset: str,
        readers: list[str] | None,
        batch_size: int,
        no_wait: bool,
        timeout: float,
        endpoint: str | None = None,
        regen_instruction: str | None = None,
        **options,
    ) -> None:
        try:
            ds = dataset_get(name=dataset)
        except Dataset.DoesNotExist:
            raise CommandError(f"no dataset named {dataset!r}") from None
        if readers and "regeneration" in readers:
            # Answer Regeneration is an LLM reader: the judges app's `regenerate` command runs it on
            # the `llm` queue. Unknown rule-reader names fail before any model is called.
            readers = [r for r in readers if r != "regeneration"]
            _require_readers([n for n in readers if n != "all"])
            if not endpoint:
                raise CommandError(
                    "the regeneration reader calls a model: give --endpoint NAME (see `manage.py add_endpoint`)"
                )
            call_command(
                "regenerate",
                dataset=dataset,
                endpoint=endpoint,
                regen_instruction=regen_instruction,
                batch_size=batch_size,
                no_wait=no_wait,
                timeout=timeout,
                stdout=self.stdout,
            )
            if not readers:
                return
        elif endpoint or regen_instruction is not None:
            option = "--endpoint" if endpoint else "--regen-instruction"
            raise CommandError(f"{option} is for the LLM reader: add --reader regeneration")
        names = default_panel() if not readers or readers == ["all"] else readers
        names = _require_readers(names)
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        eager = settings.CELERY_TASK_ALWAYS_EAGER
        total = ds.responses.count() * len(names)
        bar = tqdm(total=total, unit="readings", file=sys.stderr, desc="read", leave=False)
        # Outside a transaction on_commit fires at once: in eager mode each batch is read right
        # here and the bar moves as it goes; with real workers this only enqueues.
        try:
            run = dataset_read(
                dataset=ds, reader_names=names, batch_size=batch_size, on_enqueued=bar.update if eager else None
            )
        except BatchFailed as exc:  # eager mode: the task ran, and failed, right here
            raise CommandError(str(exc)) from None
        bar.update(total - sum(e.missing for e in run.enqueued))  # what was already read before
        if not eager and not no_wait:
            wait_for_readings(
                run_id=run.id,
                dataset_id=ds.pk,
                kind=run.kind,
                total=total,
                bar=bar,
                timeout=timeout,
                done=lambda: sum(reading_counts(dataset=ds, reader_spec=e.reader_spec) for e in run.enqueued),
                noun="reader task",
            )
        bar.close()
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
