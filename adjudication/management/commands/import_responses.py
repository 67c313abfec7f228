from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from adjudication.ingest.formats import parse_pairing
from adjudication.ingest.harnesses import FORMATS, HARNESS_FORMATS, detect_format, record_count
from adjudication.ingest.services import ImportFailed, progress_bar, responses_import
from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Import model responses (canonical JSONL, lm-eval --log_samples output, lighteval details, "
        "inspect-ai eval logs) into a dataset. "
        "All-or-nothing: a bad line aborts the whole import and names the line and field."
    )
    # The system checks (URLs, admin, API schema) concern serving, not importing: running them
    # imported every view and took 0.5 s of each import.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--dataset", required=True, help="dataset name (created if absent)")
        parser.add_argument(
            "--format",
            dest="fmt",
            choices=FORMATS,
            default=None,
            help="default: told from the file (parquet: lighteval, .eval / inspect JSON log: inspect, else canonical)",
        )
        parser.add_argument(
            "--replace", action="store_true", help="overwrite responses whose content changed under an existing id"
        )
        parser.add_argument("--model", default="", help="model name when the file does not carry it")
        parser.add_argument(
            "--checkpoint", default="", help="checkpoint label (base, rl, …) when the file does not carry it"
        )
        parser.add_argument(
            "--task",
            default=None,
            help="task name (default: lm-eval's samples_<task>_<date>.jsonl, lighteval's "
            "details_<task>_<date>.parquet, inspect's eval.task)",
        )
        parser.add_argument(
            "--pair",
            action="append",
            default=[],
            metavar="CHECKPOINT=MODEL,CHECKPOINT=MODEL",
            help="compare runs of different model names as one family's checkpoints, e.g. "
            "base=Yi-6B,rl=Yi-6B-Chat: each model's rows get that checkpoint (rows naming another are an "
            "error) and comparisons (format share, gains) pair them; the family is named after the first "
            "model (repeatable, one family each)",
        )
        parser.add_argument("--no-progress", action="store_true")

    def handle(
        self,
        *args,
        file: Path,
        dataset: str,
        fmt: str | None,
        replace: bool,
        model: str,
        checkpoint: str,
        task: str | None,
        pair: list[str],
        no_progress: bool,
        **options,
    ) -> None:
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        pairs = [parse_pairing(text) for text in pair]  # a PairingError is the command's error
        fmt = fmt or detect_format(file)
        bar = progress_bar(file, enabled=not no_progress)
        if fmt in HARNESS_FORMATS:
            bar.total = record_count(file, fmt)  # the file's line count means nothing in parquet or zip
        with bar:
            try:
                report = responses_import(
                    path=file,
                    dataset_name=dataset,
                    fmt=fmt,
                    replace=replace,
                    model=model,
                    checkpoint=checkpoint,
                    task=task,
                    pairs=pairs,
                    progress=bar.update,
                )
            except ImportFailed as exc:
                if not exc.nothing_written:
                    raise CommandError(f"import failed: {exc}") from exc
                raise CommandError(f"import aborted, nothing was written: {exc}") from exc
        self.stdout.write(
            f"dataset {report.dataset}: {report.created} new, {report.unchanged} unchanged, {report.replaced} replaced "
            f"({report.runs_created} new runs, {report.questions_created} new questions)"
            + (f"; {_n(report.harness_readings, f'new {fmt} reading')}" if fmt in HARNESS_FORMATS else "")
        )
        for family, members in report.families.items():
            self.stdout.write(
                f"compared as family {family!r}: " + ", ".join(f"{model} ({ckpt})" for ckpt, model in members)
            )
        for merged in report.merged:
            self.stdout.write(
                f"questions merged: {merged.run} has {merged.responses} responses to {merged.questions} distinct "
                "questions (responses under different ids whose question has identical text, options and gold "
                "share one question)"
            )
        review = report.review
        if review.labels or review.final_labels or review.items_reopened:
            self.stdout.write(
                f"review of the replaced texts invalidated (kept as history): {_n(review.labels, 'label')}, "
                f"{_n(review.final_labels, 'final label')}; {_n(review.items_reopened, 'review item')} re-opened"
            )


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
