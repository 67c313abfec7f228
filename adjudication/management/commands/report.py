"""`manage.py report "KIND [OPTIONS]" --dataset NAME`: any report kind, the analytics page's among
them, with the options as `bundle --report` takes them (docs/reports.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from adjudication.management.arguments import dataset_named
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Print one report of a dataset: format_share, agreement, consensus, audit, audit_run run=ID or analytics "
        "KEY=VALUE ... (the analytics page's report), each with its options as in `bundle --report` (e.g. "
        "'consensus --by checkpoint --bootstrap 50'). The JSON is the one the report's page, its API and a "
        "bundle carry."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("report", metavar="'KIND [OPTIONS]'", help="the report kind and its options")
        parser.add_argument("--dataset", required=True, help="the dataset to report on")
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(self, *args: Any, report: str, dataset: str, json: bool, **options: Any) -> None:
        from adjudication.analytics.reports import report_compute, report_json, report_text, spec_resolved

        source = dataset_named(dataset)
        spec, note = spec_resolved(report, dataset=source)
        result = report_compute(spec.kind, source=source, options=spec.options)
        if note is not None:
            # Beside JSON on stderr, so that the JSON stays one document.
            (self.stderr if json else self.stdout).write(note)
        self.stdout.write(report_json(result) if json else report_text(spec.kind, result))
