"""Importing responses: all-or-nothing, idempotent, streaming."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from django.db import connection, models, transaction

from adjudication.database_failures import database_failures
from adjudication.ingest.formats import Pairing, Row, RowError, count_lines, identity_problem
from adjudication.ingest.harness_readings import harness_readings_store
from adjudication.ingest.harnesses import HARNESS_FORMATS, detect_format, iter_rows
from adjudication.ingest.replaced import Replaced, replaced_responses_invalidate
from adjudication.ingest.staging import staged_rows_import
from adjudication.models import Dataset, Question, Response, Run
from adjudication.review.queues.services import InvalidationReport
from adjudication.revisions import dataset_changed
from adjudication.validators import name_problem

BATCH = 1000


def _max_length(model: type[models.Model], field_name: str) -> int:
    field = model._meta.get_field(field_name)
    # Each identity field is a bounded column of its own model (a schema fact, not input).
    assert isinstance(field, models.Field) and field.max_length is not None
    return field.max_length


# What each identity field of a row may hold: the max_length of the column it is stored in.
ROW_MAX_LENGTHS: dict[str, int] = {
    "id": _max_length(Response, "external_id"),
    "model": _max_length(Run, "model"),
    "checkpoint": _max_length(Run, "checkpoint"),
    "benchmark": min(_max_length(Run, "benchmark"), _max_length(Question, "benchmark")),
    "prompt": _max_length(Run, "prompt"),
}


class ImportFailed(Exception):
    """The import was rolled back; the message names file, line and field. `nothing_written` is
    False only where the database itself cannot say (its connection lost while committing)."""

    def __init__(self, message: str, *, nothing_written: bool = True) -> None:
        super().__init__(message)
        self.nothing_written = nothing_written


@dataclass(frozen=True)
class MergedQuestions:
    """One run whose responses answer fewer distinct questions than there are responses."""

    run: str
    responses: int
    questions: int

    @property
    def merged(self) -> int:
        return self.responses - self.questions


@dataclass
class ImportReport:
    dataset: str
    created: int = 0
    unchanged: int = 0
    replaced: int = 0
    runs_created: int = 0
    questions_created: int = 0
    by_run: Counter = field(default_factory=Counter)
    # What review had decided about replaced texts, now invalidated (ingest.replaced).
    review: InvalidationReport = field(default_factory=InvalidationReport)
    # lighteval / inspect-ai logs: the harness's own readings written (ingest/harness_readings.py).
    harness_readings: int = 0
    # Families declared with --pair: family -> [(checkpoint, model)].
    families: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # Runs of the dataset with more responses than distinct questions: responses under different
    # ids whose question (text, options, gold, benchmark) is identical share one Question.
    merged: list[MergedQuestions] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.created + self.unchanged + self.replaced


def responses_import(
    *,
    path: Path,
    dataset_name: str,
    fmt: str | None = "canonical",
    replace: bool = False,
    model: str = "",
    checkpoint: str = "",
    task: str | None = None,
    pairs: Sequence[Pairing] = (),
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import a file into a dataset in one transaction. Any bad line rolls everything back.
    `fmt=None`: the format is told from the file (ingest.harnesses.detect_format). `pairs`
    (--pair): each pairing's models get their declared checkpoint and are compared as one family."""
    _check_names(dataset_name=dataset_name, model=model, checkpoint=checkpoint, task=task)
    checkpoint_of = _checkpoints_of_models(pairs)
    fmt = fmt or detect_format(path)
    # A callable rather than the rows themselves: the PostgreSQL path may parse in a child process,
    # and finds repeated ids in the database (see staging.py) rather than in a set of every id.
    rows = partial(
        iter_rows,
        path,
        fmt=fmt,
        model=model,
        checkpoint=checkpoint,
        task=task,
        max_lengths=ROW_MAX_LENGTHS,
        duplicates=not copies_on(connection.vendor),
        pairs=checkpoint_of,
    )
    committing = False
    try:
        with transaction.atomic():
            dataset, _ = Dataset.objects.get_or_create(name=dataset_name)
            # Imports into one dataset take turns. Two that share questions insert the same unique rows
            # (question fingerprints, run identities): PostgreSQL makes the second wait for the first and
            # then fail, and two multi-batch imports meeting shared questions in opposite orders deadlock
            # (each holds rows the other inserts next). Holding the dataset row makes the second wait,
            # then see all the first committed. NO KEY: rows that merely reference the dataset (audits,
            # policies) are still created meanwhile.
            dataset = Dataset.objects.select_for_update(no_key=True).get(pk=dataset.pk)
            report = _import_rows(dataset, rows, path=path, replace=replace, progress=progress)
            report.families = _families_declare(dataset=dataset, pairs=pairs)
            report.merged = _merged_questions(dataset=dataset)
            if fmt in HARNESS_FORMATS:
                report.harness_readings = harness_readings_store(
                    dataset=dataset, path=path, fmt=fmt, model=model, checkpoint=checkpoint, task=task
                )
            if report.created or report.replaced or report.harness_readings:
                # Once per import, last: the analytics of this dataset are out of date from its commit on.
                dataset_changed(dataset_id=dataset.pk)
            committing = True
        return report
    except RowError as exc:
        raise ImportFailed(str(exc)) from exc
    except database_failures() as exc:
        raise _database_failed(exc, committing=committing) from exc


