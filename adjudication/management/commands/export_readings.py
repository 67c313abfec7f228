from __future__ import annotations

import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from adjudication.exports import csv_lines, jsonl_lines
from adjudication.management.arguments import dataset_named
from adjudication.pipeline.selectors import EXPORT_FIELDS, export_rows


class Command(BaseCommand):
    help = (
        "Export one row per reading: response id, model, checkpoint, benchmark, reader, version, config hash, "
        "canonical answer, raw answer and its span, verdict. Valid UTF-8 always (JSONL keeps lone surrogates as "
        "\\udXXX escapes); CSV cells that a spreadsheet would run as formulas are prefixed with an apostrophe."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--format", dest="fmt", choices=["jsonl", "csv"], default="jsonl")
        parser.add_argument("--out", type=Path, default=None, help="output file (default: stdout)")

    def handle(self, *args, dataset: str, fmt: str, out: Path | None, **options) -> None:
        ds = dataset_named(dataset)
        rows = export_rows(dataset=ds)
        lines = csv_lines(EXPORT_FIELDS, rows) if fmt == "csv" else jsonl_lines(rows)
        # The whole export is written to a file beside the target (or a temporary one for stdout)
        # before anything reaches its destination: a failure midway never leaves half an export.
        directory = out.resolve().parent if out else None
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", newline="", dir=directory, delete=False, prefix=".export-", suffix=".partial"
        ) as handle:
            staged = Path(handle.name)
            try:
                n = -1 if fmt == "csv" else 0  # the CSV header is a line too
                for line in lines:
                    handle.write(line)
                    n += 1
            except BaseException:
                handle.close()
                staged.unlink(missing_ok=True)
                raise
        if out:
            staged.replace(out)
            self.stderr.write(f"{n} readings written to {out}")
            return
        try:
            with open(staged, encoding="utf-8", newline="") as source:
                for chunk in iter(lambda: source.read(1 << 16), ""):
                    self.stdout.write(chunk, ending="")
                self.stdout.flush()
        finally:
            staged.unlink(missing_ok=True)
