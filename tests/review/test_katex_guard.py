"""A pathological response cannot take the item page down.

In the browser: `\\frac{1}{` nested 500 deep crashed Chromium's tab (layout of the ~3,500-deep box
tree KaTeX builds), and a formula of tens of thousands of characters takes the main thread for
itself. Each math span is checked before KaTeX sees it (size, group nesting depth) and after (depth
of the typeset box tree); over a limit the span shows its source, escaped, with a note, and the
page stays usable: JavaScript runs, the label shortcuts work, the form submits.

On the server: markdown-it silently drops whatever nests deeper than its maxNesting, and its time
grows with the characters its inline rules stop at; such a part is shown as escaped source.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adjudication.review.rendering import response_parts

from ..browser import chromium_browser, require_chromium
from ..conftest import ROOT, mc_row, run_command
from .test_browser_flow import ITEM_URL, READERS, add_user, log_in, run_readers

DISPUTE = "\nThe answer is B. Then again \\boxed{C}"  # fixed/boxed read C, strict-match reads B: disputed
DEEP_FRAC = "$" + "\\frac{1}{" * 500 + "x" + "}" * 500 + "$"
LONG_FORMULA = "$$" + " + ".join(f"x_{{{i}}}^{{2}}" for i in range(3000)) + "$$"
RESPONSES = {
    "deep": f"Consider {DEEP_FRAC}, while $\\frac{{1}}{{2}}$ is fine." + DISPUTE,
    "long": f"Expand: {LONG_FORMULA} and also $a^2+b^2=c^2$." + DISPUTE,
}
# The browser's rendering is finished (or given up) when review.js says so.
MATH_DONE = "() => document.body.dataset.math === 'done'"
AFTER_PAINT = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(1 + 1))))"


# -- server side ------------------------------------------------------------------------------------


def _html(text: str) -> str:
    return "".join(part.html for part in response_parts(text, []))


def test_markdown_nested_past_markdown_its_limit_is_shown_as_source_not_dropped():
    quote = ">" * 30 + " the deepest words <b>"
    lists = "".join("  " * i + f"- item {i}\n" for i in range(25))
    for text, last_words in ((quote, "the deepest words &lt;b&gt;"), (lists, "item 24")):
        html = _html(text)
        assert last_words in html, html[:300]
        assert "shown as source" in html and "<b>" not in html


def test_a_response_too_costly_for_markdown_is_shown_as_escaped_source():
    hostile = "![<script>x</script>" * 20_000  # ~20 us per '[' / '!' for markdown-it's link rules
    html = _html(hostile)
    assert "shown as source" in html and "<script>" not in html and html.count("![&lt;script&gt;") == 20_000


def test_the_markdown_budget_is_per_response_not_per_part():
    # Many <think> parts, each cheap alone: together over the budget, so the later ones are source.
    text = "".join(f"<think>{'**a** ' * 2_000}</think>answer {i}\n" for i in range(20))
    thinking = [p for p in response_parts(text, []) if p.think]
    rendered = [i for i, p in enumerate(thinking) if "<strong>a</strong>" in p.html]
    as_source = [i for i, p in enumerate(thinking) if "shown as source" in p.html]
    assert rendered and as_source and sorted(rendered + as_source) == list(range(20))
    assert max(rendered) < min(as_source)


def test_ordinary_markdown_still_renders():
    html = _html("Step **one**: $x^2$.\n\n> quoted\n\n- a\n  - b\n")
    assert "<strong>one</strong>" in html and "<blockquote>" in html and html.count("<ul>") == 2
    assert "shown as source" not in html


# -- in Chromium ------------------------------------------------------------------------------------


@pytest.fixture
def guard_queue(write_jsonl, eager, monkeypatch):
    require_chromium()
    rows = [
        mc_row(i, id=f"k-{name}", question=f"Q{i}: which one?", response=text)
        for i, (name, text) in enumerate(RESPONSES.items())
    ]
    run_command("import_responses", str(write_jsonl(rows)), dataset="katex", no_progress=True)
    run_readers(eager, "katex")
    out = run_command("create_queue", dataset="katex", name="katex-q", overlap=1, panel=READERS)
    assert f"{len(RESPONSES)} items" in out, out
    add_user(monkeypatch, "ann", "annotator")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pathological_math_shows_its_source_and_the_page_stays_usable(guard_queue, plain_live_server):
    with chromium_browser() as browser:
        page = browser.new_context().new_page()
        crashes: list[str] = []
        page.on("crash", lambda *_: crashes.append("crashed"))
        log_in(page, plain_live_server, "ann", "/review/")
        seen = []
        while ITEM_URL.search(page.url):
            page.wait_for_load_state("load")  # review.js starts typesetting on load
            assert page.evaluate("1 + 1") == 2 and not crashes  # the tab is alive and its main thread answers
            page.wait_for_function(MATH_DONE, timeout=60_000)
            assert page.evaluate(AFTER_PAINT) == 2 and not crashes  # laid out and painted: that is where it crashed
            text = page.inner_text("#response-rendered")
            kind = "deep" if "\\frac{1}{\\frac{1}{" in text else "long"
            seen.append(kind)
            guarded = page.locator("#response-rendered .math-guarded")
            assert guarded.count() == 1, page.inner_html("#response-rendered")[:2000]
            source = guarded.locator("code").inner_text()
            assert source == (DEEP_FRAC if kind == "deep" else LONG_FORMULA)
            note = guarded.locator(".math-note")
            assert note.is_visible() and "shown as source" in note.inner_text()
            assert re.search(r"nested \d+ deep" if kind == "deep" else r"\d+ characters", note.inner_text())
            # The ordinary formula next to it is typeset, and so is the bare \\boxed{C} of the dispute.
            assert page.locator("#response-rendered .katex").count() == 2
            # Labelling works: a shortcut picks, Enter submits and opens the next item.
            page.keyboard.press("b")
            assert page.locator("input[name=pick]:checked").get_attribute("value") == "option:B"
            before = page.url
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert page.url != before and not crashes
        assert sorted(seen) == ["deep", "long"], (seen, page.url)


MY_QUESTION = "Evaluate $\\frac12 + x$ where <script>alert(1)</script> and <b>x</b> stay text."


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_my_labels_typesets_the_questions_maths_and_keeps_their_html_as_text(
    write_jsonl, eager, monkeypatch, plain_live_server
):
    """Issue 36 item 11: "My labels" listed questions as raw LaTeX; now they are typeset, and the
    question's markup is still shown as text."""
    require_chromium()
    rows = [mc_row(0, id="mine-0", question=MY_QUESTION, response="The answer is B. Then again \\boxed{C}")]
    run_command("import_responses", str(write_jsonl(rows)), dataset="mine", no_progress=True)
    run_readers(eager, "mine")
    assert "1 items" in run_command("create_queue", dataset="mine", name="mine-q", overlap=1, panel=READERS)
    add_user(monkeypatch, "ann", "annotator")
    with chromium_browser() as browser:
        page = browser.new_context().new_page()
        alerts: list[str] = []
        page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
        log_in(page, plain_live_server, "ann", "/review/")
        assert ITEM_URL.search(page.url), page.url
        page.keyboard.press("b")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        with page.expect_navigation():
            page.locator("a", has_text="My labels in this queue").click()  # the queue is done: its last page
        # Done typesetting, or no review.js on the page to typeset anything.
        page.wait_for_function(
            "() => !document.querySelector('script[src*=\"review.js\"]') || document.body.dataset.math === 'done'",
            timeout=60_000,
        )
        question = page.locator("#my-labels tbody td:first-child")
        assert question.locator(".math .katex").count() == 1, question.inner_html()
        assert "\\frac" not in question.inner_text()
        assert "<script>alert(1)</script>" in question.inner_text() and "<b>x</b>" in question.inner_text()
        assert question.locator("script, b").count() == 0 and alerts == []


