"""The sampling design a disagreement policy records: each item's stratum and inclusion probability
(disputed: 1; a control: the control fraction), the policy's design per routing run, and controls
served throughout the queue rather than after every dispute."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from adjudication.models import QueueItem, Reading, Response, ReviewItem, RoutingPolicy
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.routing.rules import random_priority

from ..conftest import mc_row, run_command

N = 40
STRONG, WEAK = 4, 8  # disputed answers (strength 3), then split verdicts on one answer (strength 1)


@pytest.fixture
def design_dataset(db, write_jsonl):
    """N responses read by strict-match and fixed: STRONG with two answers, WEAK with one answer and
    two verdicts, the rest agreed on."""
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(N)])), dataset="d", no_progress=True)
    a, b = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="fixed")
    rows = []
    for i, response in enumerate(Response.objects.filter(dataset__name="d").order_by("id")):
        rows.append(Reading(response=response, reader_spec=a, answer="B", normalized="B", verdict="correct"))
        answer, verdict = ("C", "incorrect") if i < STRONG else ("B", "incorrect" if i < STRONG + WEAK else "correct")
        rows.append(Reading(response=response, reader_spec=b, answer=answer, normalized=answer, verdict=verdict))
    Reading.objects.bulk_create(rows)


def route(policy: str, **options) -> str:
    return run_command("route_disagreements", dataset="d", policy=policy, panel=["strict-match", "fixed"], **options)


def serving_order(queue: str) -> list[QueueItem]:
    """The queue's items in the order claims serve them."""
    return list(
        QueueItem.objects.filter(queue__name=queue)
        .select_related("review_item")
        .order_by("-priority", "tiebreak", "id")
    )


def test_disputed_items_and_controls_record_their_stratum_and_probability(design_dataset):
    route("p", control_fraction=0.4, seed=2)
    items = ReviewItem.objects.filter(policy__name="p")
    disputed = items.filter(is_control=False)
    controls = items.filter(is_control=True)
    assert disputed.count() == STRONG + WEAK and controls.exists()
    assert set(disputed.values_list("stratum", "inclusion_probability")) == {("disputed", 1.0)}
    assert set(controls.values_list("stratum", "inclusion_probability")) == {("control", 0.4)}


def test_each_routing_run_records_what_it_saw(design_dataset):
    route("p", control_fraction=0.4, seed=2)
    policy = RoutingPolicy.objects.get(name="p")
    assert policy.design == {
        "population": N,
        "disputed": STRONG + WEAK,
        "undisputed": N - STRONG - WEAK,
        "unreadable": 0,
        "pending": 0,
    }
    # a response whose second reading is still missing: pending, and counted so on the next run
    Reading.objects.filter(response__external_id=f"mc-{N - 1}", reader_spec__name="fixed").delete()
    route("p")
    policy.refresh_from_db()
    assert policy.design["pending"] == 1 and policy.design["undisputed"] == N - STRONG - WEAK - 1


@pytest.mark.parametrize("priority", ["disagreement", "order"])
def test_controls_are_served_throughout_the_queue_not_after_every_dispute(design_dataset, priority):
    route("p", control_fraction=0.5, seed=1, priority=priority)
    run_command("create_queue", dataset="d", name="q", policy="p", overlap=1)
    order = serving_order("q")
    disputed_priorities = {qi.priority for qi in order if not qi.review_item.is_control}
    controls = [k for k, qi in enumerate(order) if qi.review_item.is_control]
    n, total = len(controls), len(order)
    assert n >= 5
    # each control ties with a disputed item's priority: none waits behind the last dispute
    assert all(order[k].priority in disputed_priorities for k in controls)
    if priority == "order":
        # every priority distinct: the controls' share of each prefix is the queue's share, within 2
        for length in range(1, total + 1):
            assert abs(sum(k < length for k in controls) - n * length / total) <= 2, length
    else:
        # two priority tiers: each tier gets controls in proportion to its disputes (rank (j + ½)·m/n)
        strong = sum(order[k].priority == 3.0 for k in controls)
        assert strong == sum(int((j + 0.5) * (STRONG + WEAK) / n) < STRONG for j in range(n)) and strong > 0
        assert controls[0] < max(k for k, qi in enumerate(order) if qi.priority == 3.0)


def test_controls_are_spread_again_in_their_seeded_order_when_new_disputes_arrive(design_dataset):
    route("p", control_fraction=0.5, seed=1, priority="order")
    run_command("create_queue", dataset="d", name="q", policy="p", overlap=1)
    # a response the panel agreed on and did not draw becomes disputed (a new reading): routed next run
    held = set(ReviewItem.objects.values_list("response_id", flat=True))
    agreed = Response.objects.filter(dataset__name="d").exclude(id__in=held).order_by("id").first()
    Reading.objects.filter(response=agreed, reader_spec__name="fixed").update(answer="D", normalized="D")
    route("p")
    run_command("create_queue", dataset="d", name="q2", policy="p", overlap=1)
    controls = ReviewItem.objects.filter(policy__name="p", is_control=True)
    shuffled = sorted(controls, key=lambda c: random_priority(seed=1, response_key=str(c.response_id)))
    # which controls come first is the seeded shuffle, whatever the disputes: the first served
    # are a simple random sample of the controls
    priorities = [c.priority for c in shuffled]
    assert priorities == sorted(priorities, reverse=True)
    for queue in ("q", "q2"):
        order = serving_order(queue)
        assert agreed.id in {qi.review_item.response_id for qi in order}
        assert all(qi.priority == qi.review_item.priority for qi in order)


