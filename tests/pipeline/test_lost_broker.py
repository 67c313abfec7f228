"""Batches the broker lost (Redis restarted without persistence, a purged queue) are noticed by the
waiting command and sent again: the run finishes with every reading exactly once, instead of
waiting forever for tasks no worker will ever receive."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
import redis
from django.conf import settings

from adjudication.models import Reading, Response, TaskBatch
from adjudication.pipeline.broker import batches_held

from ..conftest import ROOT, mc_row, run_command, start_worker, stop_worker, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

READERS = ["boxed", "strict-match"]


def test_batches_lost_from_the_broker_are_sent_again_and_every_reading_is_written_once(
    write_jsonl, service_env, broker, tmp_path
):
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(40)])), dataset="lost", no_progress=True)
    expected = Response.objects.count() * len(READERS)
    command = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "run_readers", "--dataset", "lost"]
        + [arg for name in READERS for arg in ("--reader", name)]
        + ["--batch-size", "5", "--timeout", "150"],
        env=service_env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker = None
    try:
        # No worker yet: every batch waits in Redis, as the command enqueued it.
        def all_enqueued() -> bool:
            ids = set(TaskBatch.objects.values_list("id", flat=True))
            return len(ids) >= 4 and batches_held() == ids

        assert wait_until(all_enqueued, timeout=60), "the command never enqueued its batches"
        assert set(TaskBatch.objects.values_list("status", flat=True)) == {"queued"}
        # Redis restarted without its append-only file: every queued message is gone.
        redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
        assert batches_held() == set()
        worker = start_worker(service_env, tmp_path / "worker.log")
        out, err = command.communicate(timeout=240)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
        if worker is not None:
            stop_worker(worker)
    assert command.returncode == 0, f"run_readers failed: {err[-3000:]}"
    assert all(f"{name}" in out for name in READERS)  # its summary, one line per reader
    n_batches = TaskBatch.objects.count()
    assert f"the broker no longer held {n_batches} reader task(s) of this run" in err
    keys = Counter(Reading.objects.values_list("response_id", "reader_spec__name"))
    assert len(keys) == expected, "readings lost"
    assert max(keys.values()) == 1, "readings duplicated"
    assert set(TaskBatch.objects.values_list("status", flat=True)) == {"done"}
