"""An audit never stays "running" forever: a claim whose worker stopped beating is reclaimed (a
bounded number of times), a live claim is never run twice, and any failure, the final summary
write included, ends the run `failed` with its error; the report page says which it is."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from adjudication.audit.services import audit_run_execute
from adjudication.models import AuditRun, Dataset

from ..conftest import math_row, run_command
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db

GOLDS = ["72", "\\frac{1}{2}", "(2,4)"]


@pytest.fixture
def dataset(write_jsonl, settings, tmp_path):
    settings.AUDIT_OUTPUT_DIR = tmp_path / "audit-out"
    settings.AUDIT_LEASE_SECONDS = 60
    settings.AUDIT_MAX_ATTEMPTS = 3
    rows = [math_row(i, gold=g, response=f"So \\boxed{{{g}}}.") for i, g in enumerate(GOLDS)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="claims", no_progress=True)
    return Dataset.objects.get(name="claims")


def running_run(dataset: Dataset, *, last_seen_ago: timedelta, **fields) -> AuditRun:
    """A run some worker claimed `last_seen_ago` (started then, not a beat since)."""
    return AuditRun.objects.create(
        dataset=dataset,
        readers=["strip-string"],
        status=AuditRun.Status.RUNNING,
        started_at=timezone.now() - last_seen_ago,
        **fields,
    )


def manager_client() -> Client:
    client = Client()
    client.force_login(make_user("boss", "manager"))
    return client


# -- the claim --------------------------------------------------------------------------------------


def test_a_run_left_running_by_a_dead_worker_is_reclaimed_and_finishes(dataset):
    run = running_run(dataset, last_seen_ago=timedelta(hours=1))
    assert audit_run_execute(audit_run_id=run.pk).status == AuditRun.Status.DONE
    run.refresh_from_db()
    assert run.status == AuditRun.Status.DONE and run.summary and run.n_golds == len(GOLDS)
    assert run.attempts == 1 and run.error == ""


def test_a_live_claim_is_not_run_a_second_time_and_is_checked_again_when_it_could_be_stale(dataset):
    run = running_run(dataset, last_seen_ago=timedelta(seconds=5), attempts=1)
    outcome = audit_run_execute(audit_run_id=run.pk)
    assert outcome.status == AuditRun.Status.RUNNING
    # Stale 60 s after the last beat, i.e. in about 55 s: the duplicate looks again then, not never.
    assert outcome.recheck_in is not None and 40 < outcome.recheck_in <= 61
    run.refresh_from_db()
    assert run.status == AuditRun.Status.RUNNING and run.attempts == 1 and run.summary is None


def test_a_run_whose_heartbeat_is_recent_is_live_even_if_it_started_long_ago(dataset):
    run = running_run(
        dataset, last_seen_ago=timedelta(hours=2), attempts=1, heartbeat_at=timezone.now() - timedelta(seconds=3)
    )
    assert audit_run_execute(audit_run_id=run.pk).status == AuditRun.Status.RUNNING
    run.refresh_from_db()
    assert run.status == AuditRun.Status.RUNNING and run.attempts == 1


def test_a_run_whose_workers_keep_dying_ends_failed_after_the_last_attempt(dataset):
    run = running_run(dataset, last_seen_ago=timedelta(minutes=10), attempts=3)
    outcome = audit_run_execute(audit_run_id=run.pk)
    assert outcome.status == AuditRun.Status.FAILED and outcome.recheck_in is None
    run.refresh_from_db()
    assert run.status == AuditRun.Status.FAILED and run.finished_at and run.summary is None
    assert "3 attempts" in run.error and "no heartbeat" in run.error


def test_terminal_and_missing_runs_are_left_alone(dataset):
    done = AuditRun.objects.create(dataset=dataset, readers=["strip-string"], status=AuditRun.Status.DONE)
    assert audit_run_execute(audit_run_id=done.pk).status == AuditRun.Status.DONE
    assert audit_run_execute(audit_run_id=10**9).status == "missing"
    done.refresh_from_db()
    assert done.attempts == 0


# -- failures are recorded ----------------------------------------------------------------------------

REFUSE_DONE = """
CREATE FUNCTION test_refuse_audit_done() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'done' THEN RAISE EXCEPTION 'could not extend file: No space left on device'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER test_refuse_audit_done BEFORE UPDATE ON adjudication_auditrun
  FOR EACH ROW EXECUTE FUNCTION test_refuse_audit_done();
