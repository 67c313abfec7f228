"""The audit as a Celery job from the UI (eager mode), end to end, and its report page."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from adjudication.audit.selectors import dataset_golds
from adjudication.audit.services import audit_run_execute
from adjudication.audit.tasks import run_audit
from adjudication.models import AuditRun, Dataset

from ..conftest import math_row, mc_row, run_command
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db

GOLDS = ["72", "10000", "123456", "\\frac{1}{2}", "0.5", "3\\sqrt{2}", "(2,4)"]


@pytest.fixture
def dataset(write_jsonl, settings, tmp_path):
    settings.AUDIT_OUTPUT_DIR = tmp_path / "audit-out"
    rows = [math_row(i, gold=g, response=f"So \\boxed{{{g}}}.") for i, g in enumerate(GOLDS)]
    rows += [mc_row(100 + i) for i in range(3)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="bench", no_progress=True)
    return Dataset.objects.get(name="bench")


def test_dataset_golds_are_distinct_and_open_ended(dataset):
    golds, skipped = dataset_golds(dataset)
    assert golds == GOLDS and skipped == 3


def test_audit_job_end_to_end(eager, dataset, django_capture_on_commit_callbacks, settings):
    manager = make_user("boss", "manager")
    client = Client()
    client.force_login(manager)
    page = client.get("/audit/")
    assert page.status_code == 200 and b"sympy-cascade" in page.content

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            "/audit/", {"dataset": dataset.pk, "reader": ["sympy-cascade", "math-verify-latex", "strip-string"]}
        )
    assert len(callbacks) == 1  # enqueued on commit, exactly once
    run = AuditRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/audit/{run.pk}/"
    assert run.status == AuditRun.Status.DONE, run.error
    assert run.readers == ["sympy-cascade", "math-verify-latex", "strip-string"]
    assert run.n_golds == len(GOLDS) and run.started_at and run.finished_at and run.created_by == manager
    assert run.attempts == 1 and run.error == ""
    s = run.summary
    assert s["off_by_one"]["sympy-cascade"]["1e4"] == 1.0 and s["off_by_one"]["sympy-cascade"][">=1e5"] == 1.0
    assert s["off_by_one"]["sympy-cascade"]["1e1"] == 0.0 and s["off_by_one"]["math-verify-latex"]["1e4"] == 0.0
    assert s["skipped_multiple_choice"] == 3
    out = settings.AUDIT_OUTPUT_DIR / f"run-{run.pk}"
    assert run.out_dir == str(out) and (out / "summary.json").exists() and (out / "verdicts.jsonl").exists()

    report = client.get(f"/audit/{run.pk}/")
    assert report.status_code == 200
    html = report.content.decode()
    # issue 36 item 17: the server's absolute output directory is not printed on the page.
    assert str(settings.AUDIT_OUTPUT_DIR) not in html and f"run-{run.pk}" in html
    for section in (
        'id="self-validation"',
        'id="error-budget"',
        'id="magnitude"',
        'id="disagreement"',
        'id="out-of-contract"',
        'id="contract-dependent"',
        "100 %",
        'id="reader-identity"',
        'id="contract-overrides"',
        'id="by-source"',
        'id="figure-self-validation"',
        'id="figure-error-budget"',
        'id="figure-magnitude"',
    ):
        assert section in html, section
    # seed 001's three figures, drawn as inline SVG, and every reader's config hash
    assert html.count("<svg xmlns") >= 3 and "prior work (~94%)" in html and "10^4" in html
    for name in run.readers:
        assert s["reader_identity"][name]["config_hash"] in html

    # a redelivered task finds the run done and does nothing
    before = run.finished_at
    assert run_audit.delay(run.pk) is not None
    run.refresh_from_db()
    assert run.status == AuditRun.Status.DONE and run.finished_at == before


def test_a_live_running_run_is_not_executed_again(dataset):
    run = AuditRun.objects.create(
        dataset=dataset, readers=["strip-string"], status=AuditRun.Status.RUNNING, started_at=timezone.now(), attempts=1
    )
    assert audit_run_execute(audit_run_id=run.pk).status == AuditRun.Status.RUNNING
    assert audit_run_execute(audit_run_id=10**9).status == "missing"


def test_a_failing_audit_is_recorded(dataset, write_jsonl):
    empty = Dataset.objects.create(name="mc-only")
    run = AuditRun.objects.create(dataset=empty, readers=["strip-string"])
    assert audit_run_execute(audit_run_id=run.pk).status == AuditRun.Status.FAILED
    run.refresh_from_db()
    assert run.status == AuditRun.Status.FAILED and "no open-ended golds" in run.error


def test_pages_are_manager_only(dataset):
    run = AuditRun.objects.create(dataset=dataset, readers=["strip-string"])
    annotator = Client()
    annotator.force_login(make_user("ann", "annotator"))
    assert annotator.get("/audit/").status_code == 403
    assert annotator.post("/audit/", {"dataset": dataset.pk, "reader": ["strip-string"]}).status_code == 403
    assert annotator.get(f"/audit/{run.pk}/").status_code == 403
    assert not AuditRun.objects.exclude(pk=run.pk).exists()
    anonymous = Client().get("/audit/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_bad_form_is_refused(dataset):
    client = Client()
    client.force_login(make_user("boss", "manager"))
    response = client.post("/audit/", {"dataset": "", "reader": ["nope"]})
    assert response.status_code == 400
    assert b"Choose a dataset" in response.content and b"Choose at least one reader" in response.content
    assert not AuditRun.objects.exists()
    queued = AuditRun.objects.create(dataset=dataset, readers=["strip-string"])
    page = client.get(f"/audit/{queued.pk}/")
    assert page.status_code == 200 and b'http-equiv="refresh"' in page.content
