"""Format share (seed 000): how much of a base→RL gain is only the answer moving into a box.

A comparison is (model family, benchmark, prompt) with a base checkpoint and an RL checkpoint
(every other checkpoint of the triple is compared with the base). On the questions both
checkpoints answered:

* reported gain = accuracy(RL) − accuracy(base) under the reported reader (the harness reader,
  default `boxed`), in accuracy points (×100);
* fixed gain = the same under the fixed reader (default `fixed`; any reader, an LLM reader, or
  the final human labels can stand in);
* format share = (reported − fixed) / reported; undefined (an error with its reason) when
  reported ≤ 0.

Accuracy counts every response of the paired questions in its denominator: no_answer, error and
timeout are "not correct", as a harness scores them (a question answered several times counts as
the mean of its responses). A question is paired when both checkpoints have at least one
response to it with a verdict from both readers (the human reader has verdicts only on labelled
responses, so with it the comparison shrinks to the labelled questions).

Pooling over the eligible comparisons (reported gain above `min_reported_gain`, the fixed reader's
extraction rate on both checkpoints at least `min_extraction_rate`; a reported gain ≤ 0 is never
eligible since its share is undefined):
* pooled share = (mean reported − mean fixed) / mean reported: the ratio of mean gains, which
  weights each comparison by its reported gain;
* mean of shares = the plain mean of the per-comparison shares: each comparison counts once.
They differ whenever shares vary with gain size (seed 000: 82.2 % vs 75 %).

Point estimates are computed in exact rational arithmetic and rounded once to float, so
format_share(22.5, 4.0) is exactly 18.5 / 22.5. Intervals are percentile bootstraps over
questions (paired: a question's base and RL responses are drawn together), each comparison
resampled independently, with a seeded numpy Generator.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

import numpy as np

from .stats import percentile_interval, proportion

BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
EXTRACTED = ("correct", "incorrect")


def format_share(reported_gain: float, fixed_gain: float) -> float:
    """(reported − fixed) / reported. Raises ValueError when the reported gain is not positive."""
    if reported_gain <= 0:
        raise ValueError(f"reported gain must be positive to define a format share (got {reported_gain})")
    return (reported_gain - fixed_gain) / reported_gain


def has_box(text: str) -> bool:
    """Does the response contain a \\boxed{…} or \\fbox{…}? (the box rate's numerator)"""
    return bool(BOX.search(text))


@dataclass(frozen=True)
class Observation:
    """One response, as the format-share computation sees it."""

    model: str
    checkpoint: str
    benchmark: str
    prompt: str
    question: str  # a key shared by the base and RL responses to the same question
    reported: str | None  # verdict under the reported reader; None = no verdict (e.g. not labelled)
    fixed: str | None
    has_box: bool = False


@dataclass
class _Side:
    """One checkpoint of a comparison: per question, the responses' (reported, fixed, box)."""

    by_question: dict[str, list[Observation]] = field(default_factory=lambda: defaultdict(list))


def _q_acc(obs: list[Observation], attr: str) -> Fraction:
    return Fraction(sum(getattr(o, attr) == "correct" for o in obs), len(obs))


def _points(x: Fraction) -> Fraction:
    return x * 100


def _f(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def compute(observations: Iterable[Observation], *, base_checkpoint: str = "base", min_reported_gain: float = 0.0,
            min_extraction_rate: float = 0.0, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Every comparison, the pooled share and the mean of shares, with bootstrap intervals."""
    triples: dict[tuple[str, str, str], dict[str, _Side]] = defaultdict(dict)
    for o in observations:
        if o.reported is None or o.fixed is None:
            continue
        side = triples[(o.model, o.benchmark, o.prompt)].setdefault(o.checkpoint, _Side())
        side.by_question[o.question].append(o)
    comparisons: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    diffs: list[tuple[np.ndarray, np.ndarray]] = []  # per comparison: per-question RL−base (reported, fixed)
    for (model, benchmark, prompt), sides in sorted(triples.items()):
        if base_checkpoint not in sides:
            skipped.append({"model": model, "benchmark": benchmark, "prompt": prompt,
                            "checkpoints": sorted(sides), "reason": f"no {base_checkpoint!r} checkpoint to compare with"})
            continue
        base = sides[base_checkpoint]
        for ckpt in sorted(c for c in sides if c != base_checkpoint):
            comp, arrays = _comparison(model, benchmark, prompt, base_checkpoint, ckpt, base, sides[ckpt],
                                       min_reported_gain, min_extraction_rate)
            comparisons.append(comp)
            diffs.append(arrays)
    eligible = [i for i, c in enumerate(comparisons) if c["eligible"]]
    pooled, mean_of_shares = _pool([comparisons[i] for i in eligible])
    result: dict[str, Any] = {
        "comparisons": comparisons,
        "pooled": pooled,
        "mean_of_shares": _f(mean_of_shares),
        "mean_of_shares_ci": None,
        "n_comparisons": len(comparisons),
        "n_eligible": len(eligible),
        "filters": {"min_reported_gain": min_reported_gain, "min_extraction_rate": min_extraction_rate,
                    "base_checkpoint": base_checkpoint},
        "box_rate": _box_rates(triples, comparisons),
        "skipped": skipped,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "unit": "question (paired base/RL)"},
    }
    if not eligible:
        result["pooled"]["format_share_error"] = "no eligible comparison"
        result["mean_of_shares_error"] = "no eligible comparison"
    if n_boot > 0:
        _bootstrap(result, diffs, eligible, n_boot=n_boot, seed=seed)
    return result


def _comparison(model: str, benchmark: str, prompt: str, base_ckpt: str, rl_ckpt: str, base: _Side, rl: _Side,
                min_reported_gain: float, min_extraction_rate: float) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray]]:
    paired = sorted(set(base.by_question) & set(rl.by_question))
    unpaired = {base_ckpt: len(set(base.by_question) - set(rl.by_question)),
                rl_ckpt: len(set(rl.by_question) - set(base.by_question))}
    out: dict[str, Any] = {"model": model, "benchmark": benchmark, "prompt": prompt, "base_checkpoint": base_ckpt,
                           "rl_checkpoint": rl_ckpt, "n_questions": len(paired), "unpaired_questions": unpaired}
    if not paired:
        out.update(reported_gain=None, fixed_gain=None, format_share=None,
                   format_share_error="the two checkpoints share no question", eligible=False,
                   ineligible_reason="no paired questions")
        return out, (np.zeros(0), np.zeros(0))
    per_side = {}
    for name, side in (("base", base), ("rl", rl)):
        obs = [o for q in paired for o in side.by_question[q]]
        rep = sum((_q_acc(side.by_question[q], "reported") for q in paired), Fraction(0)) / len(paired)
        fix = sum((_q_acc(side.by_question[q], "fixed") for q in paired), Fraction(0)) / len(paired)
        extracted = [o for o in obs if o.fixed in EXTRACTED]
        per_side[name] = {
            "n_responses": len(obs),
            "reported_accuracy": rep, "fixed_accuracy": fix,
            "reported_extraction_rate": Fraction(sum(o.reported in EXTRACTED for o in obs), len(obs)),
            "fixed_extraction_rate": Fraction(len(extracted), len(obs)),
            "box_rate": proportion(sum(o.has_box for o in extracted), len(extracted)),
            "failures": {v: n for v in ("error", "timeout") if (n := sum(o.reported == v or o.fixed == v for o in obs))},
        }
    reported = _points(per_side["rl"]["reported_accuracy"] - per_side["base"]["reported_accuracy"])
    fixed = _points(per_side["rl"]["fixed_accuracy"] - per_side["base"]["fixed_accuracy"])
    out["reported_gain"] = float(reported)
    out["fixed_gain"] = float(fixed)
    out["_exact"] = (reported, fixed)
    if reported > 0:
        out["format_share"] = float((reported - fixed) / reported)
        out["format_share_error"] = None
    else:
        out["format_share"] = None
        out["format_share_error"] = (f"reported gain is {float(reported):.4g} points (≤ 0): "
                                     "the format share (reported − fixed) / reported is undefined")
    for name in ("base", "rl"):
        s = per_side[name]
        out[name] = {"n_responses": s["n_responses"], "reported_accuracy": float(s["reported_accuracy"]),
                     "fixed_accuracy": float(s["fixed_accuracy"]),
                     "reported_extraction_rate": float(s["reported_extraction_rate"]),
                     "fixed_extraction_rate": float(s["fixed_extraction_rate"]), "box_rate": s["box_rate"],
                     "failures": s["failures"]}
    reasons = []
    if reported <= 0:
        reasons.append("reported gain ≤ 0")
    elif reported <= Fraction(min_reported_gain).limit_denominator(10**9):
        reasons.append(f"reported gain {float(reported):.4g} ≤ threshold {min_reported_gain:g}")
    low = min(per_side["base"]["fixed_extraction_rate"], per_side["rl"]["fixed_extraction_rate"])
    if low < Fraction(min_extraction_rate).limit_denominator(10**9):
        reasons.append(f"fixed-reader extraction rate {float(low):.3f} < threshold {min_extraction_rate:g}")
    out["eligible"] = not reasons
    out["ineligible_reason"] = "; ".join(reasons) or None
    arrays = (np.array([float(_q_acc(rl.by_question[q], "reported") - _q_acc(base.by_question[q], "reported"))
                        for q in paired]),
              np.array([float(_q_acc(rl.by_question[q], "fixed") - _q_acc(base.by_question[q], "fixed"))
                        for q in paired]))
    return out, arrays


def _pool(eligible: list[dict[str, Any]]) -> tuple[dict[str, Any], Fraction | None]:
    if not eligible:
        return {"reported_gain": None, "fixed_gain": None, "format_share": None, "n_comparisons": 0}, None
    reps = [c["_exact"][0] for c in eligible]
    fixes = [c["_exact"][1] for c in eligible]
    mean_rep = sum(reps, Fraction(0)) / len(reps)
    mean_fix = sum(fixes, Fraction(0)) / len(fixes)
    shares = [(r - f) / r for r, f in zip(reps, fixes)]
    pooled = {"reported_gain": float(mean_rep), "fixed_gain": float(mean_fix),
              "format_share": float((mean_rep - mean_fix) / mean_rep), "n_comparisons": len(eligible),
              "summed_reported_gain": float(sum(reps, Fraction(0)))}
    # Concentration (seed 000: three pairs carry 98.5 % of the summed reported gain).
    total = sum(reps, Fraction(0))
    pooled["largest_contributions"] = sorted(
        ({"model": c["model"], "benchmark": c["benchmark"], "prompt": c["prompt"], "rl_checkpoint": c["rl_checkpoint"],
          "share_of_summed_reported_gain": float(r / total)} for c, r in zip(eligible, reps)),
        key=lambda d: -d["share_of_summed_reported_gain"])[:5]
    return pooled, sum(shares, Fraction(0)) / len(shares)


def _box_rates(triples: dict, comparisons: list[dict[str, Any]]) -> dict[str, Any]:
    """Box rate per checkpoint over every comparison it takes part in (base counted once per
    triple), among responses where the fixed reader extracted an answer."""
    seen: set[tuple] = set()
    k: dict[str, int] = defaultdict(int)
    n: dict[str, int] = defaultdict(int)
    for c in comparisons:
        if not c["n_questions"]:
            continue
        for role, ckpt in (("base", c["base_checkpoint"]), ("rl", c["rl_checkpoint"])):
            key = (c["model"], c["benchmark"], c["prompt"], ckpt)
            if key in seen:
                continue
            seen.add(key)
            k[ckpt] += c[role]["box_rate"]["k"]
            n[ckpt] += c[role]["box_rate"]["n"]
    return {ckpt: proportion(k[ckpt], n[ckpt]) for ckpt in sorted(n)}


def _bootstrap(result: dict[str, Any], diffs: list[tuple[np.ndarray, np.ndarray]], eligible: list[int], *,
               n_boot: int, seed: int, chunk: int = 250) -> None:
    rng = np.random.default_rng(seed)
    comps = result["comparisons"]
    reps = np.full((len(comps), n_boot), np.nan)
    fixes = np.full((len(comps), n_boot), np.nan)
    for i, (d_rep, d_fix) in enumerate(diffs):
        m = d_rep.size
        if m == 0:
            continue
        for start in range(0, n_boot, chunk):
            size = min(chunk, n_boot - start)
            idx = rng.integers(0, m, size=(size, m))
            reps[i, start:start + size] = 100 * d_rep[idx].mean(axis=1)
            fixes[i, start:start + size] = 100 * d_fix[idx].mean(axis=1)
    undefined = {}
    for i, c in enumerate(comps):
        if not c["n_questions"]:
            c.update(reported_gain_ci=None, fixed_gain_ci=None, format_share_ci=None)
            continue
        c["reported_gain_ci"] = _ci(reps[i])
        c["fixed_gain_ci"] = _ci(fixes[i])
        shares = _shares(reps[i], fixes[i])
        c["format_share_ci"], c["format_share_ci_undefined"] = _share_ci(shares)
        _explain(c, "format_share_ci", c["format_share_ci_undefined"])
    if eligible:
        r, f = reps[eligible], fixes[eligible]
        mean_r, mean_f = r.mean(axis=0), f.mean(axis=0)
        pooled = result["pooled"]
        pooled["reported_gain_ci"] = _ci(mean_r)
        pooled["fixed_gain_ci"] = _ci(mean_f)
        pooled["format_share_ci"], undefined["pooled"] = _share_ci(_shares(mean_r, mean_f))
        pooled["format_share_ci_undefined"] = undefined["pooled"]
        _explain(pooled, "format_share_ci", undefined["pooled"])
        per = _shares(r, f)
        ms = np.where(np.isnan(per).any(axis=0), np.nan, per.mean(axis=0))
        result["mean_of_shares_ci"], result["mean_of_shares_ci_undefined"] = _share_ci(ms)
        _explain(result, "mean_of_shares_ci", result["mean_of_shares_ci_undefined"])


def _explain(target: dict[str, Any], key: str, undefined: float) -> None:
    if target.get(key) is None:
        target[f"{key}_reason"] = (f"the reported gain is ≤ 0 in {undefined:.1%} of bootstrap resamples, so the "
                                   "share is undefined there; an interval over the rest would be biased")


def _shares(rep: np.ndarray, fix: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rep > 0, (rep - fix) / np.where(rep > 0, rep, 1.0), np.nan)


def _ci(values: np.ndarray) -> list[float] | None:
    ci = percentile_interval(values[~np.isnan(values)])
    return list(ci) if ci else None


def _share_ci(values: np.ndarray) -> tuple[list[float] | None, float]:
    """The share's percentile interval over resamples where it is defined; None when it is undefined
    (reported gain ≤ 0) in more than 2.5 % of resamples, since dropping those would bias the tail."""
    values = np.asarray(values, dtype=float)
    frac = float(np.isnan(values).mean()) if values.size else 1.0
    if frac > 0.025:
        return None, frac
    return _ci(values), frac


def strip_private(result: dict[str, Any]) -> dict[str, Any]:
    """The result without the exact-arithmetic working values (for JSON)."""
    for c in result["comparisons"]:
        c.pop("_exact", None)
    return result
