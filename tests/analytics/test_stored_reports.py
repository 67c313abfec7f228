"""Stored reports: computed once per (dataset, parameters, data version) by the task, read by the
page and every download, recomputed once after the data changed, one row however many ask at
once, a failure shown and retried, and a lost computation handed out again after its lease."""

from __future__ import annotations

import csv
import html
import io
import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from adjudication.analytics import services
from adjudication.analytics.headline import format_share_headline
from adjudication.analytics.report import Params
from adjudication.analytics.selectors import report_stored
from adjudication.analytics.services import report_compute, report_for_view, report_request
from adjudication.models import AnalyticsReport, Dataset, QueueItem
from adjudication.review.annotate.services import label_revise
from adjudication.review.labels import LabelEntry
from adjudication.revisions import dataset_version

from ..conftest import run_command
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def builds(monkeypatch) -> list[Params]:
    """Every build of a report in this test (the parameters it was built for)."""
    seen: list[Params] = []
    real = services.build

    def counting(dataset: Dataset, params: Params):
        seen.append(params)
        return real(dataset, params)

    monkeypatch.setattr(services, "build", counting)
    return seen


@pytest.fixture
def enqueued(monkeypatch) -> list[int]:
    """The report ids handed to the queue (no broker, no worker: nothing runs them)."""
    from adjudication.analytics import tasks

    sent: list[int] = []
    monkeypatch.setattr(tasks.compute_report, "delay", lambda report_id: sent.append(report_id))
    return sent


