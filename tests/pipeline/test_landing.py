"""The managers' landing page: a card per dataset with its counts, its headline numbers (those of
`format_share --by benchmark --json`) and links that open; and a navigation that offers each role
only what it may open."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from adjudication.models import Dataset, Lease
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import math_row, mc_row, run_command
from ..review.conftest import make_user

READERS = ("boxed", "fixed")


def build_dataset(write_jsonl, name: str, *, questions: int, maths: int, read: bool = True) -> Dataset:
    """Base checkpoints answer in prose, RL checkpoints box the same right answer: boxed finds
    nothing on base and everything on RL, fixed finds everything (a 100-point reported gain, 0 fixed)."""
    rows = []
    for q in range(questions):
        for ckpt, text in (("base", "The answer is B."), ("rl", "So \\boxed{B}")):
            rows.append(mc_row(q, id=f"{name}-mc-{q}-{ckpt}", checkpoint=ckpt, response=f"Q{q}. {text}"))
    for q in range(maths):
        for ckpt, text in (("base", "#### 72"), ("rl", "Hence \\boxed{72}")):
            rows.append(math_row(q, id=f"{name}-m-{q}-{ckpt}", checkpoint=ckpt, response=f"Q{q}. {text}"))
    run_command("import_responses", str(write_jsonl(rows, name=f"{name}.jsonl")), dataset=name, no_progress=True)
    if read:
        # Eager and transactional (two_datasets): each batch runs as its transaction commits.
        run_command("run_readers", dataset=name, readers=list(READERS))
    return Dataset.objects.get(name=name)


@pytest.fixture
def two_datasets(write_jsonl, eager):
    big = build_dataset(write_jsonl, "cards-a", questions=4, maths=2)
    unread = build_dataset(write_jsonl, "cards-b", questions=1, maths=0, read=False)
    queue = queue_create(
        dataset=big,
        spec=QueueSpec(
            name="cards-q", overlap=1, routing=PolicySpec(panel=list(READERS), missing_is_disagreement=True)
        ),
    )
    annotator = make_user("carla", "annotator")
    for _ in range(2):
        claim = lease_claim_next(queue=queue, annotator=annotator)
        lease = Lease.objects.get(pk=claim.lease.pk)
        choices = lease.item.review_item.response.question.choices
        entry = LabelEntry(kind="option", answer="B") if choices else LabelEntry(kind="text", answer="72")
        label_submit(lease=lease, annotator=annotator, entry=entry)
    make_user("mona", "manager")
    return big, unread


def format_share_json(dataset: str) -> dict:
    return json.loads(run_command("format_share", dataset=dataset, by="benchmark", json=True))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_each_dataset_is_a_card_with_its_counts_headline_and_links(two_datasets, plain_live_server):
    from ..browser import chromium_browser, reload_until

    big, _ = two_datasets
    fs = format_share_json(big.name)
    want_headline = {"(all)": fs["pooled"], **{b: g["pooled"] for b, g in fs["groups"].items()}}
    with chromium_browser() as browser:
        page = browser.new_page()
        page.goto(plain_live_server + "/")
        page.fill("#id_username", "mona")
        page.fill("#id_password", "pw-mona-123")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        # No page computes a report in its request (issue 36 item 15): the first visit asks for it
        # and says so; it is computed once the response is sent, and the next visit shows it.
        first = page.locator('section.card[data-dataset="cards-a"] p.report-state').inner_text()
        assert "analytics being computed" in first
        # Computed on the server's background thread, as on the embedded default.
        states = page.locator("section.card p.report-state")
        reload_until(page, lambda: all("analytics computed" in s.inner_text() for s in states.all()))
        cards = {c.get_attribute("data-dataset"): c for c in page.locator("section.card").all()}
        assert set(cards) == {"cards-a", "cards-b"}
        assert "analytics computed" in cards["cards-a"].locator("p.report-state").inner_text()

        def counts(card) -> dict[str, int]:
            return {d.get_attribute("data-count"): int(d.inner_text()) for d in card.locator("dd[data-count]").all()}

        # 12 responses, each read by both readers; boxed finds nothing in the 6 base responses, which
        # is a dispute (missing disagrees); two of them labelled.
        assert counts(cards["cards-a"]) == {"responses": 12, "readings": 24, "disputed": 6, "queued": 6, "labelled": 2}
        assert counts(cards["cards-b"]) == {"responses": 2, "readings": 0, "disputed": 0, "queued": 0, "labelled": 0}
        seen = {
            row.get_attribute("data-benchmark"): {
                c.get_attribute("data-key"): float(c.get_attribute("data-value"))
                for c in row.locator("td[data-key]").all()
            }
            for row in cards["cards-a"].locator("table.headline tbody tr").all()
        }
        assert set(seen) == set(want_headline) == {"(all)", "mmlu", "math"}
        for bench, pooled in want_headline.items():
            assert seen[bench]["reported_gain"] == pytest.approx(pooled["reported_gain"], abs=1e-12)
            assert seen[bench]["fixed_gain"] == pytest.approx(pooled["fixed_gain"], abs=1e-12)
            assert seen[bench]["format_share"] == pytest.approx(pooled["format_share"], abs=1e-12)
        assert seen["(all)"]["reported_gain"] == pytest.approx(100.0)
        assert seen["(all)"]["format_share"] == pytest.approx(1.0)
        # Nothing read yet: no numbers, and the card says why.
        assert cards["cards-b"].locator("table.headline").count() == 0
        assert "boxed" in cards["cards-b"].locator("p.headline-error").inner_text()
        links = {a.inner_text(): a.get_attribute("href") for a in cards["cards-a"].locator("p.links a").all()}
        assert links["analytics"] == f"/analytics/{big.pk}/"
        assert set(links) >= {"analytics", "review queues", "items", "audit"}
        for text, href in links.items():
            response = page.goto(plain_live_server + href)
            assert response is not None and response.status == 200, (text, href)
            assert str(big.name) in page.content(), f"{text} page does not show the dataset"


NAV = re.compile(r"<nav>(.*?)</nav>", re.S)
HREF = re.compile(r'href="([^"]+)"')


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["annotator", "adjudicator", "manager"])
def test_the_navigation_offers_only_what_the_role_can_open(role):
    user = make_user(f"nav-{role}", role)
    client = Client()
    client.force_login(user)
    page = client.get("/", follow=True)
    assert page.status_code == 200
    links = HREF.findall(NAV.search(page.content.decode()).group(1))
    assert links, "no navigation"
    for href in links:
        assert client.get(href).status_code in (200, 302), f"{role} is offered {href} but may not open it"
    managers_only = {"/", "/queues/", "/audit/", "/items/"}
    if role != "manager":
        assert not managers_only & set(links), f"{role} is offered a manager page: {links}"
