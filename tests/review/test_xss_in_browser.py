"""Hostile model text executes nothing in Chromium: not on the annotator's item page, not on the
adjudicator's page, not in either view, not when its links or candidate buttons are clicked.

Questions, options and responses carry <script>, <img onerror>, Markdown and HTML javascript: links,
autolinks, reference links, data: URLs and KaTeX \\href / \\url with javascript: targets. Each payload
sets window.__xss (or calls alert); the test asserts window.__xss stays undefined, no dialog fires,
and the DOM holds no script element, event-handler attribute or javascript: URL from the data.
"""

from __future__ import annotations

import re

import pytest

from ..browser import chromium_browser, require_chromium
from ..conftest import mc_row, run_command
from .test_browser_flow import ITEM_URL, READERS, add_user, log_in, run_readers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DISPUTE = "\nThe answer is B. Then again \\boxed{C}"  # fixed/boxed read C, strict-match reads B...: disputed
SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=2">'
MD_LINK = "[click](javascript:window.__xss=3)"
HTML_LINK = '<a href="javascript:window.__xss=4">html link</a>'
KATEX = "$\\href{javascript:alert(1)}{x}$ and $$\\href{javascript:window.__xss=5}{y}$$ and $\\url{javascript:alert(2)}$"

RESPONSES = [
    SCRIPT + " Let me think." + DISPUTE,
    IMG + " An image." + DISPUTE,
    f"See {MD_LINK} and {HTML_LINK} and [safe](#safe-anchor)." + DISPUTE,
    "Math: " + KATEX + DISPUTE,
    f"<think>{SCRIPT}{IMG} {MD_LINK} {KATEX}</think>\nThe answer is B. Then again \\boxed{{{IMG}}}",
    "<javascript:window.__xss=6> and [ref][1] and [data](data:text/html,<script>alert(3)</script>)\n\n"
    "[1]: javascript:window.__xss=7\n" + DISPUTE,
    '<svg onload="window.__xss=8"></svg><iframe src="javascript:window.__xss=9"></iframe>'
    '<a href="jav&#x61;script:window.__xss=10">entity</a>' + DISPUTE,
]
QUESTION = f"Q#: {SCRIPT} which one? {IMG} {MD_LINK} {HTML_LINK} {KATEX}"
CHOICES = [SCRIPT + "Durkheim", IMG + "Weber", MD_LINK, HTML_LINK]

# Every element attribute that could run code: on* handlers and javascript:/data: URLs.
DANGEROUS_DOM = """() => {
  const bad = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const v = a.value.trim().toLowerCase();
      if (a.name.startsWith('on') || ((a.name === 'href' || a.name === 'src' || a.name === 'action')
          && (v.startsWith('javascript:') || v.startsWith('data:')))) {
        bad.push(el.tagName + ' ' + a.name + '=' + a.value);
      }
    }
    if (el.tagName === 'SCRIPT' && el.textContent.includes('__xss')) bad.push('inline script');
    if (['IFRAME', 'SVG', 'OBJECT', 'EMBED'].includes(el.tagName.toUpperCase())) bad.push(el.tagName);
  }
  for (const img of document.querySelectorAll('img')) bad.push('img src=' + img.getAttribute('src'));
  return bad;
}"""


@pytest.fixture
def hostile_queue(write_jsonl, eager, monkeypatch):
    require_chromium()
    rows = [
        mc_row(i, id=f"x-{i}", question=QUESTION.replace("#", str(i)), choices=CHOICES, response=text)
        for i, text in enumerate(RESPONSES)
    ]
    run_command("import_responses", str(write_jsonl(rows)), dataset="hostile", no_progress=True)
    run_readers(eager, "hostile")
    out = run_command("create_queue", dataset="hostile", name="hostile-q", overlap=2, panel=READERS)
    assert f"{len(RESPONSES)} items" in out, out  # every response is disputed, so every one is shown
    add_user(monkeypatch, "ann", "annotator")
    add_user(monkeypatch, "other", "annotator")
    add_user(monkeypatch, "adj", "adjudicator")
    # The second annotator labels everything "C" through the services; the browser annotator will
    # say "B", so every item ends in conflict and has an adjudication page too.
    from django.contrib.auth.models import User

    from adjudication.models import ReviewQueue
    from adjudication.review.annotate.services import label_submit, lease_claim_next
    from adjudication.review.labels import LabelEntry

    queue = ReviewQueue.objects.get(name="hostile-q")
    other = User.objects.get(username="other")
    for _ in RESPONSES:
        lease = lease_claim_next(queue=queue, annotator=other).lease
        label_submit(lease=lease, annotator=other, entry=LabelEntry(kind="option", answer="C"))
    return queue


