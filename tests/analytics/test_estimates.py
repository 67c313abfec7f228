"""The prediction-powered estimator (adjudication.analytics.estimates) on simulated populations:
its properties (a perfect predictor, a useless one, unequal inclusion probabilities), agreement
with ppi-python on the i.i.d. case, and what it withholds. Pure: no database."""

from __future__ import annotations

import numpy as np
import pytest

from adjudication.analytics.estimates import (
    Design,
    EstimateError,
    Frame,
    Population,
    Sample,
    estimate,
    parse_estimate_target,
    producer_predictor,
    vote_predictor,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _population(n: int, *, seed: int, flip: float = 0.1) -> tuple[Population, np.ndarray, np.ndarray]:
    """n responses of two checkpoints (rl answers better), a judge that errs on `flip` of them,
    and a lenient reader that accepts a fifth of the wrong answers."""
    rng = np.random.default_rng(seed)
    items = [f"r{i}" for i in range(n)]
    checkpoint = np.where(rng.random(n) < 0.5, "base", "rl")
    y = (rng.random(n) < np.where(checkpoint == "rl", 0.6, 0.4)).astype(float)
    judge = np.where(rng.random(n) < flip, 1 - y, y)
    lenient = np.where(rng.random(n) < 0.2, 1.0, y)

    def said(v: np.ndarray) -> dict[str, str]:
        return {items[i]: "correct" if v[i] else "incorrect" for i in range(n)}

    population = Population(
        items=items,
        groups={items[i]: {"checkpoint": str(checkpoint[i])} for i in range(n)},
        verdicts={"judge": said(judge), "lenient": said(lenient)},
    )
    return population, y, judge


def _srs(n_population: int, n: int, y: np.ndarray, rng: np.random.Generator) -> Sample:
    index = rng.choice(n_population, size=n, replace=False)
    return Sample.from_arrays(
        index=index, y=y[index], cell=np.zeros(n, int), pi=np.full(n, n / n_population), cell_sizes=[n_population]
    )


TARGETS = (
    "accuracy",
    "accuracy:rl",
    "accuracy:checkpoint=base",
    "gain:base,rl",
    "format-share:base,rl,lenient",
    "agreement:lenient",
    "bias:lenient",
    "false-accept:lenient",
    "false-reject:judge",
)


@pytest.mark.parametrize("target", TARGETS)
def test_a_perfect_predictor_gives_the_truth_with_a_zero_correction(target: str) -> None:
    population, y, _ = _population(600, seed=1)
    frame = Frame.build(population, dict(zip(population.items, y, strict=True)), name="truth")
    sample = _srs(600, 120, y, np.random.default_rng(2))
    est = frame.estimate(target, sample, n_boot=0)
    truth = frame.value(target, y)
    assert est.machine == pytest.approx(truth, abs=1e-12)
    assert est.ppi is not None and est.ppi.estimate == pytest.approx(truth, abs=1e-12)
    assert est.lam == pytest.approx(1.0)


@pytest.mark.parametrize("target", [t for t in TARGETS if not t.startswith("agreement")])
def test_a_constant_predictor_gives_exactly_the_human_only_estimate(target: str) -> None:
    """Agreement is left out: its machine figure combines the predictor with the producer's own
    verdict (agreement = P(verdict = truth)), which is informative even when the predictor is not."""
    population, y, _ = _population(600, seed=3)
    frame = Frame.build(population, dict.fromkeys(population.items, 0.5), name="coin")
    est = frame.estimate(target, _srs(600, 150, y, np.random.default_rng(4)), n_boot=0)
    assert est.lam == 0.0
    assert est.ppi is not None and est.human is not None
    assert est.ppi.estimate == pytest.approx(est.human.estimate, abs=1e-12)
    assert est.ppi.width == pytest.approx(est.human.width, rel=1e-9)


def test_a_useless_noisy_predictor_falls_back_to_about_the_human_only_interval() -> None:
    population, y, _ = _population(20_000, seed=5)
    noise = np.random.default_rng(6).random(20_000)
    frame = Frame.build(population, dict(zip(population.items, noise, strict=True)), name="noise")
    est = frame.estimate("accuracy", _srs(20_000, 2000, y, np.random.default_rng(7)), n_boot=0)
    assert est.lam is not None and est.lam < 0.1
    assert est.ppi is not None and est.human is not None
    assert est.ppi.width == pytest.approx(est.human.width, rel=0.02)
    assert est.effective_labels == pytest.approx(2000, rel=0.05)


def test_a_good_predictor_narrows_the_interval_and_counts_more_effective_labels() -> None:
    population, y, _ = _population(5000, seed=8, flip=0.05)
    frame = Frame.build(population, producer_predictor(population, "judge"), name="judge")
    est = frame.estimate("accuracy", _srs(5000, 400, y, np.random.default_rng(9)), n_boot=0)
    assert est.ppi is not None and est.human is not None
    assert est.ppi.width < 0.6 * est.human.width
    assert est.effective_labels is not None and est.effective_labels > 2.8 * est.labels


def test_inverse_probability_weighting_is_unbiased_with_unequal_probabilities() -> None:
    """The randomized information design on a population where the responses the readers find hard
    (high label value, so drawn more often) are also the ones answered worse: π_i = min(1, k·q_i),
    q_i = 0.9·√v_i/Σ√v + 0.1/N, from 0.01 to 0.3, by Poisson sampling. Over 10,000 draws the
    human-only and prediction-powered estimates average to the truth (mean error < 0.002: the
    Hájek ratio's O(1/n) bias is far below it); the labels' plain mean is off by 0.19."""
    rng = np.random.default_rng(10)
    n, k = 2000, 200
    items = [str(i) for i in range(n)]
    hard = rng.random(n) < 0.3
    value = np.where(hard, 0.25, 0.01) * rng.random(n)
    y = (rng.random(n) < np.where(hard, 0.3, 0.8)).astype(float)
    q = 0.9 * np.sqrt(value) / np.sqrt(value).sum() + 0.1 / n
    pi = np.minimum(1.0, k * q)
    judge = np.where(rng.random(n) < 0.15, 1 - y, y)
    frame = Frame.build(Population(items=items, groups={}, verdicts={}), dict(zip(items, judge, strict=True)))
    truth = frame.value("accuracy", y)
    human_errors, ppi_errors, naive_errors = [], [], []
    for _ in range(10_000):
        drawn = np.flatnonzero(rng.random(n) < pi)
        sample = Sample.from_arrays(
            index=drawn, y=y[drawn], cell=np.zeros(len(drawn), int), pi=pi[drawn], cell_sizes=[n]
        )
        est = frame.estimate("accuracy", sample, n_boot=0)
        assert est.human is not None and est.ppi is not None
        human_errors.append(est.human.estimate - truth)
        ppi_errors.append(est.ppi.estimate - truth)
        naive_errors.append(y[drawn].mean() - truth)
    assert abs(np.mean(human_errors)) < 0.002
    assert abs(np.mean(ppi_errors)) < 0.002
    assert abs(np.mean(naive_errors)) > 0.1


def test_matches_ppi_python_on_the_iid_case() -> None:
    """One cell, a simple random sample from a population far larger than it: the point estimate
    for a given λ is ppi-python's exactly; the tuned λ and the interval agree to the n/N terms
    ppi-python's super-population model adds."""
    ppi_py = pytest.importorskip("ppi_py")
    population, y, judge = _population(200_000, seed=11, flip=0.2)
    predictor = producer_predictor(population, "judge")
    frame = Frame.build(population, predictor, name="judge")
    sample = _srs(200_000, 500, y, np.random.default_rng(12))
    f_all = judge
    labelled_y, labelled_f = sample.y, f_all[sample.index]
    for lam in (0.0, 0.5, 1.0):
        ours = (f_all.sum() * lam + 200_000 * np.mean(labelled_y - lam * labelled_f)) / 200_000
        theirs = ppi_py.ppi_mean_pointestimate(labelled_y, labelled_f, f_all, lam=lam)
        assert float(np.squeeze(theirs)) == pytest.approx(ours, abs=1e-12)
    est = frame.estimate("accuracy", sample, n_boot=0)
    assert est.ppi is not None and est.lam is not None
    theirs_point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(labelled_y, labelled_f, f_all)))
    assert est.ppi.estimate == pytest.approx(theirs_point, abs=2e-3)
    low, high = ppi_py.ppi_mean_ci(labelled_y, labelled_f, f_all, alpha=0.05, lam=est.lam)
    assert est.ppi.width == pytest.approx(float(np.squeeze(high) - np.squeeze(low)), rel=0.03)


