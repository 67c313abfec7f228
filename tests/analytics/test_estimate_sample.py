"""The labels the estimates use: those of one probability design, each through its cell (a policy's
controls, its disputed items per priority, a randomized draw), with π = π_route · m / r within the
cell; labels without a verdict, from greedy routing or from another policy are left out and counted."""

from __future__ import annotations

import math

import pytest

from adjudication.analytics.design import estimate_sample
from adjudication.analytics.estimates import EstimateError, estimate
from adjudication.analytics.selectors import estimate_population, estimate_predictor
from adjudication.models import Dataset, FinalLabel, QueueItem, ReviewItem

from ..conftest import run_command
from ..routing.test_routing_design import STRONG, WEAK, N, design_dataset, route  # noqa: F401 (the fixture)

DISPUTED = STRONG + WEAK
pytestmark = pytest.mark.usefixtures("design_dataset")


def queue(policy: str) -> list[QueueItem]:
    """A queue over the policy, its items in serving order."""
    run_command("create_queue", dataset="d", name=f"q-{policy}", policy=policy, overlap=1)
    return list(
        QueueItem.objects.filter(queue__name=f"q-{policy}")
        .select_related("review_item")
        .order_by("-priority", "tiebreak", "id")
    )


def label(item: QueueItem, answer: str = "B", kind: str = "option") -> None:
    """A final label: B is the gold (correct), C incorrect; kind ambiguous gives no verdict."""
    FinalLabel.objects.create(item=item, kind=kind, answer=answer, provenance="adjudicated")


def dataset() -> Dataset:
    return Dataset.objects.get(name="d")


def test_a_part_labelled_disagreement_queue_counts_each_label_through_its_cell():
    route("dis", control_fraction=0.5, seed=1)
    items = queue("dis")
    strong = [qi for qi in items if not qi.review_item.is_control and qi.priority == 3.0]
    weak = [qi for qi in items if not qi.review_item.is_control and qi.priority == 1.0]
    controls = [qi for qi in items if qi.review_item.is_control]
    assert (len(strong), len(weak)) == (STRONG, WEAK) and len(controls) >= 6
    for qi in strong:
        label(qi, "C")
    for qi in weak[:3]:
        label(qi)
    for qi in controls[:4]:
        label(qi)
    label(controls[4], "", kind="ambiguous")
    sample = estimate_sample(dataset=dataset())
    rid = lambda qi: str(qi.review_item.response_id)  # noqa: E731
    assert sample.policy == "dis" and sample.population == N
    assert sample.labels == {
        **{rid(q): "incorrect" for q in strong},
        **{rid(q): "correct" for q in weak[:3] + controls[:4]},
    }
    design = sample.design
    assert design.cell_sizes == {"dis/disputed@3": STRONG, "dis/disputed@1": WEAK, "dis/control": N - DISPUTED}
    assert all(design.cell_of[rid(q)] == "dis/disputed@3" and design.probability[rid(q)] == 1.0 for q in strong)
    # 3 of the 8 items of priority 1 labelled: a simple random sample of them (the queue's shuffle)
    assert all(design.cell_of[rid(q)] == "dis/disputed@1" and design.probability[rid(q)] == 3 / WEAK for q in weak[:3])
    # a control's π: the control fraction times the labelled share of the routed controls
    share = 4 / len(controls)
    assert all(
        design.cell_of[rid(q)] == "dis/control" and math.isclose(design.probability[rid(q)], 0.5 * share)
        for q in controls[:4]
    )
    assert sample.left_out == {"no_verdict": 1}


def test_an_unlabelled_priority_keeps_its_cell_so_the_estimate_is_withheld():
    route("dis", control_fraction=0.0)
    for qi in queue("dis")[:STRONG]:
        label(qi)
    design = estimate_sample(dataset=dataset(), policy="dis").design
    # no label stands for the weaker disputes or for the undisputed (no controls): their cells stay
    assert design.cell_sizes == {"dis/disputed@3": STRONG, "dis/disputed@1": WEAK, "dis/control": N - DISPUTED}
    assert set(design.cell_of.values()) == {"dis/disputed@3"}


