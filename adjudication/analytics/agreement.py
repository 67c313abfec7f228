"""Reader agreement with the final human labels, human–human agreement, and the selection note.

Pure functions over plain records (the database selectors build them; tests build them by hand).
Definitions (docs/analytics.md has the full list):

Per reader, over the whole dataset (no humans needed), with Wilson intervals:
  accuracy = correct / n, extraction rate = (correct + incorrect) / n,
  coverage = (n − error − timeout) / n, where n = every response the reader read.

Per reader against the final human labels (items with a usable final label):
  verdict agreement = the reader's verdict equals the human verdict (= `accuracy` of bias.py, with
  no_answer counted as incorrect and error/timeout left out), Cohen's κ on those verdicts, and the
  whole judge-bias block (bias.py); answer agreement = the reader's answer equals the human answer
  (a reader's no_answer agrees with a human "no answer"; error/timeout left out; judges give
  verdicts, not answers, so they have none).

Selection (routing by disagreement): review items are (a) every response the routing panel
disputed and (b) optionally a random share `control_fraction` of the undisputed ones (controls).
Estimates over all reviewed items are therefore conditional on "the readers disagreed or were
sampled", not population estimates: reader–human agreement, κ, accuracy against humans, bias and
false-accept/false-reject rates, and human–human agreement (disputed items are the hard ones)
are all biased by that selection. Controls are a random sample of the undisputed stratum, so
estimates on them are unbiased for that stratum; the population estimate combines both strata,
weighting each by its size (disputed: every routed disputed response; undisputed: every response
the panel read minus the disputed ones), with a stratified bootstrap interval.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adjudication.analytics.bias import judge_bias, producer_binary
from adjudication.analytics.stats import (
    Level,
    all_agree_rate,
    krippendorff_alpha,
    pairwise,
    percentile_interval,
    proportion,
)
from adjudication.routing.rules import answer_key

NO_ANSWER = "∅"  # the answer key of "no answer" (reader no_answer, human label kind no_answer)
DIMENSIONS = ("model", "checkpoint", "benchmark")


@dataclass(frozen=True)
class ReaderObs:
    """One reading of one response."""

    response: str
    reader: str
    verdict: str
    answer: str | None = None  # the reader's normalized answer (None when it found none)
    kind: str = "rule"  # rule | regeneration | judge
    model: str = ""
    checkpoint: str = ""
    benchmark: str = ""


@dataclass(frozen=True)
class HumanObs:
    """The current final human label of one response."""

    response: str
    verdict: str | None  # correct / incorrect; None = no usable verdict (ambiguous, unresolved)
    answer: str | None  # the human answer; NO_ANSWER for "no answer"; None when ambiguous
    is_control: bool = False
    policy: str = ""


@functools.lru_cache(maxsize=65536)
def answers_agree(reader_answer: str | None, human_answer: str) -> bool:
    """Same answer? Light canonical forms first (routing.answer_key), then for non-letters the
    fixed reader's equivalence rules without SymPy (exact numbers, fractions, sets, text).
    Remembered: a function of its two texts, asked once per reading and scope of every labelled
    response (400,000 times at 100,000 responses) about a few distinct pairs."""
    if human_answer == NO_ANSWER or reader_answer is None:
        return (reader_answer is None) and human_answer == NO_ANSWER
    a, b = answer_key(reader_answer), answer_key(human_answer)
    if a == b:
        return True
    if a is None or b is None or (len(a) == 1 and len(b) == 1):
        return False
    from readers.answer.model import math_equal

    return math_equal(reader_answer, human_answer, use_sympy=False).equal


def human_verdict(
    kind: str, answer: str, correctness: str, gold: str, choices: list[str] | tuple[str, ...] = ()
) -> tuple[str | None, str | None]:
    """(verdict, answer) of a final human label.

    The label's own correctness wins when the queue asked for it. Otherwise: an option letter is
    correct iff it is the gold letter; option text on a multiple-choice question iff it is the gold
    option's text (case and spacing ignored); free text on an open question iff the fixed
    reader's equivalence rules (without SymPy) find it equal to the gold; "no answer" is
    incorrect (the response gives none); ambiguous / unresolved / skipped give no verdict."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if kind == "no_answer":
        return (correctness or "incorrect"), NO_ANSWER
    if kind not in ("option", "text"):
        return None, None
    text = (answer or "").strip()
    if correctness in ("correct", "incorrect"):
        return correctness, text or None
    g = gold.strip().strip("()").strip().upper()
    if kind == "option":
        return ("correct" if text.strip("()").strip().upper() == g else "incorrect"), text
    if choices:
        # Option text stands for its letter (so it can agree with a reader's letter).
        key = " ".join(text.split()).casefold()
        picked = next((letters[i] for i, c in enumerate(choices) if " ".join(c.split()).casefold() == key), None)
        if picked is None:
            return "incorrect", text  # not any option's text: not the gold option
        return ("correct" if picked == g else "incorrect"), picked
    from readers.answer.model import math_equal

    return ("correct" if math_equal(text, gold, use_sympy=False).equal else "incorrect"), text


