"""The acceptance flow in headless Chromium against a live server.

Annotator 1 logs in through the login form and labels five items with the keyboard only; annotator
2 labels the same five, agreeing on four and disagreeing on one; the adjudicator resolves that one
on /adjudicate/. Then the database holds 10 labels, 10 completed leases and five final labels:
unanimous x4 and adjudicated x1.

The data goes through the real pipeline: import_responses, run_readers (fixed, boxed, strict-match;
eager, in this process), create_queue --overlap 2, add_user.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..browser import chromium_browser, require_chromium
from ..conftest import mc_row, run_command

PASSWORD = "browser-flow-pw-7731"
READERS = ["fixed", "boxed", "strict-match"]
# Where the flow leaves its screenshots (docs/img/review-guidelines.png is this flow's; docs/review.md's
# item and adjudication pages at 1366x768 and 1024x640 are test_item_layout_in_browser.py's).
SCREENSHOTS = Path(os.environ.get("REVIEW_SCREENSHOTS", "/tmp"))
SCREENSHOT = SCREENSHOTS / "review-item.png"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Five questions; every response commits to one answer and then hedges, so the readers disagree
# (fixed and boxed read the box, strict-match reads "The answer is ...").
RESPONSES = {
    1: "The answer is B. Then again \\boxed{C}",
    2: "The answer is (A).\n\nOn reflection, \\boxed{D}",
    3: "<think>Weber or Merton? Durkheim wrote on suicide.</think>\nThe answer is (B). Hmm, maybe \\boxed{C}",
    4: "The answer is D. Wait, $\\boxed{A}$.",
    5: "First I thought **(C)**. The answer is A. But $\\frac{1}{2}$ of that is wrong: \\boxed{B} after all.",
}
ANNOTATOR_1 = {1: "C", 2: "D", 3: "C", 4: "A", 5: "B"}
ANNOTATOR_2 = {**ANNOTATOR_1, 4: "D"}  # disagrees on question 4
ADJUDICATED = {4: "A"}
KEY_OF = {letter: letter.lower() for letter in "ABCD"}  # a letter picks its option


# -- shared with the other browser tests (imported there; plain_live_server is in conftest) --------


def run_readers(eager, dataset: str) -> None:
    """The panel's readers over `dataset`, in this process and eager, as on the embedded default
    (`eager` is the fixture's app: the browser tests are transactional, so each batch runs as its
    transaction commits). The isolation pool's children live as long as this process and inherit
    the Playwright driver's pipe: tests/browser.py ends the driver by its process id."""
    assert eager.conf.task_always_eager
    run_command("run_readers", dataset=dataset, readers=list(READERS))


def add_user(monkeypatch, name: str, role: str) -> None:
    monkeypatch.setenv("ADJ_PASSWORD", PASSWORD)
    run_command("add_user", name, role=[role])


def log_in(page, base_url: str, username: str, path: str) -> None:
    """Open `path` anonymously, land on the login form, type the credentials and press Enter."""
    page.goto(base_url + path)
    assert "/accounts/login/" in page.url
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/accounts/login/" not in page.url, f"login failed for {username}"


@contextmanager
def logged_in(browser, base_url: str, username: str, path: str) -> Iterator:
    """A page of a fresh browser context (its own cookies), logged in as `username` at `path`; the
    context is closed after the block."""
    ctx = browser.new_context()
    page = ctx.new_page()
    log_in(page, base_url, username, path)
    yield page
    ctx.close()


# --------------------------------------------------------------------------------------------------


@pytest.fixture
def flow_queue(write_jsonl, eager, monkeypatch):
    require_chromium()  # skip before doing any work
    rows = [
        mc_row(q, id=f"flow-{q}", question=f"Q{q}: which sociologist fits description {q}?", response=text)
        for q, text in RESPONSES.items()
    ]
    run_command("import_responses", str(write_jsonl(rows)), dataset="flow", no_progress=True)
    run_readers(eager, "flow")
    out = run_command("create_queue", dataset="flow", name="flow-q", overlap=2, panel=READERS)
    assert "5 items" in out, out
    for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("adj", "adjudicator")):
        add_user(monkeypatch, name, role)
    from adjudication.models import ReviewQueue

    return ReviewQueue.objects.get(name="flow-q")


def question_number(page) -> int:
    match = re.match(r"Q(\d+):", page.inner_text(".question-text").strip())
    assert match, page.inner_text(".question-text")
    return int(match.group(1))


ITEM_URL = re.compile(r"/review/item/(\d+)/(?:#.*)?$")


