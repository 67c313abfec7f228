"""The analytics page in headless Chromium at 1366 x 768 and 1024 x 640, on the quickstart's data
(320 responses, every rule reader) with a review queue and a few final labels: no horizontal
overflow, and no table or chart wider than the page's column (at 1024 px a wide table scrolls inside
its own box), with each choice of reader and breakdown."""

from __future__ import annotations

import pytest

from adjudication.analytics.report import Params
from adjudication.analytics.selectors import report_readers
from adjudication.analytics.services import report_request
from adjudication.models import AnalyticsReport, Dataset
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..browser import chromium_browser, require_chromium
from ..conftest import ROOT, manage, run_command
from ..review.conftest import make_user
from ..review.test_browser_flow import SCREENSHOTS, add_user, logged_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SAMPLE = ROOT / "adjudication" / "sample_data" / "quickstart.jsonl"
# Every query but the first names its readers: a page set to readers is remembered (AnalyticsChoice)
# and becomes the default of the pages after it, so only the first can be the dataset's own default.
QUERIES = (
    "",
    "?reported=boxed&fixed=human",
    "?reported=boxed&fixed=fixed&by=checkpoint&pool_by=benchmark",
    "?reported=strict-match&fixed=human",
    "?reported=boxed&fixed=fixed",  # the screenshots'
)

OVERFLOW = """() => {
  const column = document.querySelector("main").getBoundingClientRect().right;
  return [...document.querySelectorAll("main table, main svg, main .plot, main form, main ul")]
    .filter(e => e.getBoundingClientRect().right > column + 0.5)
    .map(e => `${e.tagName}#${e.id} ends at ${Math.round(e.getBoundingClientRect().right)} > ${Math.round(column)}`);
}"""
# At 1024 px a table wider than the column scrolls inside its own box (.table-scroll): the boxes,
# and everything outside them, stay inside the column.
OVERFLOW_BOXED = """() => {
  const column = document.querySelector("main").getBoundingClientRect().right;
  return [...document.querySelectorAll("main .table-scroll, main svg, main .plot, main form, main ul, main table")]
    .filter(e => !e.parentElement.closest(".table-scroll"))
    .filter(e => e.getBoundingClientRect().right > column + 0.5)
    .map(e => `${e.tagName}.${e.className}#${e.id} ends at ${Math.round(e.getBoundingClientRect().right)}`);
}"""


def test_the_page_fits_a_1366_pixel_window(service_env, plain_live_server, monkeypatch, eager):
    require_chromium()
    run_command("import_responses", str(SAMPLE), dataset="quickstart", no_progress=True)
    env = {k: v for k, v in service_env.items() if k not in ("CELERY_BROKER_URL", "REDIS_URL")}
    done = manage("run_readers", "--dataset", "quickstart", env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ds = Dataset.objects.get(name="quickstart")
    queue = queue_create(
        dataset=ds,
        spec=QueueSpec(
            name="qs", overlap=2, routing=PolicySpec(panel=["boxed", "fixed", "strict-match"], control_fraction=0.1)
        ),
    )
    for name in ("ann", "bob"):
        annotator = make_user(name, "annotator")
        for _ in range(12):
            lease = lease_claim_next(queue=queue, annotator=annotator).lease
            if lease is None:
                break
            # Controls are served among the disputes, so a free-form item can come up: it gets text.
            choices = lease.item.review_item.response.question.choices
            entry = LabelEntry(kind="option", answer="B") if choices else LabelEntry(kind="text", answer="42")
            label_submit(lease=lease, annotator=annotator, entry=entry)
    for query in QUERIES:
        # Committed at once (a transactional test), so the eager task has run when this returns.
        report = report_request(
            dataset=ds,
            params=Params.from_query(
                dict(p.split("=") for p in query[1:].split("&") if p), readers=report_readers(dataset=ds)
            ),
        )
        report.refresh_from_db()
        assert report.status == AnalyticsReport.Status.DONE, report.error
    add_user(monkeypatch, "boss", "manager")
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "boss", f"/analytics/{ds.pk}/") as page:
        page.set_viewport_size({"width": 1366, "height": 768})
        for query in QUERIES:
            page.goto(f"{plain_live_server}/analytics/{ds.pk}/{query}")
            assert page.locator("#headline").count() == 1 and page.locator("#flip-matrix").count() == 1, query
            # The producers' rates over every response, a wide table, are on the page and inside it.
            assert page.locator("#judge-bias-estimates-table tbody tr").count() > 0, query
            assert page.evaluate("document.documentElement.scrollWidth") <= 1366, query
            assert page.evaluate(OVERFLOW) == [], query
        # issue 36 item 17: the headline's tables take the column's width (side by side they were
        # squeezed into half of it), and no column of the headline table is empty.
        narrow = page.evaluate(
            """() => {
              const column = document.querySelector(".analytics").getBoundingClientRect().width;
              return [...document.querySelectorAll("#headline table.grid")]
                .filter(t => t.getBoundingClientRect().width < 0.9 * column)
                .map(t => `${t.className} ${Math.round(t.getBoundingClientRect().width)} < ${Math.round(column)}`);
            }"""
        )
        assert narrow == []
        empty_columns = page.evaluate(
            """() => {
              const t = document.querySelector("#headline table.headline-fs");
              const rows = [...t.querySelectorAll("tbody tr")];
              return [...t.querySelectorAll("thead th")].map((th, i) => th.textContent.trim() === "" ||
                rows.every(r => (r.children[i] || {}).textContent.trim() === "")).filter(Boolean).length;
            }"""
        )
        assert empty_columns == 0
        page.goto(f"{plain_live_server}/analytics/{ds.pk}/?reported=boxed&fixed=fixed")
        page.screenshot(path=str(SCREENSHOTS / "analytics-1366x768.png"))
        page.set_viewport_size({"width": 1024, "height": 640})
        page.screenshot(path=str(SCREENSHOTS / "analytics-1024x640.png"))
        # issue 36 item 17: at 1024 px the page was 1050 px wide (the producers' rates over every
        # response, ten columns); no page is wider than the window, each wide table scrolls in its box.
        for query in QUERIES:
            page.goto(f"{plain_live_server}/analytics/{ds.pk}/{query}")
            assert page.locator("#judge-bias-estimates-table tbody tr").count() > 0, query
            assert page.evaluate("document.documentElement.scrollWidth") <= 1024, query
            assert page.evaluate(OVERFLOW_BOXED) == [], query
        # The landing card's table stays inside its card at 1024 px.
        page.goto(f"{plain_live_server}/")
        card = page.locator("section.card").first
        assert card.evaluate("c => c.scrollWidth <= c.clientWidth + 1")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1024