def test_random_priority_makes_one_disputed_cell():
    route("rnd", control_fraction=0.25, seed=3, priority="random")
    disputed = [qi for qi in queue("rnd") if not qi.review_item.is_control][:5]
    for qi in disputed:
        label(qi)
    design = estimate_sample(dataset=dataset(), policy="rnd").design
    assert {design.cell_of[str(qi.review_item.response_id)] for qi in disputed} == {"rnd/disputed"}
    assert {design.probability[str(qi.review_item.response_id)] for qi in disputed} == {5 / DISPUTED}
    assert design.cell_sizes == {"rnd/disputed": DISPUTED, "rnd/control": N - DISPUTED}


def test_a_randomized_draw_is_one_cell_of_the_whole_population():
    route("drawn", priority="information", target="accuracy", budget=16, seed=2)
    items = queue("drawn")
    assert len(items) >= 6
    for qi in items[:5]:
        label(qi)
    sample = estimate_sample(dataset=dataset(), policy="drawn")
    assert sample.design.cell_sizes == {"drawn/information": N}
    for qi in items[:5]:
        key = str(qi.review_item.response_id)
        assert sample.design.cell_of[key] == "drawn/information"
        assert math.isclose(sample.design.probability[key], qi.review_item.inclusion_probability * 5 / len(items))


def test_greedy_labels_are_outside_the_design_and_other_policies_are_counted():
    route("dis", control_fraction=0.5, seed=1)
    route("greedy", priority="information", sampling="greedy", target="accuracy", budget=5, control_fraction=0.4)
    route("rnd", control_fraction=0.25, seed=3, priority="random")
    for qi in queue("dis")[:6]:
        label(qi)
    greedy = queue("greedy")
    for qi in greedy:
        label(qi)
    rnd = queue("rnd")[:3]
    for qi in rnd:
        label(qi)
    dis_labelled = {
        str(r)
        for r in ReviewItem.objects.filter(policy__name="dis", queue_items__final_labels__isnull=False).values_list(
            "response_id", flat=True
        )
    }
    # each left-out response counted once: another design's label before outside any design
    rnd_only = {str(qi.review_item.response_id) for qi in rnd} - dis_labelled
    greedy_only = {str(qi.review_item.response_id) for qi in greedy} - dis_labelled - rnd_only
    sample = estimate_sample(dataset=dataset())
    # the default: the probability design with the most labels (the greedy policy has none)
    assert sample.policy == "dis" and len(sample.labels) == 6
    assert sample.left_out == {
        k: v for k, v in {"outside_design": len(greedy_only), "other_policy": len(rnd_only)}.items() if v
    }
    assert set(estimate_sample(dataset=dataset(), policy="rnd").labels) == {
        str(qi.review_item.response_id) for qi in rnd
    }
    # named, a greedy policy gives no sample: every label of it is outside the design
    named = estimate_sample(dataset=dataset(), policy="greedy")
    assert named.labels == {} and named.design.cell_sizes == {}
    assert named.left_out["outside_design"] == len(greedy)
    assert named.left_out["other_policy"] == len(
        (dis_labelled | {str(q.review_item.response_id) for q in rnd})
        - {str(q.review_item.response_id) for q in greedy}
    )


def test_no_design_label_gives_an_empty_sample_and_an_unknown_policy_is_refused():
    route("dis", control_fraction=0.5, seed=1)
    empty = estimate_sample(dataset=dataset())
    assert (empty.policy, empty.labels, empty.left_out, empty.population) == (None, {}, {}, N)
    with pytest.raises(EstimateError) as refused:
        estimate_sample(dataset=dataset(), policy="nope")
    assert refused.value.field == "policy" and "its policies: dis" in str(refused.value)


def test_the_estimator_takes_the_sample_as_it_is():
    """End to end: a randomized draw labelled in full, through estimates.estimate. Human only, one
    cell: the Hájek mean Σ(y/π) / Σ(1/π) of the labels."""
    route("drawn", priority="information", target="accuracy", budget=24, seed=6)
    items = queue("drawn")
    for k, qi in enumerate(items):
        label(qi, "B" if k % 3 else "C")
    sample = estimate_sample(dataset=dataset())
    population = estimate_population(dataset=dataset())
    result = estimate(
        population,
        labels=sample.labels,
        design=sample.design,
        target="accuracy",
        predictor=estimate_predictor(dataset=dataset(), population=population, name="fixed"),
    )
    weights = {i: 1 / p for i, p in sample.design.probability.items()}
    hajek = sum(w for i, w in weights.items() if sample.labels[i] == "correct") / sum(weights.values())
    assert result.labels == len(items) and result.human is not None
    assert math.isclose(result.human.estimate, hajek)