# ---------------------------------------------------------------------------------------------
# readers alone
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictCount:
    """How many readings of one reader, on one run's responses, had one verdict (a grouped row of
    the database, or one reading counted once)."""

    reader: str
    verdict: str
    n: int
    model: str = ""
    checkpoint: str = ""
    benchmark: str = ""


def overview_from_counts(counts: Iterable[VerdictCount], by: str | None = None) -> dict[str, dict[str, Any]]:
    """{reader: {group: {n, verdicts, accuracy, extraction_rate, coverage (each with k/n/rate/ci)}}}
    from verdict counts; `by` (model, checkpoint or benchmark) groups them, else one group "all"."""
    totals: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for c in counts:
        group = (getattr(c, by) or "-") if by else "all"
        totals[c.reader][group][c.verdict] += c.n
    out: dict[str, dict[str, Any]] = {}
    for reader in sorted(totals):
        out[reader] = {}
        for group, v in sorted(totals[reader].items()):
            n = sum(v.values())
            out[reader][group] = {
                "n": n,
                "verdicts": dict(sorted((k, x) for k, x in v.items() if x)),
                "accuracy": proportion(v["correct"], n),
                "extraction_rate": proportion(v["correct"] + v["incorrect"], n),
                "coverage": proportion(n - v["error"] - v["timeout"], n),
            }
    return out


def reader_overview(obs: Iterable[ReaderObs], by: str | None = None) -> dict[str, dict[str, Any]]:
    """The same as overview_from_counts, each reading counted once."""
    return overview_from_counts(
        (VerdictCount(o.reader, o.verdict, 1, o.model, o.checkpoint, o.benchmark) for o in obs), by=by
    )


# ---------------------------------------------------------------------------------------------
# readers against humans
# ---------------------------------------------------------------------------------------------


def _vs_human_one(pairs: list[tuple[ReaderObs, HumanObs]], *, seed: int) -> dict[str, Any]:
    stats = judge_bias([(r.verdict, h.verdict) for r, h in pairs], seed=seed)
    judges = {r.kind for r, _ in pairs} == {"judge"}
    if judges:
        stats["answer_agreement"] = None
        stats["answer_agreement_reason"] = "a judge gives verdicts, not answers"
    else:
        # Each distinct (reader answer, human answer) pair compared once, weighted by how often it
        # occurs: the same count as comparing every item.
        usable = Counter(
            (r.answer if r.verdict in ("correct", "incorrect") else None, h.answer)
            for r, h in pairs
            if h.answer is not None and r.verdict not in ("error", "timeout")
        )
        agree = sum(k for (said, answer), k in usable.items() if answers_agree(said, answer))
        stats["answer_agreement"] = proportion(agree, sum(usable.values()))
    return stats


