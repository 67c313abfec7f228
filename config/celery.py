"""The Celery application. Settings come from Django settings under the CELERY_ namespace."""

import os

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("adjudication")
app.config_from_object("django.conf:settings", namespace="CELERY")
# judges.tasks; adjudication's tasks live in its capabilities and are imported by its AppConfig.ready.
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _database_connection_check(task: Task | None = None, **_kwargs: object) -> None:
    """What Django does around every request, around every task: a connection that broke, or that
    is older than CONN_MAX_AGE, is closed (the next query opens a new one); a healthy one is kept.
    Celery's own Django fixup would close it after every task (CELERY_DB_REUSE_MAX in
    config/settings/queue.py turns that off): a new PostgreSQL backend per task, with cold caches.
    Not for a task run eagerly: it runs inside its caller, perhaps inside the caller's transaction."""
    if task is not None and task.request.is_eager:
        return
    close_old_connections()


def worker_argv(*, queues: str, concurrency: int, loglevel: str = "WARNING") -> list[str]:
    """A prefork worker of this app, as the test suite and the benches start one: without gossip
    and mingle, which only add start-up chatter on a one-worker deployment."""
    import sys

    return [
        sys.executable,
        *("-m", "celery", "-A", "config", "worker", "-Q", queues),
        *("--pool", "prefork", "--concurrency", str(concurrency)),
        *("--without-gossip", "--without-mingle", "--loglevel", loglevel),
    ]
