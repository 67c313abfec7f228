"""A worker SIGKILLed in the middle of a run loses nothing and duplicates nothing."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from adjudication.models import Reading, Response
from readers import registry
from tests.plugins import slow_reader

from ..conftest import mc_row, run_command, start_worker, stop_worker, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


@registry.scoped(slow_reader.READERS)  # `test-slow` in this process too (run_readers checks names)
def test_sigkill_mid_run_then_a_new_worker_finishes_with_every_reading_exactly_once(
    write_jsonl, service_env, broker, tmp_path
):
    env = {
        **service_env,
        "READER_PLUGINS": "tests.plugins.slow_reader",
        # Redelivery of the dead worker's unacknowledged tasks after 2 s instead of 10 minutes.
        "CELERY_VISIBILITY_TIMEOUT": "2",
    }
    rows = [mc_row(i, response=f"Reasoning {i}... final letter {'ABCD'[i % 4]}") for i in range(400)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="k", no_progress=True)
    readers = ["test-slow", "boxed"]
    expected = Response.objects.count() * len(readers)

    first = start_worker(env, tmp_path / "worker-1.log")
    try:
        run_command("run_readers", dataset="k", readers=readers, batch_size=10, no_wait=True)
        assert wait_until(lambda: Reading.objects.count() >= expected // 5, timeout=120), "the run never started"
        done_at_kill = Reading.objects.count()
        stop_worker(first, signal.SIGKILL)  # the whole group: main process, pool children, reader processes
    finally:
        stop_worker(first, signal.SIGKILL)
    assert first.returncode == -signal.SIGKILL
    assert done_at_kill < expected, "the run finished before the kill; make the reader slower"

    second = start_worker(env, tmp_path / "worker-2.log")
    try:
        # No re-run: the broker hands the killed worker's unacknowledged batches to the new worker.
        assert wait_until(lambda: Reading.objects.count() >= expected, timeout=240), (
            f"{Reading.objects.count()} of {expected} readings after the restart"
        )
    finally:
        stop_worker(second)
    keys = Counter(Reading.objects.values_list("response_id", "reader_spec__name"))
    assert len(keys) == expected, "readings lost"
    assert max(keys.values()) == 1, "readings duplicated"
    slow = Reading.objects.filter(reader_spec__name="test-slow")
    assert slow.count() == 400 and slow.filter(verdict="correct").count() == 100
