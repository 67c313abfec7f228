"""The review loop's hand-written SQL (user load, claim, item page, label) behaves as the ORM code
it replaced: roles current on every request, progress counted right, labels tied to their queue,
and the same flow on the embedded SQLite default."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from adjudication.models import Label
from adjudication.review.annotate import selectors as review_selectors
from adjudication.review.annotate.selectors import annotator_progress, leased_item
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry

from ..conftest import ROOT
from .conftest import make_user

pytestmark = pytest.mark.django_db


def label_next(queue, user, answer="B"):
    lease = lease_claim_next(queue=queue, annotator=user).lease
    return label_submit(lease=lease, annotator=user, entry=LabelEntry(kind="option", answer=answer))


def test_a_role_taken_away_applies_on_the_next_request(queue):
    ann = make_user("ann", "annotator")
    client = Client()
    client.force_login(ann)
    assert client.get("/review/").status_code == 302
    ann.groups.remove(Group.objects.get(name="annotator"))
    assert client.get("/review/").status_code == 403


def test_a_deactivated_user_is_logged_out(queue):
    ann = make_user("ann", "annotator")
    client = Client()
    client.force_login(ann)
    ann.is_active = False
    ann.save()
    resp = client.get("/review/")
    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/")


def test_the_loaded_user_is_the_orm_user_with_roles(queue):
    from adjudication.auth_backends import RoleModelBackend

    user = make_user("both", "annotator", "adjudicator")
    loaded = RoleModelBackend().get_user(user.pk)
    assert loaded == user and loaded.username == "both" and loaded.date_joined == user.date_joined
    assert loaded._role_names == {"annotator", "adjudicator"}
    assert RoleModelBackend().get_user(make_user("nobody").pk)._role_names == frozenset()
    assert RoleModelBackend().get_user(10**9) is None and RoleModelBackend().get_user("x") is None


def test_progress_counts_what_each_annotator_did_and_what_is_left_for_them(queue):
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    assert annotator_progress(queue=queue, annotator=a) == {"done": 0, "remaining": 6, "remaining_more": False}
    label_next(queue, a)
    label_next(queue, a)
    label_next(queue, b)  # b labels a's first item: now full (overlap 2)
    assert annotator_progress(queue=queue, annotator=a) == {"done": 2, "remaining": 4, "remaining_more": False}
    # For b: the five items other than the one they labelled, a's second among them (it has room).
    assert annotator_progress(queue=queue, annotator=b) == {"done": 1, "remaining": 5, "remaining_more": False}
    skip = lease_claim_next(queue=queue, annotator=b).lease
    label_submit(lease=skip, annotator=b, skip_reason="unreadable", entry=LabelEntry(kind=Label.Kind.SKIPPED))
    # A skipped item is done for its annotator and gone from what is left for them.
    assert annotator_progress(queue=queue, annotator=b) == {"done": 2, "remaining": 4, "remaining_more": False}


def test_remaining_is_capped_beyond_the_cap(queue, monkeypatch):
    monkeypatch.setattr(review_selectors, "REMAINING_CAP", 3)
    a = make_user("a", "annotator")
    assert annotator_progress(queue=queue, annotator=a) == {"done": 0, "remaining": 3, "remaining_more": True}


def test_labels_and_revisions_record_their_queue(queue):
    a = make_user("a", "annotator")
    label = label_next(queue, a)
    revision = label_revise(label=label, annotator=a, entry=LabelEntry(kind="option", answer="C"))
    assert Label.objects.get(pk=label.pk).queue_id == queue.pk
    assert Label.objects.get(pk=revision.pk).queue_id == queue.pk


def test_a_lease_is_only_its_annotators(queue):
    a, b = make_user("a", "annotator"), make_user("b", "annotator")
    lease = lease_claim_next(queue=queue, annotator=a).lease
    mine = leased_item(lease_id=lease.pk, annotator=a)
    assert mine.item_id == lease.item_id and mine.queue_id == queue.pk and mine.overlap == 2
    assert mine.queue_title == ""  # the name "q" is the managers': never loaded for an annotator
    assert mine.choices == ["Durkheim", "Weber", "Merton", "Parsons"] and mine.completed_at is None
    assert mine.expires_at == lease.expires_at
    assert leased_item(lease_id=lease.pk, annotator=b) is None
    client = Client()
    client.force_login(b)
    assert client.get(f"/review/item/{lease.pk}/").status_code == 404


SQLITE_FLOW = textwrap.dedent("""
    import re
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client
    from adjudication.models import Label, Lease, QueueItem
    call_command("import_responses", "adjudication/sample_data/quickstart.jsonl", dataset="s", no_progress=True)
    call_command("run_readers", dataset="s", readers=["strict-match", "boxed"])
    call_command("create_queue", dataset="s", name="q", overlap=2)
    group = Group.objects.get(name="annotator")  # made by a migration
    for name in ("a", "b"):
        client = Client()
        client.force_login(User.objects.create_user(name))
        User.objects.get(username=name).groups.add(group)
        for n in range(3):
            claim = client.get("/review/")
            assert claim.status_code == 302, claim.status_code
            page = client.get(claim["Location"])
            assert page.status_code == 200 and f"{n} done".encode() in page.content, page.content[:300]
            done = client.post(claim["Location"], {"kind": "no_answer"})
            assert done.status_code == 302 and "/review/item/" not in done["Location"], done["Location"]
    lease = Lease.objects.order_by("id").first()
    assert lease.completed_at is not None and lease.expires_at.tzinfo is not None
    print("labels", Label.objects.count(), "agreed", QueueItem.objects.filter(status="agreed").count())
""")


@pytest.mark.system  # a child process
@pytest.mark.worker
def test_the_review_loop_runs_on_the_embedded_sqlite_default(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'review.sqlite3'}", PYTHONPATH=str(ROOT), ALLOWED_HOSTS="testserver"
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
    proc = subprocess.run(
        [*manage, "shell", "--no-imports", "-c", SQLITE_FLOW],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "labels 6 agreed 3" in proc.stdout


def test_hot_statements_are_prepared_on_postgresql_and_still_seen_when_queries_are_logged(queue):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are a PostgreSQL feature")
    a = make_user("a", "annotator")
    lease = lease_claim_next(queue=queue, annotator=a).lease

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                ["%JOIN adjudication_question qu ON qu.id = r.question_id%WHERE l.id =%"],
            )
            return cursor.fetchone()[0]

    assert prepared() == 0
    leased_item(lease_id=lease.pk, annotator=a)
    assert prepared() == 1
    with CaptureQueriesContext(connection) as seen:
        assert leased_item(lease_id=lease.pk, annotator=a).item_id == lease.item_id
    assert any("JOIN adjudication_question qu" in q["sql"] for q in seen.captured_queries)
