"""No page computes an analytics report in its request, also on the embedded default (eager Celery):
after a label, the landing page and the analytics page serve the stored report marked as being
recomputed, and the computation runs once the response has gone out (issue 36 item 15)."""

from __future__ import annotations

import pytest

from adjudication import after_response
from adjudication.analytics import services
from adjudication.models import AnalyticsReport, Label
from adjudication.review.annotate.services import label_revise
from adjudication.review.labels import LabelEntry

from ..review.conftest import make_user


@pytest.fixture
def watched(monkeypatch):
    """(jobs handed to the background thread, report computations so far)."""
    jobs: list = []
    computed: list[int] = []
    real = services.report_body

    def counting(**kwargs):
        computed.append(1)
        return real(**kwargs)

    monkeypatch.setattr(services, "report_body", counting)
    monkeypatch.setattr(after_response, "submit", jobs.append)
    return jobs, computed


def _label_one_more(queue) -> None:
    """An annotator revises one of her labels: the dataset's data version goes up."""
    label = (
        Label.objects.filter(queue=queue, annotator__username="ann")
        .exclude(item__status="adjudicated")
        .order_by("pk")
        .first()
    )
    assert label is not None
    answer = "B" if label.answer == "A" else "A"
    label_revise(label=label, annotator=label.annotator, entry=LabelEntry(kind="option", answer=answer))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("page", ["landing", "analytics"])
def test_a_page_after_a_label_serves_the_stale_report_and_computes_after_the_response(
    page, labelled, computed, watched, client, eager
):
    """issue 36 item 15: the request computes nothing; the stale report is shown as being
    recomputed; the computation is handed off when the response is done, and then it is current."""
    ds, queue = labelled
    stale = computed(ds)
    jobs, computations = watched
    computations.clear()
    _label_one_more(queue)
    client.force_login(make_user("mona", "manager"))
    url = "/" if page == "landing" else f"/analytics/{ds.pk}/"

    reply = client.get(url)

    assert reply.status_code == 200
    assert computations == [], "the report was computed inside the page request"
    html = reply.content.decode()
    if page == "landing":
        assert "being recomputed" in html
        assert 'class="headline' in html  # the stale report's headline is still shown
    else:
        assert "a new report is being computed" in html
        assert f"for data version {stale.data_version}" in html
    assert len(jobs) == 1, "the computation was not handed off after the response"
    pending = AnalyticsReport.objects.exclude(pk=stale.pk).get(dataset=ds, params_key=stale.params_key)
    assert pending.status == AnalyticsReport.Status.QUEUED

    jobs.pop()()  # what the background thread runs

    assert computations == [1]
    assert AnalyticsReport.objects.get(pk=pending.pk).status == AnalyticsReport.Status.DONE
    again = client.get(url).content.decode()
    assert computations == [1] and jobs == []
    assert "being recomputed" not in again and "a new report is being computed" not in again


def test_outside_a_request_deferred_work_runs_at_once():
    """A command has no response to wait for: the work runs when asked (issue 36 item 15)."""
    ran: list[int] = []
    after_response.defer(lambda: ran.append(1))
    assert ran == [1]


def test_work_deferred_in_a_request_waits_for_its_end(monkeypatch):
    """Between request_started and request_finished the work is held, then handed to the thread."""
    handed: list = []
    monkeypatch.setattr(after_response, "submit", handed.append)
    ran: list[int] = []
    after_response.request_started()
    after_response.defer(lambda: ran.append(1))
    assert ran == [] and handed == []
    after_response.request_finished()
    assert len(handed) == 1 and ran == []
    handed[0]()
    assert ran == [1]


def test_the_background_thread_runs_submitted_work():
    """The real executor: a job submitted runs on its thread; drain waits for it."""
    import threading

    seen: list[str] = []
    future = after_response.run_in_background(lambda: seen.append(threading.current_thread().name))
    future.result(timeout=30)
    after_response.drain(timeout=30)
    assert seen and seen[0].startswith("after-response")
