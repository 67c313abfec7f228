"""`manage.py agreement`: producers (readers, LLM judges) against human verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, report_for_command
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Agreement with human verdicts and judge bias. --input FILE (JSONL lines {id, producer, verdict, "
        "human_verdict}, no database): per producer n, accuracy, Cohen's kappa, judge/human correct rates, bias, "
        "false-accept and false-reject rates with Wilson intervals. --dataset NAME: every reader and judge "
        "against the final human labels, by model, checkpoint and benchmark, human-human agreement and the "
        "selection-bias note."
    )
    # --input must work with no database server at all: no system checks, no ORM.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_help="JSONL: {id, producer, verdict, human_verdict} per line",
            dataset_help="a dataset in the database with final human labels",
        )
        parser.add_argument("--by", default="", help="--input: also break down by these fields, e.g. model,checkpoint")
        parser.add_argument(
            "--no-answer",
            choices=("incorrect", "exclude"),
            default="incorrect",
            help="what a producer's no_answer counts as (default: incorrect, as a harness scores it)",
        )
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (bias interval)")
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(self, *args: Any, input: Path | None, dataset: str | None, json: bool, **options: Any) -> None:  # noqa: A002
        from adjudication.analytics.reports import report_json, report_text

        result = report_for_command("agreement", file=input, dataset=dataset, arguments=options).result
        self.stdout.write(report_json(result) if json else report_text("agreement", result))
