"""The Content-Security-Policy in Chromium: the pages that render model text, LaTeX and plots run
under the strict policy without a single violation, and KaTeX still renders.

Pages: the annotator's item page, the adjudication page, the analytics page and the audit report.
A violation is caught twice: Chromium's console message ("Refused to ... Content Security Policy")
and the page's `securitypolicyviolation` event. A control step inserts an inline style attribute
into each page, which the policy must refuse: so the watch is known to work, and the policy to be
enforced, on every page checked.
"""

from __future__ import annotations

import re

import pytest

from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..browser import chromium_browser, reload_until, require_chromium
from ..conftest import manage, math_row, mc_row, reading_at, run_command
from .test_browser_flow import ITEM_URL, add_user, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N = 4
# The readers disagree on every response (B in prose, C boxed), so each becomes a review item; the
# LaTeX is for KaTeX to render on the item and adjudication pages.
TEXT = (
    "Reasoning {i}: $\\frac{{1}}{{2}} + \\sqrt{{x_{i}}}$ and $$\\sum_{{k=1}}^{{n}} k^2$$. "
    "The answer is B. Then again \\boxed{{C}}"
)

WATCH_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
    e => window.__csp.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' in ' + e.sourceFile));
"""
CONTROL = """() => new Promise(resolve => {
  document.addEventListener('securitypolicyviolation', () => resolve(true), {once: true});
  document.body.insertAdjacentHTML('beforeend', '<span id="csp-control" style="color: red">control</span>');
  setTimeout(() => resolve(false), 2000);
})"""


@pytest.fixture
def pages(write_jsonl, service_env, monkeypatch, tmp_path):
    """A dataset with disputed MC responses (readings written directly) and two math golds, a queue
    with one conflicting item, a finished audit run, and the four users."""
    require_chromium()
    from django.contrib.auth.models import User

    from adjudication.audit.services import audit_run_start
    from adjudication.models import AuditRun, Dataset, Reading, Response
    from adjudication.pipeline.readings import reader_spec_by_name
    from adjudication.review.annotate.services import label_submit, lease_claim_next
    from adjudication.review.labels import LabelEntry
    from adjudication.review.queues.services import queue_create

    rows = [mc_row(i, response=TEXT.format(i=i)) for i in range(N)]
    rows += [math_row(0, gold="72"), math_row(1, gold="\\frac{1}{2}")]
    run_command("import_responses", str(write_jsonl(rows)), dataset="csp", no_progress=True)
    prose, boxed = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="boxed")
    readings = []
    for response in Response.objects.filter(dataset__name="csp", run__checkpoint="base"):
        b, c = response.text.index("B."), response.text.index("{C}") + 1
        readings += [
            reading_at(response, prose, "B", at=b, verdict="correct"),
            reading_at(response, boxed, "C", at=c, verdict="incorrect"),
        ]
    Reading.objects.bulk_create(readings)
    dataset = Dataset.objects.get(name="csp")
    queue = queue_create(
        dataset=dataset,
        spec=QueueSpec(name="csp-q", overlap=2, lease_seconds=600, routing=PolicySpec(panel=["strict-match", "boxed"])),
    )

    for name, role in (
        ("ann", "annotator"),
        ("one", "annotator"),
        ("two", "annotator"),
        ("adj", "adjudicator"),
        ("boss", "manager"),
    ):
        add_user(monkeypatch, name, role)
    conflict = None
    for name, answer in (("one", "B"), ("two", "C")):
        lease = lease_claim_next(queue=queue, annotator=User.objects.get(username=name)).lease
        label_submit(
            lease=lease, annotator=User.objects.get(username=name), entry=LabelEntry(kind="option", answer=answer)
        )
        conflict = lease.item_id

    run = audit_run_start(dataset=dataset, reader_names=["strip-string", "boxed"])
    # In a child process: the audit's reader pool forks workers that would inherit this test's
    # database connection and the Playwright driver's pipe (see test_browser_flow.run_readers).
    env = {k: v for k, v in service_env.items() if k not in ("CELERY_BROKER_URL", "REDIS_URL")}
    env["AUDIT_OUTPUT_DIR"] = str(tmp_path / "audit")
    done = manage("shell", "-c", f"from adjudication.audit.tasks import run_audit; run_audit({run.pk})", env=env)
    assert done.returncode == 0, done.stderr
    run.refresh_from_db()
    assert run.status == AuditRun.Status.DONE, run.error
    return {"dataset": dataset.pk, "conflict": conflict, "audit": run.pk}


class Violations:
    def __init__(self, page) -> None:
        self.page = page
        self.console: list[str] = []
        page.add_init_script(WATCH_VIOLATIONS)
        page.on("console", self._console)

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.console.append(message.text)

    def check(self, where: str, response) -> None:
        page = self.page
        policy = response.headers.get("content-security-policy", "")
        assert "default-src 'self'" in policy and "unsafe" not in policy, f"{where}: policy {policy!r}"
        page.wait_for_load_state("load")
        assert self.console == [], f"{where}: {self.console}"
        assert page.evaluate("window.__csp") == [], f"{where}: {page.evaluate('window.__csp')}"
        # Control: an inline style attribute is refused, and reported both ways.
        assert page.evaluate(CONTROL) is True, f"{where}: an inline style attribute was not refused"
        assert page.evaluate("getComputedStyle(document.getElementById('csp-control')).color") != "rgb(255, 0, 0)"
        page.wait_for_timeout(100)  # the console message follows the event
        assert any("style" in text for text in self.console), f"{where}: the control's console message is missing"
        self.console.clear()
        page.evaluate("window.__csp = []")


def visit(browser, base: str, username: str, path: str):
    context = browser.new_context()
    page = context.new_page()
    watch = Violations(page)
    log_in(page, base, username, path)
    return context, page, watch


def test_item_adjudication_analytics_and_audit_pages_run_under_the_policy(pages, plain_live_server, eager):
    # eager: the analytics page's first view has its stored report computed in this process, as on
    # the embedded default.
    base = plain_live_server
    with chromium_browser() as browser:
        context, page, watch = visit(browser, base, "ann", "/review/")
        assert ITEM_URL.search(page.url), page.url
        watch.check("item page", page.reload())
        assert page.locator("#response-rendered .katex").count() >= 2, "KaTeX did not render on the item page"
        context.close()

        context, page, watch = visit(browser, base, "adj", "/adjudicate/")
        response = page.goto(f"{base}/adjudicate/{pages['conflict']}/")
        assert re.search(rf"/adjudicate/{pages['conflict']}/$", page.url)
        watch.check("adjudication page", response)
        assert page.locator(".katex").count() >= 2, "KaTeX did not render on the adjudication page"
        context.close()

        context, page, watch = visit(browser, base, "boss", f"/analytics/{pages['dataset']}/")
        # The report is computed after the first view's response, on the server's background thread.
        reload_until(page, lambda: page.locator(".analytics .plot svg").count() >= 1)
        watch.check("analytics page", page.reload())
        assert page.locator(".analytics .plot svg").count() >= 1
        # The page's styles moved to app.css and still apply.
        assert page.evaluate("getComputedStyle(document.querySelector('.analytics .plot')).borderTopWidth") == "1px"

        response = page.goto(f"{base}/audit/{pages['audit']}/")
        watch.check("audit report", response)
        assert page.locator("#error-budget").count() == 1
        for width, fill in page.evaluate("""() => [...document.querySelectorAll('svg.bar')].map(
                s => [s.getAttribute('width'), getComputedStyle(s.querySelector('rect')).fill])"""):
            assert float(width) >= 0 and fill == "rgb(91, 127, 199)"
        context.close()
