"""`run_readers --reader regeneration --endpoint NAME`: the LLM branch of the rule-reader command."""
from __future__ import annotations

import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from adjudication.models import Dataset, Reading
from readers import registry as reader_registry

from ..models import Endpoint
from adjudication.services.batches import BatchFailed
from ..services.regeneration import check_instruction
from ..services.runs import dataset_regenerate


def run_regeneration(command: BaseCommand, dataset: Dataset, *, endpoint: str | None, batch_size: int | None,
                     no_wait: bool, timeout: float, other_readers: list[str] = (),
                     instruction: str | None = None) -> None:
    from .commands.run_judges import wait_for

    if not endpoint:
        raise CommandError("the regeneration reader calls a model: give --endpoint NAME (see `manage.py add_endpoint`)")
    unknown = [n for n in other_readers if n != "all" and n not in reader_registry.names()]
    if unknown:
        raise CommandError(f"unknown reader(s): {', '.join(unknown)}. `manage.py readers` lists them.")
    try:
        instruction = check_instruction(instruction)
    except ValueError as exc:
        raise CommandError(f"--regen-instruction: {exc}") from None
    ep = Endpoint.objects.filter(name=endpoint).first()
    if ep is None:
        raise CommandError(f"no endpoint named {endpoint!r}; add it with `manage.py add_endpoint`")
    eager = settings.CELERY_TASK_ALWAYS_EAGER
    total = dataset.responses.count()
    bar = tqdm(total=total, unit="readings", file=sys.stderr, desc="regenerate", leave=False)
    try:
        run = dataset_regenerate(dataset=dataset, endpoint=ep, batch_size=batch_size,
                                 on_enqueued=bar.update if eager else None, instruction=instruction)
    except BatchFailed as exc:  # eager mode: the task ran, and failed, right here
        raise CommandError(str(exc)) from None
    if not eager and not no_wait:
        bar.update(run.total - sum(e.missing for e in run.enqueued))
        wait_for(run, bar, timeout)
    bar.close()
    for e in run.enqueued:
        n = Reading.objects.filter(response__dataset=dataset, reader_spec=e.reader_spec).count()
        command.stdout.write(f"{e.reader_spec.name:<28} {e.missing:>7} read now, {n:>7} readings in all "
                             f"({ep.model} via {ep.name})")
