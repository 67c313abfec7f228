"""The item browser in headless Chromium: one test per filter, each setting it through the filter
form (or following the queue page's `disagree` link) and asserting exactly which responses are
listed and that the form keeps the value; the item page with its readings, labels and final labels;
hostile model text inert on both pages.

The data is test_item_browser.build_world (real services), built once for the module; what each
test expects is computed from it before Chromium starts (no ORM call inside chromium_browser: see
its docstring). The manager's session is made with Django's test client and handed to Chromium as
a cookie: the login form has its own browser test (test_browser_flow)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.conf import settings
from django.test import Client

from adjudication.browse import selectors as browse

from ..browser import chromium_browser, require_chromium
from ..conftest import committed_world, jsonl_writer
from .test_browser_flow import SCREENSHOTS
from .test_item_browser import ALPHA, BETA, HOSTILE_ID, World, build_world
from .test_xss_in_browser import DANGEROUS_DOM, Watch

# Read-only tests: the world is built and committed once for the module (committed_world), with a
# live server of its own; no test is marked django_db.
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served_world(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[tuple[World, str]]:
    require_chromium()  # skip before building anything
    with committed_world(django_db_blocker) as url:
        yield build_world(jsonl_writer(tmp_path_factory.mktemp("item-browser"))), url


@pytest.fixture
def world(served_world) -> World:
    return served_world[0]


@pytest.fixture
def plain_live_server(served_world) -> str:
    """The module's live server (see served_world), under the name the other browser tests use."""
    return served_world[1]


@pytest.fixture(scope="module")
def session(served_world) -> str:
    client = Client()
    client.force_login(served_world[0].users["boss"])
    return client.cookies[settings.SESSION_COOKIE_NAME].value


@contextmanager
def manager_page(base_url: str, session: str, path: str = "/items/") -> Iterator:
    """A Chromium page logged in as the manager, at `path`."""
    with chromium_browser() as browser:
        ctx = browser.new_context()
        ctx.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": base_url}])
        page = ctx.new_page()
        page.goto(base_url + path)
        assert "/accounts/login/" not in page.url
        yield page
        ctx.close()


def listed(page) -> list[str]:
    return page.locator("#items tbody td.ext-id a").all_inner_texts()


def submit(page) -> None:
    with page.expect_navigation():
        page.click("#filter-submit")
    assert not page.locator("#filter-error").count(), page.inner_text("#filter-error")


# -- q ----------------------------------------------------------------------------------------------


def test_searching_an_id_lists_the_exact_id_first(world, session, plain_live_server):
    with manager_page(plain_live_server, session) as page:
        page.fill("#filter-q", "A-1")
        submit(page)
        assert listed(page) == ["a-1", "b-0"]  # b-0 mentions "A-1" and was imported first
        assert page.input_value("#filter-q") == "A-1"


def test_searching_text_lists_the_responses_containing_it(world, session, plain_live_server):
    with manager_page(plain_live_server, session) as page:
        page.fill("#filter-q", "durkheim's anomie")
        submit(page)
        assert listed(page) == ["a-2"]
        assert page.input_value("#filter-q") == "durkheim's anomie"


# -- run identity -----------------------------------------------------------------------------------


def test_the_dataset_filter_lists_its_responses_and_its_pages_keep_it(world, session, plain_live_server, monkeypatch):
    monkeypatch.setattr(browse, "PAGE_SIZE", 4)  # the live server runs in this process
    with manager_page(plain_live_server, session) as page:
        page.select_option("#filter-dataset", label="alpha")
        submit(page)
        first = listed(page)
        assert page.input_value("#filter-dataset") == str(world.alpha.pk)
        with page.expect_navigation():
            page.click("#page-next")
        assert first + listed(page) == list(ALPHA)
        assert page.input_value("#filter-dataset") == str(world.alpha.pk)
        assert page.locator("#page-next").count() == 0
        page.select_option("#filter-dataset", label="beta")
        submit(page)
        assert listed(page) == list(BETA)


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("model", "llama-8b", ["a-4", "a-5"]),
        ("checkpoint", "rl", [*BETA, "a-2", "a-3", "a-5"]),
        ("benchmark", "arc", ["a-3", "a-4"]),
    ],
)
def test_a_run_column_filter_lists_exactly_its_responses(world, session, plain_live_server, column, value, expected):
    with manager_page(plain_live_server, session) as page:
        page.select_option(f"#filter-{column}", value)
        submit(page)
        assert listed(page) == expected
        assert page.input_value(f"#filter-{column}") == value


# -- queue and status -------------------------------------------------------------------------------


def test_the_queue_filter_lists_the_queues_items(world, session, plain_live_server):
    expected = sorted(world.order["alpha-q2"])
    with manager_page(plain_live_server, session) as page:
        page.select_option("#filter-queue", str(world.q2.pk))
        submit(page)
        assert listed(page) == expected
        assert page.input_value("#filter-queue") == str(world.q2.pk)
        # Each row shows every queue item's state: q2's three are in conflict.
        for row in page.locator("#items tbody tr").all():
            assert "alpha-q2: conflicting" in row.locator("td.queue-states").inner_text()


@pytest.mark.parametrize("state", list(browse.STATES))
def test_each_status_lists_the_items_in_that_state(world, session, plain_live_server, state):
    expected = world.in_state(state, "alpha-q1")
    assert expected
    with manager_page(plain_live_server, session) as page:
        page.select_option("#filter-queue", str(world.q1.pk))
        page.select_option("#filter-status", state)
        submit(page)
        assert set(listed(page)) == expected and len(listed(page)) == len(expected)
        assert page.input_value("#filter-status") == state
        for row in page.locator("#items tbody tr").all():
            assert f"alpha-q1: {state}" in row.locator("td.queue-states").inner_text()