def vs_human(
    obs: Iterable[ReaderObs],
    human: Mapping[str, HumanObs],
    *,
    scope: str = "reviewed",
    by: str | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """{reader: {group: stats}} on the reviewed items of `scope`: "reviewed" (all), "controls"
    (is_control) or "disputed" (routed by disagreement)."""
    return _vs_human_paired(_paired(obs, human), scope=scope, by=by, seed=seed)


def _paired(obs: Iterable[ReaderObs], human: Mapping[str, HumanObs]) -> list[tuple[ReaderObs, HumanObs]]:
    """Each reading of a labelled response with its final label, in the readings' order: looked up
    once for the report's six tables (scopes and dimensions), not once per table."""
    return [(o, h) for o in obs if (h := human.get(o.response)) is not None]


def _vs_human_paired(
    paired: list[tuple[ReaderObs, HumanObs]], *, scope: str, by: str | None, seed: int
) -> dict[str, dict[str, Any]]:
    grouped: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for o, h in paired:
        if not _in_scope(h, scope):
            continue
        group = (getattr(o, by) or "-") if by else "all"
        grouped[o.reader][group].append((o, h))
    return {
        reader: {g: _vs_human_one(pairs, seed=seed) for g, pairs in sorted(groups.items())}
        for reader, groups in sorted(grouped.items())
    }


def _in_scope(h: HumanObs, scope: str) -> bool:
    return scope == "reviewed" or (scope == "controls") == h.is_control


# ---------------------------------------------------------------------------------------------
# the population estimate (stratified by routing)
# ---------------------------------------------------------------------------------------------


def stratified(
    obs: Iterable[ReaderObs],
    human: Mapping[str, HumanObs],
    *,
    policy: str,
    n_disputed: int,
    n_undisputed: int,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Population estimates for one routing policy: each stratum's rate weighted by its size.

    n_disputed: responses the policy routed as disputed; n_undisputed: responses the panel read
    and agreed on (controls were drawn from these). Rates per stratum are over labelled items."""
    out: dict[str, Any] = {"policy": policy, "n_disputed": n_disputed, "n_undisputed": n_undisputed, "readers": {}}
    total = n_disputed + n_undisputed
    if total == 0:
        out["error"] = "the policy routed nothing"
        return out
    w = {"disputed": n_disputed / total, "controls": n_undisputed / total}
    per_reader: dict[str, dict[str, list]] = defaultdict(lambda: {"disputed": [], "controls": []})
    for o in obs:
        h = human.get(o.response)
        if h is None or h.policy != policy:
            continue
        jb, hb = producer_binary(o.verdict), h.verdict if h.verdict in ("correct", "incorrect") else None
        if jb is None or hb is None:
            continue
        per_reader[o.reader]["controls" if h.is_control else "disputed"].append(
            (jb == hb, jb == "correct", hb == "correct")
        )
    # Every reader's bootstrap starts from the same seed, so readers with as many labelled items
    # per stratum draw the same resamples: drawn once, summed for all of them at once.
    prepared: dict[str, dict[str, np.ndarray]] = {}
    for reader, strata in sorted(per_reader.items()):
        missing = [s for s in ("disputed", "controls") if w[s] > 0 and not strata[s]]
        if missing:
            out["readers"][reader] = {
                "n_labelled": {s: len(v) for s, v in strata.items()},
                "error": (
                    f"no labelled {' or '.join(missing)} item(s): that stratum "
                    f"({', '.join(f'{w[s]:.1%}' for s in missing)} of the population) is unobserved"
                ),
            }
            continue
        prepared[reader] = {s: np.array(v, dtype=float).reshape(-1, 3) for s, v in strata.items()}
    by_sizes: dict[tuple[int, ...], list[str]] = defaultdict(list)
    for reader, arrays in prepared.items():
        by_sizes[tuple(len(a) for a in arrays.values())].append(reader)
    boot_sums: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    for readers in by_sizes.values():
        if n_boot <= 0:
            break
        rng = np.random.default_rng(seed)
        # The drawn indices (what resample_counts draws, in the same order).
        for s, a in prepared[readers[0]].items():
            if not a.size:
                continue
            drawn = rng.integers(0, len(a), size=(n_boot, len(a)))
            sums = resampled_sums_stacked(drawn, [prepared[reader][s] for reader in readers])
            for reader, summed in zip(readers, sums, strict=True):
                boot_sums[reader][s] = summed

    def estimate(means: dict[str, np.ndarray]) -> np.ndarray:
        weighted = sum(w[s] * m for s, m in means.items() if w[s] > 0)
        assert isinstance(weighted, np.ndarray)  # total > 0: some stratum has a positive weight
        return weighted

    for reader, arrays in sorted(prepared.items()):
        entry: dict[str, Any] = {"n_labelled": {s: len(a) for s, a in arrays.items()}}
        point = estimate({s: a.mean(axis=0) for s, a in arrays.items() if a.size})
        boots = n_boot > 0
        boot_means = {s: summed / len(arrays[s]) for s, summed in boot_sums[reader].items()}
        boots_arr = estimate(boot_means) if boots else np.zeros((0, 3))
        names = ("accuracy", "judge_correct_rate", "human_correct_rate")
        for j, name in enumerate(names):
            entry[name] = float(point[j])
            ci = percentile_interval(boots_arr[:, j]) if boots else None
            entry[f"{name}_ci"] = list(ci) if ci else None
        entry["bias"] = float(point[1] - point[2])
        ci = percentile_interval(boots_arr[:, 1] - boots_arr[:, 2]) if boots else None
        entry["bias_ci"] = list(ci) if ci else None
        out["readers"][reader] = entry
    out["readers"] = dict(sorted(out["readers"].items()))
    out["weights"] = w
    return out


def resample_counts(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """(n_boot, n): how often each of n items is drawn in each of n_boot resamples with
    replacement, from `rng.integers(0, n, size=(n_boot, n))`. `counts @ a / n` is then each
    resample's mean of `a`, the same floats as `a[draws].mean(axis=1)` for 0/1 values (every sum is
    an exact integer) without the (n_boot, n, columns) array: 16 s → under 2 s for 18 readers at
    10,000 labels (bench/analytics_bench.py)."""
    drawn = rng.integers(0, n, size=(n_boot, n))
    drawn += (np.arange(n_boot) * n)[:, None]
    return np.bincount(drawn.ravel(), minlength=n_boot * n).reshape(n_boot, n)


def resampled_sums(drawn: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(n_boot, columns): each resample's column sums of `a` (n, columns), the resamples given as
    drawn row indices (n_boot, n): `resample_counts(...) @ a` for the same draws, the same floats.
    With 0/1 columns (the agreement tables' case) the item's columns are the bits of one byte: one
    gather of bytes and a count of set bits per column, instead of an (n_boot, n) count matrix and
    its product (14 of those were ~4 s of a 100,000-response report; issue 36 item 15). Every sum
    is an integer below 2^53, exact whichever way it is added."""
    columns = a.shape[1]
    if not 0 < columns <= 8 or not np.isin(a, (0.0, 1.0)).all():
        n_boot, n = drawn.shape
        flat = drawn + (np.arange(n_boot) * n)[:, None]
        counts = np.bincount(flat.ravel(), minlength=n_boot * n).reshape(n_boot, n)
        return counts.astype(float) @ a
    pattern = (a.astype(np.int64) @ (1 << np.arange(columns))).astype(np.uint8)
    drawn_pattern = pattern[drawn]
    sums = [np.count_nonzero(drawn_pattern & np.uint8(1 << j), axis=1) for j in range(columns)]
    return np.stack(sums, axis=1).astype(float)


def resampled_sums_stacked(drawn: np.ndarray, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """resampled_sums(drawn, a) for each of `arrays` (one resampling, several readers' columns),
    the same floats. With 0/1 columns each resample's item counts are counted once, as float32, and
    every array's sums are one matrix product: every product and partial sum is an integer no larger
    than n < 2^24, exact in float32 whatever the order of addition. 18 readers' tables of a
    100,000-response report: 1.9 s of per-reader bit counts → 0.6 s (issue 36 item 15)."""
    if not arrays:
        return []
    n_boot, n = drawn.shape
    stacked = np.hstack(arrays)
    if n >= 2**24 or not np.isin(stacked, (0.0, 1.0)).all():
        return [resampled_sums(drawn, a) for a in arrays]
    counts = np.empty((n_boot, n), dtype=np.float32)
    for b in range(n_boot):  # a row at a time: a flat bincount over n_boot * n bins is 3x slower
        counts[b] = np.bincount(drawn[b], minlength=n)
    sums = (counts @ stacked.astype(np.float32)).astype(float)
    return np.split(sums, np.cumsum([a.shape[1] for a in arrays])[:-1], axis=1)


# ---------------------------------------------------------------------------------------------
# humans against humans
# ---------------------------------------------------------------------------------------------


def human_human(
    ratings: Mapping[str, Mapping[str, str]], *, level: Level = "nominal", value_order: list | None = None
) -> dict[str, Any]:
    """{annotator: {item: category}} -> percent agreement (all raters equal, items with ≥ 2
    ratings), pairwise agreement and Cohen's κ, and Krippendorff's α."""
    return {
        "annotators": len(ratings),
        "items_with_two_or_more": all_agree_rate(ratings)["n"],
        "percent_agreement": all_agree_rate(ratings),
        "pairwise": pairwise(ratings),
        "krippendorff_alpha": krippendorff_alpha(ratings, level=level, value_order=value_order),
        "level": level,
    }


# ---------------------------------------------------------------------------------------------
# the whole report
# ---------------------------------------------------------------------------------------------

BIASED_BY_SELECTION = (
    "reader–human verdict agreement, answer agreement and Cohen's κ",
    "accuracy against humans",
    "judge bias, false-accept and false-reject rates",
    "human–human agreement",
)


def selection_note(human: Mapping[str, HumanObs], *, routed_controls: int | None = None) -> dict[str, Any]:
    """What the labels' selection lets the report say. `routed_controls`: how many control items the
    dataset's policies routed, labelled or not (None: not known), so that a queue whose controls
    are only not labelled yet is not told to route some."""
    disputed = sum(not h.is_control for h in human.values())
    controls = sum(h.is_control for h in human.values())
    routed = disputed > 0
    note: dict[str, Any] = {
        "labelled_disputed": disputed,
        "labelled_controls": controls,
        "routed_by_disagreement": routed,
    }
    if not human:
        note["text"] = "No final human labels yet: nothing to compare the readers with."
        note["preferred_scope"] = "reviewed"
    elif routed:
        note["biased_estimates"] = list(BIASED_BY_SELECTION)
        note["text"] = (
            "Review items were routed by reader disagreement, so estimates over all reviewed items describe "
            "disputed responses (the hard ones), not the dataset. "
            + (
                "Estimates on the control items (a random sample of undisputed responses) are unbiased for the "
                "undisputed stratum; the population estimate weights both strata by their size."
                if controls
                else _no_labelled_controls(routed_controls)
            )
        )
        note["preferred_scope"] = "controls" if controls else "reviewed"
    else:
        note["text"] = (
            "Only control items (a random sample) are labelled: estimates are unbiased for the sampled stratum."
        )
        note["preferred_scope"] = "reviewed"
    return note


def _no_labelled_controls(routed_controls: int | None) -> str:
    if routed_controls:
        return (
            f"None of the {routed_controls} control item{'s' if routed_controls != 1 else ''} (a random sample of "
            "the undisputed responses, served among the disputed items from the start of the queue) is labelled "
            "yet: nothing here is a population estimate until some are."
        )
    return (
        "No control items were routed, so nothing here is a population estimate: the undisputed responses "
        "have no random sample. Route a queue with a control fraction > 0 (the queue form's Controls, "
        "--control-fraction) to draw one."
    )


def report(
    obs: list[ReaderObs],
    human: Mapping[str, HumanObs],
    *,
    counts: list[VerdictCount] | None = None,
    annotator_ratings: Mapping[str, Mapping[str, str]] | None = None,
    control_ids: set[str] | None = None,
    strata: list[dict[str, Any]] | None = None,
    routed_controls: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The whole agreement report. The readers' overview (no humans) comes from `counts` when given
    (the database groups them), else from `obs`; everything against humans reads only the readings
    of labelled responses, so `obs` may be just those."""
    note = selection_note(human, routed_controls=routed_controls)
    if counts is None:
        counts = [VerdictCount(o.reader, o.verdict, 1, o.model, o.checkpoint, o.benchmark) for o in obs]
    paired = _paired(obs, human)
    scopes = ["reviewed"] + (
        ["disputed", "controls"] if note["labelled_controls"] and note["labelled_disputed"] else []
    )
    out: dict[str, Any] = {
        "selection": note,
        "readers": overview_from_counts(counts),
        "readers_by": {d: overview_from_counts(counts, by=d) for d in DIMENSIONS},
        "vs_human": {s: _vs_human_paired(paired, scope=s, by=None, seed=seed) for s in scopes},
        "vs_human_by": {
            d: _vs_human_paired(paired, scope=note["preferred_scope"], by=d, seed=seed) for d in DIMENSIONS
        },
        "population": [stratified(obs, human, seed=seed, **s) for s in (strata or [])],
    }
    if annotator_ratings is not None:
        hh = {"reviewed": human_human(annotator_ratings)}
        if control_ids:
            hh["controls"] = human_human(
                {a: {i: v for i, v in r.items() if i in control_ids} for a, r in annotator_ratings.items()}
            )
        out["human_human"] = hh
    preferred = out["vs_human"].get(note["preferred_scope"], {})
    out["producers"] = {
        reader: {"scope": note["preferred_scope"], **groups["all"]} for reader, groups in preferred.items()
    }
    return out


def report_of(inputs: Mapping[str, Any], *, seed: int) -> dict[str, Any]:
    """The whole report over what analytics.selectors.agreement_inputs read of a dataset."""
    return report(
        inputs["obs"],
        inputs["human"],
        counts=inputs["counts"],
        annotator_ratings=inputs["annotator_ratings"],
        control_ids=inputs["control_ids"],
        strata=inputs["strata"],
        routed_controls=inputs.get("routed_controls"),
        seed=seed,
    )
