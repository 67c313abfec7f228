"""The statistics, as thin wrappers over the reference implementations.

Every function here delegates the arithmetic to statsmodels, scikit-learn, scipy or the
`krippendorff` package (tests/analytics checks them against those libraries and against the
textbook formulas on random inputs); what this module adds is the bookkeeping around them:
empty inputs, undefined values (None plus a reason, never NaN in our outputs), and a seeded
bootstrap.

Conventions: proportions are fractions in [0, 1]; an interval is a tuple (lo, hi) or None when
it is undefined (n = 0); every interval is two-sided 95 % unless `alpha` says otherwise.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal, TypeVar

import numpy as np

from readers.stats import wilson

ALPHA = 0.05
Z95 = 1.959963984540054  # scipy.stats.norm.isf(0.025), what statsmodels uses for alpha = 0.05
# Krippendorff's levels of measurement, as the `krippendorff` package names them.
Level = Literal["nominal", "ordinal", "interval", "ratio"]
# {rater: {item: category}}: raters and items are any hashable keys (names, ids).
_Rater = TypeVar("_Rater", bound=Hashable)
_Item = TypeVar("_Item", bound=Hashable)


def proportion(k: int, n: int, alpha: float = ALPHA) -> dict[str, Any]:
    """{"k", "n", "rate", "ci"}: a proportion with its Wilson interval (rate and ci None when n = 0)."""
    ci = wilson(k, n, alpha)  # None when n = 0
    return {"k": k, "n": n, "rate": (k / n) if n else None, "ci": list(ci) if ci is not None else None}


@dataclass(frozen=True)
class Undefined:
    """A statistic that has no value on these data, and why (serialised as null + a reason)."""

    reason: str

    def __bool__(self) -> bool:  # `if kappa:` style checks treat it as missing
        return False


def cohen_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> float | Undefined:
    """Cohen's κ of two raters over the same items (scikit-learn's cohen_kappa_score, unweighted).

    Undefined when there are no items, or when chance agreement is 1 (both raters used one and the
    same single category: κ = 0/0)."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    if not a:
        return Undefined("no items")
    seen = set(a) | set(b)
    if len(seen) == 1:
        return Undefined("both raters used a single category only: chance agreement is 1, κ is 0/0")
    # Labels as strings, as scikit-learn would have them (categories are nominal anyway); its
    # formula in numpy over a confusion matrix counted in Python: scikit-learn's input checks cost
    # ~2 ms a call, and a report asks for hundreds (issue 36 item 15).
    ya, yb = [str(x) for x in a], [str(x) for x in b]
    names = [str(x) for x in labels] if labels else sorted(set(ya) | set(yb))
    return kappa_of_table(_counts(ya, yb, names))


def kappa_of_table(counts: np.ndarray) -> float | Undefined:
    """Cohen's κ from the raters' square confusion matrix of counts (cohen_kappa's formula, for a
    caller that has counted the pairs itself)."""
    table = counts.astype(float)
    names = table.shape[0]
    total = table.sum()
    if total == 0:
        return Undefined("chance agreement is 1: κ is 0/0")
    expected = np.outer(table.sum(axis=0), table.sum(axis=1)) / total
    off_diagonal = 1.0 - np.eye(names)
    denominator = float(np.sum(off_diagonal * expected))
    if denominator == 0:
        return Undefined("chance agreement is 1: κ is 0/0")
    return float(1 - np.sum(off_diagonal * table) / denominator)


def _counts(a: Sequence[str], b: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """scikit-learn's confusion_matrix(a, b, labels=labels): pairs outside `labels` are left out;
    refused (ValueError) when no label is among `a`."""
    code = {label: k for k, label in enumerate(labels)}
    if not any(x in code for x in a):
        raise ValueError("At least one label specified must be in y_true")
    table = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for x, y in zip(a, b, strict=True):
        i, j = code.get(x), code.get(y)
        if i is not None and j is not None:
            table[i, j] += 1
    return table


def confusion(a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable]) -> list[list[int]]:
    """Confusion matrix (scikit-learn's): rows = `a`'s category, columns = `b`'s, in `labels` order."""
    if not a:
        return [[0] * len(labels) for _ in labels]
    return _counts([str(x) for x in a], [str(x) for x in b], [str(x) for x in labels]).tolist()


def percent_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Share of items on which two raters give the same category (None without items)."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    return sum(x == y for x, y in zip(a, b)) / len(a) if a else None


def krippendorff_alpha(
    ratings: Mapping[_Rater, Mapping[_Item, Hashable]],
    level: Level = "nominal",
    value_order: Sequence[Hashable] | None = None,
) -> float | Undefined:
    """Krippendorff's α (the `krippendorff` package) from {rater: {item: category}}; missing
    ratings are allowed. Categories are coded as integers in `value_order` (needed for ordinal
    and interval levels; by default the sorted distinct categories). Items rated by fewer than two
    raters carry no pairable information and are ignored by the package itself."""
    import krippendorff

    raters = list(ratings)
    items = sorted({item for r in raters for item in ratings[r]}, key=str)
    values = (
        list(value_order)
        if value_order is not None
        else sorted({v for r in raters for v in ratings[r].values()}, key=str)
    )
    if len(raters) < 2 or not items:
        return Undefined("needs at least two raters and one item")
    code = {v: i for i, v in enumerate(values)}
    data = np.full((len(raters), len(items)), np.nan)
    col = {item: j for j, item in enumerate(items)}
    for i, r in enumerate(raters):
        for item, v in ratings[r].items():
            data[i, col[item]] = code[v]
    pairable = (np.sum(~np.isnan(data), axis=0) >= 2).sum()
    if pairable == 0:
        return Undefined("no item was rated by two raters")
    used = {
        data[i, j]
        for i in range(data.shape[0])
        for j in range(data.shape[1])
        if not np.isnan(data[i, j]) and np.sum(~np.isnan(data[:, j])) >= 2
    }
    if len(used) < 2:
        return Undefined("every pairable rating is the same category: α is 0/0")
    try:
        value = krippendorff.alpha(
            reliability_data=data, level_of_measurement=level, value_domain=list(range(len(values)))
        )
    except (ValueError, ZeroDivisionError) as exc:
        return Undefined(f"krippendorff: {exc}")
    if value is None or math.isnan(value):
        return Undefined("α is undefined on these ratings")
    return float(value)