def test_strata_with_different_sampling_rates_are_weighted_by_their_population() -> None:
    """Disputed responses all routed and half labelled, 5 % of the rest labelled: the estimate is the
    cells' means weighted by their sizes, not the labels' plain mean."""
    population, y, judge = _population(4000, seed=13)
    disputed = np.flatnonzero(judge != np.random.default_rng(14).integers(0, 2, 4000))[:1000]
    rest = np.setdiff1d(np.arange(4000), disputed)
    rng = np.random.default_rng(15)
    a = rng.choice(disputed, 500, replace=False)
    b = rng.choice(rest, 150, replace=False)
    index = np.concatenate([a, b])
    sample = Sample.from_arrays(
        index=index,
        y=y[index],
        cell=np.r_[np.zeros(500, int), np.ones(150, int)],
        pi=np.r_[np.full(500, 0.5), np.full(150, 150 / len(rest))],
        cell_sizes=[len(disputed), len(rest)],
        cell_names=("disputed", "control"),
    )
    frame = Frame.build(population, dict.fromkeys(population.items, 0.5), name="coin")
    est = frame.estimate("accuracy", sample, n_boot=0)
    expected = (len(disputed) * y[a].mean() + len(rest) * y[b].mean()) / 4000
    assert est.human is not None and est.human.estimate == pytest.approx(expected, abs=1e-12)


