"""What a bundle holds of a dataset, table by table, and how the rows go back into a database.

Rows are the models' own columns (`values()`: attribute names, foreign keys as `<field>_id`),
primary keys included. A replay loads them into a fresh database with the same keys, so every
identifier a report prints (consensus items are response ids) comes back the same.

Tables, in the order they load (each refers only to the ones before it):
users (id and username only: no password hash, no e-mail), the dataset and its revision counter,
runs, questions, responses, the reader specs that read the dataset or sit on its routing panels,
readings, the LLM endpoints and judges behind the dataset's judge readings, judgements, routing
policies and their panels, review items, queues and their annotators, guidelines, queue items,
labels and final labels (invalidated rows too: they are history), audit runs.

Left out, on purpose: leases (claims in flight), cached analytics reports (recomputed), task
batches (progress of past runs), LLM attempts (the transcripts of judge calls; the judgement keeps
each call's prompt and template hash), users' roles and passwords.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import models

from adjudication.models import (
    AuditRun,
    Dataset,
    DatasetRevision,
    FinalLabel,
    Guidelines,
    Label,
    Question,
    QueueItem,
    ReaderSpec,
    Reading,
    Response,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
    Run,
)

TEXT_HASH_PREFIX = "sha256:"


def _model(key: str) -> type[models.Model]:
    # By name from the app registry: adjudication never imports the judges app (docs/architecture.md),
    # whose tables a bundle still carries. Its rows are read through _default_manager, the model's
    # `objects` (the judges' models declare no other manager).
    return apps.get_model(key)


@dataclass(frozen=True)
class Table:
    key: str  # "app_label.ModelName" of the model, or of the auto-created through table
    rows: Callable[[Dataset], models.QuerySet]
    fields: tuple[str, ...] | None = None  # None: every column

    @property
    def model(self) -> type[models.Model]:
        return _model(self.key)


def _user_ids(dataset: Dataset) -> set[int]:
    ids: set[int] = set()
    ids |= set(Label.all_objects.filter(queue__dataset=dataset).values_list("annotator_id", flat=True))
    ids |= set(FinalLabel.all_objects.filter(item__queue__dataset=dataset).values_list("decided_by_id", flat=True))
    ids |= set(ReviewQueue.objects.filter(dataset=dataset).values_list("created_by_id", flat=True))
    ids |= set(
        ReviewQueue.annotators.through.objects.filter(reviewqueue__dataset=dataset).values_list("user_id", flat=True)
    )
    ids |= set(Guidelines.objects.filter(queue__dataset=dataset).values_list("created_by_id", flat=True))
    ids |= set(AuditRun.objects.filter(dataset=dataset).values_list("created_by_id", flat=True))
    return {i for i in ids if i is not None}


def spec_ids(dataset: Dataset) -> set[int]:
    read = set(Reading.objects.filter(response__dataset=dataset).values_list("reader_spec_id", flat=True).distinct())
    panels = set(
        RoutingPolicy.panel.through.objects.filter(routingpolicy__dataset=dataset).values_list(
            "readerspec_id", flat=True
        )
    )
    return read | panels


def _judge_names(dataset: Dataset) -> set[str]:
    return set(ReaderSpec.objects.filter(id__in=spec_ids(dataset), kind="judge").values_list("name", flat=True))


User = get_user_model()

TABLES: tuple[Table, ...] = (
    Table("auth.User", lambda d: User.objects.filter(id__in=_user_ids(d)), ("id", "username", "is_active")),
    Table("adjudication.Dataset", lambda d: Dataset.objects.filter(id=d.id)),
    Table("adjudication.DatasetRevision", lambda d: DatasetRevision.objects.filter(dataset=d)),
    Table("adjudication.Run", lambda d: Run.objects.filter(dataset=d)),
    Table("adjudication.Question", lambda d: Question.objects.filter(dataset=d)),
    Table("adjudication.Response", lambda d: Response.objects.filter(dataset=d)),
    Table("adjudication.ReaderSpec", lambda d: ReaderSpec.objects.filter(id__in=spec_ids(d))),
    Table("adjudication.Reading", lambda d: Reading.objects.filter(response__dataset=d)),
    Table(
        "judges.Endpoint",
        lambda d: _model("judges.Endpoint")._default_manager.filter(judges__name__in=_judge_names(d)).distinct(),
    ),
    Table("judges.Judge", lambda d: _model("judges.Judge")._default_manager.filter(name__in=_judge_names(d))),
    Table(
        "judges.Judgement",
        lambda d: _model("judges.Judgement")._default_manager.filter(reading__response__dataset=d),
    ),
    Table("adjudication.RoutingPolicy", lambda d: RoutingPolicy.objects.filter(dataset=d)),
    Table(
        "adjudication.RoutingPolicy_panel",
        lambda d: RoutingPolicy.panel.through.objects.filter(routingpolicy__dataset=d),
    ),
    Table("adjudication.ReviewItem", lambda d: ReviewItem.objects.filter(policy__dataset=d)),
    Table("adjudication.ReviewQueue", lambda d: ReviewQueue.objects.filter(dataset=d)),
    Table(
        "adjudication.ReviewQueue_annotators",
        lambda d: ReviewQueue.annotators.through.objects.filter(reviewqueue__dataset=d),
    ),
    Table("adjudication.Guidelines", lambda d: Guidelines.objects.filter(queue__dataset=d)),
    Table("adjudication.QueueItem", lambda d: QueueItem.objects.filter(queue__dataset=d)),
    Table("adjudication.Label", lambda d: Label.all_objects.filter(queue__dataset=d)),
    Table("adjudication.FinalLabel", lambda d: FinalLabel.all_objects.filter(item__queue__dataset=d)),
    Table("adjudication.AuditRun", lambda d: AuditRun.objects.filter(dataset=d)),
)

TABLE_BY_KEY = {t.key: t for t in TABLES}

LEFT_OUT = [
    "leases (claims in flight)",
    "cached analytics reports (a replay recomputes them)",
    "task batches (the progress of past runs)",
    "LLM attempts (the transcripts of judge calls; each judgement keeps its prompt and template hash)",
    "users' passwords, e-mail addresses and roles",
]


def columns(table: Table) -> list[str]:
    """The attribute names a row of the table carries (foreign keys as `<field>_id`)."""
    concrete = [f.attname for f in table.model._meta.concrete_fields]
    return [c for c in concrete if table.fields is None or c in table.fields]


def text_hash(text: str) -> str:
    # surrogatepass: a stored text may hold lone surrogates (model output is kept verbatim).
    return TEXT_HASH_PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# (table, column) -> kept as its hash under --no-text: the texts a team may not be free to share.
# Golds and options stay: audits read the golds, and a bundle without them re-derives nothing.
PRIVATE_TEXT = {
    ("adjudication.Response", "text"),
    ("adjudication.Response", "prompt_text"),
    ("adjudication.Question", "text"),
}


def export_rows(table: Table, dataset: Dataset, *, text: bool) -> Iterator[dict[str, Any]]:
    cols = columns(table)
    query = table.rows(dataset).order_by("pk").values(*cols)
    for row in query.iterator(chunk_size=2000):
        if not text:
            for t, column in PRIVATE_TEXT:
                if t == table.key and row.get(column) is not None:
                    row[column] = text_hash(row[column])
        yield row


@contextmanager
def keep_timestamps() -> Iterator[None]:
    """auto_now / auto_now_add off for the block: a loaded row keeps the times it was made at
    (the newest label per item is found by them), instead of getting the time of the load."""
    touched: list[tuple[models.DateField, bool, bool]] = []
    for table in TABLES:
        for f in table.model._meta.concrete_fields:
            if isinstance(f, models.DateField) and (f.auto_now or f.auto_now_add):
                touched.append((f, f.auto_now, f.auto_now_add))
                f.auto_now = f.auto_now_add = False
    try:
        yield
    finally:
        for f, now, now_add in touched:
            f.auto_now, f.auto_now_add = now, now_add


def build_instance(table: Table, row: dict[str, Any], *, where: str) -> models.Model:
    """A model instance from a bundle row; ValueError naming `where` and the field on a bad value."""
    allowed = set(columns(table))
    unknown = sorted(set(row) - allowed)
    if unknown:
        raise ValueError(f"{where}: field {unknown[0]!r} is not a column of {table.key}")
    missing = sorted(allowed - set(row))
    if missing:
        raise ValueError(f"{where}: field {missing[0]!r} is missing")
    by_attname = {f.attname: f for f in table.model._meta.concrete_fields}
    values: dict[str, Any] = {}
    for name, value in row.items():
        field = by_attname[name]
        if value is not None and isinstance(field, (models.DateTimeField, models.DateField)):
            try:
                value = field.to_python(value)
            except Exception as exc:  # Django raises ValidationError; the message is what matters
                raise ValueError(f"{where}: field {name!r}: not a date-time: {value!r}") from exc
        values[name] = value
    if table.model is User:
        values["password"] = "!"  # unusable: a bundle carries no credentials
    return table.model(**values)
