"""Options several commands share, declared once so that their names, defaults and help agree, and
the one way a command turns its --dataset option into a dataset."""

from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from django.conf import settings
from django.core.management.base import CommandError

from adjudication.routing.rules import Compare, Priority, Sampling
from adjudication.routing.specs import PolicySpec

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


@dataclass(frozen=True)
class CommandReport:
    """A report command's report and the line saying which reported reader it used and why (None
    for a kind without one)."""

    result: dict[str, Any]
    note: str | None


def report_for_command(
    kind: str,
    *,
    file: Path | str | None,
    dataset: str | None,
    arguments: dict[str, Any],
    machine: Machine | None = None,
) -> CommandReport:
    """The report a report command prints: its options from the command's arguments (named as the
    options' fields; one left None is not given), the reader options not given the dataset's
    (analytics.reports.defaults), over the file or the --dataset (a ReportError is the command's
    error, through ApplicationCommand)."""
    from adjudication.analytics.reports import OPTIONS, readers_resolved, report_compute

    source = Path(file) if file is not None else dataset_named(str(dataset))
    given = {name: value for name, value in arguments.items() if value is not None}
    resolved = readers_resolved(kind, dataset=None if isinstance(source, Path) else source, given=given)
    options = OPTIONS[kind].from_arguments(resolved.values)
    return CommandReport(report_compute(kind, source=source, options=options, machine=machine), resolved.note)


def add_policy_arguments(parser: ArgumentParser) -> None:
    """The settings of a new routing policy (routing.specs.PolicySpec) but its panel, as every
    command that makes one takes them; `policy_spec_of` makes the spec of them."""
    compares = "what a dispute is: a different answer or verdict (either, the default), answer, or verdict"
    parser.add_argument("--compare", choices=get_args(Compare), default="either", help=compares)
    parser.add_argument(
        "--missing-disagrees",
        action="store_true",
        help="a reader that found no answer (no_answer / timeout / error) disputes one that did",
    )
    parser.add_argument(
        "--control-fraction", type=float, default=0.0, help="share of undisputed responses drawn as controls"
    )
    parser.add_argument(
        "--unreadable-fraction",
        type=float,
        default=0.1,
        help="share of the responses no panel reader can read (loops, truncations: their own stratum) routed "
        "to review (default 0.1)",
    )
    parser.add_argument("--seed", type=int, default=0)
    order = "the policy's order; information: by label value for --target (docs/consensus.md)"
    parser.add_argument("--priority", choices=get_args(Priority), default="disagreement", help=order)
    parser.add_argument(
        "--target",
        default="",
        help="with --priority information: accuracy, accuracy:<checkpoint>, reader:<producer>, bias:<producer>, "
        "false-accept:<producer>, false-reject:<producer> or format-share:<base>,<rl>[,<reader>]",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        help="with --priority information: route about this many items (randomized: the draw's expected size), "
        "at most this many (greedy)",
    )
    parser.add_argument(
        "--sampling",
        choices=get_args(Sampling),
        default="randomized",
        help="with --priority information: randomized (each response drawn with a known probability; fit for "
        "estimates) or greedy (the highest label values; unfit for estimates)",
    )


# A setting whose option is named otherwise (the option says what it does on the command line).
OPTION_OF_SETTING = {"missing_is_disagreement": "missing_disagrees"}


def policy_spec_of(options: Mapping[str, Any], *, panel: Sequence[str]) -> PolicySpec:
    """The PolicySpec of the options add_policy_arguments declared, over `panel` (reader names)."""
    chosen = {f.name: options[OPTION_OF_SETTING.get(f.name, f.name)] for f in fields(PolicySpec) if f.name != "panel"}
    return PolicySpec(panel=tuple(panel), **chosen)
