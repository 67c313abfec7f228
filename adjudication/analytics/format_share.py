"""Format share (seed 000): how much of a base→RL gain is only the answer moving into a box.

A comparison is (model family, benchmark, prompt) with a base checkpoint and an RL checkpoint
(every other checkpoint of the triple is compared with the base: the checkpoint's *role* is base
or RL, whatever it is called). On the questions both checkpoints answered:

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

Eligibility: reported gain above `min_reported_gain` and the fixed reader's extraction rate on
both checkpoints at least `min_extraction_rate` (a reported gain ≤ 0 is never eligible since its
share is undefined). The seed pools "only comparisons with a clearly positive reported gain and
adequate extraction" without giving the thresholds, so a threshold left at 0 is reported as a
warning rather than silently accepted.

Every pooled figure is over the eligible comparisons only (all of them, and per group when
pooling `by` task type or benchmark, since the seed asks to keep in-domain maths, out-of-domain
multiple choice and free-form tasks apart):
* pooled share = (mean reported − mean fixed) / mean reported: the ratio of mean gains, which
  weights each comparison by its reported gain; the seed's stated arithmetic (22.5 vs 4.0 →
  82.2 %);
* mean of shares = the plain mean of the per-comparison shares: each comparison counts once. This
  is OUR reading of the seed's "changing the pooling rule lowers the share to 75 %": the seed does
  not say which rule it changed to;
* pair contributions = each (model, base checkpoint, RL checkpoint) pair's summed reported gain
  over its eligible comparisons, as a share of the pool's summed reported gain (the seed: "three
  Qwen pairs contribute 98.5 % of the summed reported gain");
* box rate by role = responses containing a box among the responses the fixed reader extracted an
  answer from, base checkpoints vs RL checkpoints (the seed: 26.6 % vs 58.3 %).

A benchmark's task type (maths, multiple_choice, free_form) is the majority type of its questions
(`item_task_type`: options present → multiple choice; a bare option letter as gold → multiple
choice; a numeric or LaTeX gold → maths; anything else → free form), unless overridden per
benchmark.

Point estimates are computed in exact rational arithmetic and rounded once to float, so
format_share(22.5, 4.0) is exactly 18.5 / 22.5. Intervals are percentile bootstraps over
questions (paired: a question's base and RL responses are drawn together), each comparison
resampled independently, with a seeded numpy Generator.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypedDict

import numpy as np

from adjudication.analytics.stats import percentile_interval, proportion

BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
EXTRACTED = ("correct", "incorrect")
BASE, RL = "base", "rl"

MATHS, MULTIPLE_CHOICE, FREE_FORM, UNKNOWN = "maths", "multiple_choice", "free_form", "unknown"
TASK_TYPES = (MATHS, MULTIPLE_CHOICE, FREE_FORM)
POOL_BY = ("task_type", "benchmark")
# A benchmark whose questions agree less than this on one type is flagged: its majority type may be wrong.
MIXED_BELOW = 0.8

POOLED_DEFINITION = (
    "ratio of mean gains over the eligible comparisons, (mean reported − mean fixed) / mean "
    "reported: seed 000's stated arithmetic (22.5 vs 4.0 → 82.2 %)"
)
MEAN_OF_SHARES_DEFINITION = (
    "plain mean of the eligible comparisons' shares: OUR reading of seed 000's \"changing "
    'the pooling rule lowers the share to 75 %"; the seed does not say which rule'
)


def format_share(reported_gain: float, fixed_gain: float) -> float:
    """(reported − fixed) / reported. Raises ValueError when the reported gain is not positive."""
    if reported_gain <= 0:
        raise ValueError(f"reported gain must be positive to define a format share (got {reported_gain})")
    return (reported_gain - fixed_gain) / reported_gain


def has_box(text: str) -> bool:
    """Does the response contain a \\boxed{…} or \\fbox{…}? (the box rate's numerator)"""
    return bool(BOX.search(text))


_NUMBER = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:\s*/\s*\d+)?\s*%?")
# A LaTeX command or spacing/escape (\frac, \!, \$), a power, or a subscript (52_8, x_{1}).
_LATEX = re.compile(r"\\[A-Za-z!,;:$%()\[]|\^|_\{|_\d")
_LETTER = re.compile(r"\(?[A-Za-z]\)?\.?")
# The characters of a short formula: digits, variables, operators, brackets, commas.
_FORMULA = re.compile(r"[\w\s+\-−*/=<>≤≥().,\[\]{}|!]{1,40}")
_OPERATOR = re.compile(r"[+\-−*/=<>≤≥(]")


