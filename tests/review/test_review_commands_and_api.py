"""Managers' commands (add_user, create_queue), the review API end to end, and the final-label export."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.management.base import CommandError
from django.test import Client

from adjudication.models import ReviewQueue

from ..conftest import run_command
from .conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db


def test_add_user_takes_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("ADJ_PASSWORD", "a-long-password-42")
    out = run_command("add_user", "ann", role=["annotator"])
    user = User.objects.get(username="ann")
    assert "annotator" in out and user.check_password("a-long-password-42") and not user.is_staff
    run_command("add_user", "boss", "--role", "manager", "--role", "adjudicator")
    boss = User.objects.get(username="boss")
    assert boss.is_staff and set(boss.groups.values_list("name", flat=True)) == {"manager", "adjudicator"}


def test_add_user_refuses_a_weak_password(monkeypatch):
    monkeypatch.setenv("ADJ_PASSWORD", "123")
    with pytest.raises(CommandError, match="too short"):
        run_command("add_user", "ann", role=["annotator"])


def test_create_queue_routes_disagreements_with_the_readers_that_ran(write_jsonl):
    disputed_dataset(write_jsonl, 5)
    out = run_command("create_queue", dataset="rv", name="q1", overlap=3, judge_correctness=True)
    queue = ReviewQueue.objects.get(name="q1")
    assert "5 items, overlap 3" in out and queue.judge_correctness and queue.show_candidates
    assert sorted(queue.policy.panel.values_list("name", flat=True)) == ["boxed", "strict-match"]
    with pytest.raises(CommandError, match="exists already"):
        run_command("create_queue", dataset="rv", name="q1")


def test_the_api_flow_claim_label_and_export(write_jsonl):
    ds = disputed_dataset(write_jsonl, 2)
    manager = Client()
    manager.force_login(make_user("man", "manager"))
    created = manager.post(
        "/api/queues/", {"dataset": ds.name, "name": "apiq", "overlap": 1}, content_type="application/json"
    )
    assert created.status_code == 201
    queue_id = created.json()["id"]
    ann = Client()
    ann.force_login(make_user("ann", "annotator"))
    for _ in range(2):
        item = ann.post(f"/api/queues/{queue_id}/claim/").json()
        assert set(item) == {"lease", "expires_at", "question", "options", "response", "candidates", "gold", "progress"}
        spans = [c["spans"] for c in item["candidates"]]
        assert sorted(item["response"][s:e] for ((s, e),) in spans) == ["B", "C"]
        bad = ann.post(
            f"/api/leases/{item['lease']}/label/", {"kind": "option", "answer": "Q"}, content_type="application/json"
        )
        assert bad.status_code == 400 and "one of A, B, C, D" in bad.content.decode()
        ok = ann.post(
            f"/api/leases/{item['lease']}/label/",
            {"kind": "option", "answer": "C", "confidence": 4},
            content_type="application/json",
        )
        assert ok.status_code == 201
    assert ann.post(f"/api/queues/{queue_id}/claim/").status_code == 204
    status = manager.get(f"/api/queues/{queue_id}/status/").json()
    assert status["one_label"] == 2 and status["agreed"] == 0 and status["pending"] == 0
    rows = [json.loads(line) for line in manager.get(f"/api/queues/{queue_id}/final-labels/").content.splitlines()]
    assert {(r["final_answer"], r["provenance"]) for r in rows} == {("C", "unanimous")}
    assert rows[0]["labels"][0]["annotator"] == "ann" and rows[0]["labels"][0]["confidence"] == 4
    csv_body = manager.get(f"/api/queues/{queue_id}/final-labels/?fmt=csv").content.decode()
    assert csv_body.splitlines()[0].startswith("response_id,") and len(csv_body.splitlines()) == 3
    page = manager.get(f"/queues/{queue_id}/final-labels.csv")
    assert page.status_code == 200 and b"unanimous" in page.content
    assert '<td data-state="one_label">2</td>' in manager.get("/queues/").content.decode()
    queue_page = manager.get(f"/queues/{queue_id}/").content.decode()
    assert "<tr><td>ann</td><td>2</td>" in queue_page  # the per-annotator table moved to the queue's page
