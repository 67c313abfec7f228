"""The judge-bias card (analytics.bias_card) on simulated judges with known, stratum-dependent bias:
each planted rate is recovered within its interval, the heterogeneity test of the planted breakdown
rejects at 5 % with 200 labels, and with a uniform bias the tests reject in no more than 5 % of seeds
(within the binomial slack of the seed count). Pure numpy simulations, no database.

The bounds, and why:
* coverage: every 95 % interval of a planted rate covers the truth in at least 85 of 100 seeds. At a
  true coverage of 93 % (Wilson at n ≈ 50 and p = 0.1 runs a little under nominal) fewer than 85
  happens with probability about 0.1 %.
* power: the planted breakdown's test rejects at 5 % in at least 97 of 100 seeds at 200 labels (its
  power there is ~99.5 %, measured over 200 seeds: fewer than 97 has probability ~0.2 %), and the
  card's "where the bias lives" (Holm over its 16 tests) names it in at least 80 (~90 % measured).
* false rejections: with a uniform bias, each breakdown's test rejects in at most
  binom.ppf(0.999, SEEDS, 0.05) of SEEDS = 300 seeds (28, 9.3 %): a test rejecting at exactly 5 %
  exceeds that with probability 0.1 %. That alone would let a test rejecting at 10 % pass often, so
  the rejections pooled over the 16 tests (4,800) must stay under 6.5 %: 3 standard errors above 5 %
  were they independent (they are not quite: format and format × checkpoint share items). Measured:
  11 to 23 rejections per test, 5.3 % pooled, and Holm's "where the bias lives" names a breakdown
  in 18 of 300 cards (bound 28).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy.stats import binom

from adjudication.analytics.bias_card import (
    MIN_STRATUM,
    OTHER,
    Labelled,
    ProducerReadings,
    _holm,
    heterogeneity,
    judge_card,
    length_edges,
)
from readers.strata import GOLD_TYPES, RESPONSE_FORMATS

BASE_FA = 0.1
LENIENT_FA = 0.6
FR = 0.1
HUMAN_CORRECT = 0.5
MODELS = ("orca-7b", "llama-3-8b", "qwen2.5-7b")
JUDGE_MODEL = "Qwen2.5-72B-Instruct"  # the family of one answering model: qwen

Plant = Callable[[dict[str, np.ndarray]], np.ndarray]


def simulate(seed: int, n: int, lenient: Plant | None) -> tuple[ProducerReadings, Labelled, dict[str, np.ndarray]]:
    """n labelled items, strata independent but for the format, which depends on the checkpoint;
    the judge accepts a human-rejected item with probability LENIENT_FA where `lenient` says so,
    BASE_FA elsewhere, and rejects a human-accepted one with probability FR everywhere."""
    rng = np.random.default_rng(seed)
    checkpoint = rng.choice(["base", "rl"], n)
    # RL boxes more often than base (seed 000: 58 % vs 27 %).
    format_share = {"base": [0.27, 0.4, 0.33], "rl": [0.58, 0.25, 0.17]}
    x = {
        "length": rng.integers(40, 6000, n),
        "format": np.array([rng.choice(RESPONSE_FORMATS, p=format_share[c]) for c in checkpoint]),
        "checkpoint": checkpoint,
        "model": rng.choice(MODELS, n),
        "benchmark": rng.choice(["math", "mmlu"], n),
        "gold_type": rng.choice(GOLD_TYPES, n),
    }
    human = rng.random(n) < HUMAN_CORRECT
    labelled = Labelled.of(
        human_correct=human.tolist(),
        lengths=x["length"].tolist(),
        formats=x["format"].tolist(),
        gold_types=x["gold_type"].tolist(),
        models=x["model"].tolist(),
        checkpoints=x["checkpoint"].tolist(),
        benchmarks=x["benchmark"].tolist(),
    )
    x["long"] = x["length"] >= labelled.edges[-1]  # the card's top quartile, as it bins
    fa = np.where(lenient(x), LENIENT_FA, BASE_FA) if lenient else np.full(n, BASE_FA)
    said_correct = np.where(human, rng.random(n) >= FR, rng.random(n) < fa)
    readings = ProducerReadings(
        producer="judge-sim",
        kind="judge",
        rows=list(range(n)),
        verdicts=["correct" if s else "incorrect" for s in said_correct],
    )
    return readings, labelled, x


def long_responses(x: dict[str, np.ndarray]) -> np.ndarray:
    return x["long"]


def boxed_rl(x: dict[str, np.ndarray]) -> np.ndarray:
    return (x["format"] == "boxed") & (x["checkpoint"] == "rl")


def own_family(x: dict[str, np.ndarray]) -> np.ndarray:
    return x["model"] == "qwen2.5-7b"


# (plant, the breakdown it lives in, the stratum it is)
PLANTS = {
    "lenient on long responses only": (long_responses, "length", "Q4"),
    "lenient on boxed RL outputs only": (boxed_rl, "format_checkpoint", "boxed · rl"),
    "lenient on its own family only": (own_family, "self_family", "own family (qwen)"),
}


def _stratum(card: dict, dimension: str, name: str) -> dict:
    return next(s for s in card["breakdowns"][dimension]["strata"] if s["stratum"].startswith(name))


def _covers(ci: list[float] | None, truth: float) -> bool:
    return ci is not None and ci[0] <= truth <= ci[1]


@pytest.mark.parametrize("plant", PLANTS)
def test_the_card_recovers_each_planted_rate_within_its_interval(plant: str) -> None:
    lenient, dimension, planted = PLANTS[plant]
    covered: dict[str, int] = {}
    seeds = range(100)
    for seed in seeds:
        items, labelled, _ = simulate(seed, 400, lenient)
        card = judge_card(items, labelled, judge_model=JUDGE_MODEL, seed=seed, n_boot=200)
        for s in card["breakdowns"][dimension]["strata"]:
            fa = LENIENT_FA if s["stratum"].startswith(planted) else BASE_FA
            # The bias the plant implies: (1 − h)·FA − h·FR, h the human-correct rate.
            bias = (1 - HUMAN_CORRECT) * fa - HUMAN_CORRECT * FR
            for key, truth in (("false_accept_rate", fa), ("false_reject_rate", FR), ("bias", bias)):
                name = f"{key} {'planted' if fa == LENIENT_FA else 'elsewhere'}"
                covered[name] = covered.get(name, 0) + _covers(s[f"{key}_ci"], truth)
    for name, hits in covered.items():
        strata = 1 if "planted" in name else len(_stratum_names(dimension, lenient)) - 1
        assert hits >= 0.85 * len(seeds) * strata, (plant, name, hits)


def _stratum_names(dimension: str, lenient: Plant) -> list[str]:
    items, labelled, _ = simulate(0, 400, lenient)
    card = judge_card(items, labelled, judge_model=JUDGE_MODEL, n_boot=0)
    return [s["stratum"] for s in card["breakdowns"][dimension]["strata"]]


@pytest.mark.parametrize("plant", PLANTS)
def test_the_heterogeneity_test_rejects_the_planted_breakdown_with_200_labels_and_says_where(plant: str) -> None:
    lenient, dimension, _ = PLANTS[plant]
    rejected = named = 0
    for seed in range(100):
        items, labelled, _ = simulate(seed, 200, lenient)
        card = judge_card(items, labelled, judge_model=JUDGE_MODEL, seed=seed, n_boot=0)
        test = card["breakdowns"][dimension]["tests"]["false_accept"]
        assert test["df"] == len(test["strata"]) - 1
        rejected += test["p_value"] < 0.05
        named += any(w["dimension"] == dimension and w["rate"] == "false_accept" for w in card["where"])
    assert rejected >= 97, rejected
    # After Holm's adjustment over the card's 16 tests, at only 200 labels (~90 % at this size).
    assert named >= 80, named


SEEDS = 300


def test_with_a_uniform_bias_no_breakdown_rejects_in_more_than_5_percent_of_seeds() -> None:
    rejections: dict[tuple[str, str], int] = {}
    cards_naming_a_breakdown = 0
    for seed in range(SEEDS):
        items, labelled, _ = simulate(1000 + seed, 400, None)
        card = judge_card(items, labelled, judge_model=JUDGE_MODEL, seed=seed, n_boot=0)
        for dimension, block in card["breakdowns"].items():
            for rate, test in block["tests"].items():
                assert test["p_value"] is not None, (dimension, rate, test["reason"])
                rejections[(dimension, rate)] = rejections.get((dimension, rate), 0) + (test["p_value"] < 0.05)
        cards_naming_a_breakdown += bool(card["where"])
    bound = binom.ppf(0.999, SEEDS, 0.05)
    assert len(rejections) == 16  # 8 breakdowns (own family included) × 2 rates
    assert max(rejections.values()) <= bound, rejections
    assert sum(rejections.values()) / (16 * SEEDS) <= 0.065, rejections
    # Holm over the card's 16 tests: "where the bias lives" names nothing in ≥ 95 % of seeds.
    assert cards_naming_a_breakdown <= bound, cards_naming_a_breakdown


def test_the_likelihood_ratio_is_that_of_a_logistic_regression_with_the_stratum_as_a_factor() -> None:
    import statsmodels.api as sm

    strata = np.array(["a", "b", "c", "d"])
    n = np.array([40, 60, 35, 80])
    k = np.array([6, 20, 5, 30])
    test = heterogeneity(list(strata), k, n)
    y = np.concatenate([np.r_[np.ones(ki), np.zeros(ni - ki)] for ki, ni in zip(k, n, strict=True)])
    group = np.repeat(np.arange(4), n)
    dummies = np.column_stack([np.ones(len(y))] + [(group == g).astype(float) for g in range(1, 4)])
    fit = sm.Logit(y, dummies).fit(disp=0)
    assert test["p_value"] < 0.05  # the rates differ: 15 % to 38 %
    assert test["method"] == "likelihood ratio, χ² approximation"
    assert test["statistic"] == pytest.approx(fit.llr, rel=1e-8)
    assert test["p_value"] == pytest.approx(fit.llr_pvalue, rel=1e-6)
    assert test["df"] == fit.df_model == 3


def test_small_strata_are_merged_into_other_or_left_out_and_the_test_says_so() -> None:
    strata = ["big-1", "big-2", "small-1", "small-2", "tiny"]
    n = np.array([50, 60, 6, 5, 3])
    k = np.array([5, 30, 1, 4, 2])
    merged = heterogeneity(strata, k, n)
    assert merged["merged"] == ["small-1", "small-2", "tiny"]
    assert merged["strata"] == ["big-1", "big-2", OTHER]
    assert merged["df"] == 2 and merged["left_out"] == []
    alone = heterogeneity(["big-1", "big-2", "tiny"], np.array([5, 30, 2]), np.array([50, 60, MIN_STRATUM - 1]))
    assert alone["left_out"] == ["tiny"] and alone["merged"] == [] and alone["df"] == 1


def test_small_expected_counts_take_the_monte_carlo_p_value() -> None:
    # Rare false accepts: expected counts below 5 in every stratum.
    test = heterogeneity(["a", "b", "c"], np.array([0, 1, 6]), np.array([30, 30, 30]), rng=np.random.default_rng(1))
    assert "Monte Carlo" in test["method"]
    assert 0 < test["p_value"] < 0.05  # 6 of 30 against 1 of 60 is not chance
    same = heterogeneity(["a", "b", "c"], np.array([1, 1, 2]), np.array([30, 30, 30]), rng=np.random.default_rng(1))
    assert "Monte Carlo" in same["method"] and same["p_value"] > 0.5


def test_no_variation_is_no_test_with_its_reason() -> None:
    test = heterogeneity(["a", "b"], np.array([0, 0]), np.array([20, 30]))
    assert test["p_value"] is None and "same on every item" in test["reason"]
    one = heterogeneity(["a"], np.array([3]), np.array([20]))
    assert one["p_value"] is None and "fewer than two strata" in one["reason"]


def test_holm_is_statsmodels_holm() -> None:
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.2, 0.001, 0.04]
    tests = [{"p_value": x} for x in p] + [{"p_value": None}]
    _holm(tests)
    assert [t["p_holm"] for t in tests[:-1]] == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert "p_holm" not in tests[-1]


def test_self_preference_is_flagged_with_the_count_of_own_family_items() -> None:
    items, labelled, x = simulate(3, 300, None)
    card = judge_card(items, labelled, judge_model=JUDGE_MODEL, n_boot=0)
    own = int((x["model"] == "qwen2.5-7b").sum())
    sp = card["self_preference"]
    assert sp["flagged"] and sp["family"] == "qwen" and sp["n_own"] == own
    assert sp["own"]["n"] == own and sp["other"]["n"] == 300 - own
    other_judge = judge_card(items, labelled, judge_model="gpt-4o", n_boot=0)["self_preference"]
    assert not other_judge["flagged"] and other_judge["n_own"] == 0
    assert judge_card(items, labelled, n_boot=0)["self_preference"] is None  # a reader has no model
    assert "self_family" not in judge_card(items, labelled, n_boot=0)["breakdowns"]


def test_unparsed_and_failed_verdicts_are_counted_apart_and_left_out_of_every_rate() -> None:
    items, labelled, _ = simulate(4, 100, None)
    full = judge_card(items, labelled, n_boot=0)
    items.verdicts[:7] = ["unparsed"] * 4 + ["timeout"] * 3
    card = judge_card(items, labelled, n_boot=0)
    assert card["parse_failures"] == 4 and card["judged"] == 100
    rate = card["parse_failure_rate"]
    assert (rate["k"], rate["n"], rate["rate"]) == (4, 100, 0.04) and rate["ci"][0] < 0.04 < rate["ci"][1]
    assert card["overall"]["excluded"] == {"producer_unparsed": 4, "producer_timeout": 3}
    assert card["n"] == full["n"] - 7
    assert sum(s["n"] for s in card["breakdowns"]["format"]["strata"]) == card["n"]


def test_length_bins_are_quartiles_with_their_edges_shown() -> None:
    lengths = np.arange(1, 401)
    edges = length_edges(lengths)
    assert edges == [101, 201, 301]
    items, _, x = simulate(6, 400, None)
    labelled = Labelled.of(
        human_correct=[True, False] * 200,
        lengths=lengths.tolist(),
        formats=x["format"].tolist(),
        gold_types=x["gold_type"].tolist(),
        models=x["model"].tolist(),
        checkpoints=x["checkpoint"].tolist(),
        benchmarks=x["benchmark"].tolist(),
    )
    assert labelled.edges == edges
    block = judge_card(items, labelled, n_boot=0)["breakdowns"]["length"]
    assert block["edges"] == edges
    assert [s["stratum"] for s in block["strata"]] == [
        "Q1: 0–100 chars",
        "Q2: 101–200 chars",
        "Q3: 201–300 chars",
        "Q4: 301–∞ chars",
    ]
    assert [s["n"] for s in block["strata"]] == [100, 100, 100, 100]


def test_a_stratum_the_producer_never_read_is_not_listed() -> None:
    items, labelled, x = simulate(7, 200, None)
    base_only = [i for i in items.rows if x["checkpoint"][i] == "base"]
    items.rows = base_only
    items.verdicts = [items.verdicts[i] for i in base_only]
    card = judge_card(items, labelled, n_boot=0)
    assert [s["stratum"] for s in card["breakdowns"]["checkpoint"]["strata"]] == ["base"]
    assert all(s["stratum"].endswith("· base") for s in card["breakdowns"]["format_checkpoint"]["strata"])
    assert card["breakdowns"]["checkpoint"]["tests"]["false_accept"]["p_value"] is None