"""


def test_a_failing_final_summary_write_ends_the_run_failed_with_the_database_error(dataset):
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL trigger makes the final write fail")
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute(REFUSE_DONE)
    run = AuditRun.objects.create(dataset=dataset, readers=["strip-string"])
    assert audit_run_execute(audit_run_id=run.pk).status == AuditRun.Status.FAILED
    run.refresh_from_db()
    assert run.status == AuditRun.Status.FAILED and run.finished_at
    assert "No space left on device" in run.error and run.summary is None


@pytest.mark.parametrize("gold", ["1\x002", "\ud800 7"], ids=["nul", "lone-surrogate"])
def test_a_gold_jsonb_and_utf8_cannot_hold_is_audited_with_the_files_verbatim(
    dataset, write_jsonl, gold, tmp_path, settings
):
    # Golds are stored verbatim (VerbatimTextField); the summary is jsonb, which refuses NUL and
    # lone surrogates, and the output files are UTF-8, which cannot carry a lone surrogate raw.
    settings.AUDIT_OUTPUT_DIR = tmp_path
    run_command(
        "import_responses",
        str(write_jsonl([math_row(0, gold=gold)], name="odd.jsonl")),
        dataset="odd",
        no_progress=True,
    )
    run = AuditRun.objects.create(dataset=Dataset.objects.get(name="odd"), readers=["strip-string"])
    status = audit_run_execute(audit_run_id=run.pk).status
    run.refresh_from_db()
    assert status == run.status == AuditRun.Status.DONE and run.summary and not run.error
    verdicts = (tmp_path / f"run-{run.pk}" / "verdicts.jsonl").read_bytes().decode("utf-8")  # valid UTF-8
    assert gold in {json.loads(line)["gold"] for line in verdicts.splitlines()}  # verbatim in the files


# -- the report page ---------------------------------------------------------------------------------


def test_the_report_of_a_stale_run_says_so_and_stops_refreshing(dataset):
    run = running_run(dataset, last_seen_ago=timedelta(minutes=30), attempts=1)
    html = manager_client().get(f"/audit/{run.pk}/").content.decode()
    assert 'http-equiv="refresh"' not in html
    assert 'id="audit-stale"' in html and "no heartbeat" in html
    assert f'action="/audit/{run.pk}/resume/"' in html


def test_the_report_of_a_live_run_refreshes(dataset):
    run = running_run(dataset, last_seen_ago=timedelta(seconds=2), attempts=1)
    html = manager_client().get(f"/audit/{run.pk}/").content.decode()
    assert 'http-equiv="refresh"' in html and 'id="audit-stale"' not in html and "/resume/" not in html


@pytest.mark.parametrize("status", [AuditRun.Status.FAILED, AuditRun.Status.DONE])
def test_finished_reports_do_not_refresh(dataset, status):
    run = AuditRun.objects.create(
        dataset=dataset,
        readers=["strip-string"],
        status=status,
        error="ValueError: boom" if status == "failed" else "",
        started_at=timezone.now() - timedelta(hours=1),
        finished_at=timezone.now(),
    )
    html = manager_client().get(f"/audit/{run.pk}/").content.decode()
    assert 'http-equiv="refresh"' not in html and "refreshes every" not in html
    if status == "failed":
        assert "The audit failed: ValueError: boom" in html


def test_resuming_a_stale_run_reruns_it(dataset, eager, django_capture_on_commit_callbacks):
    run = running_run(dataset, last_seen_ago=timedelta(minutes=30), attempts=1)
    client = manager_client()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(f"/audit/{run.pk}/resume/")
    assert response.status_code == 302 and response["Location"] == f"/audit/{run.pk}/"
    assert len(callbacks) == 1
    run.refresh_from_db()
    assert run.status == AuditRun.Status.DONE and run.attempts == 2


def test_resuming_a_live_run_changes_nothing(dataset, eager, django_capture_on_commit_callbacks):
    run = running_run(dataset, last_seen_ago=timedelta(seconds=1), attempts=1)
    client = manager_client()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(f"/audit/{run.pk}/resume/")
    assert response.status_code == 302 and not callbacks
    run.refresh_from_db()
    assert run.status == AuditRun.Status.RUNNING and run.attempts == 1
    annotator = Client()
    annotator.force_login(make_user("ann", "annotator"))
    assert annotator.post(f"/audit/{run.pk}/resume/").status_code == 403