def test_a_cell_with_fewer_than_two_labels_withholds_the_intervals_and_names_the_cell() -> None:
    population, y, _ = _population(300, seed=16)
    sample = Sample.from_arrays(
        index=np.arange(41),
        y=y[:41],
        cell=np.r_[np.zeros(40, int), [1]],
        pi=np.r_[np.full(40, 0.2), [0.01]],
        cell_sizes=[200, 100],
        cell_names=("p/disputed", "p/control"),
    )
    est = Frame.build(population, producer_predictor(population, "judge")).estimate("accuracy", sample, n_boot=0)
    assert est.withheld is not None and "'p/control'" in est.withheld
    assert est.ppi is not None and est.ppi.low is None and est.headline == "machine only"
    assert est.effective_labels is None


def test_a_ratio_with_a_small_labelled_denominator_is_withheld() -> None:
    population, y, _ = _population(2000, seed=17)
    # Labels only on responses the humans call correct, but two: the false-accept rate's
    # denominator (the human-incorrect ones) holds two labels.
    correct, wrong = np.flatnonzero(y == 1)[:60], np.flatnonzero(y == 0)[:2]
    index = np.r_[correct, wrong]
    sample = Sample.from_arrays(
        index=index, y=y[index], cell=np.zeros(62, int), pi=np.full(62, 62 / 2000), cell_sizes=[2000]
    )
    est = Frame.build(population, producer_predictor(population, "judge")).estimate(
        "false-accept:lenient", sample, n_boot=0
    )
    assert est.withheld is not None and "denominator" in est.withheld


