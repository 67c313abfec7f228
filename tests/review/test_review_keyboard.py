"""Keyboard and pointer details of the item page that once went wrong, each reproduced in Chromium
as the annotator did it: a cancelled skip that was stored anyway, a clicked candidate whose
highlight jumped to its neighbour, and Back after a submit that looped between redirects."""

from __future__ import annotations

import re

import pytest

from ..browser import chromium_browser, require_chromium
from ..conftest import mc_row, run_command
from .test_browser_flow import ITEM_URL, READERS, add_user, logged_in, run_readers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Each response commits to one answer in two places and hedges in a third: three candidates.
RESPONSES = {
    1: "The answer is B. Then again \\boxed{C}",
    2: "The answer is (A).\n\n" + "Some working.\n" * 60 + "On reflection, \\boxed{D}",
}


@pytest.fixture
def keyboard_queue(write_jsonl, eager, monkeypatch):
    require_chromium()
    rows = [mc_row(q, id=f"kb-{q}", question=f"Q{q}?", response=text) for q, text in RESPONSES.items()]
    run_command("import_responses", str(write_jsonl(rows)), dataset="kb", no_progress=True)
    run_readers(eager, "kb")
    run_command("create_queue", dataset="kb", name="kb-q", overlap=1, panel=READERS)
    add_user(monkeypatch, "ann", "annotator")


def test_escape_cancels_a_skip_and_the_pick_after_it_is_the_label(keyboard_queue, plain_live_server):
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        assert ITEM_URL.search(page.url)
        page.keyboard.press(">")
        assert page.is_visible("#skip-reason")
        page.keyboard.type("hmm")
        page.keyboard.press("Escape")
        assert not page.is_visible("#skip-box")
        page.keyboard.press("a")
        with page.expect_navigation():
            page.keyboard.press("Enter")
    from adjudication.models import Label

    [label] = Label.objects.all()
    assert (label.kind, label.answer, label.skip_reason) == ("option", "A", "")


def test_a_clicked_candidate_keeps_its_own_highlight_when_the_list_moves(keyboard_queue, plain_live_server):
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        page.set_viewport_size({"width": 1366, "height": 768})
        # Candidates whose answer is marked in the response (an answer a reader found without a span
        # has nothing to highlight).
        marked = {m.get_attribute("data-candidate") for m in page.locator("#response-source mark").all()}
        buttons = [b for b in page.locator("button.candidate").all() if b.get_attribute("data-candidate") in marked]
        assert len(buttons) >= 2
        first, second = buttons[0], buttons[1]
        number = first.get_attribute("data-candidate")
        first.click()
        assert page.is_visible("#response-source")
        active = page.locator("mark.active")
        assert active.count() >= 1
        assert {active.nth(i).get_attribute("data-candidate") for i in range(active.count())} == {number}
        second.hover()  # the pointer crosses another candidate: the pinned highlight stays
        assert {active.nth(i).get_attribute("data-candidate") for i in range(active.count())} == {number}
        second.click()
        other = second.get_attribute("data-candidate")
        assert {active.nth(i).get_attribute("data-candidate") for i in range(active.count())} == {other}


def test_item_pages_are_never_cached_so_back_asks_the_server_again(keyboard_queue, client):
    from django.contrib.auth.models import User

    client.force_login(User.objects.get(username="ann"))
    home = client.get("/review/")
    assert home.status_code == 302 and "no-store" in home["Cache-Control"]
    item = client.get(home["Location"])
    assert item.status_code == 200 and "no-store" in item["Cache-Control"]


def test_backspace_reopens_the_last_item_and_enter_revises_its_label(keyboard_queue, plain_live_server):
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        first = page.url
        assert not page.locator("#previous-item").count()  # nothing labelled yet: nowhere to go back to
        page.keyboard.press("a")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        second = page.url
        assert second != first and ITEM_URL.search(second)
        with page.expect_navigation():
            page.keyboard.press("Backspace")
        assert page.url == first
        assert page.is_visible("#revisit-note") and "revise" in page.inner_text("#revisit-note")
        assert page.locator("input[name=pick]:checked").get_attribute("value") == "option:A"
        page.keyboard.press("b")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url == second  # on to the item still open
        assert "Label revised" in page.inner_text(".messages")
    from adjudication.models import Label

    old, new = Label.objects.order_by("created_at", "id")
    assert (old.answer, new.answer, new.revises_id) == ("A", "B", old.id)


def test_browser_back_after_a_submit_shows_the_labelled_item_not_a_redirect_loop(keyboard_queue, plain_live_server):
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        first = page.url
        page.keyboard.press("c")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.go_back()
        page.wait_for_load_state("load")
        assert page.url == first
        assert page.is_visible("#revisit-note")
        assert page.locator("input[name=pick]:checked").get_attribute("value") == "option:C"
        page.go_forward()
        page.wait_for_load_state("load")
        assert ITEM_URL.search(page.url) and not page.is_visible("#revisit-note")


