"""What the annotator's and the adjudicator's item pages say, server-side (issue 36, items 8, 9
and 12): keys are letters, candidates carry no number, and the adjudicator's page tells a queue that
hides candidates from one whose readers found none, and shows each annotator's answer, confidence
and time side by side."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from adjudication.models import Label, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import mc_row, run_command
from .conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db


def _label(queue, user: User, answer: str, confidence: int | None = None) -> Label:
    lease = lease_claim_next(queue=queue, annotator=user).lease
    assert lease is not None
    return label_submit(
        lease=lease, annotator=user, entry=LabelEntry(kind="option", answer=answer, confidence=confidence)
    )


def _conflict(queue) -> tuple[int, User]:
    """Two annotators disagree on the queue's one item; returns it and an adjudicator."""
    first, second = make_user("ann-1", "annotator"), make_user("ann-2", "annotator")
    _label(queue, first, "A", confidence=4)
    label = _label(queue, second, "C")
    Label.objects.filter(pk=label.pk).update(seconds_spent=125.4)
    return label.item_id, make_user("adj", "adjudicator")


def test_the_adjudicator_page_says_the_readers_found_no_answer_on_a_queue_that_shows_candidates(write_jsonl, client):
    """issue 36 item 12: "This queue does not show candidates." only where the queue hides them."""
    rows = [mc_row(1, response="I am not sure what the question asks.")]
    run_command("import_responses", str(write_jsonl(rows)), dataset="none", no_progress=True)
    response = Response.objects.get(dataset__name="none")
    panel = ("strict-match", "boxed")
    Reading.objects.bulk_create(
        Reading(response=response, reader_spec=reader_spec_by_name(name=name), answer="", verdict="no_answer")
        for name in panel
    )
    # Every response no panel reader could read drawn into the queue (the unreadable stratum).
    routing = PolicySpec(panel=panel, unreadable_fraction=1.0)
    queue = queue_create(dataset=response.dataset, spec=QueueSpec(name="none-q", overlap=2, routing=routing))
    item_id, adjudicator = _conflict(queue)
    client.force_login(adjudicator)
    page = client.get(f"/adjudicate/{item_id}/").content.decode()
    assert "does not show candidates" not in page
    assert "The readers found no answer in this response." in page


def test_the_adjudicator_page_shows_answers_confidence_and_time_side_by_side(write_jsonl, client):
    """issue 36 item 12: Potato's adjudication view, one row per annotator, no name."""
    queue = queue_create(dataset=disputed_dataset(write_jsonl, 1), spec=QueueSpec(name="q", overlap=2))
    item_id, adjudicator = _conflict(queue)
    client.force_login(adjudicator)
    page = client.get(f"/adjudicate/{item_id}/").content.decode()
    table = page[page.index('id="annotator-labels"') : page.index("</table>", page.index('id="annotator-labels"'))]
    assert "<th>time</th>" in table and "<th>confidence</th>" in table
    rows = re.findall(r"<tr><td>(Annotator \d)</td>(.*?)</tr>", table, re.S)
    cells = {who: re.sub(r"<[^>]+>", " ", rest) for who, rest in rows}
    assert set(cells) == {"Annotator 1", "Annotator 2"}
    assert "4 / 5" in cells["Annotator 1"] and "not given" in cells["Annotator 2"]
    assert "2 min 05 s" in cells["Annotator 2"]
    assert "ann-1" not in page and "ann-2" not in page and "orca-7b" not in page


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, ""), (0.4, "0 s"), (59.4, "59 s"), (60, "1 min 00 s"), (3599, "59 min 59 s"), (3725, "1 h 02 min")],
)
def test_a_labels_time_reads_in_seconds_minutes_or_hours(seconds, shown):
    """issue 36 item 12: the time column's text."""
    from adjudication.review.adjudicate.selectors import time_spent

    assert time_spent(seconds) == shown


def test_candidates_carry_no_number_and_options_are_picked_by_letters(write_jsonl, client):
    """issue 36 items 8 and 9: the pick bar's keys are the option letters, and a candidate is named
    by its answer, never "Candidate 1" beside a bar where a digit picks."""
    rows = [
        mc_row(
            1,
            choices=[str(n) for n in range(2, 12)],  # A=2, B=3, … J=11: numeric option texts
            gold="J",
            response="The choice is 2. The answer is B. Then again \\boxed{J}",
        )
    ]
    run_command("import_responses", str(write_jsonl(rows)), dataset="num", no_progress=True)
    response = Response.objects.get(dataset__name="num")
    Reading.objects.bulk_create(
        [
            Reading(
                response=response, reader_spec=reader_spec_by_name(name="strict-match"), answer="B", verdict="incorrect"
            ),
            Reading(response=response, reader_spec=reader_spec_by_name(name="boxed"), answer="J", verdict="correct"),
        ]
    )
    queue = queue_create(dataset=response.dataset, spec=QueueSpec(name="num-q", overlap=1))
    annotator = make_user("ann", "annotator")
    client.force_login(annotator)
    page = client.get(client.get(f"/review/?queue={queue.pk}")["Location"]).content.decode()
    keys = re.findall(r'name="pick" value="option:([A-Z])" data-key="([^"]+)"', page)
    assert keys == [(letter, letter) for letter in "ABCDEFGHIJ"]
    assert not re.search(r"Candidate \d", page)
    candidates = re.findall(r'<button type="button" class="candidate" data-candidate="\d+">(.*?)</button>', page, re.S)
    assert sorted(re.sub(r"<[^>]+>", "", c).strip() for c in candidates) == ["B", "J"]
