"""The API docs page (/api/docs/) in Chromium: Swagger UI, served by this site (no CDN), renders every
operation of the schema under the strict Content-Security-Policy without a single violation."""

from __future__ import annotations

import pytest

from ..browser import chromium_browser, require_chromium
from .test_browser_flow import SCREENSHOTS, add_user, log_in
from .test_csp_in_browser import Violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_swagger_page_renders_the_operations_under_the_policy(plain_live_server, monkeypatch):
    require_chromium()
    add_user(monkeypatch, "ann", "annotator")
    base = plain_live_server
    with chromium_browser() as browser:
        context = browser.new_context()
        page = context.new_page()
        watch = Violations(page)
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        log_in(page, base, "ann", "/api/docs/")  # anonymous: the login page first, as on every page
        assert page.url.endswith("/api/docs/")
        response = page.reload()
        page.wait_for_selector(".opblock", timeout=20_000)
        operations = page.locator(".opblock-summary-path").all_inner_texts()
        for path in ("/api/queues/{queue_id}/claim/", "/api/queues/{queue_id}/final-labels/", "/api/datasets/"):
            assert any(path in text.replace("\u200b", "") for text in operations), (path, operations)
        # Open the claim and its responses: the 409 "busy" and the shared error body are documented.
        page.locator(".opblock-post .opblock-summary", has_text="/claim/").first.click()
        page.wait_for_selector(".responses-table .response[data-code='409']")
        page.screenshot(path=str(SCREENSHOTS / "api-docs.png"))
        watch.check("API docs", response)
        policy = response.headers["content-security-policy"]
        # Only images are widened here (Swagger UI's stylesheet draws its icons as data: URLs).
        assert "script-src 'self';" in policy + ";" and "style-src 'self';" in policy + ";"
        assert "img-src 'self' data:" in policy
        assert all(url.startswith(base) for url in requested), [u for u in requested if not u.startswith(base)]
        context.close()