def test_random_priority_interleaves_controls_already(design_dataset):
    route("p", control_fraction=0.5, seed=4, priority="random")
    for item in ReviewItem.objects.filter(policy__name="p").select_related("response"):
        assert item.priority == random_priority(seed=4, response_key=item.response.external_id)


def test_the_migration_records_the_design_of_existing_items(design_dataset):
    """Items routed before the design was recorded: disputed -> 1, a disagreement policy's controls
    -> its control fraction; an information policy (all greedy then) -> greedy, no probability."""
    route("p", control_fraction=0.4, seed=2)
    route("g", priority="information", sampling="greedy", target="accuracy", budget=6, control_fraction=0.5)
    ReviewItem.objects.update(stratum="", inclusion_probability=None)
    RoutingPolicy.objects.update(sampling="randomized")
    migration = importlib.import_module("adjudication.migrations.0019_routing_design")
    migration.record_the_design(apps, None)
    p = ReviewItem.objects.filter(policy__name="p")
    assert set(p.filter(is_control=False).values_list("stratum", "inclusion_probability")) == {("disputed", 1.0)}
    assert set(p.filter(is_control=True).values_list("stratum", "inclusion_probability")) == {("control", 0.4)}
    g = ReviewItem.objects.filter(policy__name="g")
    assert set(g.filter(is_control=False).values_list("stratum", "inclusion_probability")) == {("greedy", None)}
    assert set(g.filter(is_control=True).values_list("stratum", "inclusion_probability")) == {("control", None)}
    assert dict(RoutingPolicy.objects.values_list("name", "sampling")) == {"p": "randomized", "g": "greedy"}


@pytest.fixture
def one_tier_dataset(db, write_jsonl):
    """60 responses read by strict-match and fixed: 40 disputed, all of the same strength (one block
    of equal priority, as most of the quickstart's disputes are), the rest agreed on."""
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(60)])), dataset="t", no_progress=True)
    a, b = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="fixed")
    rows = []
    for i, response in enumerate(Response.objects.filter(dataset__name="t").order_by("id")):
        answer = "C" if i < 40 else "B"
        rows.append(Reading(response=response, reader_spec=a, answer="B", normalized="B", verdict="correct"))
        rows.append(Reading(response=response, reader_spec=b, answer=answer, normalized=answer, verdict="correct"))
    Reading.objects.bulk_create(rows)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_controls_are_evenly_spread_from_the_first_item_even_within_one_block_of_equal_priority(one_tier_dataset, seed):
    """issue 36 item 6: the j-th of n controls is served at rank (j + ½)·m/n of the m disputes, from
    the start, not wherever the queue's shuffle puts it in a block of equal priorities."""
    run_command(
        "route_disagreements", dataset="t", policy="p", panel=["strict-match", "fixed"], control_fraction=0.5, seed=seed
    )
    run_command("create_queue", dataset="t", name="q", policy="p", overlap=1)
    order = serving_order("q")
    assert len({qi.priority for qi in order}) == 1  # one block: the spread is the tiebreaks'
    positions = [k for k, qi in enumerate(order) if qi.review_item.is_control]
    n, m = len(positions), len(order) - len(positions)
    assert n >= 3 and m == 40
    assert positions == [int((j + 0.5) * m / n) + j for j in range(n)]
    # which control comes first is still the policy's seeded order of its controls
    served = [order[k].review_item.response_id for k in positions]
    assert served == sorted(served, key=lambda rid: random_priority(seed=seed, response_key=str(rid)))


@pytest.mark.parametrize("fraction", [0.5, 0.0])
def test_the_report_says_routed_controls_wait_for_labels_rather_than_asking_for_controls(one_tier_dataset, fraction):
    """issue 36 item 6: with controls routed and only a disputed item labelled, the analytics say
    the controls are not labelled yet; without controls, they say to route some."""
    from adjudication.analytics import agreement as ag
    from adjudication.analytics.selectors import agreement_inputs
    from adjudication.models import Dataset, ReviewQueue

    from ..review.conftest import label_next, make_user

    run_command(
        "create_queue", dataset="t", name="q", panel=["strict-match", "fixed"], control_fraction=fraction, overlap=1
    )
    label = label_next(ReviewQueue.objects.get(name="q"), make_user("a", "annotator"), "B")
    assert not label.item.review_item.is_control  # the first item served is a dispute
    inputs = agreement_inputs(dataset=Dataset.objects.get(name="t"))
    routed, text = inputs["routed_controls"], ag.report_of(inputs, seed=0)["selection"]["text"]
    if fraction:
        assert routed >= 3 and f"None of the {routed} control items" in text and "control fraction > 0" not in text
    else:
        assert routed == 0 and "No control items were routed" in text and "control fraction > 0" in text
