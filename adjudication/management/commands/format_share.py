"""`manage.py format_share`: how much of each base→RL gain is format (seed 000)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, add_isolation_arguments, report_for_command
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Format share of base→RL gains: reported gain under the harness reader, fixed gain under a fixed "
        "reader (any reader, an LLM reader's stored verdicts, or 'human'), per (model, benchmark, prompt); over "
        "the eligible comparisons the pooled share, the mean of shares (our reading of seed 000's other pooling "
        "rule), the summed gain per model pair and the box rate by base / RL role, overall and --by task type or "
        "benchmark. --input FILE needs no database; --dataset NAME reads the database."
    )
    # --input must work with no database server at all: no system checks, no ORM.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_help="canonical JSONL (model, checkpoint, benchmark, prompt per row)",
            dataset_help="a dataset in the database (its stored readings and final labels)",
        )
        parser.add_argument(
            "--reported-reader",
            help=(
                "the harness reader (default with --dataset: the readers the analytics page was last set to, "
                "else the harness reader of the dataset's benchmarks, e.g. mmlu-pro-released on MMLU-Pro, "
                "boxed on maths; with --input: boxed); the output says which and why"
            ),
        )
        parser.add_argument(
            "--fixed-reader",
            help=(
                "the fixed reader (default: fixed, or the analytics page's last setting); 'human' = final human "
                "labels; 'consensus' = the panel consensus (one Dawid-Skene fit per checkpoint over every "
                "reader's verdicts; --dataset only)"
            ),
        )
        parser.add_argument(
            "--base-checkpoint",
            help="the checkpoint every other one is compared with (default: base, or the analytics page's setting)",
        )
        parser.add_argument(
            "--min-reported-gain",
            type=float,
            default=0.0,
            help="eligible only above this reported gain, in points (default 0: any positive gain, "
            "with a warning; seed 000 pools only 'clearly positive' gains)",
        )
        parser.add_argument(
            "--min-extraction-rate",
            type=float,
            default=0.0,
            help="eligible only if the fixed reader extracts at least this share on both checkpoints "
            "(default 0, with a warning; seed 000 asks for 'adequate extraction')",
        )
        parser.add_argument(
            "--require-thresholds",
            action="store_true",
            help="refuse to run with either eligibility threshold left at 0",
        )
        parser.add_argument(
            "--by",
            choices=("task_type", "benchmark"),
            help="also pool per task type (maths, multiple_choice, free_form) or per benchmark",
        )
        parser.add_argument(
            "--task-type",
            action="append",
            default=[],
            metavar="BENCHMARK=TYPE",
            help="set a benchmark's task type instead of reading it from its items (repeatable)",
        )
        parser.add_argument(
            "--predictor",
            default="",
            help=(
                "with --fixed-reader human and --dataset: the predictor of the prediction-powered estimates over "
                "every response (a producer, 'vote' or 'consensus'; default: the fixed reader where it read the "
                "dataset, else 'vote')"
            ),
        )
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        parser.add_argument("--json", action="store_true", help="print JSON only")
        add_isolation_arguments(parser, help_suffix=" (--input)")

    def handle(
        self,
        *args: Any,
        input: Path | None,
        dataset: str | None,
        json: bool,
        budget: float,
        processes: int,
        **options: Any,
    ) -> None:
        from adjudication.analytics.reports import Machine, report_json, report_text

        machine = Machine(processes=processes, budget=budget)
        report = report_for_command("format_share", file=input, dataset=dataset, arguments=options, machine=machine)
        if json:
            # On stderr as well, so that JSON piped elsewhere still shows them on the terminal.
            self.stderr.write(str(report.note))
            for w in report.result["warnings"]:
                self.stderr.write(f"warning: {w}")
            self.stdout.write(report_json(report.result))
            return
        self.stdout.write(str(report.note))
        self.stdout.write(report_text("format_share", report.result))
