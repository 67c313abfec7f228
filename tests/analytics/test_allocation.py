"""The label allocator on simulated panels: two checkpoints whose readers have known, different
error rates (a boxed-only reader misses the base model's unboxed answers), truths drawn per item,
so every target's true value is known and the allocator's choices can be compared with random
ones on the same data."""

from __future__ import annotations

import numpy as np
import pytest

from adjudication.analytics import allocation as al
from adjudication.analytics.consensus import ConsensusInputs, consensus

# checkpoint -> (prevalence, {producer: (sensitivity, specificity, coverage)})
PANELS = {
    "base": (0.45, {"boxed": (0.55, 0.98, 1.0), "regex": (0.8, 0.85, 1.0), "judge": (0.9, 0.75, 1.0)}),
    "rl": (0.6, {"boxed": (0.95, 0.97, 1.0), "regex": (0.85, 0.85, 1.0), "judge": (0.95, 0.7, 0.9)}),
}


def simulate(n_per_checkpoint: int, *, seed: int) -> tuple[ConsensusInputs, dict[str, str]]:
    rng = np.random.default_rng(seed)
    votes, truth, strata = [], {}, {}
    for checkpoint, (prevalence, panel) in PANELS.items():
        for j in range(n_per_checkpoint):
            item = f"{checkpoint}-{j}"
            correct = bool(rng.random() < prevalence)
            truth[item] = "correct" if correct else "incorrect"
            strata[item] = {"checkpoint": checkpoint}
            for producer, (se, sp, coverage) in panel.items():
                if rng.random() >= coverage:
                    continue
                says = rng.random() < se if correct else rng.random() >= sp
                votes.append((item, producer, "correct" if says else "incorrect"))
    return ConsensusInputs(votes=votes, strata=strata), truth


@pytest.fixture(scope="module")
def panel():
    inputs, truth = simulate(150, seed=4)
    return inputs, truth, consensus(inputs, by="checkpoint", n_boot=0)


@pytest.mark.parametrize(
    ("text", "kind", "args"),
    [
        ("accuracy", "accuracy", ()),
        ("accuracy:rl", "accuracy", ("rl",)),
        ("reader:math-verify 1.0 (ab12)", "reader", ("math-verify 1.0 (ab12)",)),
        ("false-accept:judge", "false-accept", ("judge",)),
        ("format-share:base,rl", "format-share", ("base", "rl")),
        ("format-share:base,rl,boxed", "format-share", ("base", "rl", "boxed")),
    ],
)
def test_a_target_round_trips_through_its_text_form(text, kind, args):
    target = al.parse_target(text)
    assert (target.kind, target.args) == (kind, args)
    assert str(target) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "a target is required"),
        ("precision:judge", "unknown target"),
        ("reader", "names no producer"),
        ("format-share:base", "format-share:<base>,<rl>"),
        ("format-share:base,,rl", "format-share:<base>,<rl>"),
    ],
)
def test_a_malformed_target_is_refused_with_the_accepted_forms(text, message):
    with pytest.raises(ValueError, match=message):
        al.parse_target(text)


def test_a_target_naming_an_unknown_group_or_producer_is_refused_with_what_exists(panel):
    inputs, _, result = panel
    with pytest.raises(ValueError, match=r"no checkpoint 'sft'; checkpoints: base, rl"):
        al.check_target(al.parse_target("accuracy:sft"), inputs, result)
    with pytest.raises(ValueError, match=r"no producer 'xverify'; producers: boxed, judge, regex"):
        al.check_target(al.parse_target("false-accept:xverify"), inputs, result)
    al.check_target(al.parse_target("format-share:base,rl,boxed"), inputs, result)


def test_linear_targets_are_the_posterior_sums_they_are_defined_as(panel):
    inputs, _, result = panel
    p = {i.item: i.p_correct for i in result.items}
    rl = [i for i in p if i.startswith("rl-")]
    est = al.target_estimate(al.parse_target("accuracy:rl"), inputs, result)
    assert est.estimate == pytest.approx(np.mean([p[i] for i in rl]))
    assert est.sd == pytest.approx(np.sqrt(sum(p[i] * (1 - p[i]) for i in rl)) / len(rl))
    assert est.width == pytest.approx(2 * 1.959963984540054 * est.sd)
    # The consensus's own accuracy table says the same.
    assert est.estimate == pytest.approx(next(g.accuracy for g in result.accuracy if g.group == "rl"))

    said = {i: v for i, prod, v in inputs.votes if prod == "judge"}
    bias = al.target_estimate(al.parse_target("bias:judge"), inputs, result)
    assert bias.estimate == pytest.approx(np.mean([(v == "correct") - p[i] for i, v in said.items()]))
    assert bias.n_items == len(said)


