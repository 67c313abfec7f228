"""The registered names of adjudication's Celery tasks, and the one way a service sends a task by
its name.

The names are what the broker carries and `CELERY_TASK_ROUTES` matches: they stay
`adjudication.tasks.*`, where the tasks were first defined, so that messages already queued still
find their task. A service whose task calls it back (audit, analytics, routing) sends the task by
name rather than importing it, so that neither module imports the other; every task module is
imported at start-up (AdjudicationConfig.ready), so the name is registered in every process, web
or worker, and an eager task still runs in place."""

from __future__ import annotations

from celery import current_app
from django.db import transaction

READ_BATCH = "adjudication.tasks.read_batch"
RUN_AUDIT = "adjudication.tasks.run_audit"
COMPUTE_REPORT = "adjudication.tasks.compute_report"
BUILD_BUNDLE = "adjudication.tasks.build_bundle"
REFRESH_INFORMATION_PRIORITIES = "adjudication.tasks.refresh_information_priorities"


def task_send_on_commit(name: str, *args: object, countdown: float | None = None) -> None:
    """Send the task registered as `name` once the caller's transaction commits: a worker must never
    receive the id of a row it cannot see yet."""
    task = current_app.tasks[name]
    if countdown is None:
        transaction.on_commit(lambda: task.delay(*args))
    else:
        transaction.on_commit(lambda: task.apply_async(args, countdown=countdown))


def task_send_after_response(name: str, *args: object, on_commit: bool = True) -> None:
    """Send the task registered as `name` once the caller's transaction commits (`on_commit`; else
    now), as task_send_on_commit does; where Celery is eager (the embedded default: the task would
    run inline, in the request) it runs once the current request's response has been sent, on a
    background thread (adjudication.after_response), so that no page waits for it."""
    task = current_app.tasks[name]
    if current_app.conf.task_always_eager:
        from adjudication import after_response

        def send() -> None:
            after_response.defer(lambda: task.delay(*args))
    else:

        def send() -> None:
            task.delay(*args)

    if on_commit:
        transaction.on_commit(send)
    else:
        send()
