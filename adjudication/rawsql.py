"""Hand-written SQL for the few hot paths (loading the user, claiming, the item page, labelling),
prepared on PostgreSQL, with values converted exactly as the ORM converts them.

Why: on the review loop, building a five-join ORM query costs 2–3 ms of CPU against 0.3 ms for
the same statement written out, and PostgreSQL took 3–4 ms to plan the item page's join against
0.4 ms to run it (measured on bench/review_bench.py's data). Everything else uses the ORM. Rows
come back through the model fields' own converters (VerbatimTextField's decoding, JSONField's
parsing, aware datetimes on SQLite), so callers get what the ORM gives."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections
from django.db.models import Field

if TYPE_CHECKING:
    from django.db.models import Model
    from django.db.models.expressions import Col

_converters: dict[tuple[str, tuple[int, ...]], list[tuple[Col, list[Callable]]]] = {}
Params = Sequence[Any] | dict[str, Any]


def column_fields(model: type[Model], *names: str) -> list[Field]:
    """The fields `names` of `model`, for the columns of a statement written out: each one a column
    of the model's table (a relation by its forward field, never a reverse one)."""
    fields = []
    for name in names:
        field = model._meta.get_field(name)
        assert isinstance(field, Field), f"{model.__name__}.{name} is not a column"
        fields.append(field)
    return fields


def _converters_for(alias: str, fields: Sequence[Field]) -> list[tuple[Col, list[Callable]]]:
    key = (alias, tuple(id(f) for f in fields))
    cached = _converters.get(key)
    if cached is None:
        connection = connections[alias]
        cached = []
        for field in fields:
            col = field.get_col(field.model._meta.db_table)
            cached.append((col, connection.ops.get_db_converters(col) + field.get_db_converters(connection)))
        _converters[key] = cached
    return cached


def _prepares(connection: Any) -> bool:
    return (
        connection.vendor == "postgresql"
        and not connection.queries_logged
        and getattr(settings, "PREPARED_STATEMENTS", False)
    )


def _run(alias: str, sql: str, params: Params, fetch: Callable[[Any], Any]) -> Any:
    """Execute `sql` and return `fetch(cursor)`, preparing the statement on PostgreSQL.

    Only these statements are prepared, never the ORM's: a prepared statement soon runs a generic
    plan, chosen without the parameters' values. With every statement prepared, an import's
    `external_id IN (...)` of 500 values kept PostgreSQL busy for minutes (bench/review_bench.py set-up).
    Ours are key lookups, where the generic plan is the custom one without the planning.
    They run on a server-binding cursor of their own over Django's connection (same transaction),
    because the ORM's cursors bind client-side and cannot prepare. When queries are being logged
    (DEBUG, assertNumQueries, debug toolbars) they go through Django's cursor unprepared, so that
    they are seen."""
    connection = connections[alias]
    if _prepares(connection):
        import psycopg

        connection.ensure_connection()
        connection.validate_no_broken_transaction()
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(sql, params, prepare=True)
            return fetch(cursor)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return fetch(cursor)


def raw_one(sql: str, params: Params, alias: str = "default") -> tuple | None:
    """The first row of `sql` as the driver gives it (no conversion), or None."""
    return _run(alias, sql, params, lambda cursor: cursor.fetchone())


def raw_all(sql: str, params: Params, alias: str = "default") -> list[tuple]:
    return _run(alias, sql, params, lambda cursor: cursor.fetchall())


def convert_row(row: Sequence[Any], fields: Sequence[Field], alias: str = "default") -> list[Any]:
    connection = connections[alias]
    out = []
    for value, (col, converters) in zip(row, _converters_for(alias, fields)):
        for converter in converters:
            value = converter(value, col, connection)
        out.append(value)
    return out


def fetch_one(sql: str, params: Params, fields: Sequence[Field], alias: str = "default") -> list[Any] | None:
    """One row of `sql`, whose columns are `fields` in order, converted; None when there is none."""
    row = raw_one(sql, params, alias)
    return None if row is None else convert_row(row, fields, alias)


def fetch_all(sql: str, params: Params, fields: Sequence[Field], alias: str = "default") -> list[list[Any]]:
    return [convert_row(row, fields, alias) for row in raw_all(sql, params, alias)]
