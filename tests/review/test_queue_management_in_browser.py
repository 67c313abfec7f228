"""Queue management in headless Chromium: creating a queue with a chosen panel (pick the dataset,
tick two readers, choose the comparison, preview, create) and the queue page's agreement matrix,
each number linking to the item browser's disagreeing items. Both pages run under the strict CSP
without a violation."""

from __future__ import annotations

import re

import pytest

from adjudication.review.queues.specs import QueueSpec

from ..browser import chromium_browser, require_chromium
from .conftest import make_user, panel_dataset_build
from .test_browser_flow import SCREENSHOTS, add_user, logged_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WATCH_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective));
"""


@pytest.fixture
def readers_dataset(write_jsonl, monkeypatch):
    """conftest.panel_dataset_build's 12 responses (no judge): the specs' ids by reader name."""
    require_chromium()
    _, specs = panel_dataset_build(write_jsonl, "br")
    add_user(monkeypatch, "boss", "manager")
    return {spec.name: spec.pk for spec in specs.values()}


def test_queue_creation_with_a_chosen_panel(readers_dataset, plain_live_server):
    spec_ids = readers_dataset
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "boss", "/queues/") as page:
        page.add_init_script(WATCH_VIOLATIONS)
        page.reload()
        page.select_option("select[name=dataset]", label="br")
        with page.expect_navigation():
            page.click("text=Next: choose the reader panel")
        assert "/queues/new/?dataset=" in page.url
        assert page.inner_text("#queue-dataset") == "br"
        # The dataset's default panel is ticked to begin with (its multiple-choice readers: all three
        # here); the panel is strict-match and boxed.
        for spec_id in spec_ids.values():
            assert page.is_checked(f"input[name=panel][value='{spec_id}']")
        page.uncheck(f"input[name=panel][value='{spec_ids['fixed']}']")
        page.check("input[name=compare][value=answer]")
        page.fill("input[name=name]", "boxed-vs-strict")
        page.fill("input[name=title]", "Sociology, round 1")
        with page.expect_navigation():
            page.click("#preview-button")
        assert page.inner_text("#preview-routed") == "3"
        assert (page.inner_text("#preview-disputed"), page.inner_text("#preview-pending")) == ("3", "1")
        page.screenshot(path=str(SCREENSHOTS / "queue-new.png"), full_page=True)
        # The values are kept for the next submit.
        assert page.input_value("input[name=name]") == "boxed-vs-strict"
        assert not page.is_checked(f"input[name=panel][value='{spec_ids['fixed']}']")
        assert page.is_checked(f"input[name=panel][value='{spec_ids['boxed']}']")
        assert page.is_checked("input[name=compare][value=answer]")
        with page.expect_navigation():
            page.click("#create-button")
        assert re.search(r"/queues/\d+/$", page.url), page.url
        assert "Queue boxed-vs-strict created with 3 items." in page.inner_text(".messages .success")
        progress = page.inner_text("#progress")
        assert "6 items" not in progress and "3 items: 3 not started" in progress
        assert page.evaluate("window.__csp") == []

    from adjudication.models import ReviewQueue

    queue = ReviewQueue.objects.get(name="boxed-vs-strict")
    assert queue.title == "Sociology, round 1" and queue.policy.compare == "answer"
    assert sorted(queue.policy.panel.values_list("name", flat=True)) == ["boxed", "strict-match"]
    # Exactly the responses those two readers dispute: boxed's D on 4-6.
    routed = set(queue.items.values_list("review_item__response__external_id", flat=True))
    assert routed == {"mc-4", "mc-5", "mc-6"}


# Items in claim order; each annotator's current label (None: skipped).
LABELS = {"ann": ["B", "B", "C", "D"], "bob": ["B", "C", "C", "D"], "cat": ["B", "B", "D", None]}
# (items both labelled, agreement, κ) per pair, by hand: see test_queue_management.py.
PAIRS = {
    ("ann", "bob"): ("4 items", "75.0 %", "κ 0.636"),
    ("ann", "cat"): ("3 items", "66.7 %", "κ 0.400"),
    ("bob", "cat"): ("3 items", "33.3 %", "κ 0.143"),
}


@pytest.fixture
def labelled_queue(write_jsonl, monkeypatch):
    require_chromium()
    from adjudication.review.annotate.services import label_submit, lease_claim_next
    from adjudication.review.labels import LabelEntry
    from adjudication.review.queues.services import queue_create

    from .conftest import disputed_dataset

    queue = queue_create(
        dataset=disputed_dataset(write_jsonl, 4, name="mx"), spec=QueueSpec(name="matrix-q", overlap=3)
    )
    order: list[int] = []
    for name, answers in LABELS.items():
        user = make_user(name, "annotator")
        for n, answer in enumerate(answers):
            lease = lease_claim_next(queue=queue, annotator=user).lease
            if name == "ann":
                order.append(lease.item_id)
            assert lease.item_id == order[n]
            entry = LabelEntry(kind="skipped") if answer is None else LabelEntry(kind="option", answer=answer)
            label_submit(lease=lease, annotator=user, entry=entry, skip_reason="unsure" if answer is None else "")
    add_user(monkeypatch, "boss", "manager")
    return queue.pk


def test_the_queue_agreement_matrix(labelled_queue, plain_live_server):
    q = labelled_queue
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "boss", "/queues/") as page:
        page.add_init_script(WATCH_VIOLATIONS)
        with page.expect_navigation():
            page.click("text=matrix-q")
        assert page.url.endswith(f"/queues/{q}/")
        summary = {
            key: page.locator(f"#agreement-{key}") for key in ("items", "percent", "disagreeing", "kappa", "alpha")
        }
        assert summary["items"].inner_text() == "4 items"
        assert summary["percent"].inner_text() == "50.0 %"
        assert summary["disagreeing"].inner_text() == "2 disagreeing"
        assert summary["kappa"].inner_text() == "0.393"
        assert summary["alpha"].inner_text() == "0.487"
        for link in summary.values():
            assert link.get_attribute("href") == f"/items/?queue={q}&disagree=any"
        headers = page.locator("#agreement-matrix thead th").all_inner_texts()
        assert headers == ["", "ann", "bob", "cat"]
        for (a, b), numbers in PAIRS.items():
            for row, column in ((a, b), (b, a)):
                cell = page.locator(f"#agreement-matrix td[data-pair='{row},{column}'] a")
                assert cell.all_inner_texts() == list(numbers), (row, column)
                hrefs = {cell.nth(i).get_attribute("href") for i in range(cell.count())}
                assert hrefs == {f"/items/?queue={q}&disagree={row},{column}"}
        assert page.locator("#agreement-matrix td.self").count() == 3
        page.screenshot(path=str(SCREENSHOTS / "queue-page.png"), full_page=True)
        assert page.evaluate("window.__csp") == []
        # Following a number opens the item browser's list of that pair's disagreements.
        with page.expect_navigation():
            page.locator("#agreement-matrix td[data-pair='bob,cat'] a.pair-agreement").click()
        assert page.url == f"{plain_live_server}/items/?queue={q}&disagree=bob,cat"


def test_enter_in_the_queue_form_previews_and_the_presets_retick_the_panel(readers_dataset, plain_live_server):
    """issue 36 item 4: the "none" / "all" buttons re-tick the panel in the browser, keeping what was
    typed, and Enter in a field still previews (a preset is not the form's default button)."""
    spec_ids = readers_dataset
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "boss", "/queues/") as page:
        page.goto(f"{plain_live_server}/queues/new/?dataset={page_dataset_id(page)}")
        page.fill("input[name=title]", "Round 2")
        with page.expect_navigation():
            page.click("#preset-none")
        assert page.eval_on_selector_all("input[name=panel]:checked", "els => els.length") == 0
        with page.expect_navigation():
            page.click("#preset-all")
        ticked = page.eval_on_selector_all("input[name=panel]:checked", "els => els.map(e => Number(e.value))")
        assert set(ticked) == set(spec_ids.values())
        assert page.input_value("input[name=title]") == "Round 2"
        with page.expect_navigation():
            page.press("input[name=title]", "Enter")
        assert page.inner_text("#preview-routed").isdecimal() and page.query_selector("#preview-warning")


def page_dataset_id(page) -> str:
    return page.eval_on_selector("select[name=dataset] option:text('br')", "o => o.value")
