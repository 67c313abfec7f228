"""`manage.py judge_card --dataset NAME`: each producer's judge-bias card (docs/analytics.md, "The
judge-bias card"): the `judge_card` report kind's command (the analytics page's cards, without the
prediction-powered figures its estimates add)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import report_for_command
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Judge-bias cards: per LLM judge (and every reader), false-accept rate, false-reject rate and bias "
        "against the final human labels, with intervals and n, overall and by response length, answer format, "
        "checkpoint, model, benchmark, gold type, format x checkpoint and own model family, with a "
        "likelihood-ratio heterogeneity test per breakdown and rate, and a self-preference flag."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="a dataset with final human labels")
        parser.add_argument("--judge", action="append", default=None, help="only this producer (repeatable)")
        parser.add_argument(
            "--by",
            default="",
            help="the breakdowns to print, comma-separated (length, format, checkpoint, model, benchmark, "
            "gold_type, format_checkpoint, self_family; default: all); --json always holds all",
        )
        parser.add_argument(
            "--scope",
            choices=("preferred", "reviewed", "controls", "disputed"),
            default="preferred",
            help="which labelled items: the analytics page's (controls when there are labelled controls, else "
            "every reviewed item; the default), or one scope",
        )
        parser.add_argument("--seed", type=int, default=0, help="bootstrap and Monte Carlo seed")
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(self, *args: Any, dataset: str, judge: list[str] | None, by: str, json: bool, **options: Any) -> None:
        from adjudication.analytics.reports import report_json, report_text

        block = report_for_command(
            "judge_card", file=None, dataset=dataset, arguments={"scope": options["scope"], "seed": options["seed"]}
        ).result
        dimensions = tuple(d.strip() for d in by.split(",") if d.strip())
        unknown = [d for d in dimensions if d not in block["breakdowns"]]
        if unknown:
            raise CommandError(f"--by: {', '.join(unknown)} not among {', '.join(block['breakdowns'])}")
        if judge:
            missing = sorted(set(judge) - {c["producer"] for c in block["cards"]})
            if missing:
                raise CommandError(f"--judge: no labelled readings of {', '.join(missing)} on scope {block['scope']!r}")
            block["cards"] = [c for c in block["cards"] if c["producer"] in judge]
        if json:
            self.stdout.write(report_json(block))
        else:
            block["print_breakdowns"] = list(dimensions)
            self.stdout.write(report_text("judge_card", block))