@pytest.fixture
def committing(django_capture_on_commit_callbacks):
    """with committing(): ... runs what the block left for transaction.on_commit at its end, as a
    commit would (inside a test's transaction nothing commits)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def manager() -> Client:
    client = Client()
    client.force_login(make_user("boss", "manager"))
    return client


def test_one_stored_report_serves_every_view_and_download(labelled, computed, builds, manager):
    ds, _ = labelled
    report = computed(ds)
    assert len(builds) == 1
    for url in ("/", "/?by=checkpoint", "/?by=benchmark", "/readers.csv", "/agreement.json", "/report.json"):
        assert manager.get(f"/analytics/{ds.pk}{url}").status_code == 200, url
    assert len(builds) == 1  # nothing computed in a request
    assert AnalyticsReport.objects.filter(dataset=ds).count() == 1
    assert AnalyticsReport.objects.get().pk == report.pk and report.elapsed_s is not None


def test_a_new_label_makes_the_report_stale_and_it_is_recomputed_once(
    labelled, computed, builds, manager, django_capture_on_commit_callbacks
):
    ds, queue = labelled
    old = computed(ds)
    label = queue.items.filter(status="agreed").first().labels.first()
    label_revise(label=label, annotator=label.annotator, entry=LabelEntry(kind="option", answer="D"))
    assert dataset_version(dataset_id=ds.pk) == old.data_version + 1
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        page = manager.get(f"/analytics/{ds.pk}/").content.decode()
    # The old report is shown, saying the data changed and a new one is being computed.
    assert f"for data version {old.data_version}" in page and "The data changed since" in page
    assert '<meta http-equiv="refresh"' in page and "Format share per benchmark" in page
    assert len(callbacks) == 1 and len(builds) == 1
    callbacks[0]()  # the worker runs the task
    assert len(builds) == 2
    for _ in range(3):
        page = manager.get(f"/analytics/{ds.pk}/").content.decode()
        assert "It is up to date" in page and '<meta http-equiv="refresh"' not in page
    assert len(builds) == 2
    (kept,) = AnalyticsReport.objects.filter(dataset=ds)  # the superseded report is gone
    assert kept.data_version == old.data_version + 1 and kept.status == "done"


def test_the_page_before_any_report_says_it_is_being_computed(labelled, manager, enqueued, builds, committing):
    ds, _ = labelled
    with committing():
        page = manager.get(f"/analytics/{ds.pk}/")
    text = page.content.decode()
    assert page.status_code == 200 and "is being computed" in text and '<meta http-equiv="refresh"' in text
    assert len(enqueued) == 1 and builds == []
    with committing():
        manager.get(f"/analytics/{ds.pk}/")
    assert len(enqueued) == 1  # queued already: not handed out twice


def test_downloads_answer_503_before_the_first_report_and_read_the_stored_one_after(
    labelled, computed, manager, enqueued, builds, committing
):
    ds, _ = labelled
    for table in ("readers.csv", "flips.json", "report.json"):
        with committing():
            waiting = manager.get(f"/analytics/{ds.pk}/{table}")
        assert waiting.status_code == 503 and waiting["Retry-After"] == "10"
        assert "is being computed" in waiting.content.decode()
    assert builds == [] and len(enqueued) == 1
    report = computed(ds)
    csv_download = manager.get(f"/analytics/{ds.pk}/readers.csv")
    assert csv_download.status_code == 200
    assert csv_download["X-Report-Computed-At"] == report.finished_at.isoformat()
    assert csv_download["X-Report-Data-Version"] == str(report.data_version)
    rows = list(csv.DictReader(io.StringIO(csv_download.content.decode())))
    assert rows == [
        {k: "" if v is None else str(v) for k, v in r.items()} for r in report.body["tables"]["readers"]["rows"]
    ]
    data = manager.get(f"/analytics/{ds.pk}/report.json").json()
    assert data["computed_at"] == report.finished_at.isoformat() and data["data_version"] == report.data_version
    assert data["current"] is True and data["headline"] == report.body["headline"]
    assert manager.get(f"/analytics/{ds.pk}/agreement.json").json()["computed_at"] == data["computed_at"]
    assert len(builds) == 1


def test_concurrent_requests_create_one_report_and_enqueue_it_once(transactional_db, write_jsonl, enqueued):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")
    run_command(
        "import_responses",
        str(write_jsonl([{"id": "1", "question": "q", "gold": "4", "response": "4"}])),
        dataset="c",
        no_progress=True,
    )
    ds = Dataset.objects.get(name="c")
    barrier = threading.Barrier(6)
    got: list[int] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            barrier.wait()
            got.append(report_request(dataset=ds, params=Params()).pk)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(got) == 6 and len(set(got)) == 1
    assert AnalyticsReport.objects.count() == 1 and enqueued == got[:1]


def test_a_failed_computation_is_shown_and_retried(
    labelled, manager, monkeypatch, eager, django_capture_on_commit_callbacks, settings
):
    ds, _ = labelled
    real = services.build

    def broken(dataset, params):
        raise RuntimeError("the reader table is not there")

    monkeypatch.setattr(services, "build", broken)
    with django_capture_on_commit_callbacks(execute=True):
        manager.get(f"/analytics/{ds.pk}/")
    (report,) = AnalyticsReport.objects.all()
    assert report.status == "failed" and report.attempts == 1 and "the reader table is not there" in report.error
    settings.ANALYTICS_MAX_ATTEMPTS = 2
    monkeypatch.setattr(services, "build", real)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        page = manager.get(f"/analytics/{ds.pk}/").content.decode()
    # Shown: the failure, in full; retried: handed out again, and this time it succeeds.
    assert "The previous attempt failed: RuntimeError: the reader table is not there" in page
    assert len(callbacks) == 1
    report.refresh_from_db()
    assert report.status == "done" and report.attempts == 2
    assert "It is up to date" in manager.get(f"/analytics/{ds.pk}/").content.decode()


def test_a_computation_that_failed_every_attempt_is_not_retried(
    labelled, manager, monkeypatch, enqueued, settings, committing
):
    ds, _ = labelled
    settings.ANALYTICS_MAX_ATTEMPTS = 1
    monkeypatch.setattr(services, "build", lambda dataset, params: 1 / 0)
    with committing():
        report = report_request(dataset=ds, params=Params())
    assert report_compute(report_id=report.pk).status == "failed" and enqueued == [report.pk]
    with committing():
        download = manager.get(f"/analytics/{ds.pk}/readers.csv")
        page = manager.get(f"/analytics/{ds.pk}/").content.decode()
    assert download.status_code == 503 and "ZeroDivisionError" in download.content.decode()
    assert "could not be computed (attempt 1): ZeroDivisionError: division by zero" in page
    assert enqueued == [report.pk]


def test_a_computation_whose_worker_was_lost_is_handed_out_again_after_its_lease(
    labelled, enqueued, settings, committing
):
    ds, _ = labelled
    with committing():
        report = report_request(dataset=ds, params=Params())
    claim = services.report_claim(report_id=report.pk)
    assert claim.attempt == 1
    # A second delivery while the first worker is alive leaves it alone.
    assert services.report_claim(report_id=report.pk).attempt is None
    with committing():
        assert report_for_view(dataset=ds, params=Params()).pending.pk == report.pk
    assert len(enqueued) == 1
    # The worker died: nothing heard of it for longer than the lease.
    AnalyticsReport.objects.filter(pk=report.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.ANALYTICS_LEASE_SECONDS + 5)
    )
    with committing():
        report_for_view(dataset=ds, params=Params())
    assert enqueued == [report.pk, report.pk]
    outcome = report_compute(report_id=report.pk)
    assert outcome.status == "done" and outcome.attempt == 2
    assert report_stored(dataset=ds, params=Params()).current


def test_display_choices_share_one_report_and_each_content_parameter_has_its_own(labelled):
    assert Params.from_query({"by": "checkpoint"}).key == Params().key
    keys = {
        Params.from_query(q).key
        for q in ({}, {"fixed": "human"}, {"reported": "fixed"}, {"min_gain": "5"}, {"pool_by": "benchmark"})
    }
    assert len(keys) == 5
    assert Params.from_query({"min_gain": "5"}).key == Params.from_query({"min_gain": "5.0"}).key


def test_the_stored_headline_is_what_format_share_by_benchmark_prints(labelled, computed):
    import json

    ds, _ = labelled
    for query, options in (
        ({}, {}),
        ({"fixed": "human", "min_gain": "1"}, {"fixed_reader": "human", "min_reported_gain": 1.0}),
    ):
        body = computed(ds, **query).body
        printed = json.loads(run_command("format_share", dataset=ds.name, by="benchmark", json=True, **options))
        want = format_share_headline(
            printed, reported=printed["reported_reader"], fixed=printed["fixed_reader"], base="base"
        )
        got = body["headline"]
        assert got["overall"] == want["overall"]
        assert [{k: v for k, v in r.items() if k != "disputed"} for r in got["by_benchmark"]] == want["by_benchmark"]
    # The disputed count per benchmark: responses some panel disputes (controls are not disputes).
    disputed = QueueItem.objects.filter(queue__dataset=ds, review_item__is_control=False).count()
    assert [r["disputed"] for r in body["headline"]["by_benchmark"]] == [disputed]


def test_the_headline_ranks_readers_and_lists_each_producers_bias(labelled, computed):
    ds, _ = labelled
    body = computed(ds).body
    head, scope = body["headline"], body["agreement"]["selection"]["preferred_scope"]
    vs = body["agreement"]["vs_human"][scope]
    assert head["judge_bias"][0]["reader"] == "judge-x"  # judges first
    assert {r["reader"] for r in head["judge_bias"]} == set(vs)
    for r in head["judge_bias"]:
        assert (r["n"], r["bias"], r["bias_ci"]) == (
            vs[r["reader"]]["all"]["n"],
            vs[r["reader"]]["all"]["bias"],
            vs[r["reader"]]["all"]["bias_ci"],
        )
    ranked = [(r["agreement"], r["reader"]) for r in head["reader_ranking"]]
    # Ranked by the interval's lower bound (analytics.ranking.rank_readers), the withheld last.
    lows = [r["lower"] for r in head["reader_ranking"] if r["rank"] is not None]
    assert lows == sorted(lows, reverse=True)
    assert {name: a for a, name in ranked} == {name: g["all"]["accuracy"] for name, g in vs.items()}


def test_without_labels_the_ranking_is_empty_and_says_why(write_jsonl, computed, manager):
    run_command(
        "import_responses",
        str(write_jsonl([{"id": "1", "question": "q", "gold": "4", "response": "4"}])),
        dataset="e",
        no_progress=True,
    )
    ds = Dataset.objects.get(name="e")
    head = computed(ds).body["headline"]
    assert head["reader_ranking"] == [] and head["judge_bias"] == []
    assert "No final human labels yet" in head["reader_ranking_note"]
    page = manager.get(f"/analytics/{ds.pk}/").content.decode()
    assert re.search(r"No final human labels yet: readers are ranked", page)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("reported=nobody", "reported: no readings by 'nobody'"),
        ("fixed=bo%00xed", "fixed: no readings by"),
        ("reference=human", "reference: the ranking reference must be a reader"),
        ("base=nope", "base: the dataset has no checkpoint 'nope'"),
    ],
)
def test_parameters_naming_what_the_dataset_lacks_are_refused_without_a_computation(
    labelled, manager, enqueued, query, field
):
    ds, _ = labelled
    page = manager.get(f"/analytics/{ds.pk}/?{query}")
    assert page.status_code == 400 and field in html.unescape(page.content.decode())
    download = manager.get(f"/analytics/{ds.pk}/readers.csv?{query}")
    assert download.status_code == 400 and field in download.content.decode()
    assert enqueued == [] and not AnalyticsReport.objects.exists()


def test_a_report_replaced_between_two_reads_is_served_from_its_successor(labelled, computed, manager, monkeypatch):
    from adjudication.analytics import views

    ds, queue = labelled
    old = computed(ds)
    seen = report_stored(dataset=ds, params=Params())  # what a request read just before ...
    label = queue.items.filter(status="agreed").first().labels.first()
    label_revise(label=label, annotator=label.annotator, entry=LabelEntry(kind="option", answer="D"))
    new = computed(ds)  # ... the newer report was stored and the old one deleted
    assert not AnalyticsReport.objects.filter(pk=old.pk).exists()
    monkeypatch.setattr(views, "report_for_view", lambda **kw: seen)
    page = manager.get(f"/analytics/{ds.pk}/")
    assert page.status_code == 200 and f"for data version {new.data_version}" in page.content.decode()
    download = manager.get(f"/analytics/{ds.pk}/readers.csv")
    assert download.status_code == 200 and download["X-Report-Data-Version"] == str(new.data_version)
