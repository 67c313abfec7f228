"""Options several commands share, declared once so that their names, defaults and help agree, and
the one way a command turns its --dataset option into a dataset."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.management.base import CommandError

if TYPE_CHECKING:
    from adjudication.analytics.reports import Machine
    from adjudication.models import Dataset


def dataset_named(name: str) -> Dataset:
    """The dataset a --dataset option names, or the CommandError that says there is none."""
    # Imported here: the file-only commands (read, agreement --input, ...) load this module and
    # must not need the ORM's query layer to start.
    from adjudication.models import Dataset
    from adjudication.pipeline.selectors import dataset_get

    try:
        return dataset_get(name=name)
    except Dataset.DoesNotExist:
        raise CommandError(f"no dataset named {name!r}") from None


def add_file_or_dataset_arguments(
    parser: ArgumentParser, *, file_help: str, dataset_help: str, file_option: str = "--input"
) -> None:
    """Exactly one source: a file (read with no database at all) or --dataset NAME."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(file_option, type=Path, help=file_help)
    source.add_argument("--dataset", help=dataset_help)


def add_reader_argument(parser: ArgumentParser, *, required: bool, help: str) -> None:  # noqa: A002
    """--reader NAME, repeatable, collected in `readers`."""
    parser.add_argument("--reader", action="append", dest="readers", required=required, default=None, help=help)


def add_regen_instruction_argument(parser: ArgumentParser) -> None:
    """--regen-instruction of the commands that run Answer Regeneration."""
    parser.add_argument(
        "--regen-instruction",
        default=None,
        help='text added before "Answer:" in regeneration requests (default: none, as seed 002 '
        "specifies); part of the reader's config hash, so a separate set of readings",
    )


def add_isolation_arguments(parser: ArgumentParser, *, help_suffix: str = "") -> None:
    """--budget and --processes of the commands that read in the isolation pool themselves."""
    parser.add_argument(
        "--budget",
        type=float,
        default=settings.READER_BUDGET_SECONDS,
        help="hard wall-clock budget per reading, seconds" + help_suffix,
    )
    parser.add_argument(
        "--processes", type=int, default=settings.READER_PROCESSES, help="reader processes" + help_suffix
    )


def add_enqueue_arguments(
    parser: ArgumentParser, *, batch_size_default: int | None, batch_size_help: str | None = None
) -> None:
    """--batch-size, --no-wait and --timeout of the commands that enqueue work for Celery workers."""
    parser.add_argument("--batch-size", type=int, default=batch_size_default, help=batch_size_help)
    parser.add_argument("--no-wait", action="store_true", help="enqueue and return without waiting for workers")
    parser.add_argument("--timeout", type=float, default=0, help="give up waiting after this many seconds (0 = never)")


def report_for_command(
    kind: str,
    *,
    file: Path | str | None,
    dataset: str | None,
    arguments: dict[str, Any],
    machine: Machine | None = None,
) -> dict[str, Any]:
    """The report a report command prints: its options from the command's arguments (named as the
    options' fields), over the file or the --dataset; a ReportError is the command's error (ApplicationCommand)."""
    from adjudication.analytics.reports import OPTIONS, report_compute

    options = OPTIONS[kind].from_arguments(arguments)
    source = Path(file) if file is not None else dataset_named(str(dataset))
    return report_compute(kind, source=source, options=options, machine=machine)
