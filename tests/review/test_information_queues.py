"""Information queues from the review side: the queue form and the API create them (and refuse a
bad target with the reason), a final label refits the priorities so the next claim serves the item
now most informative, and annotators see nothing of the target or the readers."""

from __future__ import annotations

import pytest
from django.test import Client

from adjudication.models import QueueItem, ReviewQueue, RoutingPolicy
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.selectors import information_fit
from adjudication.routing.specs import PolicySpec

from ..routing.test_information_routing import PANEL, information_dataset
from .conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def info_dataset(write_jsonl):
    return information_dataset(write_jsonl)


def claim_order(queue: ReviewQueue) -> list[int]:
    """The open items' responses in the order claims serve them (priority, then the shuffle)."""
    return list(
        QueueItem.objects.filter(queue=queue, status="open")
        .order_by("-priority", "tiebreak", "id")
        .values_list("review_item__response_id", flat=True)
    )


def test_a_final_label_refits_the_priorities_and_the_next_claim_follows(
    info_dataset, eager, django_capture_on_commit_callbacks
):
    queue = queue_create(
        dataset=info_dataset,
        spec=QueueSpec(
            name="iq",
            overlap=1,
            routing=PolicySpec(panel=PANEL, priority="information", sampling="greedy", target="accuracy", budget=12),
        ),
    )
    ann = make_user("ann", "annotator")
    before = claim_order(queue)
    lease = lease_claim_next(queue=queue, annotator=ann).lease
    assert lease.item.review_item.response_id == before[0]
    # The label contradicts the consensus on the item it is least sure of: the rates move.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="C"))
    assert len(callbacks) == 1  # the refit request; it ran (eager) on commit
    policy = RoutingPolicy.objects.get(pk=queue.policy_id)
    assert policy.refresh_requested_at is None
    values = information_fit(dataset=info_dataset, target="accuracy").values
    assert values[before[0]] == 0  # labelled: nothing left to learn from it
    after = claim_order(queue)
    assert after != before[1:]
    open_items = QueueItem.objects.filter(queue=queue, status="open").select_related("review_item")
    assert all(qi.priority == values[qi.review_item.response_id] for qi in open_items)
    nxt = lease_claim_next(queue=queue, annotator=ann).lease
    assert nxt.item.review_item.response_id == max(after, key=lambda rid: values[rid])


def manager_client() -> Client:
    client = Client()
    client.force_login(make_user("man", "manager"))
    return client


def form(dataset, **overrides) -> dict:
    from adjudication.models import ReaderSpec

    data = {
        "dataset": dataset.pk,
        "panel": list(ReaderSpec.objects.filter(name__in=PANEL).values_list("pk", flat=True)),
        "compare": "either",
        "control_fraction": "0.25",
        "seed": "0",
        "priority": "information",
        "target": "reader:strict-match",
        "budget": "8",
        "name": "f",
        "overlap": "1",
        "lease_seconds": "900",
        "action": "create",
    }
    data.update(overrides)
    return data


def flashes(page) -> str:
    return " ".join(str(m) for m in page.context["messages"]) if page.context else ""


def test_the_queue_form_previews_and_creates_a_greedy_information_queue(info_dataset):
    manager = manager_client()
    offered = manager.get("/queues/new/", {"dataset": info_dataset.pk}).content.decode()
    assert '<option value="information">' in offered and 'name="target"' in offered and 'name="budget"' in offered
    assert '<option value="greedy">greedy: highest label values first (unfit for estimates)' in offered
    preview = manager.post("/queues/new/", form(info_dataset, action="preview", sampling="greedy")).content.decode()
    assert 'id="preview-routed">8<' in preview and 'id="preview-controls">2<' in preview
    assert "unfit for estimates" in preview
    assert not ReviewQueue.objects.exists()
    created = manager.post("/queues/new/", form(info_dataset, sampling="greedy"), follow=True)
    assert "Queue f created with 8 items." in flashes(created)
    # managers see the routing on the queue's page (annotators never do: the blind test below)
    assert (
        "priority <code>information</code> for <code>reader:strict-match</code>, budget 8" in created.content.decode()
    )
    policy = ReviewQueue.objects.get(name="f").policy
    assert (policy.priority, policy.target, policy.budget) == ("information", "reader:strict-match", 8)
    assert policy.sampling == "greedy" and policy.items.filter(is_control=True).count() == 2


