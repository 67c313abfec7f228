"""Scale-out: two Celery workers started as separate "hosts" (their own processes and node names, one
Redis, one PostgreSQL) share one run; every reading lands exactly once and both did work."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from adjudication.models import Reading, Response, TaskBatch
from readers import registry
from tests.plugins import slow_reader

from ..conftest import ROOT, mc_row, run_command, stop_worker, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def start_host(env: dict[str, str], node: str, log_path: Path) -> subprocess.Popen:
    """A worker process of its own, under the Celery node name `node` (name@host), as on another machine."""
    from config.celery import worker_argv

    with open(log_path, "a") as log:
        return subprocess.Popen(
            [*worker_argv(queues="readers", concurrency=1, loglevel="INFO"), "--without-heartbeat", "-n", node],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def answering(app, nodes: list[str]) -> set[str]:
    """The nodes among `nodes` that answer a ping now."""
    replies = app.control.ping(destination=nodes, timeout=1.0)
    return {name for reply in replies for name in reply}


@registry.scoped(slow_reader.READERS)  # `test-slow` in this process too (run_readers checks names)
def test_two_workers_on_two_hosts_write_every_reading_exactly_once_and_both_do_work(
    write_jsonl, service_env, broker, tmp_path
):
    # 30 ms a reading (test-slow): 160 responses are ~5 s of reading, in batches of 5 or fewer,
    # so that neither worker can drain the queue before the other one takes its share.
    env = {**service_env, "READER_PLUGINS": "tests.plugins.slow_reader"}
    rows = [mc_row(i, response=f"Reasoning {i}... final letter {'ABCD'[i % 4]}") for i in range(160)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="scale", no_progress=True)
    readers = ["test-slow", "boxed", "strict-match"]
    nodes = [f"a{os.getpid()}@host1", f"b{os.getpid()}@host2"]
    hosts = [start_host(env, node, tmp_path / f"{node}.log") for node in nodes]
    try:
        # Both consume before anything is enqueued: the run is theirs to share from its first batch.
        assert wait_until(lambda: answering(broker, nodes) == set(nodes), timeout=120, interval=0.5), (
            "the workers never answered"
        )
        run_command("run_readers", dataset="scale", readers=readers, batch_size=5, no_wait=True)
        expected = Response.objects.count() * len(readers)
        assert wait_until(lambda: Reading.objects.count() >= expected, timeout=240), (
            f"{Reading.objects.count()} of {expected} readings arrived"
        )
        # A batch is marked done right after its readings commit: give the last one that moment.
        assert wait_until(lambda: not TaskBatch.objects.exclude(status="done").exists(), timeout=30)
    finally:
        for host in hosts:
            stop_worker(host)
    keys = Counter(Reading.objects.values_list("response_id", "reader_spec__name"))
    assert len(keys) == expected == 160 * 3, "readings lost"
    assert max(keys.values()) == 1, "readings duplicated"
    by_node = Counter(TaskBatch.objects.values_list("claimed_by", flat=True))
    # every batch was started by one of the two, and each of them started some
    assert set(by_node) == set(nodes), f"batches by worker: {dict(by_node)}"
    slow = Reading.objects.filter(reader_spec__name="test-slow")
    assert slow.count() == 160 and slow.filter(verdict="correct").count() == 40
