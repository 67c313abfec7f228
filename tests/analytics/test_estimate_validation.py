"""scripts/estimate_validation.py (python -m scripts.realdata estimate-validation): the two routing
designs it simulates, today's estimators it measures beside the estimator, and a tiny slice of the
real run (one data set, a few seeds), skipped cleanly when ../shared/data is absent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scripts import estimate_validation as ev
from scripts import realdata

from ..conftest import shared_data

PLAN = ev.SetPlan(
    disputed_by=("r1", "r2"),
    producer="judge",
    gain=("a", "b"),
    format_reader="r1",
    predictors=(("judge", "good"), (ev.MAJORITY, "vote")),
)


def synthetic_set(n: int = 240, seed: int = 0) -> realdata.ValidationSet:
    """Two answering models (a: 55 % correct, b: 75 %), two readers wrong 15 % and 25 % of the
    time, a judge wrong 5 % of the time."""
    rng = np.random.default_rng(seed)
    truth, model_of, votes = {}, {}, []
    for k in range(n):
        item, model = f"s:{k}", "ab"[k % 2]
        y = rng.random() < (0.55 if model == "a" else 0.75)
        truth[item], model_of[item] = ("correct" if y else "incorrect"), model
        for producer, error in (("r1", 0.15), ("r2", 0.25), ("judge", 0.05)):
            said = y != (rng.random() < error)
            votes.append((item, producer, "correct" if said else "incorrect"))
    return realdata.ValidationSet(name="synthetic", votes=votes, truth=truth, model_of=model_of)


@pytest.fixture(scope="module")
def prep(tmp_path_factory) -> ev.Prepared:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ev, "CACHE", tmp_path_factory.mktemp("cache"))  # not the shared temp directory's
        return ev.prepare(synthetic_set(), PLAN)


def test_the_truth_of_every_target_is_the_estimators_and_the_humans(prep):
    y = prep.y.astype(bool)
    a = np.array([m == "a" for m in (synthetic_set().model_of[i] for i in prep.items)])
    assert prep.truth["accuracy"] == pytest.approx(y.mean())
    assert prep.truth["accuracy:a"] == pytest.approx(y[a].mean())
    assert prep.truth["gain:a,b"] == pytest.approx(y[~a].mean() - y[a].mean())
    for spec in prep.specs:  # prepare raises unless the estimator's value is the script's
        assert prep.frames["judge"].value(spec.text, prep.y) == pytest.approx(prep.truth[spec.text])


def test_the_disputed_queue_holds_every_disputed_response_and_a_tenth_of_the_rest(prep):
    order, is_ctrl, routed = ev.disputed_queue(prep, seed=3)
    disputed = set(np.flatnonzero(prep.disputed))
    assert set(order[~is_ctrl]) == disputed
    assert routed == is_ctrl.sum() and not (set(order[is_ctrl]) & disputed)
    assert 0.03 < routed / (prep.n - len(disputed)) < 0.2  # a seeded 10 % Bernoulli
    # served throughout: each half of the queue holds about half of the controls (one priority
    # here, so the queue's shuffle mixes them: a hypergeometric count)
    half = len(order) // 2
    assert abs(int(is_ctrl[:half].sum()) - routed / 2) <= 4 * np.sqrt(routed / 4) + 1
    # another seed draws other controls and another order
    other, _, _ = ev.disputed_queue(prep, seed=4)
    assert list(other) != list(order)


def test_a_budget_labels_a_prefix_of_the_queue_with_the_recorded_probabilities(prep):
    queue = ev.disputed_queue(prep, seed=1)
    order, is_ctrl, routed = queue
    n_disputed = int(prep.disputed.sum())
    draw = ev.disputed_draw(prep, queue, 50)
    assert list(draw.index) == list(order[:50]) and not draw.capped
    labelled_c = int(is_ctrl[:50].sum())
    assert np.allclose(draw.pi[draw.cell == 0], (50 - labelled_c) / n_disputed)
    assert np.allclose(draw.pi[draw.cell == 1], 0.1 * labelled_c / routed)
    assert list(draw.cell_sizes) == [n_disputed, prep.n - n_disputed]
    everything = ev.disputed_draw(prep, queue, 10_000)
    assert everything.capped and len(everything.index) == len(order)
    assert np.allclose(everything.pi[everything.cell == 0], 1.0)
    assert np.allclose(everything.pi[everything.cell == 1], 0.1)


def test_information_probabilities_are_routings_and_spend_the_budget(prep):
    for k in (10, 60, 10_000):
        pi = ev.information_probabilities(prep, k)
        assert pi.sum() == pytest.approx(min(k, prep.n)) and pi.max() <= 1.0
        # every response keeps at least the uniform share's probability
        assert pi.min() >= min(k, prep.n) * ev.FLOOR / prep.n - 1e-12
    routed = ev.inclusion_probabilities(prep.values, k=60, floor=ev.FLOOR)
    assert list(ev.information_probabilities(prep, 60)) == [routed[i] for i in prep.items]


def test_information_draw_is_a_poisson_sample_with_those_probabilities(prep):
    pi = ev.information_probabilities(prep, 60)
    counts = np.zeros(prep.n)
    for seed in range(400):
        draw = ev.information_draw(prep, pi, ev.information_uniforms(prep, seed))
        counts[draw.index] += 1
        assert np.allclose(draw.pi, pi[draw.index]) and list(draw.cell_sizes) == [prep.n]
    # every response's inclusion frequency is its π (a loose binomial bound per response)
    assert np.all(np.abs(counts / 400 - pi) <= 4 * np.sqrt(pi * (1 - pi) / 400) + 1e-9)


def test_todays_estimates_are_the_plain_share_and_the_size_weighted_strata(prep):
    rng = np.random.default_rng(0)
    picked = np.array([0, 1, 2, 3, 10, 11, 12, 13, 40, 41])
    plain = ev.todays_estimates(prep, [(picked, 1.0)], rng)
    acc = [s.text for s in prep.specs].index("accuracy")
    assert plain[acc, 0] == pytest.approx(prep.y[picked].mean())
    assert plain[acc, 1] <= plain[acc, 0] <= plain[acc, 2]
    first, second = picked[:4], picked[4:]
    stratified = ev.todays_estimates(prep, [(first, 0.25), (second, 0.75)], rng)
    assert stratified[acc, 0] == pytest.approx(0.25 * prep.y[first].mean() + 0.75 * prep.y[second].mean())
    # a stratum of positive weight with no label: no estimate at all, as agreement.stratified
    assert np.isnan(ev.todays_estimates(prep, [(first, 0.5), (picked[:0], 0.5)], rng)).all()


@pytest.mark.system  # reads ../shared/data
def test_a_slice_of_the_real_run_reports_every_cell_and_prints_the_results_last(tmp_path, monkeypatch, capsys):
    """TQ's seeded slice (40 questions: EVOUNA's readers run in process, in a few seconds), three
    seeds, two budgets."""
    answer_matching = shared_data("answer-matching-human-annotations")
    evouna = shared_data("evouna-qa-eval")
    monkeypatch.setattr(ev, "CACHE", tmp_path)  # the cache stays out of the shared temp directory
    monkeypatch.setattr(ev, "BUDGETS", (50, 400))
    code = realdata.main(
        [
            "estimate-validation",
            "--slice",
            "--dataset",
            "TQ",
            "--seeds",
            "3",
            "--processes",
            "1",
            "--json",
            "--answer-matching",
            str(answer_matching),
            "--evouna",
            str(evouna),
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line.split()[1] for line in out[-4:]] == [
        "estimate_width_ratio_good_judge_disputed",
        "estimate_mean_coverage",
        "estimate_min_coverage",
        "estimate_width_ratio_good_judge",
    ]
    assert out[-1].split()[2] == "nan"  # GOOD_JUDGE is GPQA's: not in this slice
    res = json.loads("\n".join(out[:-4]))
    assert any(line.startswith("| TQ | disputed | qa-contains | accuracy |") for line in ev.markdown(res).splitlines())

    plan = ev.PLANS["TQ"]
    targets = {r["target"] for r in res["rows"]}
    assert len(targets) == 1 + 5 + 2 + 4  # pooled, each model, gain and format share, the producer's four
    assert len(res["rows"]) == len(ev.DESIGNS) * len(plan.predictors) * len(targets) * 2
    for r in res["rows"]:
        assert r["ppi"]["draws"] == 3
        # a draw without a PPI interval is counted as withheld, never dropped
        assert r["withheld"] == r["ppi"]["no_interval"] == sum(r["withheld_reasons"].values())
    # the truth is the human label of every item of the set
    vs = realdata.evouna_set("TQ", evouna, quick=True)
    ds = res["datasets"]["TQ"]
    assert ds["items"] == len(vs.truth)
    assert ds["truth"]["accuracy"] == pytest.approx(sum(v == "correct" for v in vs.truth.values()) / len(vs.truth))
    # the slice's disputed queue is shorter than 400 labels: those draws are counted as capped
    assert ds["disputed"] < 400 and ds["designs"]["disputed"]["400"]["capped_draws"] == 3
    assert ds["designs"]["disputed"]["50"]["capped_draws"] == 0


def test_the_interval_stats_say_whether_the_width_matches_the_estimates_spread():
    """The half-width over the estimate's SD across draws: 1.96 for a normal estimate with its
    exact variance; missing where the estimate never moves."""
    rng = np.random.default_rng(5)
    estimate = 0.3 + 0.02 * rng.standard_normal(20_000)
    stats = ev.interval_stats(estimate, estimate - 1.96 * 0.02, estimate + 1.96 * 0.02, 0.3)
    assert stats["halfwidth_over_sd"] == pytest.approx(1.96, rel=0.02)
    assert stats["coverage"] == pytest.approx(0.95, abs=0.01)
    still = np.full(50, 0.3)
    assert ev.interval_stats(still, still - 0.01, still + 0.01, 0.3)["halfwidth_over_sd"] is None
