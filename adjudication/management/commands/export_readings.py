from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from adjudication.exports import file_export
from adjudication.management.arguments import dataset_named
from adjudication.management.base import ApplicationCommand
from adjudication.pipeline.selectors import EXPORT_COLUMNS, export_rows


class Command(ApplicationCommand):
    help = (
        "Export one row per reading: response id, model, checkpoint, benchmark, reader, version, config hash, "
        "canonical answer, raw answer and its span, verdict. JSONL keeps model text verbatim (lone surrogates as "
        "\\udXXX JSON escapes); CSV cells that a spreadsheet would run as formulas are prefixed with an apostrophe; "
        "Parquet has typed columns, is written in row groups (memory bounded) and needs --out. Nothing is "
        "written to the target until the whole export is."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--format", dest="fmt", choices=["jsonl", "csv", "parquet"], default="jsonl")
        parser.add_argument("--out", type=Path, default=None, help="output file (default: stdout; Parquet needs one)")

    def handle(self, *args, dataset: str, fmt: str, out: Path | None, **options) -> None:
        ds = dataset_named(dataset)
        if fmt == "parquet" and out is None:
            raise CommandError("--format parquet writes a binary file: give it --out FILE")

        def to_stdout(chunk: str) -> None:
            self.stdout.write(chunk, ending="")

        n = file_export(fmt=fmt, rows=export_rows(dataset=ds), columns=EXPORT_COLUMNS, out=out, stdout=to_stdout)
        if out:
            self.stderr.write(f"{n} readings written to {out}")
        else:
            self.stdout.flush()
