"""python manage.py audit_verifiers --golds FILE | --dataset NAME [--readers seed001|ours|all|NAME ...] --out DIR

The metamorphic verifier audit of seed 001 (docs/audit.md). With --golds it never touches the
database (no system checks, no ORM): golds come one per line, or as JSONL with a "gold" field.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, add_isolation_arguments, report_for_command
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Metamorphic verifier audit (seed 001): rewrite every gold with the transform suite, read every "
        "variant with every reader in the isolation pool, write verdicts.jsonl, strata.csv, "
        "disagreement.csv, magnitude.csv and summary.json to --out."
    )
    # The --golds path must work with no database server at all.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_option="--golds",
            file_help="golds, one per line, or JSONL with a 'gold' field",
            dataset_help="audit a stored dataset's distinct golds (uses the database)",
        )
        parser.add_argument(
            "--readers",
            "--reader",
            action="append",
            dest="readers",
            default=None,
            help="reader names or sets, repeatable or comma-separated. Default: 'seed001' = seed "
            "001's four verifiers under its own conventions (math-verify-latex-seed001, "
            "math-verify-expr-seed001, strip-string-deepseek, sympy-cascade-seed001); 'ours' "
            "= our variants (math-verify-latex, math-verify-expr, strip-string, "
            "sympy-cascade); 'all' = every maths rule reader",
        )
        parser.add_argument(
            "--contract-override",
            action="append",
            dest="contract_overrides",
            default=None,
            metavar="READER:STRATUM:in|out",
            help="put a stratum in or out of a reader's contract (repeatable), on top of seed "
            "001's published assignments (readers/audit/contracts.py)",
        )
        parser.add_argument(
            "--no-seed-contracts",
            action="store_true",
            help="do not apply seed 001's stratum assignments: form contracts only",
        )
        parser.add_argument(
            "--synthetic",
            type=int,
            default=0,
            metavar="N",
            help="add N synthetic golds in MATH answer forms (tagged synthetic; seed 001 §2.5)",
        )
        parser.add_argument("--out", type=Path, required=True, help="output directory")
        add_isolation_arguments(parser)
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
        parser.add_argument("--json", action="store_true", help="print summary.json's report only (it is written too)")

    def handle(
        self,
        *args: Any,
        golds: Path | None,
        dataset: str | None,
        out: Path,
        budget: float,
        processes: int,
        no_progress: bool,
        json: bool,
        **options: Any,
    ) -> None:
        from adjudication.analytics.reports import Machine, report_json, report_text

        if processes < 1:
            raise CommandError("--processes must be >= 1")
        if budget <= 0:
            raise CommandError("--budget must be > 0")
        machine = Machine(processes=processes, budget=budget, out_dir=out, progress=_Progress(self, no_progress))
        summary = report_for_command("audit", file=golds, dataset=dataset, arguments=options, machine=machine).result
        if json:
            self.stdout.write(report_json(summary))
            return
        self.stdout.write(report_text("audit", summary))
        self.stdout.write(f"wrote {out}/verdicts.jsonl, strata.csv, disagreement.csv, magnitude.csv, summary.json")


class _Progress:
    """The audit's progress on stderr: what it is about to read, then a bar (unless --no-progress)."""

    def __init__(self, command: ApplicationCommand, hidden: bool) -> None:
        self.command, self.hidden, self.bar = command, hidden, None

    def start(self, *, readers: int, golds: int, variants: int, skipped: int) -> None:
        self.command.stderr.write(
            f"auditing {readers} reader(s) on {golds} golds ({variants} variants"
            + (f"; {skipped} multiple-choice questions skipped" if skipped else "")
            + ")"
        )
        if not self.hidden:
            from tqdm import tqdm

            self.bar = tqdm(
                total=variants * readers, unit="verdict", file=sys.stderr, mininterval=0.5, dynamic_ncols=True
            )

    def advance(self, reader: str, n: int) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(reader)
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