def normalise_task_type(name: str) -> str:
    """'multiple-choice', 'Multiple choice', 'math' → the canonical names; ValueError otherwise."""
    key = re.sub(r"[\s-]+", "_", name.strip().lower())
    key = {"math": MATHS, "mc": MULTIPLE_CHOICE, "freeform": FREE_FORM}.get(key, key)
    if key not in TASK_TYPES:
        raise ValueError(f"unknown task type {name!r} (one of {', '.join(TASK_TYPES)})")
    return key


def item_task_type(gold: str, choices: Sequence[str] = ()) -> str:
    """One question's task type from its gold and options (see the module docstring).

    Why from the items and not the benchmark's name: the same name covers different tasks (MMLU-Pro
    asked with options is multiple choice, asked free-form it is not), and a name table would
    silently miss every benchmark it does not list."""
    if choices:
        return MULTIPLE_CHOICE
    text = (gold or "").strip()
    inner = text
    while len(inner) >= 2 and inner[0] == "$" and inner[-1] == "$":
        inner = inner[1:-1].strip()
    if inner != text or _LATEX.search(text):
        return MATHS
    if not text:
        return FREE_FORM
    if _LETTER.fullmatch(text):
        return MULTIPLE_CHOICE
    bare = text.lstrip("$€£").strip()
    if any(c.isdigit() for c in bare) and _NUMBER.fullmatch(bare):
        return MATHS
    # A short formula or list of numbers ("2k", "p - q", "3, 5, 7"): few letters, and a digit or an operator.
    if (
        _FORMULA.fullmatch(bare)
        and sum(c.isalpha() for c in bare) <= 3
        and (any(c.isdigit() for c in bare) or (_OPERATOR.search(bare) and any(c.isalpha() for c in bare)))
    ):
        return MATHS
    return FREE_FORM


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
    task_type: str | None = None  # the question's type (item_task_type); None = not known


@dataclass
class _Side:
    """One checkpoint of a comparison: per question, the responses' (reported, fixed, box)."""

    by_question: dict[str, list[Observation]] = field(default_factory=lambda: defaultdict(list))


class _SideStats(TypedDict):
    """One checkpoint's side of a comparison, exact until the output turns it into floats."""

    n_responses: int
    reported_accuracy: Fraction
    fixed_accuracy: Fraction
    reported_extraction_rate: Fraction
    fixed_extraction_rate: Fraction
    box_rate: dict[str, Any]
    failures: dict[str, int]


def _q_acc(obs: list[Observation], attr: str) -> Fraction:
    return Fraction(sum(getattr(o, attr) == "correct" for o in obs), len(obs))


def _points(x: Fraction) -> Fraction:
    return x * 100


