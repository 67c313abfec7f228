"""The exceptions that mean the database itself failed (connection refused or lost, server shutting
down), not the data: commands say them as errors with what to do, never as a traceback."""

from __future__ import annotations


def database_failures() -> tuple[type[Exception], ...]:
    from django.db import InterfaceError, OperationalError

    failures: list[type[Exception]] = [OperationalError, InterfaceError]
    try:  # the COPY path (ingest/staging.py) talks to psycopg directly, whose errors Django does not wrap
        import psycopg
    except ImportError:  # the embedded default needs no PostgreSQL driver
        pass
    else:
        failures += [psycopg.OperationalError, psycopg.InterfaceError]
    return tuple(failures)