def test_the_queue_form_previews_and_creates_a_randomized_information_queue_by_default(info_dataset):
    from adjudication.routing.selectors import information_draw

    manager = manager_client()
    preview = manager.post("/queues/new/", form(info_dataset, action="preview")).content.decode()
    fit = information_fit(dataset=info_dataset, target="reader:strict-match")
    draw = information_draw(dataset=info_dataset, fit=fit, budget=8, control_fraction=0.25, seed=0)
    # the expected size is the budget; the floor is a half (more than the controls share, 0.25):
    # π_min = 8 · 0.5 / 40
    assert f'id="preview-routed">{draw.routed}<' in preview
    assert 'id="preview-expected">8<' in preview and 'id="preview-pi-min">0.1<' in preview
    created = manager.post("/queues/new/", form(info_dataset), follow=True)
    assert f"Queue f created with {draw.routed} items." in flashes(created)
    policy = ReviewQueue.objects.get(name="f").policy
    assert policy.sampling == "randomized" and policy.design["expected"] == 8
    assert set(policy.items.values_list("response_id", flat=True)) == set(draw.drawn)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"target": ""}, "target: priority information needs a target"),
        ({"target": "reader:nobody"}, "no producer 'nobody'; producers: boxed, fixed, judge-a, judge-b, strict-match"),
        ({"target": "precision"}, "unknown target 'precision': use one of accuracy"),
        ({"priority": "disagreement"}, "a target and a budget go with priority information only"),
        ({"budget": "0"}, "budget: Ensure this value is greater than or equal to 1."),
        ({"priority": "loudest"}, "priority: one of disagreement, random, order, information"),
        ({"sampling": "best"}, "sampling: one of randomized, greedy"),
        ({"priority": "order", "target": "", "budget": "", "sampling": "greedy"}, "greedy sampling goes with priority"),
    ],
)
@pytest.mark.parametrize("action", ["preview", "create"])
def test_the_queue_form_refuses_a_bad_target_with_the_reason(info_dataset, overrides, message, action):
    page = manager_client().post("/queues/new/", form(info_dataset, action=action, **overrides))
    assert page.status_code == 200 and message in flashes(page)
    assert not ReviewQueue.objects.exists() and not RoutingPolicy.objects.exists()


def test_the_api_creates_an_information_queue_and_refuses_a_bad_target(info_dataset):
    manager = manager_client()
    body = {"dataset": "inf", "name": "a", "panel": PANEL, "priority": "information", "overlap": 1}
    refused = manager.post("/api/queues/", {**body, "target": "false-accept:nobody"}, "application/json")
    assert refused.status_code == 400
    assert "no producer 'nobody'" in refused.json()["error"]["message"]
    missing = manager.post("/api/queues/", body, "application/json")
    assert missing.status_code == 400 and "a target is required" in missing.json()["error"]["message"]
    misplaced = manager.post("/api/queues/", {**body, "priority": "order", "budget": 3}, "application/json")
    assert misplaced.status_code == 400 and "priority information only" in misplaced.json()["error"]["message"]
    assert not ReviewQueue.objects.exists()
    created = manager.post(
        "/api/queues/", {**body, "target": "bias:judge-a", "budget": 5, "sampling": "greedy"}, "application/json"
    )
    assert created.status_code == 201, created.content
    queue = ReviewQueue.objects.get(name="a")
    assert queue.items.count() == 5 and queue.policy.target == "bias:judge-a" and queue.policy.sampling == "greedy"
    drawn_body = {**body, "name": "b", "target": "bias:judge-a", "budget": 5}
    drawn = manager.post("/api/queues/", drawn_body, "application/json")
    assert drawn.status_code == 201, drawn.content
    policy = ReviewQueue.objects.get(name="b").policy
    assert policy.sampling == "randomized" and policy.design["expected"] == 5
    assert set(policy.items.values_list("stratum", flat=True)) <= {"information"}


def test_annotators_see_nothing_of_the_target_the_readers_or_the_pick(info_dataset):
    queue = queue_create(
        dataset=info_dataset,
        spec=QueueSpec(
            name="blind-q",
            overlap=1,
            routing=PolicySpec(
                panel=PANEL, priority="information", target="reader:judge-b", budget=6, control_fraction=0.5
            ),
        ),
    )
    ann = make_user("ann", "annotator")
    client = Client()
    client.force_login(ann)
    pages = [client.get("/review/"), client.get(f"/review/?queue={queue.pk}", follow=True)]
    pages += [client.post(f"/api/queues/{queue.pk}/claim/"), client.get("/api/queues/")]
    lease_id = pages[1].redirect_chain[-1][0].rstrip("/").split("/")[-1]
    pages.append(client.get(f"/api/leases/{lease_id}/"))
    assert 'class="candidate"' in pages[1].content.decode()
    for page in pages:
        body = page.content.decode()
        for secret in (
            "judge-b",
            "judge-a",
            "strict-match",
            "reader:",
            "blind-q",
            "information",
            "label value",
            "is_control",
        ):
            assert secret not in body, (secret, page.request["PATH_INFO"])
