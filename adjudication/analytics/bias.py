"""Judge bias: a producer's verdicts (an LLM judge, or any reader) against the human verdict.

Pure functions over (producer verdict, human verdict) pairs. Definitions (docs/analytics.md):

* The 2×2 confusion matrix has the producer in rows and the human in columns, both in the order
  (correct, incorrect): TP = both say correct, FP = producer correct / human incorrect (a false
  accept), FN = producer incorrect / human correct (a false reject), TN = both incorrect.
* n = TP + FP + FN + TN: the items where both sides have a binary verdict.
* judge_correct_rate = (TP + FP) / n, human_correct_rate = (TP + FN) / n,
  bias = judge_correct_rate − human_correct_rate = (FP − FN) / n: positive = the producer leans
  toward "correct" (it would overstate accuracy), negative = toward "incorrect".
* accuracy = (TP + TN) / n (verdict agreement), κ = Cohen's κ of the two verdict sequences.
* false_accept_rate = FP / (FP + TN) (among answers the human rejects, the share the producer
  accepts); false_reject_rate = FN / (FN + TP).
* Every rate carries a Wilson 95 % interval `<name>_ci`; bias (a paired difference, not a rate)
  carries a seeded percentile-bootstrap interval over items and McNemar's exact test on the
  discordant cells (FP vs FN), which is the test of "bias = 0".

What the other verdict classes count as: a producer's `no_answer` counts as `incorrect` by default
(a harness scores a missing answer wrong, so this is the bias of the accuracy it would report;
`no_answer="exclude"` leaves those items out instead); `error` and `timeout` are failures of the
machinery, not judgements, and are always left out. A human verdict other than correct/incorrect
(ambiguous, unresolved, not judged) leaves the item out. Left-out items are counted in `excluded`.

Small samples: below MIN_N items, or with fewer than MIN_DENOMINATOR items in a rate's
denominator, the result carries a warning. At n = 30 a Wilson interval around 50 % is ±17
points wide and at a denominator of 10 it is ±28 points: too wide to call a lean.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from adjudication.analytics.stats import Undefined, kappa_of_table, wilson

BINARY = ("correct", "incorrect")
VERDICTS = ("correct", "incorrect", "no_answer", "error", "timeout")
MIN_N = 30
MIN_DENOMINATOR = 10
BOOTSTRAP = 2000


def producer_binary(verdict: str | None, no_answer: str = "incorrect") -> str | None:
    """The producer's verdict as correct/incorrect, or None when the item is left out."""
    if verdict in BINARY:
        return verdict
    if verdict == "no_answer" and no_answer == "incorrect":
        return "incorrect"
    return None


def human_binary(verdict: str | None) -> str | None:
    return verdict if verdict in BINARY else None


def _rate(k: int, n: int) -> tuple[float | Undefined, list[float] | None]:
    if n == 0:
        return Undefined("empty denominator"), None
    ci = wilson(k, n)
    assert ci is not None  # None only when n = 0
    return k / n, list(ci)


def judge_bias(
    pairs: Iterable[tuple[str | None, str | None]],
    *,
    no_answer: str = "incorrect",
    seed: int = 0,
    n_boot: int = BOOTSTRAP,
) -> dict[str, Any]:
    """Bias statistics of one producer: `pairs` are (producer verdict, human verdict) per item."""
    if no_answer not in ("incorrect", "exclude"):
        raise ValueError("no_answer must be 'incorrect' or 'exclude'")
    excluded: Counter = Counter()
    # Counted per distinct pair (a handful of verdict pairs, however many items): the same cells,
    # κ and exclusions as walking every item (a report asks for hundreds of these).
    cells = np.zeros((2, 2), dtype=np.int64)
    for (p, h), k in Counter(pairs).items():
        pb, hb = producer_binary(p, no_answer), human_binary(h)
        if hb is None:
            excluded[f"human_{h if h else 'missing'}"] += k
        elif pb is None:
            excluded[f"producer_{p if p else 'missing'}"] += k
        else:
            cells[BINARY.index(pb), BINARY.index(hb)] += k
    return bias_of_cells(cells, excluded=excluded, seed=seed, n_boot=n_boot)


