"""One readable fixture base for the whole suite.

The suite runs against the real PostgreSQL and Redis (`make test` sets DATABASE_URL and
CELERY_BROKER_URL); tests that spawn processes (workers, the quickstart, `read`) get those URLs
from `service_env`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from time import time_ns
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest
from django.apps import apps
from django.core.management import call_command

if TYPE_CHECKING:  # the reader tests run without Django (`-p no:django`): no model import at load time
    from adjudication.models import ReaderSpec, Reading, Response

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"

# Hypothesis's default 200 ms deadline per example is a wall-clock assertion: on a loaded machine (a
# parallel run, CI) it fails tests that are correct. Tests assert behaviour, never time.
hypothesis.settings.register_profile("suite", deadline=None)
hypothesis.settings.load_profile("suite")


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


@pytest.fixture(autouse=True)
def _after_response_inline(request) -> None:
    """Work deferred past a response (adjudication.after_response).

    In a test that commits its rows (a live server's, `transaction=True`) it runs on the background
    thread, as in production, and the test waits for it before the database is flushed. Running it
    in the request's own thread there would hold that keep-alive connection while it computes, and
    Chromium's next request on it (a stylesheet) with it: a page's `load` then waited for a report.
    Elsewhere a test's rows live in its transaction, which another thread's connection cannot see:
    the work runs in the thread that served the request, right after the response. The response is
    built before it runs, as in production; a test that checks the deferral replaces `submit` itself."""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    from adjudication import after_response

    # The bundle downloads' files (adjudication.bundles.jobs): the run's own directory, not var/.
    settings = request.getfixturevalue("settings")
    settings.BUNDLE_DOWNLOAD_DIR = request.getfixturevalue("tmp_path_factory").getbasetemp() / "bundle-downloads"
    marker = request.node.get_closest_marker("django_db")
    committed = "transactional_db" in request.fixturenames or bool(marker and marker.kwargs.get("transaction"))
    if not committed:
        request.getfixturevalue("monkeypatch").setattr(after_response, "submit", lambda job: job())
        return
    # Requested here so that it is torn down after this fixture: the drain comes before the flush.
    request.getfixturevalue("transactional_db")
    request.addfinalizer(lambda: after_response.drain(timeout=600))


# The system tier (`-m system`; `make test-quick` leaves it out): tests that start real processes or
# read real data. A test is in it by its markers or fixtures below, or by `pytest.mark.system` where
# it starts a process itself (subprocess) or reads ../shared/data.
SYSTEM_MARKERS = ("worker", "browser", "real_model")
SYSTEM_FIXTURES = ("celery_worker", "session_worker", "broker", "service_env", "plain_live_server")


SHARED_SCOPES = ("class", "module", "package")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects and before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if any(item.get_closest_marker(name) for name in SYSTEM_MARKERS) or any(f in fixtures for f in SYSTEM_FIXTURES):
            item.add_marker(pytest.mark.system)
        # A test that shares a class- or module-scoped fixture (a world, a pool, a computed real-data
        # result) runs on the xdist worker that runs the others of its module: spread over three
        # workers, the fixture would be built three times (`--dist loadgroup`).
        info = getattr(item, "_fixtureinfo", None)
        definitions = info.name2fixturedefs.values() if info is not None else ()
        # (Only the suite's own fixtures: a plugin's have an empty baseid, pytest-django's class-scoped
        # unittest hook is on every test.)
        if item.get_closest_marker("xdist_group"):
            continue
        if any(d.scope in SHARED_SCOPES and d.baseid for defs in definitions for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
        # The heavy processes are started once per xdist worker: their tests go to one worker, so
        # that the run starts one Celery worker and (but for a module's world above) one Chromium.
        elif "celery_worker" in fixtures:
            item.add_marker(pytest.mark.xdist_group("celery-worker"))
        elif item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.xdist_group("chromium"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's Chromium (tests/browser.py), if a test started it."""
    from tests import browser

    browser.shutdown()


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


def jsonl_writer(directory: Path) -> Callable[..., Path]:
    """write(rows, name="in.jsonl") -> the path of a JSON-lines file in `directory`; a row may be a
    dict or a raw line string."""

    def write(rows: list[Any], name: str = "in.jsonl") -> Path:
        path = directory / name
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
        return path

    return write


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[..., Path]:
    """write_jsonl(rows, name="in.jsonl") -> path, in this test's tmp_path."""
    return jsonl_writer(tmp_path)


@contextmanager
def world_transaction(django_db_blocker: Any) -> Iterator[None]:
    """The lifetime of a world: rows built once for a module or class and read by each of its tests.

    The world is built inside a transaction that is rolled back when the block ends. Each test's
    own transaction (pytest-django's `django_db`, a TestCase) is then a savepoint inside it, so what
    a test writes is undone after it and the next test finds the world as it was built. A
    transactional test (`transaction=True`) commits and flushes: it must not use a world.

    Build the rows inside `django_db_blocker.unblock()`, in a fixture that also requests
    `django_db_setup` (so the test database exists first)."""
    from django.db import transaction

    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


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


def child_env() -> dict[str, str]:
    """Environment for child processes (manage.py, celery) pointing at this process's test database
    (and, through the inherited CELERY_BROKER_URL, its Redis database: tests/xdist_services.py)."""
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


@pytest.fixture
def service_env() -> dict[str, str]:
    """Environment for child processes (manage.py, celery) pointing at this test's database."""
    return child_env()


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


def start_worker(
    env: dict[str, str],
    log_path: Path,
    *,
    concurrency: int = 2,
    queues: str = "readers,default,llm",
    name: str | None = None,
) -> subprocess.Popen:
    """A real Celery worker (prefork) in its own process group, so a test can kill it whole."""
    from config.celery import worker_argv

    # The worker holds its own copy of the descriptor: ours can be closed once it has started.
    with open(log_path, "a") as log:
        return subprocess.Popen(
            [
                *worker_argv(queues=queues, concurrency=concurrency, loglevel="INFO"),
                *("--without-heartbeat", "-n", name or f"test-{os.getpid()}-{time_ns()}@%h"),
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


# The platform's LLM retry timing, shrunk so that retries take milliseconds in tests (the judges'
# tests set it in-process; the session's Celery worker has it in its environment).
FAST_RETRY = {
    "LLM_RETRY_MAX_ATTEMPTS": "4",
    "LLM_BACKOFF_BASE_S": "0.01",
    "LLM_BACKOFF_MAX_S": "0.05",
    "LLM_RETRY_BUDGET_S": "5",
}
WORKER_QUEUES = ("readers", "default", "llm")


class SessionWorker:
    """One real Celery worker (prefork, 2 children) on Redis for the whole test run, started by the
    first test that asks for it (~13 s until it answers a ping, ~5 s to stop: once, not per test).

    It consumes only while a `celery_worker` test runs. Between them it listens on a queue of its
    own that nothing is sent to, so it cannot take the tasks another test leaves in Redis on purpose
    (a test that checks what was enqueued, or starts workers of its own). A test's end waits until
    the worker has finished every task it took, before the test's rows are flushed.
    """

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        import socket

        self.env = env
        self.log_path = log_path
        self.name = f"session-{os.getpid()}-{time_ns()}@{socket.gethostname()}"
        self.idle_queue = f"idle-{os.getpid()}-{time_ns()}"
        self.proc: subprocess.Popen | None = None

    def _control(self, command: str, **arguments: Any) -> list[dict]:
        from config.celery import app

        return app.control.broadcast(command, arguments=arguments, destination=[self.name], reply=True, timeout=10)

    def ensure_running(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self.proc = start_worker(self.env, self.log_path, queues=self.idle_queue, name=self.name)
        deadline = time.monotonic() + 120
        while not self._control("ping"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the session's Celery worker did not start; see {self.log_path}")
            time.sleep(0.2)

    def consume(self) -> None:
        for queue in WORKER_QUEUES:
            assert self._control("add_consumer", queue=queue), f"{self.name} did not take {queue}"

    def idle(self, timeout: float = 180) -> None:
        """Stop consuming, then wait for the tasks already taken (acks are late: a task the worker
        holds is still its own). A worker that does not settle is stopped; the next test starts
        another."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for queue in WORKER_QUEUES:
            self._control("cancel_consumer", queue=queue)

        def settled() -> bool:
            busy = [*self._control("active"), *self._control("reserved")]
            return bool(busy) and not any(tasks for reply in busy for tasks in reply.values())

        if not wait_until(settled, timeout=timeout, interval=0.1):
            self.stop()

    def stop(self) -> None:
        if self.proc is not None:
            stop_worker(self.proc)
            self.proc = None


_session_workers: list[SessionWorker] = []  # at most one: the `broker` fixture stops it


@pytest.fixture(scope="session")
def session_worker(django_db_setup, tmp_path_factory) -> Iterator[SessionWorker]:
    """The run's Celery worker, reading this process's test database (it ends before the database
    is dropped: it depends on django_db_setup)."""
    env = {**child_env(), **FAST_RETRY}
    env.setdefault("NO_PROXY", "127.0.0.1,localhost")
    worker = SessionWorker(env, tmp_path_factory.mktemp("celery") / "worker.log")
    _session_workers.append(worker)
    yield worker
    worker.stop()
    _session_workers.remove(worker)


@pytest.fixture
def broker():
    """The Celery app with a real broker to this test alone (it may start workers of its own: the
    session's worker is stopped), its queues purged before and after the test."""
    from config.celery import app

    if app.conf.task_always_eager:
        if os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL"):
            pytest.fail("a broker is configured but Celery runs eagerly: a test leaked task_always_eager")
        pytest.skip("no broker configured (CELERY_BROKER_URL); run the suite with `make test`")
    for worker in _session_workers:
        worker.stop()
    app.control.purge()
    yield app
    app.control.purge()


@dataclass
class WorkerHandle:
    """What a test sees of the session's worker: its process and what it logged during the test."""

    proc: subprocess.Popen
    log_path: Path
    log_start: int

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as handle:
            handle.seek(self.log_start)
            return handle.read()


@pytest.fixture
def celery_worker(session_worker: SessionWorker) -> Iterator[WorkerHandle]:
    """The session's real Celery worker, consuming the queues for this test.

    Needs `transactional_db`: the worker is another process and only sees committed rows.
    """
    from config.celery import app

    if app.conf.task_always_eager:
        pytest.skip("no broker configured (CELERY_BROKER_URL); run the suite with `make test`")
    session_worker.ensure_running()
    app.control.purge()  # what earlier tests left queued is not this test's
    session_worker.consume()
    assert session_worker.proc is not None
    try:
        yield WorkerHandle(session_worker.proc, session_worker.log_path, session_worker.log_path.stat().st_size)
    finally:
        session_worker.idle()
        app.control.purge()


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


def _closing_live_server_thread(static_handler: Any) -> Any:
    """A LiveServerThread whose server can end its keep-alive connections.

    Each connection is served by a thread of its own, which closes its database connection when the
    socket closes. A browser keeps idle connections open for a while after its last request, so
    stopping the server leaves those threads waiting for bytes that never come (the test database
    could not be dropped); shutting their sockets down ends them at once."""
    import socket

    from django.core.servers.basehttp import ThreadedWSGIServer
    from django.test.testcases import LiveServerThread

    class ClosingWSGIServer(ThreadedWSGIServer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.open_requests: set[socket.socket] = set()
            self.request_threads: set[threading.Thread] = set()
            self.open_lock = threading.Lock()

        def process_request(self, request: Any, client_address: Any) -> None:
            with self.open_lock:
                self.open_requests.add(request)
            super().process_request(request, client_address)

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            with self.open_lock:
                self.request_threads.add(threading.current_thread())
            try:
                super().process_request_thread(request, client_address)
            finally:
                with self.open_lock:
                    self.request_threads.discard(threading.current_thread())

        def close_request(self, request: Any) -> None:
            with self.open_lock:
                self.open_requests.discard(request)
            super().close_request(request)

        def end_open_requests(self, timeout: float) -> None:
            """Shut the open connections down, then wait (at most `timeout`) for their threads."""
            with self.open_lock:
                sockets = list(self.open_requests)
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            deadline = time.monotonic() + timeout
            with self.open_lock:
                threads = list(self.request_threads)
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            if any(thread.is_alive() for thread in threads):
                warnings.warn(f"the live server still answers a request {timeout} s after its test", stacklevel=1)

    class ClosingLiveServerThread(LiveServerThread):
        server_class = ClosingWSGIServer

        def terminate(self) -> None:
            super().terminate()
            if hasattr(self, "httpd"):
                # A request still being answered (a page computing a report) is waited for, up to
                # 10 s; only this server's threads: another test's straggler is not this test's.
                self.httpd.end_open_requests(timeout=10)

    return ClosingLiveServerThread("127.0.0.1", static_handler, port=0)


@contextmanager
def serving() -> Iterator[str]:
    """A live server thread (its handler built now, with the settings in force now), its URL."""
    from django.contrib.staticfiles.handlers import StaticFilesHandler

    thread = _closing_live_server_thread(StaticFilesHandler)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield f"http://127.0.0.1:{thread.port}"
    finally:
        # The request threads close their database connections as their sockets close: terminate
        # waits for them, so the test database can be flushed and dropped afterwards.
        thread.terminate()


@pytest.fixture
def plain_live_server(transactional_db, settings) -> Iterator[str]:
    """A live server started for this test, after the suite's plain-HTTP settings are in place.

    pytest-django's `live_server` is session-scoped: its handler loads the middleware once, and
    SecurityMiddleware reads SECURE_SSL_REDIRECT (on by default with a PostgreSQL URL) at that
    moment, before any per-test settings, so Chromium would be redirected to https. This server's
    handler is built after `_plain_http` turned the redirect off.
    """
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "127.0.0.1"]
    settings.DEBUG = False
    with serving() as url:
        yield url


@contextmanager
def committed_world(django_db_blocker: Any) -> Iterator[str]:
    """For a module of read-only tests against a live server: rows committed once, a live server
    for the module, the database flushed when the block ends (as a transactional test's is).

    Build the rows inside the block; the block yields the server's URL. The module's tests are not
    marked `django_db`: the database stays open to them for the whole block, and nothing flushes it
    between them, so they must not write (a login's session row aside)."""
    from django.conf import settings
    from django.test import override_settings

    plain = override_settings(
        ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, "127.0.0.1"],
        DEBUG=False,
        SECURE_SSL_REDIRECT=False,
        SESSION_COOKIE_SECURE=False,
        CSRF_COOKIE_SECURE=False,
        SECURE_HSTS_SECONDS=0,
    )
    with django_db_blocker.unblock(), plain:
        try:
            with serving() as url:
                yield url
        finally:
            call_command("flush", interactive=False, verbosity=0)
