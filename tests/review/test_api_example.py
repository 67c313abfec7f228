"""docs/api_example.py against a live server: with a token, it lists the queues, reads the queue's
status and downloads its final labels, and claims and labels an item only when told to (--label);
a user without a role's rights is told so and the script goes on."""

from __future__ import annotations

import csv
import re
import subprocess
import sys

import pytest

from adjudication.review.queues.specs import QueueSpec

from ..conftest import ROOT, run_command
from .conftest import disputed_dataset, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.system]  # child processes

SCRIPT = ROOT / "docs" / "api_example.py"


def token_for(username: str) -> str:
    return re.search(r"([0-9a-f]{40})", run_command("drf_create_token", username)).group(1)


def run_example(base_url: str, token: str, *args: str) -> subprocess.CompletedProcess:
    # The token comes through the environment, as the script's docstring suggests (not argv).
    env = {"ADJ_API_TOKEN": token, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--url", base_url, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_example_script_claims_labels_and_downloads_with_a_token(write_jsonl, plain_live_server, tmp_path):
    from adjudication.models import Label
    from adjudication.review.queues.services import queue_create

    queue = queue_create(
        dataset=disputed_dataset(write_jsonl, 1), spec=QueueSpec(name="example-q", overlap=1, title="Example")
    )
    make_user("lead", "annotator", "manager")
    out = tmp_path / "final.csv"
    done = run_example(plain_live_server, token_for("lead"), "--label", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "queues: 1" and f"queue {queue.pk}: Example" in lines[1]
    assert re.search(r"^claimed lease \d+ until ", done.stdout, re.M)
    label = Label.objects.get(annotator__username="lead")
    # The first candidate (the readers said B and C) as an option letter.
    assert (label.kind, label.answer in ("B", "C")) == ("option", True)
    assert f"labelled: label {label.pk} (option '{label.answer}')" in done.stdout
    # One label on an overlap-1 queue settles the item as "labelled once", never "agreed" (issue 36 item 7).
    assert re.search(r"^status: items 1, pending 0, .*one_label 1, agreed 0", done.stdout, re.M), done.stdout
    assert f"final labels: 1 rows written to {out}" in done.stdout
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [(r["final_answer"], r["provenance"], r["label_count"]) for r in rows] == [(label.answer, "unanimous", "1")]

    # Again: nothing left to claim; the status and download still work.
    again = run_example(plain_live_server, token_for("lead"), "--label", "--out", str(tmp_path / "again.jsonl"))
    assert again.returncode == 0 and f"claim: nothing left for you in queue {queue.pk}" in again.stdout
    assert "final labels: 1 rows written" in again.stdout


def test_the_example_script_reports_what_a_role_may_not_do(write_jsonl, plain_live_server, tmp_path):
    from adjudication.models import Label
    from adjudication.review.queues.services import queue_create

    queue_create(dataset=disputed_dataset(write_jsonl, 1), spec=QueueSpec(name="example-q", overlap=1))
    make_user("ann", "annotator")
    done = run_example(
        plain_live_server, token_for("ann"), "--label", "--answer", "C", "--out", str(tmp_path / "x.csv")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert Label.objects.get(annotator__username="ann").answer == "C"
    assert "status and final labels: error 403 permission_denied: " in done.stdout
    assert not (tmp_path / "x.csv").exists()

    wrong = run_example(plain_live_server, "0" * 40)
    assert wrong.returncode == 1 and wrong.stdout.startswith("error 401 authentication_failed: ")


def test_the_example_script_only_reads_unless_told_to_label(write_jsonl, plain_live_server, tmp_path):
    """Issue 36 item 16: pointed at a queue people are working on, the example changes nothing there."""
    from adjudication.models import Label, Lease
    from adjudication.review.queues.services import queue_create

    queue = queue_create(dataset=disputed_dataset(write_jsonl, 1), spec=QueueSpec(name="example-q", overlap=1))
    make_user("lead", "annotator", "manager")
    out = tmp_path / "final.csv"
    done = run_example(plain_live_server, token_for("lead"), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read only: nothing claimed or labelled" in done.stdout
    assert not Label.objects.exists() and not Lease.objects.filter(item__queue=queue).exists()
    assert re.search(r"^status: items 1, pending 1, ", done.stdout, re.M)
    assert "final labels: 0 rows written" in done.stdout

    refused = run_example(plain_live_server, token_for("lead"), "--answer", "C")
    assert refused.returncode == 2 and "add --label" in refused.stderr
    assert not Label.objects.exists()
