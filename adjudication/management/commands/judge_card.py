"""`manage.py judge_card --dataset NAME`: each producer's judge-bias card (docs/analytics.md, "The
judge-bias card"): the numbers the analytics page's cards show, computed on the same snapshot rules."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import dataset_named
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

    def handle(
        self,
        *args: Any,
        dataset: str,
        judge: list[str] | None,
        by: str,
        scope: str,
        seed: int,
        json: bool,
        **options: Any,
    ) -> None:
        from adjudication.analytics.agreement import selection_note
        from adjudication.analytics.bias_card import BREAKDOWNS
        from adjudication.analytics.report import judge_cards_block
        from adjudication.analytics.reports.render import judge_cards_text, report_json
        from adjudication.analytics.selectors import agreement_inputs, read_snapshot, reading_summary

        dimensions = tuple(d.strip() for d in by.split(",") if d.strip())
        unknown = [d for d in dimensions if d not in BREAKDOWNS]
        if unknown:
            raise CommandError(f"--by: {', '.join(unknown)} not among {', '.join(BREAKDOWNS)}")
        ds = dataset_named(dataset)
        with read_snapshot():
            summary = reading_summary(dataset=ds)
            inputs = agreement_inputs(dataset=ds, summary=summary)
            chosen = (
                selection_note(inputs["human"], routed_controls=inputs["routed_controls"])["preferred_scope"]
                if scope == "preferred"
                else scope
            )
            block = judge_cards_block(dataset=ds, inputs=inputs, labels=summary.labels, scope=chosen, seed=seed)
        if judge:
            missing = sorted(set(judge) - {c["producer"] for c in block["cards"]})
            if missing:
                raise CommandError(f"--judge: no labelled readings of {', '.join(missing)} on scope {chosen!r}")
            block["cards"] = [c for c in block["cards"] if c["producer"] in judge]
        self.stdout.write(report_json(block) if json else judge_cards_text(block, dimensions=dimensions))
