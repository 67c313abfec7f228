from __future__ import annotations

import json

from django.core.management.base import CommandParser

from adjudication.management.base import ApplicationCommand
from readers.registry import contract_matrix_markdown, describe


class Command(ApplicationCommand):
    help = "List every registered reader with its version, config hash and declared contract."
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--markdown", action="store_true", help="the contract matrix as a Markdown table")

    def handle(self, *args, json: bool = False, markdown: bool = False, **options) -> None:  # noqa: A002
        if markdown:
            self.stdout.write(contract_matrix_markdown(), ending="")
            return
        rows = describe()
        if json:
            self.stdout.write(_dumps(rows))
            return
        self.stdout.write(f"{'reader':<30} {'version':<9} {'kind':<13} {'config':<17} contract")
        for r in rows:
            self.stdout.write(
                f"{r['name']:<30} {r['version']:<9} {r['kind']:<13} {r['config_hash']:<17} {', '.join(r['contract'])}"
            )


def _dumps(rows: list) -> str:
    return json.dumps(rows, indent=2)
