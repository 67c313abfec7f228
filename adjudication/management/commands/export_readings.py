from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from adjudication.models import Dataset
from adjudication.selectors import EXPORT_FIELDS, dataset_get, export_rows


class Command(BaseCommand):
    help = "Export one row per reading: response id, model, checkpoint, benchmark, reader, version, config hash, answer, verdict."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--format", dest="fmt", choices=["jsonl", "csv"], default="jsonl")
        parser.add_argument("--out", type=Path, default=None, help="output file (default: stdout)")

    def handle(self, *args, dataset: str, fmt: str, out: Path | None, **options) -> None:
        try:
            ds = dataset_get(name=dataset)
        except Dataset.DoesNotExist:
            raise CommandError(f"no dataset named {dataset!r}") from None
        # Write to a temporary sibling and rename, so a failed export never leaves half a file.
        target = out.with_name(out.name + ".partial") if out else None
        handle = open(target, "w", encoding="utf-8", newline="", errors="surrogatepass") if target else sys.stdout
        n = 0
        try:
            if fmt == "csv":
                writer = csv.DictWriter(handle, fieldnames=EXPORT_FIELDS)
                writer.writeheader()
                for row in export_rows(dataset=ds):
                    writer.writerow(row)
                    n += 1
            else:
                for row in export_rows(dataset=ds):
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                    n += 1
        finally:
            if target:
                handle.close()
        if target and out:
            target.replace(out)
            self.stderr.write(f"{n} readings written to {out}")
