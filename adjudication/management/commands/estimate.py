"""`manage.py estimate --dataset NAME [--target T]`: each headline number three ways, machine only,
human only and prediction-powered (docs/estimates.md); the `estimates` report kind's command."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from adjudication.management.arguments import report_for_command
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Prediction-powered estimates: per target, the machine figure (the predictor's verdicts on every "
        "response; no interval, it inherits the predictor's errors), the human-only figure (the labels of the "
        "routing design alone) and the prediction-powered figure (the machine figure corrected on those labels), "
        "with intervals, labels and effective labels, and the design the labels rest on. Without --target: "
        "pooled accuracy, each group's accuracy, the gains base -> each checkpoint and their format share under "
        "the reported reader, and every producer's agreement, bias, false-accept and false-reject rates."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="the dataset (its readings and its labels' design)")
        parser.add_argument(
            "--target",
            default="",
            help="one target: accuracy, accuracy:<group>, accuracy:<field>=<value>, gain:<base>,<rl>, "
            "format-share:<base>,<rl>,<reader>, agreement:<producer>, bias:<producer>, false-accept:<producer>, "
            "false-reject:<producer> (default: the headline set)",
        )
        parser.add_argument(
            "--predictor",
            default="",
            help="a producer's name, vote or consensus (default: fixed, else vote when the dataset has no fixed "
            "reader; the output says which)",
        )
        parser.add_argument(
            "--policy", default="", help="the routing policy whose labels to use (default: the design's choice)"
        )
        parser.add_argument(
            "--by",
            choices=("checkpoint", "model", "benchmark", "task_type"),
            default="checkpoint",
            help="the field a target's groups are values of (accuracy:<group>, gain:<base>,<rl>)",
        )
        parser.add_argument(
            "--base", help="the base checkpoint of the headline gains (default: base, or the analytics page's setting)"
        )
        parser.add_argument(
            "--reported",
            help="the reader whose gain the format shares are of (default: the analytics page's last setting, else "
            "the harness reader of the dataset's benchmarks; the output says which and why)",
        )
        parser.add_argument("--seed", type=int, default=0, help="the bootstrap seed (ratios, when bootstrapped)")
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(self, *args: Any, dataset: str, json: bool, **options: Any) -> None:
        from adjudication.analytics.reports import report_json, report_text

        report = report_for_command("estimates", file=None, dataset=dataset, arguments=options)
        if json:
            self.stderr.write(str(report.note))
            self.stdout.write(report_json(report.result))
            return
        # Under the predictor's line, the other reader a default chose.
        predictor, _, rest = report_text("estimates", report.result).partition("\n")
        self.stdout.write(f"{predictor}\n{report.note}\n{rest}")