# -- reader verdicts --------------------------------------------------------------------------------


def test_verdict_conditions_are_anded(world, session, plain_live_server):
    with manager_page(plain_live_server, session) as page:
        page.fill("#filter-verdict-new", "fixed:correct")
        submit(page)
        assert listed(page) == ["b-0", "a-0", "a-1", "a-2", "a-3"]
        # The condition is kept; a new blank input takes the second.
        assert page.locator("input.verdict-condition").nth(0).input_value() == "fixed:correct"
        page.fill("#filter-verdict-new", "boxed:no_answer")
        submit(page)
        assert listed(page) == ["b-0", "a-1", "a-3"]
        kept = [i.input_value() for i in page.locator("input.verdict-condition").all()]
        assert kept == ["fixed:correct", "boxed:no_answer", ""]
        for row in page.locator("#items tbody tr").all():
            verdicts = row.locator("td.verdicts").inner_text()
            assert "fixed" in verdicts and "correct" in verdicts and "no_answer" in verdicts
        page.set_viewport_size({"width": 1366, "height": 768})
        page.screenshot(path=str(SCREENSHOTS / "review-items.png"), full_page=False)


# -- disagreement: the queue page's links -----------------------------------------------------------


def test_the_disagree_link_for_a_pair_lists_where_their_labels_differ(world, session, plain_live_server):
    _j0, j1, _j2 = world.order["alpha-q2"]
    path = f"/items/?queue={world.q2.pk}&disagree=ann1,ann2"
    with manager_page(plain_live_server, session, path) as page:
        assert listed(page) == [j1]
        assert page.input_value("#filter-disagree") == "ann1,ann2"
        assert page.input_value("#filter-queue") == str(world.q2.pk)
        page.fill("#filter-disagree", "ann2,ann3")
        submit(page)
        assert set(listed(page)) == {world.order["alpha-q2"][0], world.order["alpha-q2"][2]}


def test_the_disagree_any_link_lists_where_labels_are_not_all_equal(world, session, plain_live_server):
    q1 = {world.order["alpha-q1"][i] for i in (1, 2, 3)}
    with manager_page(plain_live_server, session, f"/items/?queue={world.q1.pk}&disagree=any") as page:
        assert set(listed(page)) == q1 and len(listed(page)) == len(q1)
        assert page.input_value("#filter-disagree") == "any"


# -- the item page ----------------------------------------------------------------------------------


def test_the_item_page_shows_readings_labels_with_authors_and_times_and_the_final_label(
    world, session, plain_live_server
):
    adjudicated = world.in_state("adjudicated", "alpha-q1").pop()
    with manager_page(plain_live_server, session, f"/items/?queue={world.q1.pk}&status=adjudicated") as page:
        with page.expect_navigation():
            page.click(f"#items td.ext-id a:text-is('{adjudicated}')")
        assert page.inner_text("#external-id") == adjudicated
        readers = page.locator("#readings td.reader-name").all_inner_texts()
        assert {"fixed", "strict-match"} <= set(readers)
        section = page.locator("section.queue-item[data-queue='alpha-q1']")
        labels = section.locator("table.labels tbody tr")
        assert labels.count() == 2
        assert labels.locator("td.author").all_inner_texts() == ["ann1", "ann2"]
        for when in labels.locator("td.when").all_inner_texts():
            assert when.strip()[:2] == "20" and len(when.strip()) >= 19  # a date and a time
        final = section.locator("table.finals tr.final.current")
        assert final.count() == 1
        assert final.locator("td.provenance").inner_text() == "adjudicated"
        assert final.locator("td.author").inner_text() == "adj"
        assert "boxed wins" in final.inner_text()
        # A reading's number marks its span in the response.
        button = page.locator("#readings button.candidate").first
        number = button.get_attribute("data-candidate")
        button.click()
        assert page.is_visible("#response-source")
        assert page.locator(f"#response-source mark.active[data-candidate='{number}']").count() >= 1
        assert page.locator("#queues-link").get_attribute("href") == "/queues/"
        page.set_viewport_size({"width": 1366, "height": 768})
        page.screenshot(path=str(SCREENSHOTS / "review-item-detail.png"), full_page=True)


def test_hostile_model_text_executes_nothing_on_either_page(world, session, plain_live_server):
    with manager_page(plain_live_server, session, f"/items/?dataset={world.beta.pk}") as page:
        watch = Watch(page)
        page.reload()
        watch.check("item list")
        assert page.locator("#items tbody tr").count() == len(BETA)
        preview = page.locator("#items td.preview").all_inner_texts()
        assert any("<script>window.__xss=1</script>" in p for p in preview)  # shown as text
        with page.expect_navigation():
            page.click(f"#items td.ext-id a:text-is('{HOSTILE_ID}')")
        page.wait_for_load_state("load")
        watch.check("item page")
        assert page.inner_text("#external-id") == HOSTILE_ID
        assert "window.__xss=1" in page.inner_text("#response-rendered")
        for button in page.locator("button.candidate").all():
            button.click()
            watch.check(f"after reading {button.inner_text()}")
        page.keyboard.press("`")
        watch.check("rendered view")
        assert page.evaluate(DANGEROUS_DOM) == []