def test_the_dict_entry_builds_the_sample_from_labels_and_design() -> None:
    population, y, _ = _population(500, seed=18)
    labelled = population.items[:100]
    labels = {i: "correct" if y[k] else "incorrect" for k, i in enumerate(labelled)}
    labels["r499"] = "no_answer"  # not a correctness label: left out
    est = estimate(
        population,
        labels=labels,
        design=Design.simple_random(labelled, population=500),
        target="accuracy:rl",
        predictor=vote_predictor(population),
        predictor_name="vote",
    )
    assert est.predictor == "vote" and est.design == "simple random sample"
    assert est.labels == sum(population.groups[i]["checkpoint"] == "rl" for i in labelled)


def test_a_label_outside_the_population_or_design_is_refused() -> None:
    population, _, _ = _population(50, seed=19)
    frame = Frame.build(population, {})
    with pytest.raises(EstimateError, match="not in the population"):
        frame.sample({"elsewhere": "correct"}, Design.simple_random(["elsewhere"], population=50))
    with pytest.raises(EstimateError, match="no cell"):
        frame.sample({"r1": "correct"}, Design.simple_random(["r2"], population=50))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "a target is required"),
        ("precision", "unknown target"),
        ("bias", "names no producer"),
        ("gain:base", "write gain:<base>,<rl>"),
        ("format-share:base,rl", "write format-share"),
    ],
)
def test_a_target_that_does_not_parse_says_what_would(text: str, message: str) -> None:
    with pytest.raises(EstimateError, match=message) as caught:
        parse_estimate_target(text)
    assert caught.value.field == "target"


def test_a_target_naming_an_unknown_group_or_producer_lists_the_known_ones() -> None:
    population, _, _ = _population(100, seed=20)
    frame = Frame.build(population, {})
    with pytest.raises(EstimateError, match="checkpoints: base, rl"):
        frame.statistics("accuracy:sft")
    with pytest.raises(EstimateError, match="producers: judge, lenient"):
        frame.statistics("bias:gpt")
    assert parse_estimate_target("reader:judge").kind == "agreement"


def test_a_sample_with_more_labels_than_its_cell_holds_is_refused() -> None:
    with pytest.raises(EstimateError, match="holds 3 labels but only 2"):
        Sample.from_arrays(index=[0, 1, 2], y=[1, 0, 1], cell=[0, 0, 0], pi=[1, 1, 1], cell_sizes=[2])
    with pytest.raises(EstimateError, match=r"\(0, 1\]"):
        Sample.from_arrays(index=[0], y=[1], cell=[0], pi=[0.0], cell_sizes=[2])


def test_a_cell_labelled_whole_needs_no_second_label() -> None:
    """Disputes served in priority order make one-item cells; one labelled is known exactly."""
    population, y, _ = _population(300, seed=21)
    sample = Sample.from_arrays(
        index=np.arange(41),
        y=y[:41],
        cell=np.r_[np.zeros(40, int), [1]],
        pi=np.r_[np.full(40, 40 / 299), [1.0]],
        cell_sizes=[299, 1],
        cell_names=("p/control", "p/disputed@3"),
    )
    est = Frame.build(population, producer_predictor(population, "judge")).estimate("accuracy", sample, n_boot=0)
    assert est.withheld is None and est.ppi is not None and est.ppi.low is not None


def test_an_interval_is_clipped_to_the_range_only_around_an_estimate_inside_it() -> None:
    from adjudication.analytics.estimates import _normal

    inside = _normal(0.98, 0.0004, 1.96, (0.0, 1.0))
    assert inside.high == 1.0 and inside.low is not None and inside.low < 0.98
    outside = _normal(1.2, 0.0004, 1.96, (0.0, 1.0))
    assert outside.low is not None and outside.high is not None and outside.low < 1.2 < outside.high