def test_guidelines_are_open_before_the_first_label_and_behind_g_afterwards(keyboard_queue, plain_live_server):
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        guidelines = page.locator("#guidelines")
        assert guidelines.get_attribute("open") is not None
        assert "version 1" in page.inner_text("#guidelines summary")
        assert "Two answers at once" in page.inner_text("#guidelines")
        page.keyboard.press(";")
        assert guidelines.get_attribute("open") is None
        page.keyboard.press("a")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert guidelines.get_attribute("open") is None  # the second item: closed, one key away
        page.keyboard.press(";")
        assert guidelines.get_attribute("open") is not None and page.is_visible("#guidelines .question")
    from adjudication.models import Label

    assert Label.objects.get().guidelines_version == 1


def test_no_dead_ends_at_1366x768(keyboard_queue, plain_live_server):
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        page.set_viewport_size({"width": 1366, "height": 768})
        # Navigation offers what an annotator may open, nothing that would answer 403.
        nav = page.inner_text("header nav")
        assert "review" in nav and "adjudicate" not in nav and "queues" not in nav and "audit" not in nav
        # The lease's end names its time zone.
        assert re.search(r"[A-Z]{2,5}|GMT|UTC", page.inner_text("#lease-expiry")), page.inner_text("#lease-expiry")
        # Enter with nothing picked says what to do, in words.
        page.keyboard.press("Enter")
        assert page.is_visible("#pick-first") and "Pick an answer first" in page.inner_text("#pick-first")
        # ? opens the shortcuts where they can be seen.
        page.keyboard.press("?")
        box = page.locator("#shortcuts").bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + 40 < 768
        page.keyboard.press("?")
        # The form stays in view while the response is read to its end.
        page.evaluate("document.querySelector('#response-rendered').scrollTop = 1e6; window.scrollTo(0, 0)")
        submit = page.locator("#submit").bounding_box()
        assert submit is not None and submit["y"] + submit["height"] <= 768
        # Shift+digit sets the confidence; the pick and Enter submit it.
        page.keyboard.press("Shift+Digit4")
        assert page.input_value("#confidence") == "4"
        page.keyboard.press("b")
        assert not page.is_visible("#pick-first")
        with page.expect_navigation():
            page.keyboard.press("Enter")
    from adjudication.models import Label

    assert Label.objects.get().confidence == 4


@pytest.fixture
def two_queues(keyboard_queue):
    run_command("create_queue", dataset="kb", name="kb-second-strict-vs-boxed", overlap=1, panel=READERS)


def test_logging_in_with_two_queues_shows_them_and_claims_only_in_the_one_picked(two_queues, plain_live_server):
    from adjudication.models import Lease, ReviewQueue

    second = ReviewQueue.objects.get(name="kb-second-strict-vs-boxed").pk
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        assert page.url.endswith("/review/")
        listed = page.inner_text("#queue-list")
        assert f"Queue {second}" in listed and "kb-second" not in listed and "kb-q" not in listed
        with page.expect_navigation():
            page.keyboard.press("2")  # the landing page: digits open a queue
        assert ITEM_URL.search(page.url) and "kb-second" not in page.url
        assert f"Queue {second}" in page.inner_text(".queue-title")
        shown = [b.inner_text() for b in page.locator("button.candidate").all()]
        answers = [text.strip() for text in shown]  # a candidate is named by its answer alone
        assert len(answers) == len(set(answers)) >= 2  # each distinct answer once
    # One lease in all, in the queue picked: the landing page reserved nothing in the first queue
    # (a lease given back would still be a row).
    [lease] = Lease.objects.all()
    assert lease.item.queue_id == second


@pytest.fixture
def overlap_two(write_jsonl, eager, monkeypatch):
    require_chromium()
    rows = [mc_row(1, id="sk-1", question="Q1?", response=RESPONSES[1])]
    run_command("import_responses", str(write_jsonl(rows)), dataset="sk", no_progress=True)
    run_readers(eager, "sk")
    run_command("create_queue", dataset="sk", name="sk-q", overlap=2, panel=READERS)
    for name, role in (("ann", "annotator"), ("bob", "annotator"), ("man", "manager")):
        add_user(monkeypatch, name, role)


def test_a_skip_that_left_an_item_stuck_is_flagged_and_reopened(overlap_two, plain_live_server):
    with chromium_browser() as browser:
        with logged_in(browser, plain_live_server, "ann", "/review/") as page:
            page.keyboard.press("b")
            with page.expect_navigation():
                page.keyboard.press("Enter")
        with logged_in(browser, plain_live_server, "bob", "/review/") as page:
            page.keyboard.press(">")
            page.keyboard.type("cannot tell")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert "Nothing left for you to label" in page.inner_text("main")  # and nobody else is left
        with logged_in(browser, plain_live_server, "man", "/queues/") as page:
            assert "1 skipped" in page.inner_text("main")
            with page.expect_navigation():  # the queue's own page has the button
                page.click("text=sk-q")
            with page.expect_navigation():
                page.click("text=Re-open the 1 skipped item")
            assert "1 skip re-opened" in page.inner_text(".messages") and "0 skipped" in page.inner_text("main")
        with logged_in(browser, plain_live_server, "bob", "/review/") as page:
            assert ITEM_URL.search(page.url)  # the item is his to label again
            page.keyboard.press("b")
            with page.expect_navigation():
                page.keyboard.press("Enter")
    from adjudication.models import QueueItem

    assert QueueItem.objects.get().status == "agreed"
