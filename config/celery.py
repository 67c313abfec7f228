"""The Celery application. Settings come from Django settings under the CELERY_ namespace."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("adjudication")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


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
