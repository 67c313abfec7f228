"""Fixture base for the review tests: a dataset whose readers disagree, a queue, and users."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group, User

from adjudication.models import Dataset, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.review.services import queue_create

from ..conftest import mc_row, reading_at, run_command


def make_user(name: str, *roles: str) -> User:
    user = User.objects.create_user(name, password="pw-" + name + "-123")
    for role in roles:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def disputed_dataset(write_jsonl, n: int, name: str = "rv") -> Dataset:
    """n MC responses, each read by two readers that disagree (B vs C), without running readers."""
    rows = [mc_row(i, response=f"Reasoning {i}. The answer is B. Then again \\boxed{{C}}") for i in range(n)]
    run_command("import_responses", str(write_jsonl(rows, name=f"{name}.jsonl")), dataset=name, no_progress=True)
    a, b = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="boxed")
    readings = []
    for response in Response.objects.filter(dataset__name=name):
        readings += [
            reading_at(response, a, "B", at=response.text.index("B."), verdict="correct"),
            reading_at(response, b, "C", at=response.text.index("{C}") + 1, verdict="incorrect"),
        ]
    Reading.objects.bulk_create(readings)
    return Dataset.objects.get(name=name)


@pytest.fixture
def queue(db, write_jsonl):
    ds = disputed_dataset(write_jsonl, 6)
    return queue_create(dataset=ds, name="q", overlap=2, lease_seconds=600)


@pytest.fixture
def plain_live_server(transactional_db, settings) -> Iterator[str]:
    """A live server started for this test, after the suite's plain-HTTP settings are in place.

    pytest-django's `live_server` is session-scoped: its handler loads the middleware once, and
    SecurityMiddleware reads SECURE_SSL_REDIRECT (on by default with a PostgreSQL URL) at that
    moment, before any per-test settings, so Chromium would be redirected to https. This server's
    handler is built after `_plain_http` turned the redirect off.
    """
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.test.testcases import LiveServerThread

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "127.0.0.1"]
    settings.DEBUG = False
    thread = LiveServerThread("127.0.0.1", StaticFilesHandler, port=0)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield f"http://127.0.0.1:{thread.port}"
    finally:
        thread.terminate()
        # Request threads (daemons, one per keep-alive connection) close their database connection
        # when their socket closes; wait for them so the test database can be dropped afterwards.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
            "process_request_thread" in t.name and t.is_alive() for t in threading.enumerate()
        ):
            time.sleep(0.05)
