"""`manage.py consensus`: every producer's error rates and each checkpoint's accuracy from the
panel's verdicts, with few or no human labels (a latent-class model: docs/consensus.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, report_for_command
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Panel consensus (Dawid-Skene by default, or MACE): per producer the estimated sensitivity, "
        "specificity, false-accept and false-reject rates beside the human-measured ones, per checkpoint the "
        "accuracy (mean posterior, bootstrap interval) beside the human-only estimate, and the correlated "
        "producer pairs. --input FILE: the JSONL lines of `agreement --input` (no database); --dataset NAME: "
        "every reading and final human label of a dataset."
    )
    # --input must work with no database server at all: no system checks, no ORM.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_help="JSONL: {id, producer, verdict, human_verdict, model?, checkpoint?, benchmark?} per line",
            dataset_help="a dataset in the database (its readings, and final human labels if any)",
        )
        parser.add_argument(
            "--by",
            choices=("checkpoint", "model", "benchmark"),
            default=None,
            help="fit one model per value of this field (producers' error rates differ by checkpoint)",
        )
        parser.add_argument("--model", choices=("dawid-skene", "mace"), default="dawid-skene")
        parser.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates (each refits; 0 = none)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        parser.add_argument(
            "--group-duplicates",
            type=float,
            default=None,
            metavar="THRESHOLD",
            help="merge producers whose votes agree on at least this share of common items (e.g. 0.98) into one",
        )
        parser.add_argument(
            "--human-weight",
            type=int,
            default=1,
            metavar="W",
            help="Dawid-Skene: each human-labelled item counts W times in the fit (a clamp alone moves a strongly "
            "wrong fit little; docs/consensus.md)",
        )
        parser.add_argument("--items", action="store_true", help="also list every item's posterior (text output)")
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(
        self,
        *args: Any,
        input: Path | None,  # noqa: A002
        dataset: str | None,
        items: bool,
        json: bool,
        **options: Any,
    ) -> None:
        from adjudication.analytics.reports import report_json
        from adjudication.analytics.reports.render import consensus_text

        result = report_for_command("consensus", file=input, dataset=dataset, arguments=options).result
        self.stdout.write(report_json(result) if json else consensus_text(result, items=items))
