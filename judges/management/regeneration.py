"""Answer Regeneration over a dataset, as a command runs it (checks its options, enqueues with a
progress bar, prints a line per reader spec): the `regenerate` command, and `run_readers --reader
regeneration` through the pipeline's producer registry (JudgesConfig.ready registers it)."""

from __future__ import annotations

from django.core.management.base import CommandError

from adjudication.management.arguments import dataset_named
from adjudication.pipeline.producers import EndpointRun
from adjudication.pipeline.progress import run_with_progress
from adjudication.pipeline.selectors import reading_counts
from judges.models import Endpoint
from judges.services.regeneration import check_instruction
from judges.services.runs import dataset_regenerate


def regeneration_run(run: EndpointRun) -> None:
    ds = dataset_named(run.dataset)
    if not run.endpoint:
        raise CommandError("the regeneration reader calls a model: give --endpoint NAME (see `manage.py add_endpoint`)")
    if run.batch_size < 1:
        raise CommandError("--batch-size must be at least 1")
    try:
        instruction = check_instruction(run.instruction)
    except ValueError as exc:
        raise CommandError(f"--regen-instruction: {exc}") from None
    ep = Endpoint.objects.filter(name=run.endpoint).first()
    if ep is None:
        raise CommandError(f"no endpoint named {run.endpoint!r}; add it with `manage.py add_endpoint`")
    progress = run_with_progress(
        lambda on_enqueued: dataset_regenerate(
            dataset=ds, endpoint=ep, batch_size=run.batch_size, on_enqueued=on_enqueued, instruction=instruction
        ),
        total=ds.responses.count(),
        unit="readings",
        desc="regenerate",
        no_wait=run.no_wait,
        timeout=run.timeout,
    )
    for e in progress.enqueued:
        n = reading_counts(dataset=ds, reader_spec=e.reader_spec)
        run.stdout.write(
            f"{e.reader_spec.name:<28} {e.missing:>7} read now, {n:>7} readings in all ({ep.model} via {ep.name})"
        )
