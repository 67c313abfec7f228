"""The item pages on a ten-option multiple-choice item, in Chromium (issue 36, items 8, 9, 10 and 12):
option J picked from the keyboard by the annotators and by the adjudicator, digits that pick no
option, the response beside the question and above the fold at 1366x768 and 1024x640, and a top
bar whose texts never run together. Writes the screenshots docs/review.md shows (review-item-1366.png,
review-item-1024.png, review-adjudicate-1366.png, review-adjudicate-1024.png) to REVIEW_SCREENSHOTS
(default /tmp)."""

from __future__ import annotations

import pytest

from ..browser import chromium_browser, require_chromium
from ..conftest import math_row, mc_row, reading_at, run_command
from .test_browser_flow import ITEM_URL, READERS, SCREENSHOTS, add_user, logged_in, run_readers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = [(1366, 768), (1024, 640)]
TITLE = "MMLU-Pro physics, base against instruct: which option does the response commit to?"
CHOICES = [f"${n} \\times 10^{{{e}}}$ J" for n, e in zip(range(2, 12), [3, 4, 5, 3, 4, 5, 3, 4, 5, 6], strict=True)]
QUESTION = (
    "A 1,200 kg car travelling at 25 m/s brakes to rest over 40 m on a level road. Ignoring air "
    "resistance, how much work does friction do on the car, in magnitude? Take the car as a point "
    "mass and the braking force as constant over the whole distance."
)
THINKING = "<think>\n" + "\n".join(
    f"Step {n}: the kinetic energy is $\\frac{{1}}{{2}} m v^2$, with m = 1200 kg and v = 25 m/s." for n in range(1, 25)
)
RESPONSES = {
    1: THINKING + "\n</think>\nThe work equals the kinetic energy lost. The answer is (A). Then again \\boxed{J}",
    2: THINKING + "\n</think>\nSo $W = 375000$ J. The answer is (B). On reflection \\boxed{J}",
}


@pytest.fixture
def ten_options(write_jsonl, eager, monkeypatch):
    require_chromium()
    rows = [
        mc_row(q, id=f"pro-{q}", question=f"Q{q}: {QUESTION}", choices=CHOICES, gold="J", response=text)
        for q, text in RESPONSES.items()
    ]
    run_command("import_responses", str(write_jsonl(rows)), dataset="pro", no_progress=True)
    run_readers(eager, "pro")
    run_command("create_queue", dataset="pro", name="pro-q", title=TITLE, overlap=2, panel=READERS)
    for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("adj", "adjudicator")):
        add_user(monkeypatch, name, role)


def _label(page, key: str) -> str:
    """Press `key`, then Enter; the pick it made."""
    page.keyboard.press(key)
    picked = page.locator("input[name=pick]:checked")
    value = picked.get_attribute("value") if picked.count() else ""
    with page.expect_navigation():
        page.keyboard.press("Enter")
    return value


def _response_in_view(page, width: int, height: int) -> None:
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate("window.scrollTo(0, 0)")
    response = page.locator("#response-rendered").bounding_box()
    assert response is not None
    form = page.locator("#label-form").bounding_box()
    # At least 120 px of the response shows on the first screen, above the sticky label form.
    bottom = form["y"] if form is not None else height
    assert response["y"] + 120 <= min(bottom, height), (width, height, response, form)


def _beside(page) -> None:
    question, response = page.locator("#pane-question").bounding_box(), page.locator("#pane-response").bounding_box()
    assert question is not None and response is not None
    assert response["x"] >= question["x"] + question["width"]  # side by side, not stacked
    assert response["y"] < question["y"] + 60


def _top_bar_apart(page) -> None:
    """No two texts of the top bar touch: on one line they are at least 8 px apart."""
    boxes = page.eval_on_selector_all(
        ".review-top > *",
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; })",
    )
    assert len(boxes) >= 3
    for i, (left, right, top, bottom) in enumerate(boxes):
        for left2, right2, top2, bottom2 in boxes[i + 1 :]:
            if top < bottom2 and top2 < bottom:  # on one line
                gap = max(left2 - right, left - right2)
                assert gap >= 8, (boxes, "texts of the top bar run together")


def test_the_item_page_shows_the_response_beside_the_question_above_the_fold(ten_options, plain_live_server):
    """issue 36 item 10: two panes on a wide screen; the response starts above the fold at 1366x768
    and shows at 1024x640; the top bar's texts stay apart (with the pace shown too)."""
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann1", "/review/") as page:
        assert ITEM_URL.search(page.url)
        page.check("input[value='option:J']")  # a first label, so that the next page shows a pace
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert "your pace" in page.inner_text(".review-top")
        page.evaluate("document.querySelector('#guidelines').open = true")  # as before a first label
        page.wait_for_function("() => document.body.dataset.math === 'done'")
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            _top_bar_apart(page)
            _response_in_view(page, width, height)
            if width >= 1024:
                _beside(page)
        page.keyboard.press(";")
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(SCREENSHOTS / f"review-item-{width}.png"), full_page=False)


