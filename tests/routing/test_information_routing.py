"""Budgeted adjudication, greedy sampling (unfit for estimates, kept as it was): an information
policy routes the responses whose labels most narrow a target's uncertainty under the panel
consensus (disputed or not), within a budget, with a random share of controls; final labels refit
its priorities (one refit per burst). The randomized design: test_information_draw.py."""

from __future__ import annotations

import random

import pytest
from django.core.management.base import CommandError

from adjudication.models import Dataset, QueueItem, Reading, Response, ReviewItem, RoutingPolicy
from adjudication.pipeline.readings import reader_spec_by_name, reader_spec_get_or_create
from adjudication.routing.refresh import information_refresh_request
from adjudication.routing.rules import controls_spread
from adjudication.routing.selectors import information_fit
from adjudication.routing.services import information_refresh_claimed, routing_policy_create
from adjudication.routing.specs import PolicySpec

from ..conftest import mc_row, run_command

N = 40
PANEL = ["strict-match", "fixed"]
# Each producer is right with this probability on a seeded draw of truths: a panel that is often
# wrong together, so that some responses it agrees on are ones the consensus is unsure of.
ACCURACY = {"strict-match": 0.85, "fixed": 0.8, "boxed": 0.75, "judge-a": 0.7, "judge-b": 0.9}


def information_dataset(write_jsonl) -> Dataset:
    """N MC responses (gold B) read by five producers, each right at its ACCURACY on seeded truths."""
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(N)])), dataset="inf", no_progress=True)
    specs = {name: reader_spec_by_name(name=name) for name in ("strict-match", "fixed", "boxed")}
    for name in ("judge-a", "judge-b"):
        specs[name] = reader_spec_get_or_create(
            name=name, version="1", config={}, config_hash=name[-1] * 64, kind="judge"
        )
    rng = random.Random(4)
    readings = []
    for response in Response.objects.filter(dataset__name="inf").order_by("id"):
        truth = rng.random() < 0.6
        for name, accuracy in ACCURACY.items():
            says_correct = truth if rng.random() < accuracy else not truth
            answer = "B" if says_correct else "C"  # the gold is B
            readings.append(
                Reading(
                    response=response,
                    reader_spec=specs[name],
                    answer=answer,
                    normalized=answer,
                    verdict="correct" if says_correct else "incorrect",
                )
            )
    Reading.objects.bulk_create(readings)
    return Dataset.objects.get(name="inf")


@pytest.fixture
def info_dataset(db, write_jsonl) -> Dataset:
    return information_dataset(write_jsonl)


def route(policy: str, **options) -> str:
    return run_command("route_disagreements", dataset="inf", policy=policy, panel=PANEL, **options)


def greedy(policy: str, **options) -> str:
    """A greedy information policy (created on first use), routed."""
    return route(policy, priority="information", sampling="greedy", **options)


def panel_agrees(response_id: int) -> bool:
    answers = set(
        Reading.objects.filter(response_id=response_id, reader_spec__name__in=PANEL).values_list("answer", flat=True)
    )
    return len(answers) == 1


def by_value(values: dict[int, float]) -> list[int]:
    return sorted(values, key=lambda rid: -values[rid])


def test_the_highest_label_values_are_routed_first_disputed_or_not(info_dataset):
    out = greedy("info", target="reader:strict-match", budget=8)
    assert "8 new review items (8 by information for reader:strict-match, 0 random controls)" in out
    values = information_fit(dataset=info_dataset, target="reader:strict-match").values
    items = ReviewItem.objects.filter(policy__name="info")
    routed = set(items.values_list("response_id", flat=True))
    cut = values[by_value(values)[7]]
    assert routed == {rid for rid, v in values.items() if v >= cut} and len(routed) == 8
    # served most informative first: the priority is the label value
    assert list(items.order_by("-priority").values_list("response_id", flat=True)) == by_value(
        {rid: values[rid] for rid in routed}
    )
    # the point: responses the panel agrees on are routed when their label tells the most...
    agreeing = {rid for rid in routed if panel_agrees(rid)}
    assert agreeing
    # ...which disagreement routing never sends
    route("dis")
    assert not agreeing & set(ReviewItem.objects.filter(policy__name="dis").values_list("response_id", flat=True))
    assert all(not i.is_control and i.reason["information"]["pick"] == "information" for i in items)
    # no known probability: the picks are chosen by value, not drawn
    assert {(i.stratum, i.inclusion_probability) for i in items} == {("greedy", None)}


def test_the_budget_bounds_the_routed_count_across_runs(info_dataset):
    greedy("b", target="accuracy", budget=5)
    assert ReviewItem.objects.filter(policy__name="b").count() == 5
    again = route("b")
    assert "0 new review items" in again and ReviewItem.objects.filter(policy__name="b").count() == 5
    RoutingPolicy.objects.filter(name="b").update(budget=9)
    route("b")
    assert ReviewItem.objects.filter(policy__name="b").count() == 9
    # no budget: every response whose label tells something about the target
    greedy("all", target="accuracy")
    values = information_fit(dataset=info_dataset, target="accuracy").values
    assert ReviewItem.objects.filter(policy__name="all").count() == sum(v > 0 for v in values.values())


