"""The LLM traces in Chromium: a judge's hostile reply (script, NUL, a lone surrogate, 200 KB) and a
response with a script inside the prompt sent execute nothing on the managers' item page or the
adjudicator's page, with every trace and every collapsed part opened, and the texts are there to read."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from ..browser import chromium_browser, require_chromium
from ..review.test_xss_in_browser import DANGEROUS_DOM
from .test_traces import HOSTILE_JUDGE, REPLY_CANARY, World, world  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _session(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def test_hostile_traces_execute_nothing_and_read_as_text(
    world: World,  # noqa: F811
    plain_live_server: str,
) -> None:
    require_chromium()
    # Sessions first: the browser's event loop makes this thread async, where the ORM refuses to run.
    pages = [
        (_session(world.manager), f"/items/{world.response.pk}/"),
        (_session(world.adjudicator), f"/adjudicate/{world.item.pk}/"),
    ]
    with chromium_browser() as browser:
        for session, path in pages:
            ctx = browser.new_context()
            ctx.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": plain_live_server}])
            page = ctx.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d, seen=dialogs: (seen.append(d.message), d.dismiss()))
            page.goto(plain_live_server + path)
            page.wait_for_load_state("load")
            # every trace and everything collapsed inside it, opened
            page.evaluate("() => document.querySelectorAll('#llm-traces details').forEach(d => d.open = true)")
            trace = page.locator(f'#llm-traces details.llm-trace[data-reader="{HOSTILE_JUDGE}"]')
            reply = trace.locator("pre.trace-text").last.inner_text()
            assert reply.startswith("<script>window.__xss=1</script> nul:\ufffd lone:\ufffd " + REPLY_CANARY)
            assert len(reply) > 200_000 and "\n  indented line\n" in reply
            prompt = trace.locator("details.trace-prompt pre").inner_text()
            assert "<script>window.__xss=9</script> The answer is B." in prompt
            assert page.evaluate("typeof window.__xss") == "undefined", path
            assert dialogs == [] and page.evaluate(DANGEROUS_DOM) == [], path
            ctx.close()
