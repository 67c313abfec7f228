"""Celery: a broker URL (CELERY_BROKER_URL or REDIS_URL) means real workers; none means eager."""

from kombu import Queue

from .env import BROKER_URL, env_str

# Eager Celery still opens a producer on the broker to serialise arguments: an in-memory one, named
# with a host so that kombu does not warn on every run that none was supplied.
CELERY_BROKER_URL = BROKER_URL or "memory://localhost/"
# Results travel through the database (readings), never through a result backend.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = BROKER_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
# A task is acknowledged after it ran, so a worker killed mid-task gives its work back to the queue;
# tasks are idempotent (they re-check what is missing) so a redelivery cannot duplicate a reading.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task a dead worker had taken is redelivered once this many seconds pass without its ack. Tasks
# are batches that take seconds; a redelivery of a task that is merely slow costs one re-check.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(env_str("CELERY_VISIBILITY_TIMEOUT", default="600"))}
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES = (Queue("default"), Queue("readers"), Queue("llm"))
CELERY_TASK_ROUTES = {
    "adjudication.tasks.read_batch": {"queue": "readers"},
    "judges.tasks.*": {"queue": "llm"},
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes the database connection around every task unless it may reuse it
# this many tasks; config/celery.py checks it around every task instead, as Django does around a
# request (broken or older than CONN_MAX_AGE: closed), so a worker keeps one healthy connection.
CELERY_DB_REUSE_MAX = 1_000_000