def test_the_random_share_is_drawn_as_controls_and_served_among_the_informative(info_dataset):
    greedy("r", target="reader:strict-match", budget=10, control_fraction=0.3, seed=5)
    items = list(ReviewItem.objects.filter(policy__name="r").order_by("-priority", "id"))
    controls = [i for i in items if i.is_control]
    informative = [i for i in items if not i.is_control]
    assert len(controls) == 3 and len(informative) == 7
    assert all(i.reason["information"]["pick"] == "random" for i in controls)
    assert {(i.stratum, i.inclusion_probability) for i in controls} == {("control", None)}
    # each control takes the priority of an informative item at an evenly spaced rank: none is last
    values = {i.priority for i in informative}
    assert all(c.priority in values for c in controls)
    assert items[-1].is_control is False and items[0].is_control is False
    # the draw is seeded: the same seed draws the same controls, another seed others
    greedy("r2", target="reader:strict-match", budget=10, control_fraction=0.3, seed=5)
    same = set(ReviewItem.objects.filter(policy__name="r2", is_control=True).values_list("response_id", flat=True))
    assert same == {c.response_id for c in controls}


def test_controls_are_spread_evenly_through_the_informative_order():
    values = {rid: float(100 - rid) for rid in range(9)}
    priorities = controls_spread(priorities=values, controls=[100, 101, 102], seed=0)
    order = sorted(priorities, key=lambda rid: -priorities[rid])
    positions = [order.index(c) for c in (100, 101, 102)]
    # ranks (j + 1/2) * 9 / 3 = 1, 4, 7 of the informative order: one control in each third
    assert sorted(priorities[c] for c in (100, 101, 102)) == [values[7], values[4], values[1]]
    assert max(positions) < len(order) - 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"priority": "information"}, "a target is required"),
        ({"priority": "information", "target": "precision"}, "unknown target 'precision'"),
        ({"priority": "information", "target": "reader:nobody"}, "no producer 'nobody'"),
        ({"priority": "information", "target": "accuracy:no-such-checkpoint"}, "no checkpoint 'no-such-checkpoint'"),
        ({"priority": "disagreement", "target": "accuracy"}, "go with priority information only"),
        ({"priority": "random", "budget": 3}, "go with priority information only"),
        ({"priority": "disagreement", "sampling": "greedy"}, "sampling greedy goes with priority information only"),
    ],
)
def test_a_bad_or_misplaced_target_is_refused_by_the_command(info_dataset, options, message):
    with pytest.raises(CommandError, match=message):
        route("bad", **options)
    assert not RoutingPolicy.objects.filter(name="bad").exists()


def test_a_burst_of_final_labels_makes_one_refit_request(info_dataset, django_capture_on_commit_callbacks):
    policy = routing_policy_create(
        dataset=info_dataset,
        name="p",
        spec=PolicySpec(panel=PANEL, priority="information", sampling="greedy", target="accuracy", budget=4),
    )
    other = routing_policy_create(dataset=info_dataset, name="d", spec=PolicySpec(panel=PANEL))
    drawn = routing_policy_create(
        dataset=info_dataset,
        name="r",
        spec=PolicySpec(panel=PANEL, priority="information", target="accuracy", budget=4),
    )
    with django_capture_on_commit_callbacks() as callbacks:
        assert information_refresh_request(policy_id=policy.pk) is True
        assert information_refresh_request(policy_id=policy.pk) is False  # pending: the burst shares it
        assert information_refresh_request(policy_id=other.pk) is False  # not an information policy
        assert information_refresh_request(policy_id=drawn.pk) is False  # randomized: its draw stays put
    assert len(callbacks) == 1
    # the task's claim is a compare-and-set: of two deliveries, one refits
    assert information_refresh_claimed(policy_id=policy.pk).refitted is True
    assert information_refresh_claimed(policy_id=policy.pk).refitted is False
    # once claimed, the next label asks again
    with django_capture_on_commit_callbacks() as callbacks:
        assert information_refresh_request(policy_id=policy.pk) is True
    assert len(callbacks) == 1


def test_a_lost_request_is_made_again_after_a_lease(info_dataset, settings):
    from datetime import timedelta

    from django.utils import timezone

    policy = routing_policy_create(
        dataset=info_dataset,
        name="p",
        spec=PolicySpec(panel=PANEL, priority="information", sampling="greedy", target="accuracy"),
    )
    information_refresh_request(policy_id=policy.pk)
    assert information_refresh_request(policy_id=policy.pk) is False
    long_ago = timezone.now() - timedelta(seconds=settings.INFORMATION_REFRESH_LEASE_SECONDS + 1)
    RoutingPolicy.objects.filter(pk=policy.pk).update(refresh_requested_at=long_ago)
    assert information_refresh_request(policy_id=policy.pk) is True


def test_queue_items_follow_the_refitted_priorities(info_dataset):
    greedy("q", target="accuracy", budget=6)
    policy = RoutingPolicy.objects.get(name="q")
    run_command("create_queue", dataset="inf", name="qq", policy="q", overlap=1)
    assert QueueItem.objects.filter(queue__name="qq").count() == 6
    # priorities knocked out of date, as a refit after labels elsewhere would find them
    QueueItem.objects.filter(queue__name="qq").update(priority=0)
    ReviewItem.objects.filter(policy=policy).update(priority=0)
    route("q")
    values = information_fit(dataset=info_dataset, target="accuracy").values
    for qi in QueueItem.objects.filter(queue__name="qq").select_related("review_item"):
        assert qi.priority == qi.review_item.priority == values[qi.review_item.response_id]


def test_a_replaced_response_stays_routed_with_its_new_readings_as_reason(info_dataset):
    from adjudication.review.queues.services import review_invalidate_replaced

    greedy("rep", target="accuracy", budget=4)
    item = ReviewItem.objects.filter(policy__name="rep").order_by("id").first()
    old_reason = item.reason
    review_invalidate_replaced(response_ids=[item.response_id])
    out = route("rep")
    assert "0 new review items" in out and "1 replaced responses routed again" in out
    item.refresh_from_db()
    assert item.reason["before_replacement"] == old_reason
    assert set(item.reason["readings"]) == set(PANEL) and item.reason["information"]["target"] == "accuracy"
    assert ReviewItem.objects.filter(policy__name="rep").count() == 4
