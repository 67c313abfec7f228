"""run_readers from the UI and the API, and the progress endpoint the UI polls."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from adjudication.models import Dataset, Reading

from ..conftest import math_row, mc_row, run_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(write_jsonl):
    run_command(
        "import_responses", str(write_jsonl([mc_row(0), mc_row(1), math_row(0)])), dataset="api", no_progress=True
    )
    return Dataset.objects.get(name="api")


@pytest.fixture
def manager_client(client):
    user = User.objects.create_user("boss", password="pw-123456")
    user.groups.add(Group.objects.get_or_create(name="manager")[0])
    client.force_login(user)
    return client


def test_api_run_readers_then_progress_reports_every_reader_done(
    dataset, manager_client, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        resp = manager_client.post(
            f"/api/datasets/{dataset.id}/run-readers/", {"readers": ["boxed", "fixed"]}, content_type="application/json"
        )
    assert resp.status_code == 202
    assert {r["reader"] for r in resp.json()["readers"]} == {"boxed", "fixed"}
    progress = manager_client.get(f"/api/datasets/{dataset.id}/progress/").json()
    assert progress["responses"] == 3 and progress["done"] == progress["total"] == 6
    assert all(r["done"] == 3 and len(r["config_hash"]) == 16 for r in progress["readers"])
    assert Reading.objects.count() == 6


def test_api_rejects_unknown_readers(dataset, manager_client):
    resp = manager_client.post(
        f"/api/datasets/{dataset.id}/run-readers/", {"readers": ["nope"]}, content_type="application/json"
    )
    assert resp.status_code == 400 and "unknown reader" in resp.content.decode()


def test_the_ui_form_enqueues_the_checked_readers(dataset, manager_client, eager, django_capture_on_commit_callbacks):
    page = manager_client.get(f"/datasets/{dataset.id}/")
    assert b'name="reader" value="fixed"' in page.content
    with django_capture_on_commit_callbacks(execute=True):
        resp = manager_client.post(f"/datasets/{dataset.id}/run/", {"reader": ["strict-match"]})
    assert resp.status_code == 302
    assert set(Reading.objects.values_list("reader_spec__name", flat=True)) == {"strict-match"}


@pytest.mark.parametrize(
    "url,method",
    [
        ("/api/datasets/{id}/progress/", "get"),
        ("/api/datasets/{id}/run-readers/", "post"),
        ("/datasets/{id}/run/", "post"),
    ],
)
def test_only_managers_may_run_readers_or_see_progress(dataset, client, url, method):
    target = url.format(id=dataset.id)
    anonymous = getattr(client, method)(target)
    # The API challenges (401); a page sends the visitor to the login form (302).
    assert anonymous.status_code == (401 if target.startswith("/api/") else 302)
    annotator = User.objects.create_user("ann", password="pw-123456")
    annotator.groups.add(Group.objects.get_or_create(name="annotator")[0])
    client.force_login(annotator)
    assert getattr(client, method)(target).status_code == 403
    assert Reading.objects.count() == 0


def test_the_openapi_schema_is_served_to_managers(manager_client):
    resp = manager_client.get("/api/schema/")
    assert resp.status_code == 200 and b"/api/datasets/{dataset_id}/progress/" in resp.content
