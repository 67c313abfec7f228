"""The database connection dies during an import (issue 32, item 11): the command says so as an
error (what failed, whether anything was written, how to retry), never with a traceback.

The connection is really lost: its server process is ended with pg_terminate_backend from a second
connection, as an administrator or a restarting server would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management.base import CommandError
from django.db import connection

from adjudication.models import Dataset, Response

from ..conftest import jsonl_writer, mc_row, run_command

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROWS = 6000  # two COPY chunks (5,000 rows each): the connection dies between them


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("pg_terminate_backend is PostgreSQL's")


def _terminate_this_connection() -> None:
    """End this thread's database session from another connection, and wait until it is gone."""
    import psycopg

    pid = connection.connection.info.backend_pid
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])


class _KillingBar:
    """The command's progress bar, ending the import's session when the first chunk is written."""

    total: int | None = None

    def __enter__(self) -> _KillingBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def update(self, count: int) -> None:
        _terminate_this_connection()


@pytest.fixture
def big_file(tmp_path: Path) -> Path:
    return jsonl_writer(tmp_path)([mc_row(i) for i in range(ROWS)])


def _refusal(path: Path) -> str:
    with pytest.raises(CommandError) as err:
        run_command("import_responses", str(path), dataset="d", no_progress=True)
    connection.close()  # the test's own next query opens a fresh session
    return str(err.value)


def test_a_connection_lost_mid_import_is_an_error_saying_nothing_was_written_and_how_to_retry(big_file, monkeypatch):
    monkeypatch.setattr("adjudication.management.commands.import_responses.progress_bar", lambda *a, **k: _KillingBar())
    message = _refusal(big_file)
    assert message.startswith("import aborted, nothing was written: ")
    assert "the database connection failed" in message and "terminating connection" in message
    assert "run the same command again" in message
    assert not Dataset.objects.exists() and not Response.objects.exists()
    # And the retry it suggests works.
    monkeypatch.undo()
    run_command("import_responses", str(big_file), dataset="d", no_progress=True)
    assert Response.objects.count() == ROWS


def test_a_connection_lost_at_commit_says_the_outcome_is_unknown_and_that_a_retry_is_safe(big_file, monkeypatch):
    real_commit: Callable[[], Any] = connection.commit

    def commit() -> None:
        _terminate_this_connection()
        real_commit()

    monkeypatch.setattr(connection, "commit", commit)
    message = _refusal(big_file)
    monkeypatch.undo()
    assert "nothing was written" not in message
    assert "while committing" in message and "may or may not have been saved" in message
    assert "run the same command again" in message
    run_command("import_responses", str(big_file), dataset="d", no_progress=True)
    assert Response.objects.count() == ROWS