def pairwise(ratings: Mapping[_Rater, Mapping[_Item, Hashable]]) -> list[dict[str, Any]]:
    """For every pair of raters, on the items both rated: n, percent agreement (Wilson) and κ."""
    out = []
    for r1, r2 in combinations(sorted(ratings, key=str), 2):
        common = sorted(set(ratings[r1]) & set(ratings[r2]), key=str)
        a = [ratings[r1][i] for i in common]
        b = [ratings[r2][i] for i in common]
        agree = sum(x == y for x, y in zip(a, b))
        out.append(
            {
                "raters": [str(r1), str(r2)],
                "n": len(common),
                "agreement": proportion(agree, len(common)),
                "cohen_kappa": cohen_kappa(a, b),
            }
        )
    return out


def all_agree_rate(ratings: Mapping[_Rater, Mapping[_Item, Hashable]]) -> dict[str, Any]:
    """Share of items with at least two ratings on which every rater gave the same category."""
    by_item: dict[_Item, list[Hashable]] = {}
    for r in ratings:
        for item, v in ratings[r].items():
            by_item.setdefault(item, []).append(v)
    multi = [vs for vs in by_item.values() if len(vs) >= 2]
    return proportion(sum(len(set(vs)) == 1 for vs in multi), len(multi))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Kendall's τ-b between two score vectors over the same objects (scipy.stats.kendalltau),
    with its p-value; undefined with fewer than two objects or a constant vector."""
    from scipy.stats import kendalltau

    if len(x) != len(y):
        raise ValueError("both vectors must cover the same objects")
    if len(x) < 2:
        return {"tau": Undefined("fewer than two objects"), "p_value": None}
    if len(set(x)) < 2 or len(set(y)) < 2:
        return {"tau": Undefined("a constant ranking has no order to compare"), "p_value": None}
    res = kendalltau(x, y)
    return {"tau": float(res.statistic), "p_value": float(res.pvalue)}


def percentile_interval(samples: Iterable[float], alpha: float = ALPHA) -> tuple[float, float] | None:
    """The (alpha/2, 1 - alpha/2) percentiles (numpy's default linear interpolation)."""
    if isinstance(samples, np.ndarray) and samples.ndim == 1 and samples.dtype == np.float64:
        # A bootstrap's float array (the report's common case): the same values kept, without a
        # Python test per replicate.
        arr = samples[~np.isnan(samples)].astype(float, copy=False)
    else:
        arr = np.asarray(
            [s for s in samples if s is not None and not (isinstance(s, float) and math.isnan(s))], dtype=float
        )
    if arr.size == 0:
        return None
    lo, hi = np.quantile(arr, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap(
    statistic: Callable[[np.ndarray], float], n_units: int, *, n_boot: int = 2000, seed: int = 0, alpha: float = ALPHA
) -> dict[str, Any]:
    """Percentile bootstrap over `n_units` resampling units (questions, items): `statistic` gets an
    array of unit indices (drawn with replacement by numpy's Generator(PCG64(seed))) and returns a
    value, or None/NaN when undefined on that resample. Returns the interval and the share of
    resamples on which the statistic was undefined (those are left out of the percentiles)."""
    if n_units <= 0 or n_boot <= 0:
        return {"ci": None, "n_boot": 0, "undefined": 0.0}
    rng = np.random.default_rng(seed)
    values = []
    undefined = 0
    for _ in range(n_boot):
        v = statistic(rng.integers(0, n_units, size=n_units))
        if v is None or (isinstance(v, float) and math.isnan(v)):
            undefined += 1
        else:
            values.append(float(v))
    ci = percentile_interval(values, alpha)
    return {"ci": list(ci) if ci else None, "n_boot": n_boot, "undefined": undefined / n_boot}


def counts(values: Iterable[Hashable]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(Counter(values).items(), key=lambda kv: str(kv[0]))}


def jsonable(obj: Any) -> Any:
    """Our results as JSON: Undefined -> None (its reason goes next to it by the caller's choice),
    tuples -> lists, numpy scalars -> Python numbers, NaN -> None."""
    kind = type(obj)
    # The common leaves first, by exact type (a report has ~50,000 values): what the checks below
    # return for them.
    if kind is str or kind is int or kind is bool or obj is None:
        return obj
    if kind is float:
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, Undefined):
        return None
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out[str(k)] = jsonable(v)
            if isinstance(v, Undefined) and f"{k}_reason" not in obj:
                out[f"{k}_reason"] = v.reason
        return out
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    return obj
