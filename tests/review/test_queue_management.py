"""Queue management: creating a queue with a chosen panel after a preview, pausing, closing and
re-opening it, assigning annotators (enforced on the pages, the API and the claim), its title, the
per-queue agreement and the pairwise annotator matrix linked to the item browser."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from adjudication.models import Label, Lease, ReaderSpec, ReviewItem, ReviewQueue
from adjudication.review.annotate.services import label_revise, label_submit, lease_claim_next
from adjudication.review.errors import ReviewError
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.agreement import queue_agreement
from adjudication.review.queues.services import queue_annotators_set, queue_create, queue_state_set, queue_title_set
from adjudication.review.queues.specs import QueueSpec
from adjudication.templatetags.review_links import disagreeing_items_url

from ..conftest import project_table_counts, run_command
from .conftest import disputed_dataset, make_user, panel_dataset_build

pytestmark = pytest.mark.django_db


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def messages_of(page) -> list[str]:
    return [str(m) for m in page.context["messages"]] if page.context else []


# -- the dataset of the creation tests --------------------------------------------------------------


@pytest.fixture
def panel_dataset(write_jsonl):
    return panel_dataset_build(write_jsonl, "pd", with_judge=True)


def form_data(dataset, panel: list[ReaderSpec], **overrides) -> dict:
    data = {
        "dataset": dataset.pk,
        "panel": [s.pk for s in panel],
        "compare": "either",
        "control_fraction": "0",
        "seed": "0",
        "name": "",
        "title": "",
        "overlap": "2",
        "lease_seconds": "900",
        "show_candidates": "on",
        "action": "preview",
    }
    data.update(overrides)
    return data


def preview_numbers(page) -> dict[str, int]:
    body = page.content.decode()
    return {
        key: int(re.search(rf'id="preview-{key}">(\d+)<', body).group(1))
        for key in ("routed", "disputed", "controls", "agreeing", "pending")
    }


def test_the_form_starts_with_the_dataset_then_offers_its_readers_grouped_with_the_rule_readers_ticked(
    panel_dataset,
):
    dataset, specs = panel_dataset
    manager = logged_in(make_user("man", "manager"))
    first = manager.get("/queues/new/").content.decode()
    assert 'id="dataset-pick"' in first and 'name="panel"' not in first
    assert f'<option value="{dataset.pk}">pd</option>' in first
    page = manager.get(f"/queues/new/?dataset={dataset.pk}").content.decode()
    for kind, spec in specs.items():
        ticked = f'name="panel" value="{spec.pk}" checked>' in page
        offered = f'name="panel" value="{spec.pk}"' in page
        assert offered and ticked == (kind != "judge"), kind
    assert "LLM judges" in page and "rule readers" in page
    assert 'value="either" checked' in page


def test_preview_keeps_the_values_shows_the_counts_and_writes_nothing(panel_dataset):
    dataset, specs = panel_dataset
    manager = logged_in(make_user("man", "manager"))
    before = project_table_counts()
    data = form_data(
        dataset, [specs["strict"], specs["boxed"]], name="boxed-round", title="Round 1", missing_is_disagreement="on"
    )
    page = manager.post("/queues/new/", data)
    assert page.status_code == 200
    assert preview_numbers(page) == {"routed": 3, "disputed": 3, "controls": 0, "agreeing": 8, "pending": 1}
    body = page.content.decode()
    assert f'value="{specs["boxed"].pk}" checked' in body and f'value="{specs["fixed"].pk}" checked' not in body
    assert 'value="boxed-round"' in body and 'value="Round 1"' in body
    assert 'name="missing_is_disagreement" checked' in body
    assert project_table_counts() == before


@pytest.mark.parametrize(
    ("panel", "compare", "expected"),
    [
        (("strict", "fixed"), "either", {"mc-0", "mc-1", "mc-2", "mc-3"}),
        (("strict", "judge"), "answer", {"mc-0", "mc-7"}),
        (("fixed", "boxed", "judge"), "either", {f"mc-{i}" for i in range(11)} - {"mc-8", "mc-9", "mc-10"}),
        (("strict", "fixed"), "verdict", set()),
    ],
)
def test_creating_routes_what_the_preview_said_and_says_so(panel_dataset, panel, compare, expected):
    dataset, specs = panel_dataset
    manager = logged_in(make_user("man", "manager"))
    chosen = [specs[k] for k in panel]
    preview = preview_numbers(manager.post("/queues/new/", form_data(dataset, chosen, compare=compare)))
    created = manager.post(
        "/queues/new/", form_data(dataset, chosen, compare=compare, name="q1", action="create"), follow=True
    )
    queue = ReviewQueue.objects.get(name="q1")
    assert created.redirect_chain[-1][0] == f"/queues/{queue.pk}/"
    n = queue.items.count()
    assert f"Queue q1 created with {n} item" in " ".join(messages_of(created))
    assert n == preview["routed"] == len(expected)
    routed = set(queue.items.values_list("review_item__response__external_id", flat=True))
    assert routed == expected
    assert set(queue.policy.panel.all()) == set(chosen) and queue.policy.compare == compare


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"panel": "one"}, "panel"),
        ({"panel": ["x1", "x\x00"]}, "panel"),
        ({"panel": ["999999999999999999999", "2"]}, "panel"),
        ({"compare": "both"}, "compare"),
        ({"control_fraction": "NaN"}, "control_fraction"),
        ({"control_fraction": "2"}, "control_fraction"),
        ({"seed": "4294967296"}, "seed"),
        ({"overlap": "0"}, "overlap"),
        ({"name": "two\nlines", "action": "create"}, "name"),
        ({"name": "", "action": "create"}, "name"),
        ({"title": "a\u202eb", "name": "ok", "action": "create"}, "title"),
    ],
)
def test_bad_input_is_a_message_naming_the_field_and_no_queue(panel_dataset, change, field):
    dataset, specs = panel_dataset
    manager = logged_in(make_user("man", "manager"))
    data = form_data(dataset, [specs["strict"], specs["fixed"]])
    if change.get("panel") == "one":
        change = {"panel": [specs["strict"].pk]}
    data.update(change)
    page = manager.post("/queues/new/", data)
    assert page.status_code == 200
    errors = " ".join(messages_of(page))
    assert errors.startswith(f"{field}:") or f"; {field}:" in errors or f"{field}:" in errors, errors
    assert 'class="error"' in page.content.decode()
    assert not ReviewQueue.objects.exists()


def test_a_reader_of_another_dataset_is_not_a_panel_choice(panel_dataset, write_jsonl):
    _dataset, specs = panel_dataset
    other = disputed_dataset(write_jsonl, 2, name="other")  # read by strict-match and boxed
    manager = logged_in(make_user("man", "manager"))
    page = manager.post("/queues/new/", form_data(other, [specs["strict"], specs["judge"]], name="x", action="create"))
    assert "panel: tick readers that have read this dataset" in " ".join(messages_of(page))
    assert not ReviewQueue.objects.exists()


@pytest.mark.parametrize("value", ["abc", "1\x00", "99999999999999999999999", "-1"])
def test_a_bad_dataset_is_a_message_and_the_picker_again(panel_dataset, value):
    manager = logged_in(make_user("man", "manager"))
    for page in (manager.get("/queues/new/", {"dataset": value}), manager.post("/queues/new/", {"dataset": value})):
        assert page.status_code == 400
        assert " ".join(messages_of(page)).startswith("dataset: ")
        assert 'id="dataset-pick"' in page.content.decode()


def test_a_taken_name_is_a_message_and_the_form_keeps_its_values(panel_dataset):
    dataset, specs = panel_dataset
    manager = logged_in(make_user("man", "manager"))
    manager.post("/queues/new/", form_data(dataset, [specs["strict"], specs["fixed"]], name="q", action="create"))
    again = manager.post(
        "/queues/new/", form_data(dataset, [specs["strict"], specs["boxed"]], name="q", action="create")
    )
    assert "a queue named 'q' exists already" in " ".join(messages_of(again))
    assert f'value="{specs["boxed"].pk}" checked' in again.content.decode()
    assert ReviewQueue.objects.count() == 1


# -- states ------------------------------------------------------------------------------------------


def test_a_paused_queue_hands_out_nothing_new_but_its_live_leases_are_still_returned_and_submitted(queue):
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    held = lease_claim_next(queue=queue, annotator=ann).lease
    queue_state_set(queue=queue, state="paused")
    assert lease_claim_next(queue=queue, annotator=ann).lease.pk == held.pk  # work in progress comes back
    refused = lease_claim_next(queue=queue, annotator=bob)
    assert refused.lease is None and refused.refused == "paused" and "paused" in refused.refusal
    label_submit(lease=held, annotator=ann, entry=LabelEntry(kind="option", answer="B"))
    assert lease_claim_next(queue=queue, annotator=ann).refused == "paused"
    queue_state_set(queue=queue, state="active")
    assert lease_claim_next(queue=queue, annotator=bob).lease is not None


def test_a_closed_queue_is_hidden_from_annotators_and_a_held_item_can_still_be_submitted(queue):
    ann = make_user("ann", "annotator")
    client = logged_in(ann)
    opened = client.get(f"/review/?queue={queue.pk}")
    lease_url = opened["Location"]
    queue_state_set(queue=queue, state="closed")
    landing = client.get("/review/").content.decode()
    assert f"?queue={queue.pk}" not in landing and "no review queues" in landing
    assert client.get("/api/queues/").json() == []
    assert client.get(f"/review/queues/{queue.pk}/mine/").status_code == 404
    assert client.get(f"/review/queues/{queue.pk}/guidelines/").status_code == 404
    submitted = client.post(lease_url, {"kind": "option", "answer": "B"})
    assert submitted.status_code == 302 and Label.objects.filter(annotator=ann).count() == 1
    after = client.get(f"/review/?queue={queue.pk}")
    assert after.status_code == 200 and "This queue is closed" in after.content.decode()
    claim = client.post(f"/api/queues/{queue.pk}/claim/")
    assert claim.status_code == 409 and "closed" in json.dumps(claim.json())
    assert Lease.objects.count() == 1


def test_the_landing_page_shows_a_paused_queue_with_its_progress_and_does_not_open_it(queue):
    ann = make_user("ann", "annotator")
    client = logged_in(ann)
    lease = lease_claim_next(queue=queue, annotator=ann).lease
    label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="B"))
    queue_state_set(queue=queue, state="paused")
    landing = client.get("/review/")  # a single queue with work would open at once: a paused one does not
    body = landing.content.decode()
    assert landing.status_code == 200 and f'id="queue-{queue.pk}-paused"' in body
    assert "1 done · 5 left for you" in body
    page = client.get(f"/review/?queue={queue.pk}")
    assert page.status_code == 200 and "This queue is paused" in page.content.decode()
    api = client.post(f"/api/queues/{queue.pk}/claim/")
    assert api.status_code == 409 and "paused" in json.dumps(api.json())
    assert [q["state"] for q in client.get("/api/queues/").json()] == ["paused"]


def test_managers_pause_close_and_reopen_from_the_queue_page(queue):
    manager = logged_in(make_user("man", "manager"))
    page = manager.get(f"/queues/{queue.pk}/").content.decode()
    assert 'id="state-paused"' in page and 'id="state-closed"' in page and 'id="state-active"' not in page
    for state, shown in (("paused", "is now paused"), ("closed", "is now closed"), ("active", "is now active")):
        reply = manager.post(f"/queues/{queue.pk}/state/", {"state": state}, follow=True)
        queue.refresh_from_db()
        assert queue.state == state and shown in " ".join(messages_of(reply))
        assert f'id="queue-state">{state}<' in reply.content.decode()
    bad = manager.post(f"/queues/{queue.pk}/state/", {"state": "gone\x00"}, follow=True)
    assert "state:" in " ".join(messages_of(bad))
    queue.refresh_from_db()
    assert queue.state == "active"


def test_an_unknown_state_is_refused_by_the_service(queue):
    with pytest.raises(ReviewError, match="state: one of active, paused, closed"):
        queue_state_set(queue=queue, state="archived")


# -- assignment ---------------------------------------------------------------------------------------


def test_an_assigned_queue_is_seen_and_claimed_by_its_annotators_only(queue):
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    queue_annotators_set(queue=queue, annotators=[ann])
    assert lease_claim_next(queue=queue, annotator=ann).lease is not None
    refused = lease_claim_next(queue=queue, annotator=bob)
    assert refused.lease is None and refused.refused == "not_assigned"
    bob_client, ann_client = logged_in(bob), logged_in(ann)
    assert f"?queue={queue.pk}" not in bob_client.get("/review/").content.decode()
    assert bob_client.get("/api/queues/").json() == []
    assert [q["id"] for q in ann_client.get("/api/queues/").json()] == [queue.pk]
    page = bob_client.get(f"/review/?queue={queue.pk}")
    assert page.status_code == 403 and "assigned to other annotators" in page.content.decode()
    claim = bob_client.post(f"/api/queues/{queue.pk}/claim/")
    assert claim.status_code == 403 and "assigned to other annotators" in json.dumps(claim.json())
    assert bob_client.get(f"/review/queues/{queue.pk}/mine/").status_code == 404
    assert ann_client.get(f"/review/queues/{queue.pk}/mine/").status_code == 200
    assert not Lease.objects.filter(annotator=bob).exists()


def test_an_unassigned_annotator_keeps_and_submits_a_held_item_but_gets_nothing_new(queue):
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    held = lease_claim_next(queue=queue, annotator=bob).lease
    queue_annotators_set(queue=queue, annotators=[ann])
    label_submit(lease=held, annotator=bob, entry=LabelEntry(kind="option", answer="B"))
    assert lease_claim_next(queue=queue, annotator=bob).refused == "not_assigned"
    queue_annotators_set(queue=queue, annotators=[])  # nobody assigned: every annotator again
    assert lease_claim_next(queue=queue, annotator=bob).lease is not None


def test_managers_assign_and_unassign_from_the_queue_page(queue):
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    make_user("adj", "adjudicator")
    manager = logged_in(make_user("man", "manager"))
    page = manager.get(f"/queues/{queue.pk}/").content.decode()
    assert "every annotator sees and claims this queue" in page
    assert f'value="{ann.pk}">' in page and f'value="{bob.pk}">' in page and ">adj<" not in page
    reply = manager.post(f"/queues/{queue.pk}/annotators/", {"annotators": [ann.pk, bob.pk]}, follow=True)
    assert "assigned to ann, bob" in " ".join(messages_of(reply))
    assert set(queue.annotators.all()) == {ann, bob}
    assert f'value="{ann.pk}" checked>' in reply.content.decode()
    manager.post(f"/queues/{queue.pk}/annotators/", {"annotators": [bob.pk]})
    assert list(queue.annotators.all()) == [bob]
    reply = manager.post(f"/queues/{queue.pk}/annotators/", {}, follow=True)
    assert "open to every annotator" in " ".join(messages_of(reply)) and not queue.annotators.exists()


@pytest.mark.parametrize("value", ["abc", "1\x00", "99999999999999999999999"])
def test_assigning_a_non_annotator_or_a_bad_id_is_a_message(queue, value):
    adj = make_user("adj", "adjudicator")
    manager = logged_in(make_user("man", "manager"))
    for bad in (adj.pk, value):
        reply = manager.post(f"/queues/{queue.pk}/annotators/", {"annotators": [bad]}, follow=True)
        assert " ".join(messages_of(reply)).startswith("annotators: ")
    assert not queue.annotators.exists()
    with pytest.raises(ReviewError, match="adj do not hold the annotator role"):
        queue_annotators_set(queue=queue, annotators=[adj])


# -- title ---------------------------------------------------------------------------------------------


def test_the_title_is_what_annotators_see_and_the_name_never_reaches_them(queue):
    ann = make_user("ann", "annotator")
    manager = logged_in(make_user("man", "manager"))
    reply = manager.post(f"/queues/{queue.pk}/title/", {"title": "  Sociology, round 2 "}, follow=True)
    assert "Annotators now see q as “Sociology, round 2”" in " ".join(messages_of(reply))
    queue.refresh_from_db()
    assert queue.title == "Sociology, round 2"
    assert [q["title"] for q in logged_in(ann).get("/api/queues/").json()] == ["Sociology, round 2"]
    manager.post(f"/queues/{queue.pk}/title/", {"title": ""})
    queue.refresh_from_db()
    assert queue.display_title == f"Queue {queue.pk}"


@pytest.mark.parametrize("title", ["two\nlines", "nul\x00", "x" * 201, "\ud800"])
def test_an_unprintable_or_long_title_is_refused(queue, title):
    manager = logged_in(make_user("man", "manager"))
    if title != "\ud800":  # a form post cannot carry a lone surrogate; the API's JSON can
        reply = manager.post(f"/queues/{queue.pk}/title/", {"title": title}, follow=True)
        assert reply.status_code == 200 and "title:" in " ".join(messages_of(reply))
    patched = manager.patch(f"/api/queues/{queue.pk}/", json.dumps({"title": title}), content_type="application/json")
    assert patched.status_code == 400 and "title" in json.dumps(patched.json())
    with pytest.raises(ReviewError, match="title:"):
        queue_title_set(queue=queue, title=title)
    queue.refresh_from_db()
    assert queue.title == ""


# -- the queue page -------------------------------------------------------------------------------------


def test_the_list_links_each_queue_to_its_page_which_has_the_actions(queue):
    manager = logged_in(make_user("man", "manager"))
    listing = manager.get("/queues/").content.decode()
    assert f'href="/queues/{queue.pk}/"' in listing and 'action="/queues/new/"' in listing
    page = manager.get(f"/queues/{queue.pk}/").content.decode()
    for link in (
        f"/queues/{queue.pk}/guidelines/",
        f"/queues/{queue.pk}/final-labels.jsonl",
        f"/queues/{queue.pk}/final-labels.csv",
        f"/queues/{queue.pk}/sync/",
        f"/queues/{queue.pk}/title/",
        f"/queues/{queue.pk}/annotators/",
    ):
        assert link in page, link
    assert '6 items: <span data-state="pending">6 not started</span>' in page and "panel boxed, strict-match" in page


def test_the_list_can_show_one_datasets_queues_with_it_picked_for_a_new_one(queue, write_jsonl):
    other = disputed_dataset(write_jsonl, 3, name="other-ds")
    theirs = queue_create(dataset=other, spec=QueueSpec(name="other-q", overlap=1))
    manager = logged_in(make_user("man", "manager"))
    listing = manager.get(f"/queues/?dataset={other.pk}").content.decode()
    assert f'href="/queues/{theirs.pk}/"' in listing and f'href="/queues/{queue.pk}/"' not in listing
    assert re.search(rf'<option value="{other.pk}" selected>', listing)
    assert manager.get("/queues/?dataset=x%00").status_code == 400  # not an id: refused, not ignored
    everything = manager.get("/queues/?dataset=").content.decode()
    assert f'href="/queues/{theirs.pk}/"' in everything and f'href="/queues/{queue.pk}/"' in everything


def test_an_unknown_queue_page_is_not_found(queue):
    manager = logged_in(make_user("man", "manager"))
    assert manager.get("/queues/999999/").status_code == 404
    assert manager.post("/queues/999999/state/", {"state": "paused"}).status_code == 404


# -- agreement ----------------------------------------------------------------------------------------


# Items in claim order; each annotator's label per item (None: skipped). b first labels item 1 D,
# then revises it to C: the current label counts.
LABELS = {
    "a": ["B", "B", "C", "D"],
    "b": ["B", "C", "C", "D"],
    "c": ["B", "B", "D", None],
}


@pytest.fixture
def labelled_queue(write_jsonl):
    ds = disputed_dataset(write_jsonl, 4, name="ag")
    queue = queue_create(dataset=ds, spec=QueueSpec(name="agreement-q", overlap=3))
    users = {name: make_user(name, "annotator") for name in LABELS}
    order: list[int] = []
    for name, answers in LABELS.items():
        for n, answer in enumerate(answers):
            lease = lease_claim_next(queue=queue, annotator=users[name]).lease
            if name == "a":
                order.append(lease.item_id)
            assert lease.item_id == order[n]
            if answer is None:
                label_submit(lease=lease, annotator=users[name], entry=LabelEntry(kind="skipped"), skip_reason="?")
            elif name == "b" and n == 1:
                first = label_submit(lease=lease, annotator=users[name], entry=LabelEntry(kind="option", answer="D"))
                label_revise(label=first, annotator=users[name], entry=LabelEntry(kind="option", answer=answer))
            else:
                label_submit(lease=lease, annotator=users[name], entry=LabelEntry(kind="option", answer=answer))
    return queue


def test_the_queue_agreement_is_the_hand_computed_one(labelled_queue):
    ag = queue_agreement(queue=labelled_queue)
    assert ag.annotators == ["a", "b", "c"]
    assert (ag.items, ag.all_agree, ag.disagreeing) == (4, 2, 2)
    assert ag.percent == pytest.approx(0.5)
    pairs = {(p.a, p.b): p for p in ag.pairs}
    # a = B B C D, b = B C C D: p_o 3/4, p_e .5*.25 + .25*.5 + .25*.25 = .3125
    assert (pairs["a", "b"].n, pairs["a", "b"].agree) == (4, 3)
    assert pairs["a", "b"].kappa == pytest.approx((0.75 - 0.3125) / (1 - 0.3125))
    # a = B B C, c = B B D on the three items c labelled: p_o 2/3, p_e 4/9
    assert (pairs["a", "c"].n, pairs["a", "c"].agree) == (3, 2)
    assert pairs["a", "c"].kappa == pytest.approx(0.4)
    # b = B C C, c = B B D: p_o 1/3, p_e 2/9
    assert (pairs["b", "c"].n, pairs["b", "c"].agree) == (3, 1)
    assert pairs["b", "c"].kappa == pytest.approx(1 / 7)
    assert ag.light_kappa == pytest.approx((0.4375 / 0.6875 + 0.4 + 1 / 7) / 3)
    # Coincidences: B-B 4, B-C 1+1, C-C 1, C-D 1+1, D-D 2; n = 11, n_B 5, n_C 3, n_D 3:
    # α = 1 - (n - 1) · 4 / (n² - Σ n_c²) = 1 - 40 / 78
    assert ag.alpha == pytest.approx(1 - 40 / 78)
    row_b = ag.matrix[1]
    assert row_b.annotator == "b" and [c.column for c in row_b.cells] == ["a", "b", "c"]
    assert row_b.cells[1].pair is None and row_b.cells[0].pair.agree == 3


def test_an_item_with_one_current_label_does_not_count(queue):
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    lease = lease_claim_next(queue=queue, annotator=ann).lease
    label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="B"))
    ag = queue_agreement(queue=queue)
    assert (ag.items, ag.annotators, ag.percent, ag.alpha) == (0, [], None, None)
    lease = lease_claim_next(queue=queue, annotator=bob).lease
    label_submit(lease=lease, annotator=bob, entry=LabelEntry(kind="option", answer="B"))
    ag = queue_agreement(queue=queue)
    assert (ag.items, ag.percent) == (1, 1.0)
    assert ag.alpha is None and "same category" in ag.alpha_undefined  # 0/0: one category only
    assert ag.pairs[0].kappa is None and ag.pairs[0].kappa_undefined


def test_the_queue_page_shows_the_matrix_and_links_every_number_to_the_disagreeing_items(labelled_queue):
    page = logged_in(make_user("man", "manager")).get(f"/queues/{labelled_queue.pk}/").content.decode()
    q = labelled_queue.pk
    anyone = f'href="/items/?queue={q}&amp;disagree=any"'
    for number_id, text in (
        ("agreement-percent", "50.0 %"),
        ("agreement-alpha", "0.487"),
        ("agreement-kappa", "0.393"),
        ("agreement-disagreeing", "2 disagreeing"),
    ):
        assert f'<a {anyone} id="{number_id}">{text}</a>' in page, number_id
    cells = dict(re.findall(r'<td data-pair="([^"]+)">(.*?)</td>', page, flags=re.S))
    assert set(cells) == {"a,b", "a,c", "b,a", "b,c", "c,a", "c,b"}
    for pair, (n, percent, kappa) in {
        "a,b": ("4 items", "75.0 %", "κ 0.636"),
        "b,a": ("4 items", "75.0 %", "κ 0.636"),
        "a,c": ("3 items", "66.7 %", "κ 0.400"),
        "c,b": ("3 items", "33.3 %", "κ 0.143"),
    }.items():
        link = f'href="/items/?queue={q}&amp;disagree={pair}"'
        links = re.findall(r'<a href="([^"]+)" class="pair-[a-z]+"[^>]*>([^<]+)</a>', cells[pair])
        assert [text for _, text in links] == [n, percent, kappa], pair
        assert all(f'href="{href}"' == link for href, _ in links), pair


def test_the_items_link_follows_the_item_browsers_url_name(settings):
    assert disagreeing_items_url(queue_id=3) == "/items/?queue=3&disagree=any"
    assert disagreeing_items_url(queue_id=3, annotators=("ann", "b.o+b@x")) == (
        "/items/?queue=3&disagree=ann,b.o%2Bb@x"
    )
    settings.ROOT_URLCONF = "tests.review.items_urlconf"
    assert disagreeing_items_url(queue_id=3, annotators=("a", "b")) == "/browse/items/?queue=3&disagree=a,b"


# -- commands and API ---------------------------------------------------------------------------------


def test_create_queue_takes_annotators_and_the_comparison(panel_dataset):
    make_user("ann", "annotator")
    out = run_command(
        "create_queue",
        dataset="pd",
        name="cq",
        panel=["strict-match", "judge-qwen"],
        compare="answer",
        annotators=["ann"],
    )
    queue = ReviewQueue.objects.get(name="cq")
    assert "queue cq: 2 items" in out and "assigned to ann" in out
    assert queue.policy.compare == "answer" and [u.username for u in queue.annotators.all()] == ["ann"]
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        run_command("create_queue", dataset="pd", name="cq2", annotators=["nobody"])
    make_user("adj", "adjudicator")
    with pytest.raises(CommandError, match="adj do not hold the annotator role"):
        run_command("create_queue", dataset="pd", name="cq3", annotators=["adj"])
    assert ReviewQueue.objects.count() == 1


def test_the_queue_command_pauses_closes_reopens_titles_and_assigns(queue):
    ann, bob = make_user("ann", "annotator"), make_user("bob", "annotator")
    assert "queue q: active; annotators see 'Queue" in run_command("queue", "q")
    out = run_command("queue", "q", "--pause", "--title", "Round 2", "--assign", "ann", "--assign", "bob")
    queue.refresh_from_db()
    assert (queue.state, queue.title) == ("paused", "Round 2") and set(queue.annotators.all()) == {ann, bob}
    assert "paused; annotators see 'Round 2'; assigned to ann, bob" in out
    run_command("queue", "q", "--close", "--unassign", "ann")
    queue.refresh_from_db()
    assert queue.state == "closed" and list(queue.annotators.all()) == [bob]
    assert "open to every annotator" in run_command("queue", "q", "--reopen", "--unassign", "bob")
    queue.refresh_from_db()
    assert queue.state == "active"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no queue named 'nope'"),
        (["q", "--assign", "ghost"], "no user named 'ghost'"),
        (["q", "--assign", "ann", "--unassign", "ann"], "both --assign and --unassign ann"),
        (["q", "--title", "two\nlines"], "title:"),
        (["q", "--assign", "adj"], "adj do not hold the annotator role"),
    ],
)
def test_the_queue_command_refuses_bad_input_and_changes_nothing(queue, args, message):
    make_user("ann", "annotator")
    make_user("adj", "adjudicator")
    with pytest.raises(CommandError, match=re.escape(message)):
        run_command("queue", *args, "--pause")
    queue.refresh_from_db()
    assert queue.state == "active" and queue.title == "" and not queue.annotators.exists()


def test_the_api_patches_state_title_and_annotators(queue):
    ann = make_user("ann", "annotator")
    manager = logged_in(make_user("man", "manager"))
    reply = manager.patch(
        f"/api/queues/{queue.pk}/",
        {"state": "paused", "title": "API round", "annotators": ["ann"]},
        content_type="application/json",
    )
    assert reply.status_code == 200
    assert {k: reply.json()[k] for k in ("state", "title", "annotators")} == {
        "state": "paused",
        "title": "API round",
        "annotators": ["ann"],
    }
    queue.refresh_from_db()
    assert queue.state == "paused" and list(queue.annotators.all()) == [ann]
    only_state = manager.patch(f"/api/queues/{queue.pk}/", {"state": "active"}, content_type="application/json")
    assert only_state.json()["annotators"] == ["ann"] and only_state.json()["title"] == "API round"
    assert manager.get(f"/api/queues/{queue.pk}/").json()["state"] == "active"
    listed = manager.get("/api/queues/").json()
    assert listed[0]["state"] == "active" and listed[0]["annotators"] == ["ann"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"state": "archived"}, "state"),
        ({"title": "two\nlines"}, "title"),
        ({"title": "nul\x00"}, "title"),
        ({"annotators": ["ghost"]}, "annotators"),
        ({"annotators": ["adj"]}, "annotators"),
        ({"annotators": "ann"}, "annotators"),
    ],
)
def test_bad_api_patches_are_a_400_naming_the_field_and_change_nothing(queue, payload, field):
    make_user("adj", "adjudicator")
    manager = logged_in(make_user("man", "manager"))
    reply = manager.patch(f"/api/queues/{queue.pk}/", payload, content_type="application/json")
    assert reply.status_code == 400 and field in json.dumps(reply.json())
    queue.refresh_from_db()
    assert queue.state == "active" and queue.title == "" and not queue.annotators.exists()


def test_annotators_cannot_patch_a_queue(queue):
    reply = logged_in(make_user("ann", "annotator")).patch(
        f"/api/queues/{queue.pk}/", {"state": "closed"}, content_type="application/json"
    )
    assert reply.status_code == 403
    queue.refresh_from_db()
    assert queue.state == "active"


def test_the_api_creates_a_queue_with_a_comparison_and_annotators(panel_dataset):
    make_user("ann", "annotator")
    manager = logged_in(make_user("man", "manager"))
    reply = manager.post(
        "/api/queues/",
        {
            "dataset": "pd",
            "name": "apiq",
            "panel": ["strict-match", "judge-qwen"],
            "compare": "answer",
            "missing_is_disagreement": True,
            "annotators": ["ann"],
        },
        content_type="application/json",
    )
    assert reply.status_code == 201 and reply.json()["annotators"] == ["ann"]
    queue = ReviewQueue.objects.get(name="apiq")
    assert queue.policy.compare == "answer" and queue.policy.missing_is_disagreement
    assert ReviewItem.objects.filter(policy=queue.policy).count() == 2
    bad = manager.post(
        "/api/queues/", {"dataset": "pd", "name": "x", "compare": "both"}, content_type="application/json"
    )
    assert bad.status_code == 400 and "compare" in bad.json()["error"]["fields"]


# -- the claim's cost ----------------------------------------------------------------------------------


def _claim_statements(queue: ReviewQueue, annotator: User) -> int:
    with CaptureQueriesContext(connection) as seen:
        assert lease_claim_next(queue=queue, annotator=annotator).lease is not None
    return sum("SAVEPOINT" not in q["sql"] for q in seen.captured_queries)


def test_state_and_assignment_cost_the_claim_no_statement(write_jsonl):
    small = queue_create(dataset=disputed_dataset(write_jsonl, 3, name="s"), spec=QueueSpec(name="small"))
    big = queue_create(dataset=disputed_dataset(write_jsonl, 30, name="b"), spec=QueueSpec(name="big"))
    ann = make_user("ann", "annotator")
    others = [make_user(f"o{i}", "annotator") for i in range(5)]
    open_to_all = _claim_statements(small, ann)
    queue_annotators_set(queue=big, annotators=[ann, *others])
    assigned = _claim_statements(big, ann)
    # Four statements either way: the queue's access and the live lease (one), the give-back in
    # other queues, the best item with room, the lease.
    assert open_to_all == assigned == 4