def test_option_j_is_picked_by_its_letter_on_both_pages_and_digits_pick_no_option(ten_options, plain_live_server):
    """issue 36 items 8 and 9: the tenth option is one key, the same letter for the annotators and
    the adjudicator; a digit (a candidate's old number, a numeric option text) picks nothing."""
    with chromium_browser() as browser:
        with logged_in(browser, plain_live_server, "ann1", "/review/") as page:
            assert "<kbd>J</kbd>" in page.inner_html("#label-form")
            page.keyboard.press("2")
            assert page.locator("input[name=pick]:checked").count() == 0
            assert not any(
                t.strip().startswith("Candidate") for t in page.locator("button.candidate").all_inner_texts()
            )
            assert _label(page, "j") == "option:J"
            assert _label(page, "Shift+J") == "option:J"
        with logged_in(browser, plain_live_server, "ann2", "/review/") as page:
            assert _label(page, "i") == "option:I"
            assert _label(page, "J") == "option:J"
        with logged_in(browser, plain_live_server, "adj", "/adjudicate/") as page:
            with page.expect_navigation():
                page.locator("table.grid a").first.click()
            page.wait_for_function("() => document.body.dataset.math === 'done'")
            assert "does not show candidates" not in page.inner_text("main")
            table = page.inner_text("#annotator-labels")
            assert "Annotator 1" in table and "Annotator 2" in table and "time" in table
            page.keyboard.press("2")  # accept Annotator 2's label (I) …
            assert page.input_value("#final-answer") == "I"
            page.keyboard.press("j")  # … then decide J with its letter
            assert (page.input_value("#final-kind"), page.input_value("#final-answer")) == ("option", "J")
            _beside(page)
            for width, height in SIZES:
                page.set_viewport_size({"width": width, "height": height})
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(path=str(SCREENSHOTS / f"review-adjudicate-{width}.png"), full_page=False)
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert "final label recorded (an option letter J)" in page.inner_text(".messages")
    from adjudication.models import FinalLabel

    [adjudicated] = FinalLabel.objects.filter(provenance="adjudicated")
    assert adjudicated.answer == "J"


@pytest.fixture
def open_ended(write_jsonl, monkeypatch):
    """One maths response two readers read differently (18 and 20), in a queue that judges correctness."""
    require_chromium()
    from adjudication.models import Reading, Response
    from adjudication.pipeline.readings import reader_spec_by_name
    from adjudication.review.queues.services import queue_create
    from adjudication.review.queues.specs import QueueSpec
    from adjudication.routing.specs import PolicySpec

    text = "3 + 15 = 18. The answer is 18. Then again \\boxed{20}"
    run_command(
        "import_responses", str(write_jsonl([math_row(1, gold="18", response=text)])), dataset="oe", no_progress=True
    )
    response = Response.objects.get(dataset__name="oe")
    Reading.objects.bulk_create(
        [
            reading_at(
                response, reader_spec_by_name(name="strict-match"), "18", at=text.index("is 18") + 3, verdict="correct"
            ),
            reading_at(
                response, reader_spec_by_name(name="boxed"), "20", at=text.index("{20}") + 1, verdict="incorrect"
            ),
        ]
    )
    routing = PolicySpec(panel=["strict-match", "boxed"])
    queue_create(
        dataset=response.dataset, spec=QueueSpec(name="oe-q", overlap=1, judge_correctness=True, routing=routing)
    )
    add_user(monkeypatch, "ann", "annotator")


def test_moved_shortcuts_and_letters_picking_an_open_ended_items_candidates(open_ended, plain_live_server):
    """issue 36 items 8 and 9: with letters taken by answers, the other actions sit on keys that are
    not letters (* ambiguous, 0 no answer, / type, + and - correctness); an open-ended item's
    candidates are picked by letters too, so a numeric answer never sits beside a digit key."""
    with chromium_browser() as browser, logged_in(browser, plain_live_server, "ann", "/review/") as page:
        picks = {p.get_attribute("data-key"): p.get_attribute("value") for p in page.locator("input[name=pick]").all()}
        assert {picks[k] for k in ("A", "B")} == {"text:18", "text:20"}
        assert not any(key.isdigit() for key, value in picks.items() if value.startswith("text:") and value != "text:")

        def checked() -> str:
            picked = page.locator("input[name=pick]:checked")
            return picked.get_attribute("value") if picked.count() else ""

        page.keyboard.press("1")
        assert checked() == ""
        page.keyboard.press("*")
        assert checked() == "ambiguous:"
        page.keyboard.press("0")
        assert checked() == "no_answer:"
        page.keyboard.press("+")
        assert page.locator("input[name=correctness]:checked").get_attribute("value") == "correct"
        page.keyboard.press("-")
        assert page.locator("input[name=correctness]:checked").get_attribute("value") == "incorrect"
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.id") == "free-text" and checked() == "text:"
        page.keyboard.type("abc")  # letters typed in the field are text, not picks
        assert page.input_value("#free-text") == "abc" and checked() == "text:"
        page.keyboard.press("Escape")
        page.keyboard.press("b")
        answer = picks["B"]
        assert checked() == answer
        with page.expect_navigation():
            page.keyboard.press("Enter")
    from adjudication.models import Label

    [label] = Label.objects.all()
    assert (label.kind, label.answer, label.correctness) == ("text", answer.removeprefix("text:"), "incorrect")