@pytest.mark.parametrize(
    "text", ["false-accept:judge", "false-reject:boxed", "format-share:base,rl,boxed", "reader:regex"]
)
def test_the_weights_are_the_derivatives_of_the_target_in_each_truth(panel, text):
    """The delta method's w_i against a central finite difference of the target itself."""
    inputs, _, result = panel
    target = al.parse_target(text)
    p = {i.item: i.p_correct for i in result.items}
    lin = al._linearise(target, inputs, result, p)
    rng = np.random.default_rng(0)
    for item in rng.choice(sorted(lin.weights), size=8, replace=False):
        h = 1e-5
        up = al._linearise(target, inputs, result, {**p, item: p[item] + h}).value
        down = al._linearise(target, inputs, result, {**p, item: p[item] - h}).value
        assert lin.weights[item] == pytest.approx((up - down) / (2 * h), rel=1e-4, abs=1e-9)


def test_labelled_items_and_items_outside_the_target_are_worth_nothing(panel):
    inputs, truth, _ = panel
    labelled = {i: truth[i] for i in sorted(truth)[:40]}
    result = consensus(
        ConsensusInputs(votes=inputs.votes, human=labelled, strata=inputs.strata), by="checkpoint", n_boot=0
    )
    values = al.label_values(al.parse_target("accuracy:rl"), inputs, result)
    assert set(values) == set(truth)
    assert all(values[i] == 0 for i in labelled)
    assert all(v == 0 for i, v in values.items() if i.startswith("base-"))
    assert any(v > 0 for i, v in values.items() if i.startswith("rl-"))


def test_the_most_uncertain_items_are_chosen_first_and_the_random_share_is_spread():
    values = {f"i{j}": v for j, v in enumerate([0.0, 0.25, 0.1, 0.24, 0.0, 0.05, 0.2, 0.15, 0.01, 0.0])}
    assert al.choose_labels(values, k=3) == ["i1", "i3", "i6"]
    # Zero-valued items come only after every informative one.
    assert set(al.choose_labels(values, k=9)[-2:]) <= {"i0", "i4", "i9"}

    many = {f"i{j}": j / 1000 for j in range(1000)}
    picked = al.choose_labels(many, k=100, random_share=0.2, seed=7)
    assert len(picked) == len(set(picked)) == 100
    informative = set(sorted(many, key=many.get, reverse=True)[:80])
    random_positions = [n for n, item in enumerate(picked) if item not in informative]
    # 20 random picks (a few may land among the top 80 by chance, then fewer show as random).
    assert 15 <= len(random_positions) <= 20
    assert random_positions[0] < 15 and random_positions[-1] > 85  # spread, not bunched at one end
    assert picked == al.choose_labels(many, k=100, random_share=0.2, seed=7)
    assert picked != al.choose_labels(many, k=100, random_share=0.2, seed=8)
    only = al.choose_labels(many, k=5, candidates=["i3", "i999", "i500", "nope"])
    assert only == ["i999", "i500", "i3"]


@pytest.mark.parametrize("text", ["accuracy:rl", "false-accept:judge", "format-share:base,rl"])
def test_information_routing_reaches_an_interval_width_with_fewer_labels_than_random(panel, text):
    inputs, truth, result = panel
    target = al.parse_target(text)
    start = al.target_estimate(target, inputs, result).width
    goal = start / 2
    needed = {}
    for strategy in ("information", "greedy", "random"):
        steps = al.simulate_budget(
            inputs,
            truth,
            target=target,
            strategy=strategy,
            batch=20,
            max_labels=160,
            stop_width=goal,
            by="checkpoint",
            seed=1,
        )
        assert steps[0].labels == 0 and steps[0].width == pytest.approx(start)
        # every strategy takes exactly one batch a round (the randomized draw has a fixed size)
        assert [s.labels for s in steps] == list(range(0, 20 * len(steps), 20))
        needed[strategy] = al.labels_to_reach(steps, field="width", below=goal)
    assert needed["information"] is not None and needed["greedy"] is not None
    # Random labels mostly land on items the panel already agrees on: they narrow the interval
    # slowly, and within the same budget may not halve it at all.
    assert needed["random"] is None or needed["information"] < needed["random"]
    # The posterior width is what the greedy order maximises the drop of; the randomized design
    # gives up some of it for its uniform floor and its spread over items of lower value.
    assert needed["greedy"] <= needed["information"]


