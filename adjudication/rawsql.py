"""Hand-written SQL for the few hot paths (loading the user, claiming, the item page, labelling),
prepared on PostgreSQL, with values converted exactly as the ORM converts them.

Why: on the review loop, building a five-join ORM query costs 2–3 ms of CPU against 0.3 ms for
the same statement written out, and PostgreSQL took 3–4 ms to plan the item page's join against
0.4 ms to run it (measured on bench/review_bench.py's data). Everything else uses the ORM. Rows
come back through the model fields' own converters (VerbatimTextField's decoding, JSONField's
parsing, aware datetimes on SQLite), so callers get what the ORM gives."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from django.db.models import Field

_converters: dict[tuple[str, tuple[int, ...]], list[list[Callable]]] = {}


def _converters_for(alias: str, fields: Sequence[Field]) -> list[tuple[Any, list[Callable]]]:
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


def execute(cursor: Any, sql: str, params: Sequence[Any] | dict[str, Any]) -> None:
    """cursor.execute, preparing the statement on PostgreSQL when parameters are bound server-side.

    Only these statements are prepared, never the ORM's: a prepared statement soon runs a generic
    plan, chosen without the parameters' values. With every statement prepared, an import's
    `external_id IN (...)` of 500 values kept PostgreSQL busy for minutes (bench/review_bench.py set-up).
    Ours are key lookups, where the generic plan is the custom one without the planning.
    When queries are being logged (DEBUG, assertNumQueries, debug toolbars) they go through
    Django's cursor unprepared, so that they are seen."""
    connection = cursor.db
    if (connection.vendor == "postgresql" and not connection.queries_logged
            and connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")):
        connection.validate_no_broken_transaction()
        with connection.wrap_database_errors:
            cursor.cursor.execute(sql, params, prepare=True)
    else:
        cursor.execute(sql, params)


def convert_row(row: Sequence[Any], fields: Sequence[Field], alias: str = "default") -> list[Any]:
    connection = connections[alias]
    out = []
    for value, (col, converters) in zip(row, _converters_for(alias, fields)):
        for converter in converters:
            value = converter(value, col, connection)
        out.append(value)
    return out


def fetch_one(sql: str, params: Sequence[Any] | dict[str, Any], fields: Sequence[Field],
              alias: str = "default") -> list[Any] | None:
    """One row of `sql`, whose columns are `fields` in order, converted; None when there is none."""
    with connections[alias].cursor() as cursor:
        execute(cursor, sql, params)
        row = cursor.fetchone()
    return None if row is None else convert_row(row, fields, alias)


def fetch_all(sql: str, params: Sequence[Any] | dict[str, Any], fields: Sequence[Field],
              alias: str = "default") -> list[list[Any]]:
    with connections[alias].cursor() as cursor:
        execute(cursor, sql, params)
        rows = cursor.fetchall()
    return [convert_row(row, fields, alias) for row in rows]
