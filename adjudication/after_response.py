"""Work a page asks for, run once its response has gone out: the embedded default's background.

With a broker, a service's task goes to a Celery worker and the request returns at once. On the
embedded default (SQLite, no broker) Celery is eager: `task.delay` runs the task inline, and a
task sent on commit ran inside the request that committed, so the landing page computed the
analytics report for seconds after every label (issue 36 item 15). Here such a task waits until
the response is complete (Django's `request_finished`, sent by the server once it has written the
response), then runs on one background thread of this process, one task at a time; the page shows
the stored report meanwhile, saying it is being recomputed.

Outside a request (a command, a shell, a Celery worker) there is no response to wait for: the work
runs at once, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import close_old_connections, connections

log = logging.getLogger(__name__)

_local = threading.local()
_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def request_started(**_: object) -> None:
    """Django's request_started: this thread now serves a request; deferred work waits for its end."""
    _local.deferred = []


def request_finished(**_: object) -> None:
    """Django's request_finished (the response is written): hand this request's work to the thread."""
    deferred = getattr(_local, "deferred", None)
    _local.deferred = None
    for job in deferred or ():
        submit(job)


def defer(job: Callable[[], object]) -> None:
    """Run `job` after the current request's response, or now when no request is being served."""
    deferred = getattr(_local, "deferred", None)
    if deferred is None:
        job()
        return
    deferred.append(job)


def submit(job: Callable[[], object]) -> None:
    """Hand `job` to the background thread (the test suite runs it in place: tests/conftest.py)."""
    run_in_background(job)


def run_in_background(job: Callable[[], object]) -> Future:
    """Queue `job` on the background thread (one: on SQLite a second writer would only wait)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="after-response")
        return _executor.submit(_run, job)


def _run(job: Callable[[], object]) -> None:
    close_old_connections()
    try:
        job()
    except Exception:  # noqa: BLE001 - a background job has no caller to raise to; the row records failures
        log.exception("background job after a response failed")
    finally:
        # This thread's own connections: nobody else closes them.
        connections.close_all()


def drain(timeout: float | None = None) -> None:
    """Wait until every job submitted so far has run (the bench, and a server stopping)."""
    with _lock:
        executor = _executor
    if executor is not None:
        executor.submit(lambda: None).result(timeout=timeout)
