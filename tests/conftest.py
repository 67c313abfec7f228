"""One readable fixture base for the whole suite.

The suite runs against the real PostgreSQL and Redis (`make test` sets DATABASE_URL and
CELERY_BROKER_URL); tests that spawn processes (workers, the quickstart, `read`) get those URLs
from `service_env`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from time import time_ns
from typing import TYPE_CHECKING, Any

import pytest
from django.apps import apps
from django.core.management import call_command

if TYPE_CHECKING:  # the reader tests run without Django (`-p no:django`): no model import at load time
    from adjudication.models import ReaderSpec, Reading, Response

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _plain_http(request) -> None:
    """The suite talks plain HTTP to Django's test client and to loopback servers; HTTPS redirects
    and Secure cookies (production defaults with a PostgreSQL URL) are tested in test_settings.
    (Reader tests also run without Django, `-p no:django`: then there is nothing to set.)"""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    settings = request.getfixturevalue("settings")
    settings.SECURE_SSL_REDIRECT = False
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    settings.SECURE_HSTS_SECONDS = 0  # a browser that saw HSTS on localhost would refuse plain HTTP


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or a clean skip when that folder is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, blank lines skipped."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def lm_eval_sample(doc_id: int = 0, **overrides: Any) -> dict[str, Any]:
    """One line of an lm-eval samples file (multiple choice, answer B), with `overrides` applied."""
    sample: dict[str, Any] = {
        "doc_id": doc_id,
        "doc": {"question": f"Question {doc_id}?", "choices": ["a", "b", "c"], "answer": 1},
        "target": 1,
        "resps": [["The answer is (B)."]],
        "filtered_resps": ["B"],
        "prompt_hash": "p",
    }
    sample.update(overrides)
    return sample


def mc_row(i: int = 0, **overrides: Any) -> dict[str, Any]:
    row = {
        "id": f"mc-{i}",
        "question": f"Which sociologist wrote question {i}?",
        "choices": ["Durkheim", "Weber", "Merton", "Parsons"],
        "gold": "B",
        "response": f"<think>Weber fits best.</think>\nThe answer is (B). [{i}]",
        "model": "orca-7b",
        "checkpoint": "base",
        "benchmark": "mmlu",
        "prompt": "cot-v1",
    }
    row.update(overrides)
    return row


def math_row(i: int = 0, **overrides: Any) -> dict[str, Any]:
    row = {
        "id": f"math-{i}",
        "question": f"Compute {i} + 72 - {i}.",
        "gold": "72",
        "response": "Adding and subtracting cancels, so \\boxed{72}.",
        "model": "orca-7b",
        "checkpoint": "rl",
        "benchmark": "math",
        "prompt": "cot-v1",
    }
    row.update(overrides)
    return row


def reading_at(response: Response, spec: ReaderSpec, answer: str, *, at: int, verdict: str, **fields: Any) -> Reading:
    """An unsaved reading of `answer` as found at offset `at` of the response's text (the span covers
    the answer); its normalized form is the answer unless `fields` says otherwise."""
    from adjudication.models import Reading

    fields.setdefault("normalized", answer)
    return Reading(
        response=response,
        reader_spec=spec,
        answer=answer,
        verdict=verdict,
        span_start=at,
        span_end=at + len(answer),
        **fields,
    )


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[..., Path]:
    """write_jsonl(rows, name="in.jsonl") -> path; a row may be a dict or a raw line string."""

    def write(rows: list[Any], name: str = "in.jsonl") -> Path:
        path = tmp_path / name
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
        return path

    return write


def project_table_counts() -> dict[str, int]:
    """Row counts of every table the project owns: 'the database is unchanged' means these are equal."""
    return {
        m._meta.label: m._default_manager.count()
        for m in apps.get_models()
        if m._meta.app_label in {"adjudication", "judges"} and not m._meta.proxy
    }


def run_command(*args: str, **options: Any) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO(), **options)
    return out.getvalue()


@pytest.fixture
def service_env(tmp_path: Path) -> dict[str, str]:
    """Environment for child processes (manage.py, celery) pointing at this test's database."""
    from django.db import connection

    env = dict(os.environ)
    settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("postgresql"):
        user = settings_dict.get("USER") or ""
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or 5432
        env["DATABASE_URL"] = f"postgres://{user}@{host}:{port}/{settings_dict['NAME']}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{settings_dict['NAME']}"
    env.setdefault("SECRET_KEY", "test-only")
    env.update(SECURE_SSL_REDIRECT="0", SESSION_COOKIE_SECURE="0", CSRF_COOKIE_SECURE="0", SECURE_HSTS_SECONDS="0")
    env["PYTHONPATH"] = str(ROOT)
    return env


def manage(*args: str, env: dict[str, str], timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def start_worker(env: dict[str, str], log_path: Path, *, concurrency: int = 2) -> subprocess.Popen:
    """A real Celery worker (prefork) in its own process group, so a test can kill it whole."""
    from config.celery import worker_argv

    # The worker holds its own copy of the descriptor: ours can be closed once it has started.
    with open(log_path, "a") as log:
        return subprocess.Popen(
            [
                *worker_argv(queues="readers,default,llm", concurrency=concurrency, loglevel="INFO"),
                *("--without-heartbeat", "-n", f"test-{os.getpid()}-{time_ns()}@%h"),
            ],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_worker(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass


@pytest.fixture
def eager():
    """Run tasks inline for this test, as the embedded default does. Only the Celery app's own flag
    is touched: Django settings feed app.conf lazily, so overriding them here could leak into the
    first read of app.conf."""
    from config.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    try:
        yield app
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = before


@pytest.fixture
def broker():
    """The Celery app with a real broker, its queues purged before and after the test."""
    from config.celery import app

    if app.conf.task_always_eager:
        if os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL"):
            pytest.fail("a broker is configured but Celery runs eagerly: a test leaked task_always_eager")
        pytest.skip("no broker configured (CELERY_BROKER_URL); run the suite with `make test`")
    app.control.purge()
    yield app
    app.control.purge()


@pytest.fixture
def celery_worker(service_env: dict[str, str], broker, tmp_path: Path):
    """A real Celery worker process (prefork, 2 children) on Redis, reading this test's database.

    Needs `transactional_db`: the worker is another process and only sees committed rows.
    """
    proc = start_worker(service_env, tmp_path / "worker.log")
    try:
        yield proc
    finally:
        stop_worker(proc)


class FakeClock:
    """Stands in for a module's `time` module (monkeypatch the module's `time` name): `sleep` returns
    at once, advancing `monotonic` by what was asked, and is recorded; `on_sleep(n)` runs after the
    n-th sleep, to change the world between two polls. A test then asserts how many waits a loop
    made, not how long it took. Past `max_sleeps` a sleep fails: a loop that never ends fails fast."""

    def __init__(self, on_sleep: Callable[[int], None] | None = None, max_sleeps: int = 10_000) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep
        self.max_sleeps = max_sleeps

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if len(self.sleeps) >= self.max_sleeps:
            raise AssertionError(f"still waiting after {self.max_sleeps} sleeps (last: {self.sleeps[-1]!r} s)")
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))


def wait_until(predicate: Callable[[], bool], timeout: float = 120, interval: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


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
