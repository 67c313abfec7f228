"""The randomized information design as pure functions: inclusion probabilities proportional to the
sd a label removes, mixed with a uniform floor, capped at 1 with the excess redistributed; a
seeded Poisson draw whose inclusion frequencies are those probabilities; and a fixed-size
(systematic) draw with the same inclusion probabilities, the one the budget simulations use."""

from __future__ import annotations

import math
import random

import pytest

from adjudication.analytics.allocation import (
    INFORMATION_FLOOR,
    design_floor,
    draw_uniform,
    inclusion_probabilities,
    poisson_draw,
    systematic_draw,
)


def seeded_values(n: int, *, seed: int = 0) -> dict[str, float]:
    """Label values as label_values gives them: w²·p(1 − p), spread over orders of magnitude, with
    some zeros (labelled items, items the target does not depend on)."""
    rng = random.Random(seed)
    return {f"r{i}": 0.0 if rng.random() < 0.2 else rng.random() ** 4 * 0.25 for i in range(n)}


@pytest.mark.parametrize(("n", "k", "floor"), [(50, 10, 0.1), (50, 25, 0.1), (200, 30, 0.3), (12, 11, 0.1)])
def test_the_probabilities_sum_to_k_and_none_is_below_the_floor(n, k, floor):
    values = seeded_values(n)
    pi = inclusion_probabilities(values, k=k, floor=floor)
    assert set(pi) == set(values)
    assert math.isclose(sum(pi.values()), k, rel_tol=1e-12)
    pi_min = k * floor / n
    assert all(pi_min - 1e-12 <= p <= 1.0 for p in pi.values())
    # items of no value still have the floor's probability: no part of the population is left out
    assert all(pi[i] >= pi_min - 1e-12 for i, v in values.items() if v == 0)


def test_the_probabilities_grow_with_the_sd_a_label_removes():
    values = seeded_values(60, seed=3)
    pi = inclusion_probabilities(values, k=8, floor=0.1)
    uncapped = sorted((i for i in values if pi[i] < 1), key=lambda i: values[i])
    # π − the floor's share is proportional to √v among the uncapped items
    ratios = {
        round((pi[i] - pi[uncapped[0]]) / (math.sqrt(values[i]) - math.sqrt(values[uncapped[0]])), 9)
        for i in uncapped
        if values[i] != values[uncapped[0]]
    }
    assert len(ratios) == 1
    assert [pi[i] for i in uncapped] == sorted(pi[i] for i in uncapped)


def test_the_capped_mass_is_redistributed():
    # one item carries almost all the value: k·q would exceed 1 for it
    values = {"big": 1.0, **{f"s{i}": 1e-6 for i in range(19)}}
    pi = inclusion_probabilities(values, k=5, floor=0.1)
    assert pi["big"] == 1.0
    assert math.isclose(sum(pi.values()), 5)
    # the other 4 expected draws spread over the rest in proportion to their (equal) q
    assert all(math.isclose(pi[f"s{i}"], 4 / 19) for i in range(19))


def test_no_value_means_a_uniform_draw_and_a_budget_over_n_takes_everything():
    assert inclusion_probabilities(dict.fromkeys("abcd", 0.0), k=2, floor=0.1) == dict.fromkeys("abcd", 0.5)
    assert inclusion_probabilities(seeded_values(10), k=25, floor=0.1) == dict.fromkeys(seeded_values(10), 1.0)
    assert inclusion_probabilities(seeded_values(10), k=0, floor=0.1) == dict.fromkeys(seeded_values(10), 0.0)


def test_the_floor_is_the_control_fraction_at_least_a_half():
    assert INFORMATION_FLOOR == 0.5
    assert design_floor(0.0) == design_floor(0.05) == 0.5
    assert design_floor(0.7) == 0.7


def test_the_draw_is_reproducible_for_a_seed_and_differs_between_seeds():
    pi = inclusion_probabilities(seeded_values(300), k=40, floor=0.1)
    assert poisson_draw(pi, seed=7) == poisson_draw(pi, seed=7)
    assert poisson_draw(pi, seed=7) != poisson_draw(pi, seed=8)
    # an item's draw depends on its own uniform only: dropping other items does not change it
    kept = dict(list(pi.items())[:100])
    assert poisson_draw(kept, seed=7) == [i for i in poisson_draw(pi, seed=7) if i in kept]
    assert 0 <= draw_uniform(seed=7, item="r0") < 1


SEEDS = 4000


def test_the_inclusion_frequency_over_many_seeds_is_the_probability():
    """Over SEEDS draws, each item's inclusion frequency is within 4.5 binomial sd of its π (a
    per-item two-sided tail of 7e-6, 3e-4 over the 40 items: the seeds are fixed, so the outcome is
    too), and the mean sample size within 4.5 sd of k."""
    values = seeded_values(40, seed=11)
    pi = inclusion_probabilities(values, k=6, floor=0.1)
    counts = dict.fromkeys(pi, 0)
    sizes = []
    for seed in range(SEEDS):
        drawn = poisson_draw(pi, seed=seed)
        sizes.append(len(drawn))
        for item in drawn:
            counts[item] += 1
    for item, p in pi.items():
        sd = math.sqrt(p * (1 - p) / SEEDS)
        assert abs(counts[item] / SEEDS - p) <= 4.5 * sd + 1e-12, (item, p, counts[item] / SEEDS)
    size_sd = math.sqrt(sum(p * (1 - p) for p in pi.values()) / SEEDS)
    assert abs(sum(sizes) / SEEDS - 6) <= 4.5 * size_sd


def test_the_systematic_draw_has_exactly_k_items_and_the_probabilities_as_frequencies():
    """Over SEEDS fixed-size draws, every draw has k distinct items, the items capped at π = 1 are
    in every one, and each item's inclusion frequency is within 4.5 binomial sd of its π."""
    values = {"big": 100.0, **seeded_values(40, seed=11)}
    pi = inclusion_probabilities(values, k=6, floor=0.1)
    assert pi["big"] == 1.0
    counts = dict.fromkeys(pi, 0)
    for seed in range(SEEDS):
        drawn = systematic_draw(pi, seed=seed)
        assert len(drawn) == len(set(drawn)) == 6
        for item in drawn:
            counts[item] += 1
    assert counts["big"] == SEEDS
    for item, p in pi.items():
        sd = math.sqrt(p * (1 - p) / SEEDS)
        assert abs(counts[item] / SEEDS - p) <= 4.5 * sd + 1e-12, (item, p, counts[item] / SEEDS)


def test_the_systematic_draw_is_reproducible_and_needs_a_whole_expected_size():
    pi = inclusion_probabilities(seeded_values(300), k=40, floor=0.1)
    assert systematic_draw(pi, seed=7) == systematic_draw(pi, seed=7)
    assert set(systematic_draw(pi, seed=7)) != set(systematic_draw(pi, seed=8))
    assert systematic_draw(dict.fromkeys("abc", 0.0), seed=1) == []
    assert sorted(systematic_draw(dict.fromkeys("abc", 1.0), seed=1)) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="whole"):
        systematic_draw({"a": 0.5, "b": 0.25}, seed=1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        systematic_draw({"a": 1.5, "b": 0.5}, seed=1)
