"""What the broker still holds of a run's batches, so that a waiting command notices a batch the
broker lost: Redis restarted without its append-only file, a FLUSHDB, a purged queue. Such a batch's
TaskBatch row stays `queued` (or `running`, if its worker then dies) with no message left anywhere
to deliver it: nobody will ever do it, and without this a command would wait for it forever.

A batch's task message is named by its batch (batches.batch_task_id). Under Redis (kombu's
transport) a message is in a queue's list until a worker takes it, then in the `unacked` hash until
the worker acknowledges it, after the task ran (acks_late): at every moment but the milliseconds
between those two steps, a batch not yet done has its message in one of them.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from adjudication.pipeline.batches import batch_of_task

log = logging.getLogger(__name__)


def batches_held() -> set[int] | None:
    """The ids of the batches whose task messages the broker holds: waiting in a queue, or taken by
    a worker and not yet acknowledged. None when that cannot be told: no Redis broker (eager
    mode, another transport), or the broker does not answer now (then nothing is known lost)."""
    from celery import current_app

    conf = current_app.conf
    if conf.task_always_eager or not str(conf.broker_url or "").startswith(("redis://", "rediss://")):
        return None
    queues = [q.name for q in conf.task_queues or ()] or [conf.task_default_queue]
    try:
        with current_app.connection_for_read() as conn:
            channel: Any = conn.default_channel
            with channel.conn_or_acquire() as client:
                waiting = [
                    raw
                    for queue in queues
                    for pri in channel.priority_steps
                    for raw in client.lrange(channel._q_for_pri(queue, pri), 0, -1)
                ]
                taken = client.hvals(channel.unacked_key)
    except Exception as exc:  # noqa: BLE001 - a broker that does not answer loses nothing we can tell
        log.warning("could not look into the broker's queues: %s", exc)
        return None
    held: set[int] = set()
    for raw, delivered in [*((w, False) for w in waiting), *((t, True) for t in taken)]:
        batch = batch_of_task(_task_id(raw, delivered=delivered))
        if batch is not None:
            held.add(batch)
    return held


def _task_id(raw: bytes | str, *, delivered: bool) -> str | None:
    """The task id of a message as kombu stores it: the message's JSON in a queue's list, a JSON
    [message, exchange, routing key] in the `unacked` hash."""
    try:
        payload = json.loads(raw)
        message = payload[0] if delivered else payload
        headers = message.get("headers") or {}
        return headers.get("id") or (message.get("properties") or {}).get("correlation_id")
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
        return None  # not a Celery message: no batch of ours