def bias_of_cells(
    cells: np.ndarray, *, excluded: Counter | None = None, seed: int = 0, n_boot: int = BOOTSTRAP
) -> dict[str, Any]:
    """judge_bias from the 2×2 counts [[TP, FP], [FN, TN]] (producer in rows, human in columns):
    what a caller that has already counted (the judge-bias card, one numpy pass per stratum) asks."""
    (tp, fp), (fn, tn) = (int(x) for x in cells[0]), (int(x) for x in cells[1])
    excluded = excluded if excluded is not None else Counter()
    n = tp + fp + fn + tn
    out: dict[str, Any] = {
        "n": n,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "confusion": {"rows": "producer", "columns": "human", "labels": list(BINARY), "matrix": [[tp, fp], [fn, tn]]},
    }
    out["accuracy"], out["accuracy_ci"] = _rate(tp + tn, n)
    out["cohen_kappa"] = _kappa(cells)
    out["judge_correct_rate"], out["judge_correct_rate_ci"] = _rate(tp + fp, n)
    out["human_correct_rate"], out["human_correct_rate_ci"] = _rate(tp + fn, n)
    if n:
        out["bias"] = (fp - fn) / n  # = judge_correct_rate − human_correct_rate, without the float round-off
        out["bias_ci"] = _bias_interval(tp, fp, fn, tn, seed=seed, n_boot=n_boot)
        out["bias_p_value"] = _mcnemar(fp, fn)
    else:
        out["bias"], out["bias_ci"], out["bias_p_value"] = Undefined("no items"), None, None
    out["false_accept_rate"], out["false_accept_rate_ci"] = _rate(fp, fp + tn)
    out["false_reject_rate"], out["false_reject_rate_ci"] = _rate(fn, fn + tp)
    out["lean"] = _lean(out)
    out["excluded"] = dict(sorted(excluded.items()))
    out["warnings"] = small_sample_warnings(n, fp + tn, fn + tp)
    return out


def _kappa(cells: np.ndarray) -> float | Undefined:
    """cohen_kappa(judge, human, labels=BINARY) from the 2×2 counts: no items, or one category
    used by both sides, is undefined (its reasons); else κ of the table."""
    if not cells.sum():
        return Undefined("no items")
    if int(np.count_nonzero(cells.sum(axis=0) + cells.sum(axis=1))) == 1:
        return Undefined("both raters used a single category only: chance agreement is 1, κ is 0/0")
    return kappa_of_table(cells)


def _bias_interval(tp: int, fp: int, fn: int, tn: int, *, seed: int, n_boot: int) -> list[float] | None:
    """Percentile bootstrap of (FP − FN)/n, resampling items: a resample of n items from the four
    cells is one multinomial draw with the observed cell shares."""
    n = tp + fp + fn + tn
    if n == 0 or n_boot <= 0:
        return None
    return list(_bias_interval_drawn(int(tp), int(fp), int(fn), int(tn), int(seed), int(n_boot)))


@functools.lru_cache(maxsize=4096)
def _bias_interval_drawn(tp: int, fp: int, fn: int, tn: int, seed: int, n_boot: int) -> tuple[float, float]:
    # A function of its arguments alone (the generator is seeded here): one report asks for the same
    # cells many times (a reader's row in several scopes and groups, every report after a label),
    # and numpy's multinomial is ~1-2 ms a call at 2,000 replicates.
    n = tp + fp + fn + tn
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, np.array([tp, fp, fn, tn], dtype=float) / n, size=n_boot)
    values = (draws[:, 1] - draws[:, 2]) / n
    lo, hi = np.quantile(values, [0.025, 0.975])
    return float(lo), float(hi)


def _mcnemar(fp: int, fn: int) -> float | None:
    """Exact McNemar test (statsmodels) of FP = FN; None without discordant items."""
    if fp + fn == 0:
        return None
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar([[0, fp], [fn, 0]], exact=True).pvalue)


def _lean(out: dict[str, Any]) -> str:
    p = out.get("bias_p_value")
    if not out["n"] or p is None or p >= 0.05:
        return "none detected"
    return "toward correct" if out["fp"] > out["fn"] else "toward incorrect"


def small_sample_warnings(n: int, negatives: int, positives: int) -> list[str]:
    warnings = []
    if n < MIN_N:
        warnings.append(f"n = {n} < {MIN_N}: too few items to say anything about bias (intervals are very wide)")
    if negatives < MIN_DENOMINATOR:
        warnings.append(
            f"only {negatives} item(s) the human rejects (< {MIN_DENOMINATOR}): "
            "the false-accept rate is not informative"
        )
    if positives < MIN_DENOMINATOR:
        warnings.append(
            f"only {positives} item(s) the human accepts (< {MIN_DENOMINATOR}): "
            "the false-reject rate is not informative"
        )
    return warnings


def bias_by(
    records: Iterable[dict[str, Any]],
    keys: tuple[str, ...],
    *,
    producer_key: str = "producer",
    verdict_key: str = "verdict",
    human_key: str = "human_verdict",
    no_answer: str = "incorrect",
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """judge_bias per producer and per group of `keys` (e.g. ("model", "checkpoint")):
    {producer: {"model/checkpoint value": stats}}."""
    groups: dict[str, dict[str, list[tuple[Any, Any]]]] = {}
    for r in records:
        group = "/".join(str(r.get(k) or "-") for k in keys) if keys else "all"
        groups.setdefault(str(r[producer_key]), {}).setdefault(group, []).append((r[verdict_key], r[human_key]))
    return {
        p: {g: judge_bias(pairs, no_answer=no_answer, seed=seed) for g, pairs in sorted(by_group.items())}
        for p, by_group in sorted(groups.items())
    }


# The flat keys of the `agreement --input` JSON, in order (each rate also has `<key>_ci`).
SUMMARY_KEYS = (
    "n",
    "accuracy",
    "cohen_kappa",
    "judge_correct_rate",
    "human_correct_rate",
    "bias",
    "false_accept_rate",
    "false_reject_rate",
)
