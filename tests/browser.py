"""One headless Chromium for the whole test run (Debian's, driven by Playwright), a fresh context
per test.

Starting Playwright's driver and Chromium costs ~1.2 s; the browser tests used to pay it each. The
browser now starts with the first test that uses it and stops when the run ends
(`pytest_sessionfinish` in tests/conftest.py calls `shutdown`).

Two properties of Playwright's sync API shape this module:

- Between two of its calls it marks its event loop as running in the calling thread, so Django
  refuses every ORM call there ("You cannot call this from an async context"). The browser tests
  build their data before `with chromium_browser()` and check the database after it; leaving the
  block clears the mark and entering it sets it again (the dispatcher needs it when it resumes).
- The driver stops when its stdin pipe closes, and a process forked while it runs (the readers'
  isolation pool forks workers that live as long as the test process) holds a copy of that pipe:
  closing it then never reaches the driver. `shutdown` ends the driver by its process id instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

_running: dict[str, Any] = {}  # "playwright", "browser": the run's, once started


def require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    pytest.importorskip("playwright.sync_api")


def _browser() -> Any:
    browser = _running.get("browser")
    if browser is not None and browser.is_connected():
        return browser
    shutdown()  # a browser that crashed: start again
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    _running["playwright"] = playwright
    _running["loop"] = asyncio._get_running_loop()  # the mark Playwright set: see chromium_browser
    _running["driver_pids"] = _driver_pids()
    _running["browser"] = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
    return _running["browser"]


@contextmanager
def chromium_browser() -> Iterator[Any]:
    """The run's Chromium, or a clean skip when it or Playwright is missing. Open pages in a
    context of your own (`browser.new_context()`, or `browser.new_page()`, which makes one); every
    context still open is closed when the block ends.

    Make no ORM call inside the block (see the module's docstring): build the data before it and
    check the database after it.
    """
    require_chromium()
    browser = _browser()
    # Playwright's dispatcher runs its event loop in a greenlet of this thread and expects the
    # loop's running mark (a per-thread value) to be set whenever it resumes; it is cleared below
    # between blocks, for Django.
    asyncio._set_running_loop(_running["loop"])
    try:
        yield browser
    finally:
        try:
            for context in list(browser.contexts):
                with contextlib.suppress(Exception):
                    context.close()
        finally:
            # Playwright's mark that its loop runs in this thread: Django refuses the ORM under it.
            asyncio._set_running_loop(None)


def _driver_pids() -> set[int]:
    """Our child processes that run Playwright's driver (node … run-driver)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"run-driver" in cmdline:
            pids.add(int(entry.name))
    return pids


def shutdown() -> None:
    """Close the run's browser and end its driver (by process id: see the module's docstring)."""
    browser, playwright = _running.pop("browser", None), _running.pop("playwright", None)
    pids, loop = _running.pop("driver_pids", set()), _running.pop("loop", None)
    if loop is not None:
        asyncio._set_running_loop(loop)
    if browser is not None:
        with contextlib.suppress(Exception):
            browser.close()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if playwright is not None:
        with contextlib.suppress(Exception):
            playwright.stop()
    asyncio._set_running_loop(None)


def reload_until(page: Any, ready: Callable[[], bool], *, tries: int = 60) -> None:
    """Reload `page` until `ready()` holds: for a page whose report is computed after its response
    (adjudication.after_response) on the live server's background thread. Each round first waits
    for the work handed to that thread so far (a plain threading wait: no ORM call, so it is safe
    inside `chromium_browser`); the job is handed over once the response is written, which can be
    just after the browser has it, hence the rounds."""
    from adjudication import after_response

    for _ in range(tries):
        after_response.drain(timeout=600)
        page.reload()
        if ready():
            return
        page.wait_for_timeout(250)
    raise AssertionError(f"{page.url} never became ready")