# -- review.js alone, on a static page in Chromium (no server) ----------------------------------------


def static_page(path: Path, rendered_html: str) -> Path:
    """A file page holding `rendered_html` as the item page's rendered response, with KaTeX and
    review.js as the item page loads them."""
    static = ROOT / "static"
    path.write_text(
        f"""<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="{(static / "vendor/katex/katex.min.css").as_uri()}">
<link rel="stylesheet" href="{(static / "css/app.css").as_uri()}"></head><body>
<div id="response-rendered">{rendered_html}</div>
<script src="{(static / "vendor/katex/katex.min.js").as_uri()}" defer></script>
<script src="{(static / "js/review.js").as_uri()}" defer></script></body></html>""",
        encoding="utf-8",
    )
    return path


def render_static(tmp_path: Path, response: str) -> dict:
    """Load KaTeX and review.js over the server's rendering of `response`; once typesetting is
    done, return what the page shows."""
    page_path = static_page(tmp_path / "page.html", _html(response))
    with chromium_browser() as browser:
        page = browser.new_page()
        page.goto(page_path.as_uri())
        page.wait_for_function(MATH_DONE, timeout=60_000)
        assert page.evaluate(AFTER_PAINT) == 2
        return page.evaluate("""() => ({
            typeset: document.querySelectorAll('#response-rendered .math .katex').length,
            typeset_text: [...document.querySelectorAll('#response-rendered .math .katex-html')]
                .map(e => e.textContent),
            guarded: [...document.querySelectorAll('.math-guarded')].map(g => [g.querySelector('code').textContent,
                                                                               g.querySelector('.math-note').textContent]),
            overflow: [...document.querySelectorAll('.math-overflow')].map(n => n.textContent),
            pending: document.querySelectorAll('.math-pending').length,
            text: document.getElementById('response-rendered').textContent,
        })""")


