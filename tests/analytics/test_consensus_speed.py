"""The report's panel consensus without crowd-kit's pandas machinery (issue 36 item 15): the numpy
Dawid-Skene fit and its array bootstrap give crowd-kit's numbers."""

from __future__ import annotations

import random
import warnings
from collections import defaultdict

import numpy as np
import pytest

from adjudication.analytics import consensus as C


def _votes(seed: int, n_tasks: int, n_producers: int) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    rnd = random.Random(seed)
    truth = {f"t{i}": rnd.random() < 0.6 for i in range(n_tasks)}
    accuracy = [rnd.uniform(0.4, 0.99) for _ in range(n_producers)]
    votes = []
    for task, right in truth.items():
        for k in range(n_producers):
            if rnd.random() < 0.2:
                continue
            said = right if rnd.random() < accuracy[k] else not right
            votes.append((task, f"p{k}", "correct" if said else "incorrect"))
    human = {t: "correct" if v else "incorrect" for t, v in truth.items() if rnd.random() < 0.15}
    return votes, human


def _crowd_kit(votes, human):
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    df = pd.DataFrame(votes, columns=["task", "worker", "label"])
    known = pd.Series(dict(human), dtype=object)
    known = known[known.index.isin(df["task"].unique())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DawidSkene(n_iter=100, tol=1e-5).fit(df, true_labels=known if len(known) else None)


@pytest.mark.parametrize(("seed", "n_tasks", "n_producers"), [(0, 40, 2), (1, 200, 5), (2, 500, 18), (3, 12, 3)])
def test_the_numpy_fit_gives_crowd_kits_posteriors_and_rates(seed, n_tasks, n_producers):
    """issue 36 item 15: the fit the report refits fifty times is crowd-kit's, to rounding."""
    votes, human = _votes(seed, n_tasks, n_producers)
    fast = C._dawid_skene_binary(votes, human)
    assert fast is not None
    ref = _crowd_kit(votes, human)
    for task, p in ref.probas_["correct"].items():
        assert fast.p_correct[str(task)] == pytest.approx(float(p), abs=1e-12)
    for producer, (sensitivity, specificity) in fast.rates.items():
        assert sensitivity == pytest.approx(float(ref.errors_.loc[(producer, "correct"), "correct"]), abs=1e-12)
        assert specificity == pytest.approx(float(ref.errors_.loc[(producer, "incorrect"), "incorrect"]), abs=1e-12)


def test_a_single_label_falls_back_to_crowd_kit():
    """With one label among the votes crowd-kit grows a class from the clamps: not copied, refused."""
    assert C._dawid_skene_binary([("a", "p", "correct"), ("b", "p", "correct")], {"a": "incorrect"}) is None
    fit = C.fit_model([("a", "p", "correct"), ("b", "p", "correct")], {"a": "incorrect"}, model="dawid-skene")
    assert set(fit.p_correct) == {"a", "b"}


@pytest.mark.parametrize("by", [None, "checkpoint"])
def test_the_array_bootstrap_draws_and_fits_as_the_refit_loop_did(by):
    """issue 36 item 15: the same replicate means as refitting crowd-kit on string copies of each draw."""
    votes, human = _votes(7, 60, 4)
    rnd = random.Random(7)
    strata = {t: {"checkpoint": rnd.choice(["base", "rl"])} for t, _, _ in votes}
    items = sorted({t for t, _, _ in votes} | set(human))

    def stratum_of(item, key):
        return C.ALL if key is None else (strata.get(item) or {}).get(key) or "-"

    group_of = {i: stratum_of(i, "checkpoint") for i in items}
    fast: dict[str, list[float]] = {g: [] for g in set(group_of.values())}
    C._bootstrap_arrays(items, human, group_of, fast, binary=votes, by=by, stratum_of=stratum_of, n_boot=6, seed=3)

    slow: dict[str, list[float]] = {g: [] for g in fast}
    by_item = defaultdict(list)
    for item, producer, verdict in votes:
        by_item[item].append((producer, verdict))
    rng = np.random.default_rng(3)
    for _ in range(6):
        draw = rng.integers(0, len(items), size=len(items))
        copies = [(f"{items[j]}#{k}", items[j]) for k, j in enumerate(draw)]
        known = {copy: human[orig] for copy, orig in copies if orig in human}
        per = defaultdict(list)
        for copy, orig in copies:
            per[stratum_of(orig, by)] += [(copy, p, v) for p, v in by_item.get(orig, ())]
        post = {}
        for rows in per.values():
            ref = _crowd_kit(rows, known)
            post.update({str(t): float(p) for t, p in ref.probas_["correct"].items()})
        means = defaultdict(list)
        for copy, orig in copies:
            p = (1.0 if known[copy] == "correct" else 0.0) if copy in known else post.get(copy)
            if p is not None:
                means[group_of[orig]].append(p)
        for g in slow:
            slow[g].append(float(np.mean(means[g])))
    for g in fast:
        assert fast[g] == pytest.approx(slow[g], abs=1e-12)
