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
the prompt it sent, its hash and its template's hash), users' roles and passwords.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from adjudication.fields import VerbatimTextField, is_plain_text
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
from adjudication.validators import validate_name

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
    # Nullable columns added after bundles of this version were first written: a row of an older
    # bundle may lack them, and loads with null there (the column's "not recorded then").
    added_later: tuple[str, ...] = ()

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
        lambda d: (
            _model("judges.Endpoint")
            ._default_manager.filter(
                Q(judges__name__in=_judge_names(d)) | Q(judges__versions__name__in=_judge_names(d))
            )
            .distinct()
        ),
    ),
    # A later version's family is its first judge, which a bundle needs even without readings here.
    Table(
        "judges.Judge",
        lambda d: (
            _model("judges.Judge")
            ._default_manager.filter(Q(name__in=_judge_names(d)) | Q(versions__name__in=_judge_names(d)))
            .distinct()
        ),
    ),
    Table(
        "judges.Judgement",
        lambda d: _model("judges.Judgement")._default_manager.filter(reading__response__dataset=d),
        added_later=("messages_sent",),
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
    "LLM attempts (the transcripts of judge calls; each judgement keeps the prompt it sent, and its hash)",
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
    # the judge's prompt as sent: it carries the question and the response
    ("judges.Judgement", "messages_sent"),
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
    """A model instance from a bundle row; ValueError naming `where` and the field on a bad value.
    Every column is checked against its model field (type, null, range, length, choices) before an
    instance is made: a bundle is untrusted, and a value the database refused would end the load
    with the database's words instead of the member, the line and the field."""
    allowed = set(columns(table))
    unknown = sorted(set(row) - allowed)
    if unknown:
        raise ValueError(f"{where}: field {unknown[0][:100]!r} is not a column of {table.key}")
    missing = sorted(allowed - set(row) - set(table.added_later))
    if missing:
        raise ValueError(f"{where}: field {missing[0]!r} is missing")
    row = {**dict.fromkeys(table.added_later), **row}
    by_attname = {f.attname: f for f in table.model._meta.concrete_fields}
    values = {
        name: checked_value(by_attname[name], value, where=f"{where}: field {name!r}") for name, value in row.items()
    }
    if table.model is User:
        values["password"] = "!"  # unusable: a bundle carries no credentials
    return table.model(**values)


# The validators that state a column's type and range (the database's integer bounds, a model's own
# bounds, a length), and the one-printable-line rule for names: a name is printed by commands and
# shown in pages, so a bundle's control characters (a terminal's escape sequences) are refused as an
# import's are. Others (a username's characters) judge how a value was entered, which a bundle
# replays rather than re-judges.
_RANGE_VALIDATORS = (MinValueValidator, MaxValueValidator, MaxLengthValidator)


def _checked_by_a_bundle(validator: Any) -> bool:
    return isinstance(validator, _RANGE_VALIDATORS) or validator is validate_name


def checked_value(field: models.Field, value: Any, *, where: str) -> Any:
    """The column's value as the model field takes it; ValueError naming `where` otherwise."""
    if value is None:
        if not field.null:
            raise ValueError(f"{where}: must not be null")
        return None
    if isinstance(field, models.JSONField):
        return value  # any JSON (its depth is bounded when the line is parsed)
    if isinstance(field, models.ForeignKey):  # OneToOneField too
        field = field.target_field  # a key: the type and range of the row it points at
    if isinstance(field, models.BooleanField):
        if not isinstance(value, bool):
            raise ValueError(f"{where}: must be true or false, not {_short(value)}")
    elif isinstance(field, (models.IntegerField, models.AutoField)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{where}: must be an integer, not {_short(value)}")
    elif isinstance(field, models.FloatField):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise ValueError(f"{where}: must be a finite number, not {_short(value)}")
        value = float(value)
    elif isinstance(field, (models.DateTimeField, models.DateField)):
        parsed = None
        if isinstance(value, str):
            try:
                parsed = field.to_python(value)
            except Exception:  # noqa: BLE001 - Django raises ValidationError (or ValueError); the message is ours
                parsed = None
        if parsed is None:
            raise ValueError(f"{where}: not a date-time: {_short(value)}")
        value = parsed
    elif isinstance(field, (models.CharField, models.TextField)):
        if not isinstance(value, str):
            raise ValueError(f"{where}: must be a string, not {_short(value)}")
        if not isinstance(field, VerbatimTextField) and not is_plain_text(value):
            raise ValueError(f"{where}: holds NUL or a lone surrogate, which only model text may hold")
    else:  # pragma: no cover - a column type the tables above do not have
        raise ValueError(f"{where}: a {type(field).__name__} column cannot be loaded from a bundle")
    if field.choices and value not in {key for key, _label in field.flatchoices}:
        raise ValueError(f"{where}: {_short(value)} is not one of {', '.join(str(k) for k, _ in field.flatchoices)}")
    for validator in field.validators:
        if _checked_by_a_bundle(validator):
            try:
                validator(value)
            except ValidationError as exc:
                raise ValueError(f"{where}: {' '.join(exc.messages)}") from None
    return value


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True) if isinstance(value, (str, int, float, bool)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."