def _f(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def benchmark_task_types(
    observations: Iterable[Observation], overrides: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """{benchmark: {"task_type", "source", "items", "agreement"}}: the majority type over the
    benchmark's distinct questions (ties go to the earlier of maths, multiple_choice, free_form),
    or the override."""
    overrides = {b: normalise_task_type(t) for b, t in (overrides or {}).items()}
    per_question: dict[str, dict[str, str | None]] = defaultdict(dict)
    for o in observations:
        per_question[o.benchmark].setdefault(o.question, o.task_type)
    out: dict[str, dict[str, Any]] = {}
    for bench in sorted(set(per_question) | set(overrides)):
        counts = Counter(t for t in per_question.get(bench, {}).values() if t)
        known = sum(counts.values())
        entry: dict[str, Any] = {"items": {t: counts[t] for t in TASK_TYPES if counts[t]}}
        if counts:
            top = max(TASK_TYPES, key=lambda t: (counts[t], -TASK_TYPES.index(t)))
            entry["agreement"] = counts[top] / known
        else:
            top = UNKNOWN
            entry["agreement"] = None
        if bench in overrides:
            entry.update(task_type=overrides[bench], source="override")
        else:
            entry.update(task_type=top, source="items" if counts else "none: no gold/options to judge from")
        out[bench] = entry
    return out


def compute(
    observations: Iterable[Observation],
    *,
    base_checkpoint: str = "base",
    min_reported_gain: float = 0.0,
    min_extraction_rate: float = 0.0,
    by: str | None = None,
    task_types: Mapping[str, str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Every comparison; over the eligible ones the pooled share, the mean of shares, the pair
    contributions and the box rate by role, all of them and per `by` group, with bootstrap intervals."""
    if by is not None and by not in POOL_BY:
        raise ValueError(f"cannot pool by {by!r} (one of {', '.join(POOL_BY)})")
    observations = list(observations)
    types = benchmark_task_types(observations, task_types)
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
            skipped.append(
                {
                    "model": model,
                    "benchmark": benchmark,
                    "prompt": prompt,
                    "checkpoints": sorted(sides),
                    "reason": f"no {base_checkpoint!r} checkpoint to compare with",
                }
            )
            continue
        base = sides[base_checkpoint]
        for ckpt in sorted(c for c in sides if c != base_checkpoint):
            comp, arrays = _comparison(
                model,
                benchmark,
                prompt,
                base_checkpoint,
                ckpt,
                base,
                sides[ckpt],
                min_reported_gain,
                min_extraction_rate,
            )
            comp["task_type"] = types[benchmark]["task_type"]
            comparisons.append(comp)
            diffs.append(arrays)
    eligible = [i for i, c in enumerate(comparisons) if c["eligible"]]
    boot = _bootstrap(comparisons, diffs, n_boot=n_boot, seed=seed) if n_boot > 0 else None
    overall = _pool_group(comparisons, eligible, boot)
    result: dict[str, Any] = {
        "comparisons": comparisons,
        "pooled": overall["pooled"],
        "mean_of_shares": overall["mean_of_shares"],
        "mean_of_shares_ci": overall.get("mean_of_shares_ci"),
        "definitions": {"pooled": POOLED_DEFINITION, "mean_of_shares": MEAN_OF_SHARES_DEFINITION},
        "pair_contributions": overall["pair_contributions"],
        "box_rate": overall["box_rate"],
        "n_comparisons": len(comparisons),
        "n_eligible": len(eligible),
        "filters": {
            "min_reported_gain": min_reported_gain,
            "min_extraction_rate": min_extraction_rate,
            "base_checkpoint": base_checkpoint,
        },
        "task_types": types,
        "by": by,
        "groups": None,
        "skipped": skipped,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "unit": "question (paired base/RL)"},
    }
    for key in ("mean_of_shares_ci_undefined", "mean_of_shares_ci_reason", "mean_of_shares_error"):
        if key in overall:
            result[key] = overall[key]
    if by is not None:
        members: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(comparisons):
            members[c[by]].append(i)
        chosen = set(eligible)
        result["groups"] = {
            g: {"n_comparisons": len(idx), **_pool_group(comparisons, [i for i in idx if i in chosen], boot)}
            for g, idx in sorted(members.items())
        }
    result["warnings"] = _warnings(result, min_reported_gain, min_extraction_rate)
    return result


def _warnings(result: dict[str, Any], min_reported_gain: float, min_extraction_rate: float) -> list[str]:
    out = []
    if min_reported_gain <= 0:
        out.append(
            "eligibility: --min-reported-gain is 0, so any positive reported gain is pooled; seed 000 pools "
            'only "clearly positive" gains (it gives no number): set a threshold in points'
        )
    if min_extraction_rate <= 0:
        out.append(
            "eligibility: --min-extraction-rate is 0, so comparisons where the fixed reader extracts almost "
            'nothing are pooled; seed 000 pools only "adequate extraction" (it gives no number): set a share'
        )
    eligible_types = Counter(c["task_type"] for c in result["comparisons"] if c["eligible"])
    if result["by"] != "task_type" and len(eligible_types) > 1:
        mix = ", ".join(f"{t} {n}" for t, n in sorted(eligible_types.items()))
        out.append(
            f"the overall pool mixes task types ({mix} eligible comparisons); seed 000 asks to separate "
            "in-domain maths, out-of-domain multiple choice and free-form tasks: pool with --by task_type"
        )
    for bench, t in result["task_types"].items():
        if t["source"] == "items" and t["agreement"] is not None and t["agreement"] < MIXED_BELOW:
            items = ", ".join(f"{k} {v}" for k, v in t["items"].items())
            out.append(
                f"benchmark {bench!r} is typed {t['task_type']} by a {t['agreement']:.0%} majority of its "
                f"questions ({items}): check it, or set --task-type {bench}=TYPE"
            )
        elif t["task_type"] == UNKNOWN:
            out.append(f"benchmark {bench!r} has no task type (no gold or options): set --task-type {bench}=TYPE")
    if not result["n_eligible"]:
        out.append("no eligible comparison: nothing is pooled")
    return out


def _comparison(
    model: str,
    benchmark: str,
    prompt: str,
    base_ckpt: str,
    rl_ckpt: str,
    base: _Side,
    rl: _Side,
    min_reported_gain: float,
    min_extraction_rate: float,
) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray]]:
    paired = sorted(set(base.by_question) & set(rl.by_question))
    unpaired = {
        base_ckpt: len(set(base.by_question) - set(rl.by_question)),
        rl_ckpt: len(set(rl.by_question) - set(base.by_question)),
    }
    out: dict[str, Any] = {
        "model": model,
        "benchmark": benchmark,
        "prompt": prompt,
        "base_checkpoint": base_ckpt,
        "rl_checkpoint": rl_ckpt,
        "n_questions": len(paired),
        "unpaired_questions": unpaired,
    }
    if not paired:
        out.update(
            reported_gain=None,
            fixed_gain=None,
            format_share=None,
            format_share_error="the two checkpoints share no question",
            eligible=False,
            ineligible_reason="no paired questions",
            _box={BASE: {}, RL: {}},
        )
        return out, (np.zeros(0), np.zeros(0))
    per_side: dict[str, _SideStats] = {}
    box_counts: dict[str, dict[str, tuple[int, int]]] = {}
    for name, side in ((BASE, base), (RL, rl)):
        obs = [o for q in paired for o in side.by_question[q]]
        rep = sum((_q_acc(side.by_question[q], "reported") for q in paired), Fraction(0)) / len(paired)
        fix = sum((_q_acc(side.by_question[q], "fixed") for q in paired), Fraction(0)) / len(paired)
        extracted = [o for o in obs if o.fixed in EXTRACTED]
        # Per question (boxed, extracted), so that pooled box rates count a base response once even
        # when several RL checkpoints are compared with the same base.
        box_counts[name] = {
            q: (sum(o.has_box for o in ex), len(ex))
            for q in paired
            if (ex := [o for o in side.by_question[q] if o.fixed in EXTRACTED])
        }
        per_side[name] = {
            "n_responses": len(obs),
            "reported_accuracy": rep,
            "fixed_accuracy": fix,
            "reported_extraction_rate": Fraction(sum(o.reported in EXTRACTED for o in obs), len(obs)),
            "fixed_extraction_rate": Fraction(len(extracted), len(obs)),
            "box_rate": proportion(sum(o.has_box for o in extracted), len(extracted)),
            "failures": {
                v: n for v in ("error", "timeout") if (n := sum(o.reported == v or o.fixed == v for o in obs))
            },
        }
    out["_box"] = box_counts
    reported = _points(per_side[RL]["reported_accuracy"] - per_side[BASE]["reported_accuracy"])
    fixed = _points(per_side[RL]["fixed_accuracy"] - per_side[BASE]["fixed_accuracy"])
    out["reported_gain"] = float(reported)
    out["fixed_gain"] = float(fixed)
    out["_exact"] = (reported, fixed)
    if reported > 0:
        out["format_share"] = float((reported - fixed) / reported)
        out["format_share_error"] = None
    else:
        out["format_share"] = None
        out["format_share_error"] = (
            f"reported gain is {float(reported):.4g} points (≤ 0): "
            "the format share (reported − fixed) / reported is undefined"
        )
    for name in (BASE, RL):
        s = per_side[name]
        out[name] = {
            "n_responses": s["n_responses"],
            "reported_accuracy": float(s["reported_accuracy"]),
            "fixed_accuracy": float(s["fixed_accuracy"]),
            "reported_extraction_rate": float(s["reported_extraction_rate"]),
            "fixed_extraction_rate": float(s["fixed_extraction_rate"]),
            "box_rate": s["box_rate"],
            "failures": s["failures"],
        }
    reasons = []
    if reported <= 0:
        reasons.append("reported gain ≤ 0")
    elif reported <= Fraction(min_reported_gain).limit_denominator(10**9):
        reasons.append(f"reported gain {float(reported):.4g} ≤ threshold {min_reported_gain:g}")
    low = min(per_side[BASE]["fixed_extraction_rate"], per_side[RL]["fixed_extraction_rate"])
    if low < Fraction(min_extraction_rate).limit_denominator(10**9):
        reasons.append(f"fixed-reader extraction rate {float(low):.3f} < threshold {min_extraction_rate:g}")
    out["eligible"] = not reasons
    out["ineligible_reason"] = "; ".join(reasons) or None
    arrays = (
        np.array(
            [float(_q_acc(rl.by_question[q], "reported") - _q_acc(base.by_question[q], "reported")) for q in paired]
        ),
        np.array([float(_q_acc(rl.by_question[q], "fixed") - _q_acc(base.by_question[q], "fixed")) for q in paired]),
    )
    return out, arrays


def _pool_group(comparisons: list[dict[str, Any]], eligible: list[int], boot: dict[str, Any] | None) -> dict[str, Any]:
    """The pooled figures of one set of eligible comparisons (indices into `comparisons`)."""
    chosen = [comparisons[i] for i in eligible]
    out: dict[str, Any] = {
        "n_eligible": len(chosen),
        "box_rate": _box_rates(chosen),
        "pair_contributions": _pair_contributions(chosen),
        "benchmarks": sorted({c["benchmark"] for c in chosen}),
        "task_types": sorted({c.get("task_type", UNKNOWN) for c in chosen}),
    }
    if not chosen:
        out["pooled"] = {
            "reported_gain": None,
            "fixed_gain": None,
            "format_share": None,
            "n_comparisons": 0,
            "format_share_error": "no eligible comparison",
        }
        out["mean_of_shares"] = None
        out["mean_of_shares_error"] = "no eligible comparison"
        return out
    reps = [c["_exact"][0] for c in chosen]
    fixes = [c["_exact"][1] for c in chosen]
    total = sum(reps, Fraction(0))
    mean_rep = total / len(reps)
    mean_fix = sum(fixes, Fraction(0)) / len(fixes)
    shares = [(r - f) / r for r, f in zip(reps, fixes)]
    out["pooled"] = {
        "reported_gain": float(mean_rep),
        "fixed_gain": float(mean_fix),
        "format_share": float((mean_rep - mean_fix) / mean_rep),
        "n_comparisons": len(chosen),
        "summed_reported_gain": float(total),
    }
    out["pooled"]["largest_contributions"] = sorted(
        (
            {
                "model": c["model"],
                "benchmark": c["benchmark"],
                "prompt": c["prompt"],
                "rl_checkpoint": c["rl_checkpoint"],
                "share_of_summed_reported_gain": float(r / total),
            }
            for c, r in zip(chosen, reps)
        ),
        key=lambda d: -d["share_of_summed_reported_gain"],
    )[:5]
    out["mean_of_shares"] = float(sum(shares, Fraction(0)) / len(shares))
    if boot is not None:
        _pool_intervals(out, boot, eligible)
    return out


def _pair_contributions(chosen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (model, base, RL) pair: summed reported gain over its comparisons (benchmarks × prompts),
    its share of the pool's sum, and the running total in descending order (so "the top three
    pairs carry x %" is read off the third row)."""
    sums: dict[tuple[str, str, str], Fraction] = defaultdict(Fraction)
    counts: Counter = Counter()
    for c in chosen:
        key = (c["model"], c["base_checkpoint"], c["rl_checkpoint"])
        sums[key] += c["_exact"][0]
        counts[key] += 1
    total = sum(sums.values(), Fraction(0))
    out, running = [], Fraction(0)
    for key in sorted(sums, key=lambda k: (-sums[k], k)):
        running += sums[key]
        out.append(
            {
                "model": key[0],
                "base_checkpoint": key[1],
                "rl_checkpoint": key[2],
                "n_comparisons": counts[key],
                "summed_reported_gain": float(sums[key]),
                "share_of_summed_reported_gain": float(sums[key] / total),
                "cumulative_share": float(running / total),
            }
        )
    return out


def _box_rates(chosen: list[dict[str, Any]]) -> dict[str, Any]:
    """Box rate by role (base vs RL) over the given comparisons, among responses the fixed reader
    extracted, each response counted once (a base shared by several comparisons is not repeated);
    and per checkpoint name within each role."""
    seen: dict[str, dict[tuple, tuple[int, int]]] = {BASE: {}, RL: {}}
    for c in chosen:
        for role, ckpt in ((BASE, c["base_checkpoint"]), (RL, c["rl_checkpoint"])):
            for q, kn in c["_box"][role].items():
                seen[role][(c["model"], c["benchmark"], c["prompt"], ckpt, q)] = kn
    out: dict[str, Any] = {"scope": "eligible comparisons; responses the fixed reader extracted an answer from"}
    for role in (BASE, RL):
        cells = seen[role]
        out[role] = proportion(sum(k for k, _ in cells.values()), sum(n for _, n in cells.values()))
        per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for key, (k, n) in cells.items():
            per[key[3]][0] += k
            per[key[3]][1] += n
        out[f"{role}_by_checkpoint"] = {ck: proportion(k, n) for ck, (k, n) in sorted(per.items())}
    return out


def _bootstrap(
    comparisons: list[dict[str, Any]],
    diffs: list[tuple[np.ndarray, np.ndarray]],
    *,
    n_boot: int,
    seed: int,
    chunk: int = 250,
) -> dict[str, Any]:
    """Per-comparison resampled gains (and their intervals on each comparison); the pools take
    their intervals from the same resamples."""
    rng = np.random.default_rng(seed)
    reps = np.full((len(comparisons), n_boot), np.nan)
    fixes = np.full((len(comparisons), n_boot), np.nan)
    for i, (d_rep, d_fix) in enumerate(diffs):
        m = d_rep.size
        if m == 0:
            continue
        for start in range(0, n_boot, chunk):
            size = min(chunk, n_boot - start)
            idx = rng.integers(0, m, size=(size, m))
            reps[i, start : start + size] = 100 * d_rep[idx].mean(axis=1)
            fixes[i, start : start + size] = 100 * d_fix[idx].mean(axis=1)
    for i, c in enumerate(comparisons):
        if not c["n_questions"]:
            c.update(reported_gain_ci=None, fixed_gain_ci=None, format_share_ci=None)
            continue
        c["reported_gain_ci"] = _ci(reps[i])
        c["fixed_gain_ci"] = _ci(fixes[i])
        shares = _shares(reps[i], fixes[i])
        c["format_share_ci"], c["format_share_ci_undefined"] = _share_ci(shares)
        _explain(c, "format_share_ci", c["format_share_ci_undefined"])
    return {"reps": reps, "fixes": fixes}


def _pool_intervals(group: dict[str, Any], boot: dict[str, Any], eligible: list[int]) -> None:
    r, f = boot["reps"][eligible], boot["fixes"][eligible]
    mean_r, mean_f = r.mean(axis=0), f.mean(axis=0)
    pooled = group["pooled"]
    pooled["reported_gain_ci"] = _ci(mean_r)
    pooled["fixed_gain_ci"] = _ci(mean_f)
    pooled["format_share_ci"], pooled["format_share_ci_undefined"] = _share_ci(_shares(mean_r, mean_f))
    _explain(pooled, "format_share_ci", pooled["format_share_ci_undefined"])
    per = _shares(r, f)
    ms = np.where(np.isnan(per).any(axis=0), np.nan, per.mean(axis=0))
    group["mean_of_shares_ci"], group["mean_of_shares_ci_undefined"] = _share_ci(ms)
    _explain(group, "mean_of_shares_ci", group["mean_of_shares_ci_undefined"])


def _explain(target: dict[str, Any], key: str, undefined: float) -> None:
    if target.get(key) is None:
        target[f"{key}_reason"] = (
            f"the reported gain is ≤ 0 in {undefined:.1%} of bootstrap resamples, so the "
            "share is undefined there; an interval over the rest would be biased"
        )


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
        c.pop("_box", None)
    return result
