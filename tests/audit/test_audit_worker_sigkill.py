"""A worker SIGKILLed in the middle of an audit: the redelivered task finds the claim stale (no
heartbeat for a lease) and a new worker runs the audit again exactly once, to `done`. A duplicate
task delivered while the first worker is alive and beating does not run it a second time."""

from __future__ import annotations

import signal
import time

import pytest

from adjudication.audit.services import audit_run_start
from adjudication.audit.tasks import run_audit
from adjudication.models import AuditRun, Dataset
from readers import registry
from tests.plugins import slow_reader

from ..conftest import math_row, run_command, start_worker, stop_worker, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

LEASE_SECONDS = 3


@registry.scoped(slow_reader.READERS)  # `test-slow` here too (audit_run_start checks names)
def test_sigkill_mid_audit_then_a_new_worker_reruns_the_stale_audit_once_to_done(
    write_jsonl, service_env, broker, tmp_path, settings
):
    out_dir = tmp_path / "audit-out"
    env = {
        **service_env,
        "READER_PLUGINS": "tests.plugins.slow_reader",
        # Redelivery of the dead worker's unacknowledged task after 2 s instead of 10 minutes,
        # and a claim stale after 3 s without a heartbeat instead of 2 minutes.
        "CELERY_VISIBILITY_TIMEOUT": "2",
        "AUDIT_LEASE_SECONDS": str(LEASE_SECONDS),
        "AUDIT_OUTPUT_DIR": str(out_dir),
    }
    # ~36 variants per gold, 30 ms per reading on 2 reader processes: ~15 s per attempt.
    rows = [math_row(i, gold=str(7 * i + 3)) for i in range(25)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="slow-audit", no_progress=True)
    dataset = Dataset.objects.get(name="slow-audit")

    first = start_worker(env, tmp_path / "worker-1.log")
    try:
        run = audit_run_start(dataset=dataset, reader_names=["test-slow"])  # enqueued on commit (autocommit here)
        assert wait_until(lambda: AuditRun.objects.get(pk=run.pk).status == AuditRun.Status.RUNNING, timeout=60), (
            "the audit never started"
        )
        claimed = AuditRun.objects.get(pk=run.pk)
        # A duplicate of the task while the first worker is alive (the pool's second process takes it).
        run_audit.delay(run.pk)
        # Beating: the heartbeat moves past the claim time while the audit runs.
        assert wait_until(lambda: AuditRun.objects.get(pk=run.pk).heartbeat_at > claimed.heartbeat_at, timeout=30), (
            "no heartbeat while the audit runs"
        )
        # Longer than a lease, so that the duplicate has had its look, and more than one.
        time.sleep(LEASE_SECONDS + 1)
        at_kill = AuditRun.objects.get(pk=run.pk)
        stop_worker(first, signal.SIGKILL)  # the whole group: main process, pool children, reader processes
    finally:
        stop_worker(first, signal.SIGKILL)
    assert first.returncode == -signal.SIGKILL
    assert at_kill.status == AuditRun.Status.RUNNING, "the audit finished before the kill; make it slower"
    assert at_kill.attempts == 1, "a duplicate task ran a live audit a second time"
    assert AuditRun.objects.get(pk=run.pk).status == AuditRun.Status.RUNNING  # nobody left to finish it

    second = start_worker(env, tmp_path / "worker-2.log")
    try:
        # No re-run by hand: the broker hands the killed worker's unacknowledged task to the new worker.
        assert wait_until(lambda: AuditRun.objects.get(pk=run.pk).status in ("done", "failed"), timeout=240), (
            f"still {AuditRun.objects.get(pk=run.pk).status} after the restart"
        )
    finally:
        stop_worker(second)
    run.refresh_from_db()
    assert run.status == AuditRun.Status.DONE, run.error
    assert run.attempts == 2, f"{run.attempts} attempts: the stale audit must be re-run exactly once"
    assert run.error == "" and run.summary["verdicts"] > 25 and run.n_golds == 25
    assert (out_dir / f"run-{run.pk}" / "summary.json").exists()