def test_a_ratio_asked_for_by_bootstrap_gets_a_rescaled_bootstrap_interval_near_the_delta_methods() -> None:
    population, y, _ = _population(4000, seed=22)
    frame = Frame.build(population, producer_predictor(population, "judge"))
    sample = _srs(4000, 600, y, np.random.default_rng(23))
    delta = frame.estimate("false-accept:lenient", sample, n_boot=0)
    boot = frame.estimate("false-accept:lenient", sample, n_boot=400, seed=1, ratio_method="bootstrap")
    assert boot.method == "bootstrap" and delta.method == "normal"
    assert boot.ppi is not None and delta.ppi is not None
    assert boot.ppi.estimate == delta.ppi.estimate
    assert boot.ppi.low is not None and boot.ppi.high is not None
    assert boot.ppi.low < boot.ppi.estimate < boot.ppi.high
    assert boot.ppi.width == pytest.approx(delta.ppi.width, rel=0.35)


def test_a_simple_random_samples_variance_carries_the_leverage_inflation_of_its_few_labels() -> None:
    """Equal weights, one cell: the human-only variance of a mean is the textbook (1 − f)·s²/n
    times (n/(n − 1))², each residual inflated by 1/(1 − h) with h = 1/n (HC3's leverage). A bias
    knows the producer's verdicts on every response, so its human-only variance is the truth's."""
    population, y, _ = _population(3000, seed=31)
    frame = Frame.build(population, producer_predictor(population, "judge"), name="judge")
    for n in (20, 200):
        sample = _srs(3000, n, y, np.random.default_rng(32 + n))
        est = frame.estimate("bias:judge", sample, n_boot=0)
        assert est.human is not None and est.human.se is not None
        textbook = (1 - n / 3000) * np.var(sample.y, ddof=1) / n
        assert est.human.se**2 == pytest.approx(textbook * (n / (n - 1)) ** 2, rel=1e-9)


def test_a_groups_interval_takes_the_t_quantile_of_the_labels_in_the_group_not_the_cell() -> None:
    """A producer grades a dozen of the 60 labels of one cell: its bias rests on 12 labels, so the
    interval's quantile is Student's with 11 degrees of freedom, not 59."""
    from scipy.stats import t as student_t

    population, y, _ = _population(3000, seed=33)
    sample = _srs(3000, 60, y, np.random.default_rng(34))
    graded = set(sample.index[:12].tolist())
    narrow = Population(
        items=population.items,
        groups=population.groups,
        verdicts={
            "judge": population.verdicts["judge"],
            "few": {item: v for i, (item, v) in enumerate(population.verdicts["lenient"].items()) if i in graded},
        },
    )
    frame = Frame.build(narrow, producer_predictor(narrow, "judge"), name="judge")
    est = frame.estimate("bias:few", sample, n_boot=0)
    assert est.human is not None and est.human.se and est.human.low is not None and est.human.high is not None
    half = (est.human.high - est.human.low) / 2
    assert half / est.human.se == pytest.approx(student_t.isf(0.025, 11), rel=1e-6)


def test_an_accuracy_takes_the_score_interval_on_its_effective_sample_size() -> None:
    """Wilson's interval with n* = p(1 − p)/Var: leaning toward a half, so a draw that found few
    correct answers is not also given a narrow interval below the truth; close to the Wald
    interval when n* is large."""
    from adjudication.analytics.estimates import _normal, _proportion

    small = _proportion(0.1, 0.1 * 0.9 / 20, 2.09)
    assert small.low is not None and small.high is not None
    assert small.high - 0.1 > 0.1 - small.low  # the side toward a half is the longer
    n, z = 20.0, 2.09
    centre = (0.1 + z * z / (2 * n)) / (1 + z * z / n)
    assert (small.low + small.high) / 2 == pytest.approx(centre, rel=1e-9)
    large = _proportion(0.3, 0.3 * 0.7 / 50_000, 1.96)
    wald = _normal(0.3, 0.3 * 0.7 / 50_000, 1.96, (0.0, 1.0))
    assert large.width == pytest.approx(wald.width, rel=1e-3)
    # An estimate on the boundary (no correct answer labelled) has no score interval to take.
    edge = _proportion(0.0, 0.0004, 1.96)
    assert edge.low == 0.0 and edge.high is not None and edge.high > 0
