from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from adjudication.exports import FORMATS, file_export
from adjudication.management.base import ApplicationCommand
from adjudication.models import ReviewQueue
from adjudication.review.queues.selectors import QUEUE_TABLES, queue_export_table


class Command(ApplicationCommand):
    help = (
        "Export a review queue's final labels (one row per decided item: final label, provenance, error type, the "
        "adjudicator's notes, who decided and when) or its individual labels (one row per label, history "
        "included), as the queue page's downloads do. JSONL nests each item's labels; CSV and Parquet are flat. "
        "Nothing is written to the target until the whole export is."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--queue", required=True, help="queue name")
        parser.add_argument("--table", choices=QUEUE_TABLES, default="final-labels")
        parser.add_argument("--format", dest="fmt", choices=FORMATS, default="jsonl")
        parser.add_argument("--out", type=Path, default=None, help="output file (default: stdout; Parquet needs one)")

    def handle(self, *args, queue: str, table: str, fmt: str, out: Path | None, **options) -> None:
        found = ReviewQueue.objects.filter(name=queue).first()
        if found is None:
            raise CommandError(f"no queue named {queue!r}")
        if fmt == "parquet" and out is None:
            raise CommandError("--format parquet writes a binary file: give it --out FILE")
        rows, columns = queue_export_table(queue=found, table=table)

        def to_stdout(chunk: str) -> None:
            self.stdout.write(chunk, ending="")

        n = file_export(fmt=fmt, rows=rows, columns=columns, out=out, stdout=to_stdout)
        if out:
            self.stderr.write(f"{n} rows written to {out}")
        else:
            self.stdout.flush()