def test_the_randomized_batch_draws_with_the_design_probabilities(panel):
    inputs, truth, result = panel
    target = al.parse_target("accuracy:rl")
    hidden = sorted(truth)[40:]
    values = al.label_values(target, inputs, result)
    pi = al.inclusion_probabilities({i: values[i] for i in hidden}, k=15, floor=al.design_floor(0.2))
    counts = dict.fromkeys(hidden, 0)
    runs = 400
    for seed in range(runs):
        picks = al.batch_picks(
            "information",
            target=target,
            inputs=inputs,
            result=result,
            hidden=hidden,
            k=15,
            random_share=0.2,
            seed=seed,
            round_no=0,
            rng=np.random.default_rng(seed),
        )
        assert len(picks) == len(set(picks)) == 15 and set(picks) <= set(hidden)
        for item in picks:
            counts[item] += 1
    # Each hidden item is drawn with its π (within 4.5 binomial sd over the runs); the base
    # checkpoint's items, worth nothing to accuracy:rl, have the floor's share and are drawn, where
    # the greedy order takes none of them while an informative item is left.
    for item, p in pi.items():
        assert abs(counts[item] / runs - p) <= 4.5 * np.sqrt(p * (1 - p) / runs) + 1e-12, (item, p)
    assert sum(counts[i] for i in hidden if i.startswith("base-")) > 0
    greedy = al.batch_picks(
        "greedy",
        target=target,
        inputs=inputs,
        result=result,
        hidden=hidden,
        k=15,
        random_share=0.0,
        seed=0,
        round_no=0,
        rng=np.random.default_rng(0),
    )
    assert not any(i.startswith("base-") for i in greedy)


@pytest.mark.parametrize("strategy", ["information", "greedy"])
def test_the_labels_the_allocator_chooses_bring_the_estimate_to_the_truth(panel, strategy):
    inputs, truth, result = panel
    target = al.parse_target("accuracy:base")
    steps = al.simulate_budget(
        inputs, truth, target=target, strategy=strategy, batch=30, max_labels=150, by="checkpoint", seed=2
    )
    true_value = al.target_truth(target, inputs, result, truth)
    base = [i for i in truth if i.startswith("base-")]
    assert true_value == pytest.approx(np.mean([truth[i] == "correct" for i in base]))
    assert steps[-1].labels == 150
    assert steps[-1].error == pytest.approx(abs(steps[-1].estimate - true_value))
    # 150 labels (as many as the base checkpoint has items, but the randomized draw spreads some
    # over the rl items) narrow the interval to under a quarter, and the truth stays inside it.
    assert steps[-1].width < steps[0].width / 2
    assert steps[-1].error <= steps[-1].width / 2


def test_a_run_settles_only_when_it_stays_below():
    steps = [al.BudgetStep(n, None, w, None) for n, w in [(0, 0.3), (10, 0.1), (20, 0.25), (30, 0.09), (40, 0.05)]]
    assert al.labels_to_reach(steps, field="width", below=0.1) == 30
    assert al.labels_to_reach(steps, field="width", below=0.01) is None


def test_simulation_refuses_an_unknown_strategy_or_target(panel):
    inputs, truth, _ = panel
    with pytest.raises(ValueError, match="strategy must be one of information, greedy, random"):
        al.simulate_budget(inputs, truth, target=al.parse_target("accuracy"), strategy="top-k")
    with pytest.raises(ValueError, match="no producer 'nobody'"):
        al.simulate_budget(inputs, truth, target=al.parse_target("reader:nobody"), strategy="random", max_labels=0)