def label_with_keyboard(page, answers: dict[int, str], *, screenshot: bool = False) -> list[int]:
    """Label every item the queue hands out, pressing keys only; return the questions in order."""
    seen = []
    while ITEM_URL.search(page.url):
        q = question_number(page)
        assert q not in seen, "an annotator got the same item twice"
        seen.append(q)
        # The page is blinded and keyboard-first: hints visible, candidates anonymous.
        assert page.is_visible("#hints")
        assert page.locator("button.candidate").count() >= 2
        main = page.inner_text("main")  # the header names the logged-in user, nothing else does
        for secret in ("orca-7b", "strict-match", "ann1", "ann2"):  # model, a reader, annotators
            assert secret not in main
        if screenshot and len(seen) == 1:
            page.keyboard.press("?")
            assert page.is_visible("#shortcuts")
            page.keyboard.press("?")
            assert not page.is_visible("#shortcuts")
            page.keyboard.press("`")
            assert page.is_visible("#response-source") and not page.is_visible("#response-rendered")
            page.screenshot(path=str(SCREENSHOT.with_name("review-item-source.png")), full_page=True)
            page.keyboard.press("`")
            assert page.is_visible("#response-rendered")
            page.screenshot(path=str(SCREENSHOT), full_page=False)
        before = page.url
        page.keyboard.press(KEY_OF[answers[q]])
        assert page.locator("input[name=pick]:checked").get_attribute("value") == f"option:{answers[q]}"
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.wait_for_load_state("load")
        assert page.url != before
        assert not page.locator(".messages .error").count(), page.inner_text(".messages")
    return seen


def test_two_annotators_label_with_the_keyboard_and_the_adjudicator_resolves_the_conflict(
    flow_queue, plain_live_server
):
    with chromium_browser() as browser:
        run_flow(browser, plain_live_server)
    check_database(flow_queue)


def run_flow(browser, base: str) -> None:
    with logged_in(browser, base, "ann1", "/review/") as page1:
        # From here on annotator 1 only presses keys.
        assert ITEM_URL.search(page1.url), page1.url
        assert "0 done · 5 remaining" in page1.inner_text(".review-top")
        order1 = label_with_keyboard(page1, ANNOTATOR_1, screenshot=True)
        assert sorted(order1) == [1, 2, 3, 4, 5]
        assert "Nothing left for you to label" in page1.inner_text("main")
        page1.goto(base + "/review/")
        with page1.expect_navigation():
            page1.click("text=guidelines")
        page1.wait_for_function("() => document.body.dataset.math === 'done'")
        assert "Version 1." in page1.inner_text("main")
        page1.screenshot(path=str(SCREENSHOTS / "review-guidelines.png"), full_page=False)

    with logged_in(browser, base, "ann2", "/review/") as page2:
        order2 = label_with_keyboard(page2, ANNOTATOR_2)
        assert sorted(order2) == [1, 2, 3, 4, 5]
        assert "Nothing left for you to label" in page2.inner_text("main")

    with logged_in(browser, base, "adj", "/adjudicate/") as page3:
        assert page3.url.endswith("/adjudicate/")
        links = page3.locator("table.grid a")
        assert links.count() == 1
        with page3.expect_navigation():
            links.first.click()
        assert question_number(page3) == 4
        table = page3.inner_text("#annotator-labels")
        assert "Annotator 1" in table and "Annotator 2" in table
        assert "ann1" not in table and "ann2" not in table
        # Annotator 1 labelled first and picked the box: "1" accepts that label into the final one.
        page3.keyboard.press("1")
        page3.screenshot(path=str(SCREENSHOTS / "review-adjudicate.png"), full_page=False)
        assert page3.input_value("#final-kind") == "option"
        assert page3.input_value("#final-answer") == ADJUDICATED[4]
        page3.select_option("select[name=error_type]", "annotator_error")
        page3.fill("input[name=notes]", "the box is the final commitment")
        page3.keyboard.press("Escape")
        with page3.expect_navigation():
            page3.keyboard.press("Enter")
        assert page3.url.endswith("/adjudicate/")
        assert "No conflicts to resolve" in page3.inner_text("main")
        assert f"final label recorded (an option letter {ADJUDICATED[4]})" in page3.inner_text(".messages")


def check_database(flow_queue) -> None:
    from django.contrib.auth.models import User

    from adjudication.models import FinalLabel, Label, Lease, QueueItem

    # The database: 10 labels, every lease completed, five final labels with the right provenance.
    assert Label.objects.filter(item__queue=flow_queue).count() == 10
    assert Label.objects.filter(item__queue=flow_queue, kind="option").count() == 10
    leases = Lease.objects.filter(item__queue=flow_queue)
    assert leases.count() == 10 and not leases.filter(completed_at__isnull=True).exists()
    finals = {}
    for item in QueueItem.objects.filter(queue=flow_queue).select_related("review_item__response"):
        q = int(item.review_item.response.external_id.split("-")[1])
        newest = item.final_labels.order_by("-created_at", "-id").first()
        assert newest is not None, f"question {q} has no final label"
        finals[q] = (newest.kind, newest.answer, newest.provenance, item.status)
        labels = {lab.annotator.username: lab.answer for lab in item.labels.select_related("annotator")}
        assert labels == {"ann1": ANNOTATOR_1[q], "ann2": ANNOTATOR_2[q]}
    expected = {q: ("option", ANNOTATOR_1[q], "unanimous", "agreed") for q in RESPONSES}
    expected[4] = ("option", ADJUDICATED[4], "adjudicated", "adjudicated")
    assert finals == expected
    provenance = sorted(FinalLabel.objects.filter(item__queue=flow_queue).values_list("provenance", flat=True))
    assert provenance == ["adjudicated"] + ["unanimous"] * 4
    adjudicated = FinalLabel.objects.get(item__queue=flow_queue, provenance="adjudicated")
    assert adjudicated.decided_by == User.objects.get(username="adj")
    assert adjudicated.error_type == "annotator_error"
