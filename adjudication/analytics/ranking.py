"""Model rankings per reader, and where readers disagree about the order (seed 002 §4).

Input: for each reader, each model's (correct, n). Accuracy = correct / n over all the model's
responses (no_answer, error and timeout count as not correct, as a harness scores them).

* rank: competition ranking by accuracy, best = 1; exact ties (compared as fractions) share a
  rank ("1, 2, 2, 4").
* flip: a pair of models ordered one way by reader X and strictly the other way by reader Y
  (a tie under either reader is not a flip). `separated` says whether the two models' Wilson
  intervals are disjoint under both readers: a flip between overlapping intervals may be noise.
* Kendall's τ-b (scipy) between two readers' accuracy vectors over the models both readers scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from itertools import combinations
from typing import Any

from adjudication.analytics.stats import kendall_tau, wilson


def rank(scores: Mapping[str, tuple[int, int]]) -> list[dict[str, Any]]:
    """[{model, k, n, accuracy, ci, rank}] best first; ties share a rank, then order by name."""
    rows: list[dict[str, Any]] = []
    for model, (k, n) in scores.items():
        ci = wilson(k, n)  # None when n = 0
        rows.append(
            {
                "model": model,
                "k": k,
                "n": n,
                "accuracy": (k / n) if n else None,
                "ci": list(ci) if ci is not None else None,
                "_exact": Fraction(k, n) if n else Fraction(-1),
            }
        )
    rows.sort(key=lambda r: (-r["_exact"], r["model"]))
    for i, r in enumerate(rows):
        r["rank"] = rows[i - 1]["rank"] if i and r["_exact"] == rows[i - 1]["_exact"] else i + 1
    for r in rows:
        del r["_exact"]
    return rows


def _order(a: tuple[int, int], b: tuple[int, int]) -> int:
    """The sign of k_a/n_a − k_b/n_b, exactly (as Fractions compare them, which refuse n = 0), in
    integers: a Fraction per model pair was most of the comparison's time (issue 36 item 15)."""
    (ka, na), (kb, nb) = a, b
    if not na or not nb:
        raise ZeroDivisionError("an accuracy over no responses")
    diff = (ka * nb - kb * na) * (1 if na * nb > 0 else -1)
    return (diff > 0) - (diff < 0)


def _disjoint(a: list[float] | None, b: list[float] | None) -> bool:
    return bool(a and b and (a[1] < b[0] or b[1] < a[0]))


def compare(tables: Mapping[str, Mapping[str, tuple[int, int]]], reference: str | None = None) -> dict[str, Any]:
    """Rankings of every reader, flips between every pair of readers (or, with `reference`, between
    the reference and each other reader), and the Kendall τ matrix."""
    rankings = {reader: rank(scores) for reader, scores in tables.items()}
    readers = list(tables)
    if reference is not None and reference not in tables:
        raise ValueError(f"reference reader {reference!r} has no scores")
    pairs = [(reference, r) for r in readers if r != reference] if reference else list(combinations(readers, 2))
    by_model = {reader: {row["model"]: row for row in rows} for reader, rows in rankings.items()}
    flips = []
    taus = []
    for x, y in pairs:
        common = sorted(set(by_model[x]) & set(by_model[y]))
        for a, b in combinations(common, 2):
            under_x, under_y = _order(tables[x][a], tables[x][b]), _order(tables[y][a], tables[y][b])
            if under_x * under_y < 0:
                hi_x, lo_x = (a, b) if under_x > 0 else (b, a)
                flips.append(
                    {
                        "readers": [x, y],
                        "models": [hi_x, lo_x],
                        x: {
                            m: {"accuracy": by_model[x][m]["accuracy"], "rank": by_model[x][m]["rank"]} for m in (a, b)
                        },
                        y: {
                            m: {"accuracy": by_model[y][m]["accuracy"], "rank": by_model[y][m]["rank"]} for m in (a, b)
                        },
                        "separated": _disjoint(by_model[x][a]["ci"], by_model[x][b]["ci"])
                        and _disjoint(by_model[y][a]["ci"], by_model[y][b]["ci"]),
                    }
                )
        tau = kendall_tau([by_model[x][m]["accuracy"] for m in common], [by_model[y][m]["accuracy"] for m in common])
        taus.append({"readers": [x, y], "n_models": len(common), **tau})
    moved = {}
    if reference:
        for r in readers:
            if r == reference:
                continue
            moved[r] = sorted(
                m
                for m in by_model[r]
                if m in by_model[reference] and by_model[r][m]["rank"] != by_model[reference][m]["rank"]
            )
    return {
        "rankings": rankings,
        "flips": flips,
        "kendall_tau": taus,
        "reference": reference,
        "rank_changes_vs_reference": moved,
    }


# Readers with fewer labelled items than this get no rank (docs/analytics.md, "Readers ranked"): at
# n = 3 a perfect score's 95 % Wilson interval reaches down to 0.44, so a rank there says nothing.
RANK_MIN_N = 10


def rank_readers(rows: list[dict[str, Any]], *, min_n: int = RANK_MIN_N) -> list[dict[str, Any]]:
    """Readers ranked by agreement with the final labels, from rows {reader, n, agreement,
    agreement_ci, ...}: by the lower bound of the 95 % interval, so that a reader scoring 1.000 on
    3 items (lower bound 0.44) ranks below one scoring 0.9 on 100 (0.83). A reader with fewer than
    `min_n` items gets rank None (withheld) and follows the ranked ones; equal bounds share a rank.
    Each row gains `rank`, `lower` and `rank_withheld` (the reason, or "")."""

    def lower(r: dict[str, Any]) -> float | None:
        ci = r.get("agreement_ci")
        return ci[0] if ci else None

    def key(r: dict[str, Any]) -> tuple:
        lo = lower(r)
        return (lo is None, -(lo or 0.0), -(r.get("agreement") or 0.0), -r["n"], r["reader"])

    ranked = sorted((dict(r) for r in rows if r["n"] >= min_n and lower(r) is not None), key=key)
    withheld = sorted(
        (dict(r) for r in rows if not (r["n"] >= min_n and lower(r) is not None)),
        key=lambda r: (-r["n"], -(r.get("agreement") or 0.0), r["reader"]),
    )
    for i, r in enumerate(ranked):
        r["lower"] = lower(r)
        same = i and r["lower"] == ranked[i - 1]["lower"]
        r["rank"] = ranked[i - 1]["rank"] if same else i + 1
        r["rank_withheld"] = ""
    for r in withheld:
        r["lower"] = lower(r)
        r["rank"] = None
        r["rank_withheld"] = f"n = {r['n']} < {min_n}: too few labelled items to rank"
    return ranked + withheld
