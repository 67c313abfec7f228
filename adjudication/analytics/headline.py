"""The platform's headline: how much of each benchmark's base→RL gain the harness reader reports,
how much a fixed reader finds, and the format share between them (seed 000). One pure function
builds it from a format-share result pooled by benchmark, so that the quickstart's printed block,
the managers' landing cards and the top of the analytics page show the same numbers as
`manage.py format_share --dataset NAME --by benchmark --json` (same readers, resamples and seed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEADLINE_KEYS = (
    "reported_gain",
    "reported_gain_ci",
    "fixed_gain",
    "fixed_gain_ci",
    "format_share",
    "format_share_ci",
    "n_eligible",
    "n_comparisons",
    "box_rate_base",
    "box_rate_rl",
    "error",
)


def no_eligible_reason(comparisons: list[Mapping[str, Any]]) -> str:
    """Why a pool has no eligible comparison, in the words `format_share` prints beside each
    comparison (its format-share error, else its ineligibility reason), so that the command line,
    the analytics page and the landing card give one reason."""
    if not comparisons:
        return (
            "no comparison: no base checkpoint beside another checkpoint of the same model, benchmark and prompt "
            "(pair runs by model name and checkpoint)"
        )
    reasons: dict[str, list[str]] = {}
    for c in comparisons:
        why = c.get("format_share_error") or c.get("ineligible_reason") or "not eligible"
        reasons.setdefault(why, []).append(f"{c['model']} {c['base_checkpoint']}→{c['rl_checkpoint']}")
    if len(comparisons) == 1:
        return f"not eligible: {next(iter(reasons))}"
    parts = [f"{why} ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})" for why, names in reasons.items()]
    return "no eligible comparison: " + "; ".join(parts[:3])


def _pool(group: Mapping[str, Any], comparisons: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One pool of a format-share result (overall, or one benchmark's group) as headline numbers;
    `comparisons` are the pool's (eligible or not). Where none is eligible, the gains are the
    comparisons' mean (no interval: nothing is pooled) and the reason is theirs."""
    pooled = dict(group.get("pooled") or {})
    box = group.get("box_rate") or {}
    n_eligible = group.get("n_eligible", 0)
    share = pooled.get("format_share")
    if not n_eligible:
        error = no_eligible_reason(comparisons)
        gains = [c for c in comparisons if c.get("reported_gain") is not None]
        if gains:
            pooled["reported_gain"] = sum(c["reported_gain"] for c in gains) / len(gains)
            pooled["fixed_gain"] = sum(c["fixed_gain"] for c in gains) / len(gains)
    elif share is None:
        error = pooled.get("format_share_error") or "the pooled reported gain is not positive: no share"
    else:
        error = None
    return {
        "reported_gain": pooled.get("reported_gain"),
        "reported_gain_ci": pooled.get("reported_gain_ci"),
        "fixed_gain": pooled.get("fixed_gain"),
        "fixed_gain_ci": pooled.get("fixed_gain_ci"),
        "format_share": share,
        "format_share_ci": pooled.get("format_share_ci"),
        "n_eligible": n_eligible,
        "n_comparisons": group.get("n_comparisons", 0),
        "box_rate_base": (box.get("base") or {}).get("rate"),
        "box_rate_rl": (box.get("rl") or {}).get("rate"),
        "error": error,
    }