def _checkpoints_of_models(pairs: Sequence[Pairing]) -> dict[str, str]:
    """{model: checkpoint} over every pairing; a model in two pairings is refused."""
    out: dict[str, str] = {}
    for pairing in pairs:
        for checkpoint, model in pairing.checkpoints:
            if model in out:
                raise ImportFailed(f"--pair: the model {model!r} is named in two pairs")
            out[model] = checkpoint
    return out


def _families_declare(*, dataset: Dataset, pairs: Sequence[Pairing]) -> dict[str, list[tuple[str, str]]]:
    """Each pairing's runs (every benchmark and prompt of its models) join its family; a model no
    run of the dataset carries is refused (a misspelt name would silently pair nothing)."""
    families: dict[str, list[tuple[str, str]]] = {}
    for pairing in pairs:
        for checkpoint, model in pairing.checkpoints:
            if not Run.objects.filter(dataset=dataset, model=model, checkpoint=checkpoint).exists():
                known = sorted(set(dataset.runs.values_list("model", flat=True)))
                raise ImportFailed(
                    f"--pair: no response of model {model!r} at checkpoint {checkpoint!r} in dataset "
                    f"{dataset.name!r} (its models: {', '.join(map(repr, known))})"
                )
        Run.objects.filter(dataset=dataset, model__in=pairing.models).update(family=pairing.family)
        families[pairing.family] = list(pairing.checkpoints)
    return families


def _merged_questions(*, dataset: Dataset) -> list[MergedQuestions]:
    """The dataset's runs whose responses answer fewer distinct questions than there are responses:
    rows under different ids with identical question content share one Question (a benchmark's
    duplicate items), which an import says rather than leaving to be found."""
    rows = (
        Response.objects.filter(dataset=dataset)
        .values("run_id")
        .annotate(n=models.Count("id"), q=models.Count("question_id", distinct=True))
        .filter(n__gt=models.F("q"))
        .order_by("run_id")
        .values_list("run_id", "n", "q")
    )
    found = list(rows)
    names = {run.pk: str(run) for run in Run.objects.filter(pk__in=[rid for rid, _, _ in found])}
    return [MergedQuestions(run=names[rid], responses=n, questions=q) for rid, n, q in found]


def _database_failed(exc: Exception, *, committing: bool) -> ImportFailed:
    """A failure of the database itself (connection lost, server shutting down, disk full, a
    deadlock), not of the file: said as an import error, since a traceback reads as a bug."""
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    retry = "run the same command again once the database is reachable"
    if committing:
        # The COMMIT was sent and no answer came back: only the server knows whether it happened.
        return ImportFailed(
            f"the database connection failed while committing the import ({reason}): it may or may not have "
            f"been saved; {retry} (re-importing the same file adds only what is missing)",
            nothing_written=False,
        )
    return ImportFailed(
        f"the database connection failed during the import ({reason}); the transaction was rolled back; {retry}"
    )


def _check_names(*, dataset_name: str, model: str, checkpoint: str, task: str | None) -> None:
    """The names given on the command line must fit their columns like the names in the file."""
    if not dataset_name.strip():
        raise ImportFailed("--dataset: a dataset name must not be blank")
    # The dataset's name is shown in pages, commands' output and file names: the model's own rule
    # (validate_name), which get_or_create below does not run.
    problem = identity_problem(dataset_name) or name_problem(dataset_name)
    if problem:
        raise ImportFailed(f"--dataset: the name {_preview(dataset_name)} {problem}")
    for option, value, max_length in (
        ("dataset", dataset_name, _max_length(Dataset, "name")),
        ("model", model, ROW_MAX_LENGTHS["model"]),
        ("checkpoint", checkpoint, ROW_MAX_LENGTHS["checkpoint"]),
        ("task", task or "", ROW_MAX_LENGTHS["benchmark"]),
    ):
        problem = identity_problem(value, max_length)
        if problem:
            raise ImportFailed(f"--{option}: the name {_preview(value)} {problem}")


def _preview(value: str) -> str:
    # Escaped: a name that is refused may hold the very characters a terminal would act on.
    return ascii(value[:40] + ("…" if len(value) > 40 else ""))


