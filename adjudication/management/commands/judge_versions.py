"""`manage.py judge_versions`: a judge family's versions measured on held-out human labels."""

from __future__ import annotations

import json as jsonlib
from typing import Any

from django.core.management.base import CommandParser

from adjudication.analytics.stats import jsonable
from adjudication.analytics.versions.compare import versions_text
from adjudication.analytics.versions.selectors import judge_versions_report
from adjudication.analytics.versions.services import judge_split_ensure
from adjudication.management.arguments import dataset_named
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "List the versions of judge J (J and the judges made from it with add_judge --from) with their "
        "agreement with the final human labels held out of the family's split: template hash, few-shot "
        "examples, n, Cohen's kappa, accuracy, bias, false-accept and false-reject with 95% intervals, and "
        "McNemar's exact test of each version against the one before. Makes the split on first use (--seed, "
        "--held-out) and adds labels made since, each to the side the seed gives it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--judge", required=True, help="the family's first judge")
        parser.add_argument("--seed", type=int, default=None, help="the split's seed (default: the versions', else 0)")
        parser.add_argument(
            "--held-out", type=float, default=None, help="share of the labels held out when the split is made (0.5)"
        )
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(
        self, *args: Any, dataset: str, judge: str, seed: int | None, held_out: float | None, json: bool, **options: Any
    ) -> None:
        from adjudication.analytics.versions.selectors import judge_split_of

        ds = dataset_named(dataset)
        current = judge_split_of(dataset=ds, family=judge, seed=seed)
        split = judge_split_ensure(
            dataset=ds,
            family=judge,
            seed=seed if seed is not None else (current.seed if current else 0),
            held_out_fraction=held_out,
        )
        report = judge_versions_report(dataset=ds, family=judge, seed=split.seed)
        self.stdout.write(jsonlib.dumps(jsonable(report), indent=2) if json else versions_text(report))