def format_share_headline(
    result: Mapping[str, Any] | None,
    *,
    reported: str,
    fixed: str,
    base: str = "base",
    disputed: Mapping[str, int] | None = None,
    error: str = "",
) -> dict[str, Any]:
    """{reported_reader, fixed_reader, base_checkpoint, overall: {...}, by_benchmark: [{benchmark, ...}]}
    from `format_share.compute(..., by="benchmark")` (jsonable, private keys stripped). `disputed`
    ({benchmark: responses the review panel disputes}) is added per benchmark when given. `error`
    (the format share could not be computed at all, e.g. an unknown reader) stands in for numbers."""
    out: dict[str, Any] = {
        "reported_reader": reported,
        "fixed_reader": fixed,
        "base_checkpoint": base,
        "error": error or None,
        "overall": None,
        "by_benchmark": [],
    }
    if result is None or error:
        return out
    if result.get("by") not in (None, "benchmark"):
        raise ValueError(f"the headline is pooled by benchmark, not by {result.get('by')!r}")
    comparisons = list(result.get("comparisons") or [])
    out["overall"] = _pool(result, comparisons)
    groups: Mapping[str, Any] = result.get("groups") or {}
    benchmarks = sorted(set(groups) | {c["benchmark"] for c in comparisons})
    for benchmark in benchmarks:
        row: dict[str, Any] = {"benchmark": benchmark}
        mine = [c for c in comparisons if c["benchmark"] == benchmark]
        if benchmark in groups:
            row.update(_pool(groups[benchmark], mine))
        else:
            # A benchmark none of whose comparisons is eligible has no group of its own.
            row.update(_pool({"n_comparisons": len(mine)}, mine))
        task_types = result.get("task_types") or {}
        row["task_type"] = (task_types.get(benchmark) or {}).get("task_type")
        if disputed is not None:
            row["disputed"] = disputed.get(benchmark, 0)
        out["by_benchmark"].append(row)
    return out


def points_text(value: float | None, ci: list[float] | None = None) -> str:
    """A gain in accuracy points with its interval: "+28.7 [+21.3, +36.3]"; "–" when undefined."""
    if value is None:
        return "–"
    text = f"{value:+.1f}"
    if ci:
        text += f" [{ci[0]:+.1f}, {ci[1]:+.1f}]"
    return text


def _whole_percent(value: float) -> str:
    # round() to an int, so that -0.4 % prints as "0%", never "-0%".
    return f"{round(value * 100)}%"


def share_text(value: float | None, ci: list[float] | None = None) -> str:
    """A share as a percentage with its interval: "86% [65%, 107%]"; "–" when undefined."""
    if value is None:
        return "–"
    text = _whole_percent(value)
    if ci:
        text += f" [{_whole_percent(ci[0])}, {_whole_percent(ci[1])}]"
    return text


def rate_text(value: float | None) -> str:
    return "–" if value is None else _whole_percent(value)


def headline_lines(headline: Mapping[str, Any]) -> list[str]:
    """The headline as plain-text lines (the quickstart prints them): one line per benchmark and
    one for every eligible comparison pooled, gains in accuracy points with 95 % intervals."""
    rep, fix = headline["reported_reader"], headline["fixed_reader"]
    if headline.get("error"):
        return [f"format share ({rep} vs {fix}): {headline['error']}"]
    lines = [
        f"Gain of each RL checkpoint over {headline['base_checkpoint']!r}, in accuracy points [95 % bootstrap]:",
        (
            f"  reported = under {rep!r} (the harness reader); fixed = under {fix!r}; "
            "format share = (reported - fixed) / reported"
        ),
    ]
    rows = [(row["benchmark"], row) for row in headline["by_benchmark"]]
    if headline.get("overall"):
        rows.append(("all", headline["overall"]))
    width = max([len(name) for name, _ in rows] + [9])
    for name, row in rows:
        text = (
            f"  {name:<{width}}  reported {points_text(row['reported_gain'], row['reported_gain_ci'])}"
            f"  fixed {points_text(row['fixed_gain'], row['fixed_gain_ci'])}"
            f"  format share {share_text(row['format_share'], row['format_share_ci'])}"
            f"  boxed base {rate_text(row['box_rate_base'])} -> RL {rate_text(row['box_rate_rl'])}"
        )
        if "disputed" in row:
            text += f"  disputed {row['disputed']}"
        if row.get("error"):
            text += f"  ({row['error']})"
        lines.append(text)
    return lines