class Watch:
    """Dialogs a page opens (each would be an executed payload) and the checks after each step."""

    def __init__(self, page):
        self.page = page
        self.dialogs: list[str] = []
        page.on("dialog", self._dialog)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def check(self, where: str) -> None:
        page = self.page
        xss = page.evaluate("typeof window.__xss")
        assert xss == "undefined", f"{where}: window.__xss={page.evaluate('window.__xss')}"
        assert self.dialogs == [], f"{where}: dialogs fired: {self.dialogs}"
        assert page.evaluate(DANGEROUS_DOM) == [], f"{where}: dangerous DOM"


def exercise(page, watch: Watch, where: str) -> None:
    """Both views, every <details> opened, every link and candidate button clicked."""
    watch.check(f"{where} loaded")
    # The payloads are on the page as text (escaped), so the test is not vacuous.
    text = page.inner_text("main")
    assert "window.__xss=1" in text and "onerror" in text
    for summary in page.locator("#response-rendered details > summary").all():
        summary.click()
    watch.check(f"{where} thinking opened")
    url = page.url
    for link in page.locator("main a").all():
        if link.is_visible() and not (link.get_attribute("href") or "").startswith("/"):
            link.click(no_wait_after=True)
            page.wait_for_timeout(100)
            watch.check(f"{where} after clicking {link.inner_text()!r}")
            if page.url.split("#")[0] != url.split("#")[0]:
                page.go_back()
    for button in page.locator("button.candidate").all():
        button.click()
        watch.check(f"{where} after candidate {button.inner_text()!r}")
    # Toggle the view and back with the keyboard (a candidate click has switched to the source view).
    first = "source" if page.is_visible("#response-source") else "rendered"
    for view in [v for v in ("rendered", "source") if v != first] + [first]:
        page.keyboard.press("`")
        assert page.is_visible(f"#response-{view}"), f"{where}: {view} view not shown"
        watch.check(f"{where} {view} view")
    for link in page.locator("#response-source a").all():
        raise AssertionError(f"{where}: a link in the source view: {link.get_attribute('href')}")


def test_hostile_text_executes_nothing_on_item_and_adjudication_pages(hostile_queue, plain_live_server):
    from adjudication.models import QueueItem

    with chromium_browser() as browser:
        ctx = browser.new_context()
        page = ctx.new_page()
        watch = Watch(page)
        log_in(page, plain_live_server, "ann", "/review/")
        seen = 0
        katex_seen = False
        while ITEM_URL.search(page.url):
            seen += 1
            page.wait_for_load_state("load")
            katex_seen = katex_seen or page.locator("#response-rendered .katex").count() > 0
            exercise(page, watch, f"item page {seen}")
            page.keyboard.press("Escape")
            page.keyboard.press("b")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            watch.check(f"after submitting item {seen}")
        assert seen == len(RESPONSES), (page.url, page.inner_text("main")[:500])
        assert katex_seen, "KaTeX never rendered: the \\href payloads were not exercised"
        ctx.close()

    # (Outside the Playwright context: see chromium_browser.)
    conflicts = list(QueueItem.objects.filter(queue=hostile_queue, status="conflict").values_list("id", flat=True))
    assert len(conflicts) == len(RESPONSES)

    with chromium_browser() as browser:
        ctx = browser.new_context()
        page = ctx.new_page()
        watch = Watch(page)
        log_in(page, plain_live_server, "adj", "/adjudicate/")
        watch.check("adjudication list")
        assert page.locator("table.grid a").count() == len(RESPONSES)
        for item_id in conflicts:
            page.goto(f"{plain_live_server}/adjudicate/{item_id}/")
            assert re.search(rf"/adjudicate/{item_id}/$", page.url)
            exercise(page, watch, f"adjudication page {item_id}")
        ctx.close()