class _Importer:
    def __init__(self, dataset: Dataset, path: Path, replace: bool) -> None:
        self.dataset, self.path, self.replace = dataset, path, replace
        self.runs: dict[tuple[str, str, str, str], Run] = {
            (r.model, r.checkpoint, r.benchmark, r.prompt): r for r in dataset.runs.all()
        }
        self.question_ids: dict[str, int] = {}
        self.report = ImportReport(dataset=dataset.name)

    def run_for(self, row: Row) -> Run:
        key = (row.model, row.checkpoint, row.benchmark, row.prompt)
        run = self.runs.get(key)
        if run is None:
            run = Run.objects.create(
                dataset=self.dataset,
                model=row.model,
                checkpoint=row.checkpoint,
                benchmark=row.benchmark,
                prompt=row.prompt,
            )
            self.runs[key] = run
            self.report.runs_created += 1
        return run

    def resolve_questions(self, batch: list[Row]) -> None:
        wanted = {r.question_fingerprint: r for r in batch if r.question_fingerprint not in self.question_ids}
        if not wanted:
            return
        for fp, qid in Question.objects.filter(dataset=self.dataset, fingerprint__in=list(wanted)).values_list(
            "fingerprint", "id"
        ):
            self.question_ids[fp] = qid
        new = [
            Question(
                dataset=self.dataset,
                benchmark=r.benchmark,
                text=r.question,
                choices=list(r.choices),
                gold=r.gold,
                meta={},
                fingerprint=fp,
            )
            for fp, r in wanted.items()
            if fp not in self.question_ids
        ]
        if new:
            Question.objects.bulk_create(new, batch_size=BATCH)
            # bulk_create does not return ids on every backend; fetch them back by fingerprint.
            fps = [q.fingerprint for q in new]
            for fp, qid in Question.objects.filter(dataset=self.dataset, fingerprint__in=fps).values_list(
                "fingerprint", "id"
            ):
                self.question_ids[fp] = qid
            self.report.questions_created += len(new)

    def flush(self, batch: list[Row]) -> None:
        if not batch:
            return
        self.resolve_questions(batch)
        existing = {
            ext: (pk, row_hash)
            for ext, pk, row_hash in Response.objects.filter(
                dataset=self.dataset, external_id__in=[r.id for r in batch]
            ).values_list("external_id", "id", "row_hash")
        }
        to_create: list[Response] = []
        for row in batch:
            run = self.run_for(row)
            if row.id in existing:
                pk, old_hash = existing[row.id]
                if old_hash == row.row_hash:
                    self.report.unchanged += 1
                    continue
                if not self.replace:
                    raise RowError(
                        self.path,
                        row.line,
                        "id",
                        f"response {row.id!r} already exists in dataset {self.dataset.name!r} with different "
                        "content; pass --replace to overwrite it (its readings are then discarded)",
                    )
                self._replace(pk, row, run)
                continue
            to_create.append(
                Response(
                    dataset=self.dataset,
                    run=run,
                    question_id=self.question_ids[row.question_fingerprint],
                    external_id=row.id,
                    text=row.response,
                    prompt_text=row.prompt_text,
                    content_hash=row.content_hash,
                    row_hash=row.row_hash,
                    meta=row.meta,
                )
            )
            self.report.by_run[str(run)] += 1
        if to_create:
            Response.objects.bulk_create(to_create, batch_size=BATCH)
            self.report.created += len(to_create)

    def _replace(self, pk: int, row: Row, run: Run) -> None:
        question_id = self.question_ids[row.question_fingerprint]
        old_hash, old_question = Response.objects.filter(pk=pk).values_list("content_hash", "question_id").get()
        Response.objects.filter(pk=pk).update(
            run=run,
            question_id=question_id,
            text=row.response,
            prompt_text=row.prompt_text,
            content_hash=row.content_hash,
            row_hash=row.row_hash,
            meta=row.meta,
        )
        replaced = Replaced(pk, text_changed=old_hash != row.content_hash, question_changed=old_question != question_id)
        replaced_responses_invalidate(replaced=[replaced], review=self.report.review)
        self.report.replaced += 1


def copies_on(vendor: str) -> bool:
    """Whether imports into a database of this vendor go through COPY (PostgreSQL) or the ORM."""
    return vendor == "postgresql"


def _import_rows(
    dataset: Dataset,
    rows: Callable[[], Iterable[Row]],
    *,
    path: Path,
    replace: bool,
    progress: Callable[[int], None] | None,
) -> ImportReport:
    if copies_on(connection.vendor):
        # COPY, a staging table and a set-based merge (adjudication/ingest/staging.py): the same
        # rows, checks and outcome at a fraction of the cost. Other backends take the ORM path below.
        report = ImportReport(dataset=dataset.name)
        staged_rows_import(dataset=dataset, rows=rows, path=path, replace=replace, report=report, progress=progress)
        return report
    importer = _Importer(dataset, path, replace)
    batch: list[Row] = []
    seen_any = False
    for row in rows():
        seen_any = True
        batch.append(row)
        if len(batch) >= BATCH:
            importer.flush(batch)
            if progress:
                progress(len(batch))
            batch = []
    if not seen_any:
        # An empty file is almost always a failed export upstream; importing it would only create an empty dataset.
        raise RowError(path, 0, None, "no rows to import: the file is empty or holds only blank lines")
    importer.flush(batch)
    if progress and batch:
        progress(len(batch))
    return importer.report


def progress_bar(path: Path, *, enabled: bool = True):
    """A tqdm bar on stderr sized by the file's line count (a cheap streaming pre-pass)."""
    from tqdm import tqdm

    try:
        total = count_lines(path) if enabled else None
    except OSError:
        total = None  # the import itself reports an unreadable file, with its reason
    return tqdm(total=total, unit="rows", file=sys.stderr, disable=not enabled, desc="import", leave=False)