@pytest.mark.browser
def test_formulas_past_the_page_budget_stay_source_under_one_note(tmp_path):
    require_chromium()
    shown = render_static(tmp_path, " ".join(f"${i}^{{2}}$" for i in range(2100)))
    assert shown["typeset"] == 2000 and shown["pending"] == 0 and shown["guarded"] == []
    assert len(shown["overflow"]) == 1 and "first 2000 formulas" in shown["overflow"][0]
    assert "$2099^{2}$" in shown["text"]  # the rest: source, in place


@pytest.mark.browser
def test_group_nesting_counts_left_and_begin_but_not_leftarrow(tmp_path):
    require_chromium()
    arrows = "$" + "\\leftarrow " * 40 + "x$"  # forty control words that open nothing
    lefts = "$" + "\\left(" * 21 + "x" + "\\right)" * 21 + "$"
    matrices = "$" + "\\begin{matrix}" * 21 + "x" + "\\end{matrix}" * 21 + "$"
    ok = "$" + "\\left(" * 19 + "x" + "\\right)" * 19 + "$"
    shown = render_static(tmp_path, " and ".join((arrows, lefts, matrices, ok)))
    assert shown["typeset"] == 2
    assert [source for source, _ in shown["guarded"]] == [lefts, matrices]
    # \\begin{matrix} is a group holding a group: {matrix} is one level deeper.
    assert [note.split(",")[0] for _, note in shown["guarded"]] == [
        " [formula shown as source: nested 21 deep",
        " [formula shown as source: nested 22 deep",
    ]


@pytest.mark.browser
def test_math_inside_code_is_left_alone_and_macros_do_not_leak_between_formulas(tmp_path):
    require_chromium()
    shown = render_static(
        tmp_path,
        "$\\gdef\\secret{42}\\secret$ then $\\secret$\n\n```\n$x$ stays\n```\n\n`$y$` too; a lone $ is text",
    )
    # \\secret is defined in the first formula only: in the second it is an unknown command, shown
    # by its name in the typeset formula (as MathJax shows one), not expanded to 42.
    assert shown["typeset"] == 2 and shown["typeset_text"] == ["42", "\\secret"], shown["typeset_text"]
    assert shown["guarded"] == []
    assert "$x$ stays" in shown["text"] and "$y$" in shown["text"] and "a lone $ is text" in shown["text"]


@pytest.mark.browser
def test_common_macros_and_glued_names_are_typeset_not_left_raw(tmp_path):
    """Issue 36 item 11: `\\norm`, `\\abs`, `\\argmin`, `\\mbox` and a symbol glued to its variable
    (`\\DeltaE`, written by a dataset that lost the space) were shown raw or as source."""
    require_chromium()
    shown = render_static(
        tmp_path,
        "$\\norm{x} + \\abs{y}$, $\\argmin_x f$, $\\Var(X)$, $864 \\mbox{ inches}^2$, and \\DeltaE = Q - W.",
    )
    assert shown["guarded"] == [] and shown["typeset"] == 5, shown
    norm, argmin, var, inches, delta = shown["typeset_text"]
    assert "‖x‖" in norm.replace("\u2225", "‖") and "∣y∣" in norm.replace("|", "∣")
    assert "arg" in argmin and "min" in argmin and var.startswith("Var") and "inches" in inches
    assert delta.replace("\u200b", "").startswith("ΔE=Q−W"), delta
