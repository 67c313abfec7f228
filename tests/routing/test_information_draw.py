"""Budgeted adjudication, randomized (the default sampling of an information policy): one Poisson
draw over every response, each with a known inclusion probability that grows with its label value
and is at least π_min; every drawn item records it; the draw is made once and served in the queue's
seeded shuffle, so a queue labelled part-way is still a probability sample."""

from __future__ import annotations

import math

from adjudication.analytics.allocation import inclusion_probabilities, poisson_draw
from adjudication.models import FinalLabel, QueueItem, Response, ReviewItem, RoutingPolicy
from adjudication.routing.refresh import information_refresh_request
from adjudication.routing.selectors import information_draw, information_fit
from adjudication.routing.services import information_priorities_refresh

from ..conftest import run_command
from .test_information_routing import N, info_dataset, route  # noqa: F401 (the fixture)


def drawn(policy: str) -> dict[int, float]:
    return dict(ReviewItem.objects.filter(policy__name=policy).values_list("response_id", "inclusion_probability"))


def test_the_drawn_items_are_the_seeded_poisson_draw_with_their_probabilities(info_dataset):  # noqa: F811
    out = route("r", priority="information", target="reader:strict-match", budget=10, control_fraction=0.2, seed=3)
    fit = information_fit(dataset=info_dataset, target="reader:strict-match")
    ids = list(Response.objects.filter(dataset=info_dataset).order_by("id").values_list("id", flat=True))
    pi = inclusion_probabilities({str(i): fit.values.get(i, 0.0) for i in ids}, k=10, floor=0.5)
    expected = {int(i): pi[i] for i in poisson_draw(pi, seed=3)}
    assert drawn("r") == expected and expected
    items = ReviewItem.objects.filter(policy__name="r")
    assert set(items.values_list("stratum", "is_control")) == {("information", False)}
    assert all(i.reason["information"]["pick"] == "drawn" for i in items)
    # π ≥ π_min = k·δ/N for every response, drawn or not, and Σπ = k
    assert min(pi.values()) >= 10 * 0.5 / N - 1e-12 and math.isclose(sum(pi.values()), 10)
    policy = RoutingPolicy.objects.get(name="r")
    assert policy.sampling == "randomized"
    assert policy.design == {
        "population": N,
        "floor": 0.5,
        "expected": 10.0,
        "pi_min": 10 * 0.5 / N,
        "drawn": len(expected),
        "unreadable": 0,
    }
    assert f"{len(expected)} new review items drawn for reader:strict-match" in out


def test_the_floor_is_a_half_unless_the_controls_share_is_larger(info_dataset):  # noqa: F811
    route("r", priority="information", target="accuracy", budget=8)
    assert RoutingPolicy.objects.get(name="r").design["floor"] == 0.5
    assert min(drawn("r").values()) >= 8 * 0.5 / N - 1e-12
    route("s", priority="information", target="accuracy", budget=8, control_fraction=0.7)
    assert RoutingPolicy.objects.get(name="s").design["floor"] == 0.7


def test_the_draw_is_reproducible_for_a_seed(info_dataset):  # noqa: F811
    route("a", priority="information", target="accuracy", budget=12, seed=9)
    route("b", priority="information", target="accuracy", budget=12, seed=9)
    route("c", priority="information", target="accuracy", budget=12, seed=10)
    assert drawn("a") == drawn("b")
    assert set(drawn("a")) != set(drawn("c"))


def test_a_randomized_policy_draws_once(info_dataset):  # noqa: F811
    route("once", priority="information", target="accuracy", budget=6, seed=1)
    first = drawn("once")
    policy = RoutingPolicy.objects.get(name="once")
    run_command("create_queue", dataset="inf", name="q", policy="once", overlap=1)
    # a label refits nothing and a new budget draws nothing: a second draw would mix two designs
    item = QueueItem.objects.filter(queue__name="q").first()
    FinalLabel.objects.create(item=item, kind="option", answer="C", provenance="adjudicated")
    assert information_refresh_request(policy_id=policy.pk) is False
    assert information_priorities_refresh(policy=policy) == 0
    RoutingPolicy.objects.filter(pk=policy.pk).update(budget=20)
    out = route("once")
    assert "0 new review items drawn" in out and drawn("once") == first
    assert RoutingPolicy.objects.get(pk=policy.pk).design["expected"] == 6


def test_the_queue_serves_the_draw_in_its_seeded_shuffle(info_dataset):  # noqa: F811
    route("s", priority="information", target="accuracy", budget=15, seed=2)
    run_command("create_queue", dataset="inf", name="q", policy="s", overlap=1)
    items = QueueItem.objects.filter(queue__name="q")
    # one priority for every drawn item: the tiebreak shuffle is the order, not the label value
    assert items.count() == len(drawn("s")) and len(set(items.values_list("priority", flat=True))) == 1
    values = information_fit(dataset=info_dataset, target="accuracy").values
    served = list(items.order_by("-priority", "tiebreak", "id").values_list("review_item__response_id", flat=True))
    assert served != sorted(served, key=lambda rid: -values[rid])


def test_the_preview_draw_is_what_routing_draws(info_dataset):  # noqa: F811
    fit = information_fit(dataset=info_dataset, target="bias:judge-a")
    preview = information_draw(dataset=info_dataset, fit=fit, budget=7, control_fraction=0.0, seed=5)
    route("p", priority="information", target="bias:judge-a", budget=7, seed=5)
    assert drawn("p") == {i: preview.probabilities[i] for i in preview.drawn}
    assert preview.pi_min == 7 * 0.5 / N and preview.population == N


def test_a_replaced_response_keeps_its_probability_and_gets_its_new_readings(info_dataset):  # noqa: F811
    from adjudication.review.queues.services import review_invalidate_replaced

    route("rep", priority="information", target="accuracy", budget=10, seed=4)
    item = ReviewItem.objects.filter(policy__name="rep").order_by("id").first()
    before = (item.stratum, item.inclusion_probability, item.reason)
    review_invalidate_replaced(response_ids=[item.response_id])
    out = route("rep")
    assert "0 new review items drawn" in out and "1 replaced responses routed again" in out
    item.refresh_from_db()
    assert (item.stratum, item.inclusion_probability) == before[:2]
    assert item.reason["before_replacement"] == before[2]
    assert item.reason["information"]["pick"] == "drawn"
    assert item.reason["information"]["probability"] == before[1]
