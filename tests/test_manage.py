"""`manage.py` itself: a database that fails under any command is an error message, not a traceback."""

from __future__ import annotations

import os
import socket

import pytest

from .conftest import manage


def _refusing_database_url() -> str:
    # A port nothing listens on: bound, never listened on, so a connection is refused at once.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"postgres://postgres@127.0.0.1:{port}/nowhere"


@pytest.mark.system  # child processes
@pytest.mark.parametrize(
    "argv",
    [
        ("run_readers", "--dataset", "any"),
        ("agreement", "--dataset", "any"),
        ("export_labels", "--queue", "any"),
    ],
    ids=lambda argv: argv[0],
)
def test_an_unreachable_database_is_said_as_an_error_with_what_to_do_not_a_traceback(argv):
    env = {**os.environ, "DATABASE_URL": _refusing_database_url(), "SECRET_KEY": "test-only"}
    env.pop("CELERY_BROKER_URL", None)
    done = manage(*argv, env=env, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"manage.py {argv[0]}: the database failed (connection failed" in done.stderr
    assert "then run the command again" in done.stderr


@pytest.mark.system  # a child process
def test_traceback_asks_for_django_s_own_traceback():
    env = {**os.environ, "DATABASE_URL": _refusing_database_url(), "SECRET_KEY": "test-only"}
    env.pop("CELERY_BROKER_URL", None)
    done = manage("run_readers", "--dataset", "any", "--traceback", env=env, timeout=120)
    assert done.returncode != 0 and "Traceback (most recent call last)" in done.stderr
    assert "OperationalError" in done.stderr
