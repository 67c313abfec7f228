"""`manage.py bundle`: one file that re-creates a dataset's reported numbers on another machine
(docs/bundles.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from adjudication.management.arguments import dataset_named
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Write a reproducibility bundle: the dataset's responses (or their hashes with --no-text), every "
        "reading and label, the reader specs, judges, routing policies, the reports' parameters and "
        "numbers, and the platform's commit and package versions, in one zip. `manage.py replay FILE` "
        "recomputes every number from it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="the dataset to bundle")
        parser.add_argument(
            "--report",
            action="append",
            dest="reports",
            default=None,
            metavar="'KIND [OPTIONS]'",
            help="a report to include, repeatable: format_share, agreement, consensus or audit with the "
            "command's options a bundle may carry (docs/bundles.md; e.g. 'consensus --by checkpoint "
            "--bootstrap 50'), or 'analytics "
            "KEY=VALUE ...' (the analytics page's report). Default: format_share, agreement and "
            "consensus, each where it computes on the dataset",
        )
        parser.add_argument("--out", type=Path, required=True, help="the bundle file to write (.zip)")
        parser.add_argument(
            "--no-text",
            action="store_true",
            help="keep responses', prompts' and questions' texts as sha256 hashes only (data that cannot be shared)",
        )

    def handle(
        self, *args: Any, dataset: str, reports: list[str] | None, out: Path, no_text: bool, **options: Any
    ) -> None:
        from adjudication.analytics.reports import spec_resolved
        from adjudication.bundles.services import bundle_write

        ds = dataset_named(dataset)
        # A report's reader options left out are the dataset's (the bundle stores them named).
        specs = None if reports is None else [spec_resolved(r, dataset=ds)[0] for r in reports]
        summary = bundle_write(dataset=ds, out=out, report_specs=specs, text=not no_text)
        rows = ", ".join(f"{n} {key.split('.')[-1]}" for key, n in summary.rows.items() if n)
        self.stdout.write(f"wrote {summary.path} ({summary.bytes / 1e6:.2f} MB): {rows}")
        for describe in summary.reports:
            self.stdout.write(f"  report: {describe}")
        for reason in summary.skipped:
            self.stdout.write(f"  not included: {reason}")
