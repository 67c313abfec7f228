"""estimate-validation: the prediction-powered estimates (adjudication/analytics/estimates.py)
against real human labels, under the platform's own sampling designs (docs/estimates.md,
"Validation on real labels").

    python -m scripts.realdata estimate-validation [--quick] [--json] [--seeds N] [--processes 2]

The four data sets of consensus-validation (answer matching's gpqa_diamond and mmlu_pro, EVOUNA's
NQ and TQ), loaded once with the same readers and judges (scripts/realdata.py). The truth of every
item is its human label; the population of every estimate is every item of the set. Each seed
replays the two designs the routing records, at each label budget, and every estimate is compared
with the target's value on the whole population's human labels:

* **disputed** — the responses on which two named readers' verdicts differ
  (routing.rules.decide) are all routed (π = 1 of being routed); of the rest, a seeded Bernoulli
  (routing.rules.is_control) draws 10 % as controls. routing.rules.controls_spread gives the
  controls the disputes' priorities, and the queue serves by priority and, within equal priority,
  in a seeded shuffle (routing.services.tiebreak's rule), so a budget of n labels labels a prefix
  that is a simple random sample within each cell. Cells: "disputed" (N_c = the disputed
  responses, π = labelled / N_c) and "control" (N_c = the other responses, π = 0.1 × labelled
  controls / routed controls). A budget beyond the queue labels the whole queue and is counted as
  capped.
* **information** — randomized information routing: π_i = min(1, k·q_i) with
  q_i = (1 − δ)·√v_i / Σ√v + δ/N, δ = allocation.INFORMATION_FLOOR (0.5), v the label values of the pooled accuracy
  (allocation.label_values on a consensus fit with no label), the mass above 1 redistributed
  (allocation.inclusion_probabilities); a Poisson draw (allocation.draw_uniform: each response
  independently, with its π_i); one cell "information" with N_c = the population.

Beside the estimator (machine, human only, prediction-powered), today's estimators measured on the
same draws: the consensus with no label (a machine number: its error only), the labels' plain share
on the labelled subset (what `format_share --fixed-reader human` and the judge-bias table do) and
the stratified estimate of the analytics' policy-weighted figures (agreement.stratified: each
routing stratum's labelled mean weighted by its size, a stratified percentile bootstrap).
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import pickle
import re
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from adjudication.analytics import estimates
from adjudication.analytics.agreement import resample_counts
from adjudication.analytics.allocation import (
    INFORMATION_FLOOR,
    Target,
    draw_uniform,
    inclusion_probabilities,
    label_values,
)
from adjudication.analytics.consensus import consensus
from adjudication.analytics.estimates import Frame, Population, Sample, producer_predictor, vote_predictor
from adjudication.analytics.stats import ALPHA, jsonable
from adjudication.routing.rules import PanelReading, controls_spread, decide, is_control

BUDGETS = (50, 100, 200, 400)
DESIGNS = ("disputed", "information")
CONTROL_FRACTION = 0.1
FLOOR = INFORMATION_FLOOR  # δ: the information design's uniform share (allocation.design_floor at 10 % controls)
FULL_SEEDS = 1000
QUICK_SEEDS = 60
N_BOOT = 200  # the estimator's ratio bootstrap and the stratified estimate's (the analytics use 2000)
BAND = (0.93, 0.97)  # the acceptance band of the nominal 95 % interval's coverage
MAJORITY = "majority"
# The good judge's width ratio: under randomized information routing (the design made for
# estimates: human only there is the inverse-probability-weighted share), and under the disputed
# design beside it (human only there is already stratified by the dispute, which narrows it).
GOOD_JUDGE = ("gpqa_diamond", "information", "judge:deepseek-chat-v3-0324", "accuracy", 100)
GOOD_JUDGE_DISPUTED = ("gpqa_diamond", "disputed", "judge:deepseek-chat-v3-0324", "accuracy", 100)


@dataclass(frozen=True)
class SetPlan:
    """What one data set is asked: the two readers whose disagreement routes, the producer whose
    errors are targets, the two models standing in for two checkpoints, the reader whose reported
    gain the format share divides by, and the predictors (name, how good: "good", "bad", "vote")."""

    disputed_by: tuple[str, str]
    producer: str
    gain: tuple[str, str]
    format_reader: str
    predictors: tuple[tuple[str, str], ...]


JUDGE = "judge:deepseek-chat-v3-0324"
EVOUNA_PLAN = SetPlan(
    disputed_by=("qa-contains", "qa-exact-match"),
    producer="qa-contains",
    gain=("GPT-3.5", "GPT-4"),
    format_reader="qa-contains",
    predictors=(("qa-contains", "fair"), ("qa-exact-match", "bad"), (MAJORITY, "vote")),
)
PLANS: dict[str, SetPlan] = {
    # fixed's reported gain gpt-4o → qwen3-32b is +7.4 points (the humans': +9.9).
    "gpqa_diamond": SetPlan(
        disputed_by=("fixed", JUDGE),
        producer=JUDGE,
        gain=("gpt-4o", "qwen3-32b"),
        format_reader="fixed",
        predictors=((JUDGE, "good"), ("fixed", "fair"), (MAJORITY, "vote")),
    ),
    # fixed's reported gain gemma-3 → llama-4 is negative (−1.9 points), so the format share is
    # taken under the judge (+8.3; the humans': +12.9).
    "mmlu_pro": SetPlan(
        disputed_by=("fixed", JUDGE),
        producer=JUDGE,
        gain=("gemma-3-27b-it", "llama-4-maverick"),
        format_reader=JUDGE,
        predictors=((JUDGE, "good"), ("fixed", "bad"), (MAJORITY, "vote")),
    ),
    "NQ": EVOUNA_PLAN,
    "TQ": EVOUNA_PLAN,
}


# ---------------------------------------------------------------------------------------------
# targets, as today's estimators see them: a smooth g of means of per-response terms ψ_k(y)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetSpec:
    """One target: its text for the estimator, and its terms ψ_k(y_i) = α_ik·y_i + β_ik (rows k)
    with g(means) its value; g works on (..., K) arrays and gives nan where undefined."""

    text: str
    alpha: np.ndarray  # (K, N)
    beta: np.ndarray  # (K, N)
    g: Callable[[np.ndarray], np.ndarray]
    # Today's stratified estimate of it: g of each stratum's means, weighted (agreement.stratified's
    # form, for the figures the analytics stratify: a producer's agreement and bias), or g of the
    # stratum-weighted means (its extension to the figures they do not: accuracy of a group, gain,
    # format share, false-accept and false-reject rates; the pooled accuracy is the same either way).
    separate: bool = False

    def terms(self, y: np.ndarray) -> np.ndarray:
        """(N, K): every response's ψ_k at truths y (0/1 or probabilities)."""
        return (self.alpha * y + self.beta).T


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _g_mean(m: np.ndarray) -> np.ndarray:
    return m[..., 0]


def _g_ratio(m: np.ndarray) -> np.ndarray:
    return _ratio(m[..., 0], m[..., 1])


def _g_gain(m: np.ndarray) -> np.ndarray:
    return _ratio(m[..., 2], m[..., 3]) - _ratio(m[..., 0], m[..., 1])


# A reported gain this close to 0 is 0 (two equal shares subtracted in floating point): format_share
# computes in exact fractions and calls a share of no gain undefined.
NO_GAIN = 1e-9


def _g_format_share(m: np.ndarray) -> np.ndarray:
    reported = _ratio(m[..., 5], m[..., 3]) - _ratio(m[..., 4], m[..., 1])
    gained = reported > NO_GAIN
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gained, 1 - _g_gain(m) / np.where(gained, reported, 1.0), np.nan)


def target_specs(
    *, models: np.ndarray, model_names: Sequence[str], verdicts: dict[str, np.ndarray], plan: SetPlan
) -> list[TargetSpec]:
    """The targets of one data set: pooled accuracy, each model's accuracy, the gain between the
    plan's two models and its format share under the plan's reader, and the producer's agreement,
    bias, false-accept and false-reject rates. `verdicts`: producer -> per-response verdict code
    (1 correct, 0 incorrect, −1 anything else: a producer's no_answer is not a vote here, as in the
    consensus fit; the format share's reported gain counts it as not correct, as a harness would)."""
    n = len(models)
    zero, one = np.zeros(n), np.ones(n)
    member = {m: (models == k).astype(float) for k, m in enumerate(model_names)}
    specs = [TargetSpec("accuracy", one[None], zero[None], _g_mean)]
    for m in model_names:
        specs.append(TargetSpec(f"accuracy:{m}", np.stack([member[m], zero]), np.stack([zero, member[m]]), _g_ratio))
    base, rl = plan.gain
    a, b = member[base], member[rl]
    specs.append(TargetSpec(f"gain:{base},{rl}", np.stack([a, zero, b, zero]), np.stack([zero, a, zero, b]), _g_gain))
    said = (verdicts[plan.format_reader] == 1).astype(float)
    specs.append(
        TargetSpec(
            f"format-share:{base},{rl},{plan.format_reader}",
            np.stack([a, zero, b, zero, zero, zero]),
            np.stack([zero, a, zero, b, said * a, said * b]),
            _g_format_share,
        )
    )
    v = verdicts[plan.producer]
    voted = (v >= 0).astype(float)
    accept = (v == 1).astype(float)
    p = plan.producer
    specs += [
        # [v = y] = v·y + (1 − v)(1 − y) on the responses the producer voted on
        TargetSpec(
            f"agreement:{p}",
            np.stack([voted * (2 * accept - 1), zero]),
            np.stack([voted * (1 - accept), voted]),
            _g_ratio,
            separate=True,
        ),
        TargetSpec(f"bias:{p}", np.stack([-voted, zero]), np.stack([voted * accept, voted]), _g_ratio, separate=True),
        TargetSpec(
            f"false-accept:{p}", np.stack([-voted * accept, -voted]), np.stack([voted * accept, voted]), _g_ratio
        ),
        TargetSpec(f"false-reject:{p}", np.stack([voted * (1 - accept), voted]), np.stack([zero, zero]), _g_ratio),
    ]
    return specs


# ---------------------------------------------------------------------------------------------
# one data set, ready to simulate
# ---------------------------------------------------------------------------------------------

VERDICT_CODE = {"correct": 1, "incorrect": 0}


@dataclass
class Prepared:
    """Everything a draw needs, computed once: the population's truths, the disputed responses, the
    information design's base probabilities q, every target's terms at the truth (for today's
    estimators), the consensus with no label, and one estimator Frame per predictor."""

    name: str
    plan: SetPlan
    items: list[str]
    y: np.ndarray
    model_names: list[str]
    specs: list[TargetSpec]
    truth: dict[str, float]
    consensus: dict[str, float | None]
    disputed: np.ndarray
    strength: np.ndarray  # each disputed response's priority (rules.Decision.strength)
    values: dict[str, float]  # each response's label value for the pooled accuracy (no label)
    floor: float  # the information design's δ
    psi: np.ndarray  # (N, Σ K): the targets' terms at the true labels, side by side
    slices: list[slice]
    frames: dict[str, Frame]
    predictor_agreement: dict[str, dict[str, float]]
    panel: list[str]
    seconds: float = 0.0

    _inclusion: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.items)

    def inclusion(self, k: int) -> np.ndarray:
        """information_probabilities(self, k), computed once per budget (before the workers fork)."""
        if k not in self._inclusion:
            self._inclusion[k] = information_probabilities(self, k)
        return self._inclusion[k]


def prepare(vs: Any, plan: SetPlan, *, floor: float = FLOOR) -> Prepared:
    """vs: a realdata.ValidationSet (its truth, votes and answering models); floor: the information
    design's δ."""
    started = time.monotonic()
    items = sorted(vs.truth)
    position = {item: k for k, item in enumerate(items)}
    y = np.array([vs.truth[i] == "correct" for i in items], dtype=np.int64)
    model_names = sorted(set(vs.model_of.values()))
    models = np.array([model_names.index(vs.model_of[i]) for i in items])
    said: dict[str, dict[str, str]] = defaultdict(dict)
    for item, producer, verdict in vs.votes:
        said[producer][item] = verdict
    panel = sorted(said)
    codes = {p: np.full(len(items), -1) for p in panel}
    for p, verdicts in said.items():
        for item, verdict in verdicts.items():
            codes[p][position[item]] = VERDICT_CODE.get(verdict, -1)
    specs = target_specs(models=models, model_names=model_names, verdicts=codes, plan=plan)

    # The disputed responses: the two readers' verdicts differ (a missing verdict is a reading that
    # found nothing, which disputes nothing: routing's default).
    first, second = plan.disputed_by
    decisions = [
        decide([PanelReading(r, None, said[r].get(item, "no_answer")) for r in (first, second)], compare="verdict")
        for item in items
    ]
    disputed = np.array([d.disputed for d in decisions])
    strength = np.array([d.strength for d in decisions])

    # The consensus with no label: today's machine estimate, and the information design's values.
    posterior, values = machine_fit(vs)
    p_correct = np.array([posterior[i] for i in items])

    population = Population(
        items=items,
        groups={i: {"model": vs.model_of[i]} for i in items},
        verdicts={pr: dict(v) for pr, v in said.items()},
    )
    frames: dict[str, Frame] = {}
    agreement: dict[str, dict[str, float]] = {}
    for name, _kind in plan.predictors:
        predictor = vote_predictor(population, panel) if name == MAJORITY else producer_predictor(population, name)
        frames[name] = Frame.build(population, predictor, by="model", name=name)
        # How good it is, on the responses it has a verdict on (a vote's tie counts half).
        graded = np.array([i in predictor for i in items])
        f = frames[name].f[graded]
        hit = np.where(f == 0.5, 0.5, (f > 0.5) == (y[graded] == 1))
        agreement[name] = {"agreement": float(np.mean(hit)), "graded": float(graded.mean())}

    psi_blocks, slices, start = [], [], 0
    truth: dict[str, float] = {}
    cons: dict[str, float | None] = {}
    for spec in specs:
        terms = spec.terms(y.astype(float))
        psi_blocks.append(terms)
        slices.append(slice(start, start + terms.shape[1]))
        start += terms.shape[1]
        mine = float(spec.g(terms.mean(axis=0)))
        theirs = frames[plan.predictors[0][0]].value(spec.text, y)
        if theirs is None or not math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12):
            raise AssertionError(f"{vs.name} {spec.text}: the estimator's truth {theirs} is not this script's {mine}")
        truth[spec.text] = mine
        c = float(spec.g(spec.terms(p_correct).mean(axis=0)))
        cons[spec.text] = None if math.isnan(c) else c
    return Prepared(
        name=vs.name,
        plan=plan,
        items=items,
        y=y,
        model_names=model_names,
        specs=specs,
        truth=truth,
        consensus=cons,
        disputed=disputed,
        strength=strength,
        values={i: float(values.get(i, 0.0)) for i in items},
        floor=floor,
        psi=np.concatenate(psi_blocks, axis=1),
        slices=slices,
        frames=frames,
        predictor_agreement=agreement,
        panel=panel,
        seconds=round(time.monotonic() - started, 1),
    )


# ---------------------------------------------------------------------------------------------
# the designs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Draw:
    """One labelled sample: positions, cell codes, inclusion probabilities, cell sizes, and the
    strata today's stratified estimate uses (positions, weight N_s / N)."""

    index: np.ndarray
    cell: np.ndarray
    pi: np.ndarray
    cell_sizes: np.ndarray
    strata: list[tuple[np.ndarray, float]]
    capped: bool  # the budget was more than the design could route


def tiebreak(*, seed: int, item: str) -> int:
    """routing.services.tiebreak's shuffle key (the queue's seed; the data set stands for the queue)."""
    digest = hashlib.sha256(f"tiebreak:validation:{seed}:{item}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def disputed_queue(prep: Prepared, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The disputed design's queue in serving order (positions), which of them are controls, and how
    many controls were routed, as routing builds it: every disputed response at its dispute's
    strength (rules.decide), a seeded 10 % of the others as controls (rules.is_control), the
    controls spread through the disputes (rules.controls_spread), served by priority and, within
    equal priority, in the queue's seeded shuffle (tiebreak)."""
    items = prep.items
    disputed = np.flatnonzero(prep.disputed)
    controls = [
        int(i)
        for i in np.flatnonzero(~prep.disputed)
        if is_control(seed=seed, response_key=items[i], fraction=CONTROL_FRACTION)
    ]
    priorities = controls_spread(
        priorities={int(i): float(prep.strength[i]) for i in disputed}, controls=controls, seed=seed
    )
    order = np.array(sorted(priorities, key=lambda i: (-priorities[i], tiebreak(seed=seed, item=items[i]))))
    is_ctrl = ~prep.disputed[order] if len(order) else np.zeros(0, dtype=bool)
    return order, is_ctrl, len(controls)


def disputed_draw(prep: Prepared, queue: tuple[np.ndarray, np.ndarray, int], budget: int) -> Draw:
    order, is_ctrl, routed_controls = queue
    n = min(budget, len(order))
    index, ctrl = order[:n], is_ctrl[:n]
    n_disputed = int(prep.disputed.sum())
    labelled_d, labelled_c = int((~ctrl).sum()), int(ctrl.sum())
    pi = np.where(
        ctrl,
        CONTROL_FRACTION * labelled_c / max(routed_controls, 1),
        labelled_d / n_disputed,
    )
    sizes = np.array([n_disputed, prep.n - n_disputed])
    return Draw(
        index=index,
        cell=ctrl.astype(np.int64),
        pi=pi,
        cell_sizes=sizes,
        strata=[(index[~ctrl], sizes[0] / prep.n), (index[ctrl], sizes[1] / prep.n)],
        capped=budget > len(order),
    )


def information_probabilities(prep: Prepared, k: int) -> np.ndarray:
    """Each response's π in a draw of expected size k: allocation.inclusion_probabilities (what
    randomized information routing records), in the population's order."""
    pi = inclusion_probabilities(prep.values, k=k, floor=prep.floor)
    return np.array([pi[i] for i in prep.items])


def information_uniforms(prep: Prepared, seed: int) -> np.ndarray:
    """Each response's seeded uniform of the Poisson draw (allocation.draw_uniform): a response is
    drawn when its uniform is below its π, whatever the budget."""
    return np.array([draw_uniform(seed=seed, item=i) for i in prep.items])


def information_draw(prep: Prepared, pi: np.ndarray, uniform: np.ndarray) -> Draw:
    index = np.flatnonzero(uniform < pi)
    return Draw(
        index=index,
        cell=np.zeros(len(index), dtype=np.int64),
        pi=pi[index],
        cell_sizes=np.array([prep.n]),
        strata=[(index, 1.0)],
        capped=False,
    )


def population_cells(prep: Prepared, design: str) -> np.ndarray:
    """Every response's cell under the design, as routing knows it (analytics.design gives the
    estimator the same): disputed 0 and control 1 under the disputed design, one cell otherwise."""
    if design == "disputed":
        return np.where(prep.disputed, 0, 1).astype(np.int64)
    return np.zeros(prep.n, dtype=np.int64)


def sample_of(prep: Prepared, draw: Draw, population_cell: np.ndarray) -> Sample:
    return Sample.from_arrays(
        index=draw.index,
        y=prep.y[draw.index],
        cell=draw.cell,
        pi=draw.pi,
        cell_sizes=draw.cell_sizes,
        population_cell=population_cell,
    )


# ---------------------------------------------------------------------------------------------
# today's estimators on a draw
# ---------------------------------------------------------------------------------------------


def todays_estimates(
    prep: Prepared, strata: Sequence[tuple[np.ndarray, float]], rng: np.random.Generator
) -> np.ndarray:
    """(targets, 3): estimate, low, high of today's stratified estimate on `strata` (one stratum of
    weight 1: the labels' plain share), nan where it gives none. As agreement.stratified: each
    stratum's labelled responses weighted by the stratum's share of the population (TargetSpec.
    separate says how); a stratum of positive weight with no label, or a target undefined on the
    labels (no labelled response of a model, a ratio's denominator with none), gives no estimate;
    a stratified percentile bootstrap (each stratum resampled within itself) for the interval."""
    out = np.full((len(prep.specs), 3), np.nan)
    live = [(idx, w) for idx, w in strata if w > 0]
    if not live or any(len(idx) == 0 for idx, _ in live):
        return out
    parts = []
    for idx, w in live:
        x = prep.psi[idx]
        parts.append((w, x.mean(axis=0), resample_counts(rng, len(idx), N_BOOT) @ x / len(idx)))
    boots = np.full((N_BOOT, len(prep.specs)), np.nan)
    for t, (spec, sl) in enumerate(zip(prep.specs, prep.slices, strict=True)):
        if spec.separate:
            out[t, 0] = sum(w * spec.g(mean[sl]) for w, mean, _ in parts)
            if np.isfinite(out[t, 0]):
                boots[:, t] = sum(w * spec.g(b[:, sl]) for w, _, b in parts)
        else:
            out[t, 0] = spec.g(sum(w * mean[sl] for w, mean, _ in parts))
            if np.isfinite(out[t, 0]):
                boots[:, t] = spec.g(sum(w * b[:, sl] for w, _, b in parts))
    # stats.percentile_interval's rule (numpy's linear quantiles, undefined resamples left out), for
    # every target at once
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a target with no defined resample: nan
        out[:, 1:] = np.nanquantile(boots, [ALPHA / 2, 1 - ALPHA / 2], axis=0).T
    out[~np.isfinite(out[:, 0])] = np.nan
    return out


# ---------------------------------------------------------------------------------------------
# the simulation
# ---------------------------------------------------------------------------------------------

# What a worker keeps of one estimate: the prediction-powered and human-only estimate and interval,
# the machine number, the effective labels and the labels used.
EST_FIELDS = (
    "ppi",
    "ppi_low",
    "ppi_high",
    "human",
    "human_low",
    "human_high",
    "machine",
    "effective",
    "labels",
    "kish",
)
# The diagnostic rule tried beside the estimator's own withholding (docs/estimates.md, the reading):
# every (cell ∩ statistic's domain) that is sampled, not a census, to hold a Kish effective sample
# size (Σw)² / Σw², w = 1/π, of at least this many labels.
KISH_MIN = 10.0
# A row's coverage counts in the RESULT figures when at least this share of its draws gave an
# interval (the others are counted as withheld, and the rows listed).
MEASURED_SHARE = 0.1
TODAY_FIELDS = ("plain", "plain_low", "plain_high", "stratified", "stratified_low", "stratified_high")

_PREPARED: dict[str, Prepared] = {}  # filled before the workers fork; they read it


@dataclass
class JobResult:
    dataset: str
    design: str
    seeds: list[int]
    est: dict[tuple[int, str, str], np.ndarray] = field(default_factory=dict)  # (budget, predictor, target)
    withheld: dict[tuple[int, str, str], Counter[str]] = field(default_factory=dict)
    today: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)  # (budget, target)
    labels: dict[int, np.ndarray] = field(default_factory=dict)
    capped: dict[int, int] = field(default_factory=dict)


def _reason(withheld: str | None) -> str:
    """A withheld interval's reason with its counts taken out, so that reasons add up across draws
    ("cell 'control' has 1 label(s) of 8021 responses" → "cell 'control' has # label(s) of #
    responses")."""
    return re.sub(r"\d+", "#", withheld) if withheld else "no interval"


def _f(x: float | None) -> float:
    return np.nan if x is None else float(x)


def run_job(job: tuple[str, str, list[int]]) -> JobResult:
    # One BLAS thread: the estimator's products are small, and OpenBLAS's threads on a shared
    # 2-core machine made each estimate up to 20 times slower (2–8 ms instead of 0.3 ms on NQ).
    with threadpool_limits(limits=1):
        return _run_job(job)


def smallest_kish(domains: np.ndarray, population_cell: np.ndarray, draw: Draw, population_counts: np.ndarray) -> float:
    """The smallest Kish effective sample size over the (cell, statistic domain) pairs the draw
    samples without taking them whole (0 where such a pair has no label; inf if there is none).
    domains: (K, N) bool; population_counts: (K, cells) responses of each domain in each cell."""
    smallest = math.inf
    w = 1.0 / draw.pi
    inside = domains[:, draw.index]  # (K, labels)
    for k in range(domains.shape[0]):
        for c in range(population_counts.shape[1]):
            size = population_counts[k, c]
            if size == 0:
                continue
            mine = inside[k] & (draw.cell == c)
            if mine.sum() == size:
                continue  # a census of the pair: no sampling error there
            wk = w[mine]
            smallest = min(smallest, float(wk.sum() ** 2 / (wk**2).sum()) if len(wk) else 0.0)
    return smallest


def _run_job(job: tuple[str, str, list[int]]) -> JobResult:
    name, design, seeds = job
    prep = _PREPARED[name]
    res = JobResult(name, design, list(seeds))
    population_cell = population_cells(prep, design)
    cells = int(population_cell.max()) + 1
    domains, counts = {}, {}
    for spec in prep.specs:
        dom = spec.alpha != 0
        domains[spec.text] = dom[dom.any(axis=1)]
        counts[spec.text] = np.stack([np.bincount(population_cell[d], minlength=cells) for d in domains[spec.text]])
    s = len(seeds)
    for b in BUDGETS:
        res.labels[b] = np.zeros(s)
        res.capped[b] = 0
        for spec in prep.specs:
            res.today[(b, spec.text)] = np.full((s, len(TODAY_FIELDS)), np.nan)
            for predictor in prep.frames:
                res.est[(b, predictor, spec.text)] = np.full((s, len(EST_FIELDS)), np.nan)
                res.withheld[(b, predictor, spec.text)] = Counter()
    pis = {b: prep.inclusion(b) for b in BUDGETS} if design == "information" else {}
    for row, seed in enumerate(seeds):
        if design == "disputed":
            queue = disputed_queue(prep, seed)
            draws = {b: disputed_draw(prep, queue, b) for b in BUDGETS}
        else:
            uniform = information_uniforms(prep, seed)
            draws = {b: information_draw(prep, pis[b], uniform) for b in BUDGETS}
        for b, draw in draws.items():
            res.labels[b][row] = len(draw.index)
            res.capped[b] += draw.capped
            rng = np.random.default_rng([seed, b, 2])
            plain = todays_estimates(prep, [(draw.index, 1.0)], rng)
            stratified = plain if len(draw.strata) == 1 else todays_estimates(prep, draw.strata, rng)
            sample = sample_of(prep, draw, population_cell)
            for t, spec in enumerate(prep.specs):
                res.today[(b, spec.text)][row] = (*plain[t], *stratified[t])
                kish = smallest_kish(domains[spec.text], population_cell, draw, counts[spec.text])
                for predictor, frame in prep.frames.items():
                    est = frame.estimate(spec.text, sample, n_boot=N_BOOT, seed=seed)
                    ppi, human = est.ppi, est.human
                    res.est[(b, predictor, spec.text)][row] = (
                        *((_f(ppi.estimate), _f(ppi.low), _f(ppi.high)) if ppi else (np.nan,) * 3),
                        *((_f(human.estimate), _f(human.low), _f(human.high)) if human else (np.nan,) * 3),
                        _f(est.machine),
                        _f(est.effective_labels),
                        est.labels,
                        kish,
                    )
                    if est.withheld or not ppi or ppi.low is None:
                        res.withheld[(b, predictor, spec.text)][_reason(est.withheld)] += 1
    return res


def _merge(parts: list[JobResult]) -> JobResult:
    """The chunks of one (data set, design), in seed order."""
    parts = sorted(parts, key=lambda r: r.seeds[0])
    out = JobResult(parts[0].dataset, parts[0].design, [s for p in parts for s in p.seeds])
    for key in parts[0].est:
        out.est[key] = np.concatenate([p.est[key] for p in parts])
        out.withheld[key] = sum((p.withheld[key] for p in parts), Counter())
    for key2 in parts[0].today:
        out.today[key2] = np.concatenate([p.today[key2] for p in parts])
    for b in BUDGETS:
        out.labels[b] = np.concatenate([p.labels[b] for p in parts])
        out.capped[b] = sum(p.capped[b] for p in parts)
    return out


# ---------------------------------------------------------------------------------------------
# the measures
# ---------------------------------------------------------------------------------------------


def interval_stats(estimate: np.ndarray, low: np.ndarray, high: np.ndarray, truth: float) -> dict[str, Any]:
    """Over the draws that gave an interval: coverage (with its Monte-Carlo standard error), median
    width; over the draws that gave an estimate: bias (mean estimate − truth) and RMSE."""
    ok = np.isfinite(low) & np.isfinite(high)
    has = np.isfinite(estimate)
    n = int(ok.sum())
    cov = float(np.mean((low[ok] <= truth) & (truth <= high[ok]))) if n else None
    return {
        "draws": len(estimate),
        "intervals": n,
        "no_interval": len(estimate) - n,
        "coverage": cov,
        "coverage_mc_se": math.sqrt(cov * (1 - cov) / n) if cov is not None else None,
        "median_width": float(np.median(high[ok] - low[ok])) if n else None,
        "bias": float(np.mean(estimate[has]) - truth) if has.any() else None,
        "rmse": float(np.sqrt(np.mean((estimate[has] - truth) ** 2))) if has.any() else None,
        # The interval's half-width over the estimate's spread across draws (≈ 1.96 when the
        # variance is right and the draws are many): below, the variance is underestimated; above,
        # the interval is wider than the estimate's sampling error.
        "halfwidth_over_sd": (
            float(np.median(high[ok] - low[ok]) / 2 / spread)
            if n > 1 and (spread := float(np.std(estimate[ok]))) > 1e-12
            else None
        ),
    }


def error_stats(estimate: np.ndarray, truth: float) -> dict[str, Any]:
    has = np.isfinite(estimate)
    return {
        "bias": float(np.mean(estimate[has]) - truth) if has.any() else None,
        "rmse": float(np.sqrt(np.mean((estimate[has] - truth) ** 2))) if has.any() else None,
    }


def summarise(prep: Prepared, res: JobResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The estimator's rows (data set × design × predictor × target × budget), today's estimators'
    rows (data set × design × target × budget) and the design's own counts per budget."""
    kinds = dict(prep.plan.predictors)
    rows, today = [], []
    col = {f: k for k, f in enumerate(EST_FIELDS)}
    tcol = {f: k for k, f in enumerate(TODAY_FIELDS)}
    for b in BUDGETS:
        for spec in prep.specs:
            truth = prep.truth[spec.text]
            for predictor in prep.frames:
                a = res.est[(b, predictor, spec.text)]
                ppi = interval_stats(a[:, col["ppi"]], a[:, col["ppi_low"]], a[:, col["ppi_high"]], truth)
                human = interval_stats(a[:, col["human"]], a[:, col["human_low"]], a[:, col["human_high"]], truth)
                both = np.isfinite(a[:, col["ppi_low"]]) & np.isfinite(a[:, col["human_low"]])
                w_ppi = np.median((a[:, col["ppi_high"]] - a[:, col["ppi_low"]])[both]) if both.any() else None
                w_human = np.median((a[:, col["human_high"]] - a[:, col["human_low"]])[both]) if both.any() else None
                eff = a[:, col["effective"]]
                kept = a[:, col["kish"]] >= KISH_MIN
                ppi_kish = interval_stats(a[kept, col["ppi"]], a[kept, col["ppi_low"]], a[kept, col["ppi_high"]], truth)
                rows.append(
                    {
                        "dataset": prep.name,
                        "design": res.design,
                        "predictor": predictor,
                        "predictor_kind": kinds[predictor],
                        "target": spec.text,
                        "budget": b,
                        "truth": truth,
                        "labels_mean": float(np.mean(res.labels[b])),
                        "labels_used_mean": float(np.nanmean(a[:, col["labels"]])),
                        "capped_draws": res.capped[b],
                        "ppi": ppi,
                        "human": human,
                        "width_ratio": (float(w_ppi / w_human) if w_human else None),
                        "effective_labels_median": float(np.nanmedian(eff)) if np.isfinite(eff).any() else None,
                        "machine": error_stats(a[:, col["machine"]], truth),
                        "ppi_if_kish": ppi_kish | {"dropped": int((~kept).sum())},
                        "withheld": sum(res.withheld[(b, predictor, spec.text)].values()),
                        "withheld_reasons": dict(res.withheld[(b, predictor, spec.text)]),
                    }
                )
            t = res.today[(b, spec.text)]
            cons = prep.consensus[spec.text]
            today.append(
                {
                    "dataset": prep.name,
                    "design": res.design,
                    "target": spec.text,
                    "budget": b,
                    "truth": truth,
                    "consensus_error": None if cons is None else cons - truth,
                    "plain": interval_stats(
                        t[:, tcol["plain"]], t[:, tcol["plain_low"]], t[:, tcol["plain_high"]], truth
                    ),
                    "stratified": interval_stats(
                        t[:, tcol["stratified"]], t[:, tcol["stratified_low"]], t[:, tcol["stratified_high"]], truth
                    ),
                }
            )
    design = {
        str(b): {
            "labels_mean": float(np.mean(res.labels[b])),
            "labels_min": int(np.min(res.labels[b])),
            "labels_max": int(np.max(res.labels[b])),
            "capped_draws": res.capped[b],
        }
        for b in BUDGETS
    }
    return rows, today, design


def headline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The RESULT figures: mean and min PPI coverage over every row (every data set, design,
    predictor, target and budget) whose interval was given in at least MEASURED_SHARE of its draws
    (a coverage out of a handful of draws measures nothing; those rows are listed, with their
    counts), the rows outside the band, and GOOD_JUDGE's width ratio."""
    covs = [(r["ppi"]["coverage"], r) for r in rows if measured(r)]
    low, high = BAND
    outside = [r for c, r in covs if not (low <= c <= high)]
    worst = min(covs, key=lambda cr: cr[0]) if covs else None

    def row_of(key: tuple[str, str, str, str, int]) -> dict[str, Any] | None:
        return next(
            (r for r in rows if (r["dataset"], r["design"], r["predictor"], r["target"], r["budget"]) == key), None
        )

    good, disputed = row_of(GOOD_JUDGE), row_of(GOOD_JUDGE_DISPUTED)
    return {
        "estimate_mean_coverage": float(np.mean([c for c, _ in covs])) if covs else None,
        "estimate_min_coverage": worst[0] if worst else None,
        "min_coverage_row": _key(worst[1]) if worst else None,
        "estimate_width_ratio_good_judge": good["width_ratio"] if good else None,
        "good_judge_row": _key(good) if good else None,
        "good_judge_effective_labels": good["effective_labels_median"] if good else None,
        "estimate_width_ratio_good_judge_disputed": disputed["width_ratio"] if disputed else None,
        "rows": len(rows),
        "rows_with_coverage": len(covs),
        "rows_outside_band": [_key(r) | {"coverage": r["ppi"]["coverage"]} for r in outside],
        "human_rows_outside_band": [
            _key(r) | {"coverage": r["human"]["coverage"]}
            for r in rows
            if r["human"]["coverage"] is not None and not (low <= r["human"]["coverage"] <= high)
        ],
        "withheld_total": sum(r["withheld"] for r in rows),
        "measured_share": MEASURED_SHARE,
        "rows_mostly_withheld": [
            _key(r) | {"intervals": r["ppi"]["intervals"], "draws": r["ppi"]["draws"], "coverage": r["ppi"]["coverage"]}
            for r in rows
            if not measured(r)
        ],
        "below_band": sum(c < low for c, _ in covs),
        "above_band": sum(c > high for c, _ in covs),
        "kish_rule": _kish_rule(rows),
    }


def measured(row: dict[str, Any]) -> bool:
    """A row whose PPI coverage counts: an interval in at least MEASURED_SHARE of its draws."""
    ppi = row["ppi"]
    return ppi["coverage"] is not None and ppi["intervals"] >= max(1, MEASURED_SHARE * ppi["draws"])


def _kish_rule(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The PPI coverage over the draws the diagnostic rule (KISH_MIN) would keep."""
    covs = [r["ppi_if_kish"]["coverage"] for r in rows if r["ppi_if_kish"]["coverage"] is not None]
    low, high = BAND
    return {
        "kish_min": KISH_MIN,
        "mean_coverage": float(np.mean(covs)) if covs else None,
        "min_coverage": min(covs) if covs else None,
        "rows_outside_band": sum(not (low <= c <= high) for c in covs),
        "rows_with_coverage": len(covs),
        "draws_dropped": sum(r["ppi_if_kish"]["dropped"] for r in rows),
        "draws": sum(r["ppi"]["draws"] for r in rows),
    }


def _key(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r[k] for k in ("dataset", "design", "predictor", "target", "budget")}


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(tempfile.gettempdir()) / "adjudication-estimate-validation"


def _code_digest(digest: Any, paths: Sequence[Path]) -> None:
    for path in sorted(paths):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())


def cached_set(data_file: Path, load: Callable[[], Any], data_slice: bool = False) -> Any:
    """A data set's votes and truths (realdata.ValidationSet), cached outside the repository (the
    system's temp directory) under a hash of the data file and of the code that reads it
    (scripts/realdata.py and every reader): the readers' run is most of the loading time."""
    digest = hashlib.sha256(data_file.read_bytes())
    _code_digest(digest, [ROOT / "scripts" / "realdata.py", *(ROOT / "readers").rglob("*.py")])
    return _cached(f"{data_file.stem}{'-slice' if data_slice else ''}-{digest.hexdigest()[:24]}", load)


def machine_fit(vs: Any) -> tuple[dict[str, float], dict[str, float]]:
    """The consensus fit with no label (one Dawid–Skene fit per answering model, as
    consensus-validation): each response's P(correct) and its label value for the pooled accuracy.
    Cached as cached_set, under a hash of the votes and of the fitting code."""

    def fit() -> tuple[dict[str, float], dict[str, float]]:
        result = consensus(vs.inputs, by="model", n_boot=0)
        return {i.item: i.p_correct for i in result.items}, label_values(Target("accuracy"), vs.inputs, result)

    digest = hashlib.sha256(repr((sorted(vs.votes), sorted(vs.model_of.items()))).encode())
    analytics = ROOT / "adjudication" / "analytics"
    _code_digest(digest, [analytics / "consensus.py", analytics / "allocation.py", analytics / "stats.py"])
    cached: tuple[dict[str, float], dict[str, float]] = _cached(f"{vs.name}-fit-{digest.hexdigest()[:24]}", fit)
    return cached


def _cached(key: str, load: Callable[[], Any]) -> Any:
    path = CACHE / f"{key}.pickle"
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
        pass
    value = load()
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh)
        tmp.replace(path)
    except OSError:
        pass  # no cache: the next run reads the data again
    return value


def estimate_validation(
    *,
    answer_matching_dir: Path,
    evouna_dir: Path,
    seeds: int,
    quick: bool = False,
    processes: int = 2,
    datasets: Sequence[str] | None = None,
    designs: Sequence[str] | None = None,
    floor: float = FLOOR,
    chunks: int = 4,
    data_slice: bool = False,
) -> dict[str, Any]:
    """Load the data sets (realdata's readers and judges), prepare each once, then every seed's
    draws over `processes` workers (forked: they share the prepared frames). `designs` and `floor`
    (the information design's δ) are for experiments: the reported run takes both designs and
    δ = FLOOR. `data_slice` takes consensus-validation's seeded slice of each data set (80 rows, 40
    questions; tests)."""
    designs = [d for d in DESIGNS if d in (designs or DESIGNS)]
    from scripts import realdata

    started = time.monotonic()
    wanted = list(datasets or PLANS)
    sets = [
        cached_set(
            answer_matching_dir / realdata.FILES[n],
            partial(realdata.answer_matching_set, n, answer_matching_dir, quick=data_slice, processes=processes),
            data_slice,
        )
        for n in realdata.FILES
        if n in wanted
    ]
    sets += [
        cached_set(
            evouna_dir / realdata.EVOUNA_FILES[n],
            partial(realdata.evouna_set, n, evouna_dir, quick=data_slice),
            data_slice,
        )
        for n in realdata.EVOUNA_FILES
        if n in wanted
    ]
    loaded = time.monotonic()
    _PREPARED.clear()
    with threadpool_limits(limits=1):  # as run_job: the consensus fits are no faster with BLAS threads
        for vs in sets:
            _PREPARED[vs.name] = prepare(vs, PLANS[vs.name], floor=floor)
            for b in BUDGETS:
                _PREPARED[vs.name].inclusion(b)
    prepared = time.monotonic()
    per = max(1, math.ceil(seeds / chunks))
    jobs = [
        (name, design, list(range(start, min(seeds, start + per))))
        for name in _PREPARED
        for design in designs
        for start in range(0, seeds, per)
    ]
    if processes > 1:
        with ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(run_job, jobs, chunksize=1))
    else:
        results = [run_job(job) for job in jobs]
    grouped: dict[tuple[str, str], list[JobResult]] = defaultdict(list)
    for r in results:
        grouped[(r.dataset, r.design)].append(r)
    rows: list[dict[str, Any]] = []
    today: list[dict[str, Any]] = []
    out: dict[str, Any] = {
        "quick": quick,
        "data_slice": data_slice,
        "seeds": seeds,
        "budgets": list(BUDGETS),
        "information_floor": floor,
        "designs": {
            "disputed": (
                f"every response two readers' verdicts split routed (π = 1), {CONTROL_FRACTION:.0%} of the rest "
                "as controls (routing.rules.is_control), a seeded random serving order with the controls spread "
                "evenly; cells disputed (π = labelled / disputed) and control (π = fraction × labelled / routed)"
            ),
            "information": (
                f"π_i = min(1, k·q_i), q_i = (1 − δ)√v_i / Σ√v + δ/N, δ = {floor}, v = allocation.label_values "
                "of the pooled accuracy on a consensus fit with no label, capped mass redistributed; Poisson "
                "draw; one cell"
            ),
        },
        "n_boot": N_BOOT,
        "estimator": {
            "ratio_method": estimates.RATIO_METHOD,
            "floor_events": estimates.FLOOR_EVENTS,
            "min_labels": estimates.MIN_LABELS,
            "min_cell_labels": estimates.MIN_CELL_LABELS,
        },
        "band": list(BAND),
        "datasets": {},
    }
    for name, prep in _PREPARED.items():
        ds: dict[str, Any] = {
            "items": prep.n,
            "models": prep.model_names,
            "panel": prep.panel,
            "disputed_by": list(prep.plan.disputed_by),
            "disputed": int(prep.disputed.sum()),
            "producer": prep.plan.producer,
            "gain": list(prep.plan.gain),
            "format_reader": prep.plan.format_reader,
            "predictors": {p: {"kind": k, **prep.predictor_agreement[p]} for p, k in prep.plan.predictors},
            "truth": prep.truth,
            "consensus": prep.consensus,
            "prepare_seconds": prep.seconds,
            "designs": {},
        }
        for design in designs:
            merged = _merge(grouped[(name, design)])
            estimator_rows, today_rows, counts = summarise(prep, merged)
            rows += estimator_rows
            today += today_rows
            ds["designs"][design] = counts
        out["datasets"][name] = ds
    out["rows"] = rows
    out["today"] = today
    out["result"] = headline(rows)
    out["seconds"] = {
        "load": round(loaded - started, 1),
        "prepare": round(prepared - loaded, 1),
        "simulate": round(time.monotonic() - prepared, 1),
        "total": round(time.monotonic() - started, 1),
    }
    return jsonable(out)


# ---------------------------------------------------------------------------------------------
# Markdown (docs/estimates.md, "Validation on real labels", is this output)
# ---------------------------------------------------------------------------------------------


def _c(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _r(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}"


def _flag(x: float | None) -> str:
    """A coverage, in bold outside the acceptance band."""
    if x is None:
        return "–"
    return f"**{x:.3f}**" if not (BAND[0] <= x <= BAND[1]) else f"{x:.3f}"


def markdown(res: dict[str, Any]) -> str:
    rows, today = res["rows"], res["today"]
    budgets = res["budgets"]
    lines = [
        (
            f"{res['seeds']} seeds per design and budget"
            + (" (**--quick**: not the reported figures)" if res["quick"] else "")
            + (" (**--slice**: a seeded slice of each data set, for tests)" if res["data_slice"] else "")
            + f"; {res['n_boot']} bootstrap resamples for ratios and today's stratified estimate."
        ),
        "",
        (
            "| data set | items | models | disputed (readers) | producer | gain (format share under) "
            "| predictors (agreement with the humans, on the share they grade) |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for name, ds in res["datasets"].items():
        preds = ", ".join(
            f"{p} ({v['kind']}, {100 * v['agreement']:.1f} %"
            + (f" of {100 * v['graded']:.0f} %" if v["graded"] < 1 else "")
            + ")"
            for p, v in ds["predictors"].items()
        )
        lines.append(
            f"| {name} | {ds['items']} | {len(ds['models'])} | {ds['disputed']} ({' vs '.join(ds['disputed_by'])}) | "
            f"{ds['producer']} | {' → '.join(ds['gain'])} ({ds['format_reader']}) | {preds} |"
        )
    lines += [
        "",
        (
            "Labels per design and budget (mean over seeds; the disputed design's queue is the disputed responses plus "
            "the controls, so a budget beyond it labels the whole queue: *capped*, with the draws counted):"
        ),
        "",
        "| data set | design | " + " | ".join(str(b) for b in budgets) + " |",
        "|---|---|" + "---|" * len(budgets),
    ]
    for name, ds in res["datasets"].items():
        for design, d in ds["designs"].items():
            cells = []
            for b in budgets:
                x = d[str(b)]
                cap = f" (capped in {x['capped_draws']})" if x["capped_draws"] else ""
                cells.append(f"{x['labels_mean']:.1f}{cap}")
            lines.append(f"| {name} | {design} | " + " | ".join(cells) + " |")

    lines += [
        "",
        (
            "Summary per data set, design and predictor, over its targets and budgets: the prediction-powered (PPI) "
            "and human-only coverage of the nominal 95 % interval (min and mean; rows below / above 0.93–0.97; rows "
            f"whose interval was withheld in more than {1 - MEASURED_SHARE:.0%} of draws left out and listed below), "
            "the PPI interval's median half-width ÷ the spread (SD) of its estimate over the draws, the median over "
            "the rows (about 1.96 where the variance is right: below, the variance is too small; a row above the "
            "band with a ratio near 1.96 is one whose estimate takes few distinct values), the "
            "median PPI ÷ human-only width at 100 labels over the targets, and the draws whose interval was withheld; "
            f"last, the PPI coverage over the draws in which every sampled (cell, target domain) pair holds a Kish "
            f"effective size of at least {KISH_MIN:.0f} labels (a diagnostic, not the estimator's rule: rows with "
            "at least 30 such draws), and the share of draws that rule would withhold."
        ),
        "",
        (
            "| data set | design | predictor | PPI coverage min / mean | below / above | human-only min / mean "
            "| below / above | PPI half-width ÷ SD | width ratio at 100 (median over targets) | withheld "
            "| PPI coverage, Kish rule: min / mean (withheld) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["design"], f"{r['predictor']} ({r['predictor_kind']})")].append(r)
    for (name, design, predictor), rs in groups.items():
        cp = [r["ppi"]["coverage"] for r in rs if measured(r)]
        ch = [r["human"]["coverage"] for r in rs if measured(r) and r["human"]["coverage"] is not None]
        ratios = [r["width_ratio"] for r in rs if r["budget"] == 100 and r["width_ratio"] is not None]
        ck = [r["ppi_if_kish"]["coverage"] for r in rs if r["ppi_if_kish"]["intervals"] >= 30]
        dropped = sum(r["ppi_if_kish"]["dropped"] for r in rs) / max(1, sum(r["ppi"]["draws"] for r in rs))
        spread = [r["ppi"]["halfwidth_over_sd"] for r in rs if measured(r) and r["ppi"].get("halfwidth_over_sd")]
        lines.append(
            f"| {name} | {design} | {predictor} | {_c(min(cp, default=None))} / {_c(_mean(cp))} | "
            f"{_sides(cp)} | {_c(min(ch, default=None))} / {_c(_mean(ch))} | {_sides(ch)} | "
            f"{_r(float(np.median(spread)) if spread else None)} | "
            f"{_r(float(np.median(ratios)) if ratios else None)} | "
            f"{sum(r['withheld'] for r in rs)} | {_c(min(ck, default=None))} / {_c(_mean(ck))} ({dropped:.0%}) |"
        )

    lines += [
        "",
        (
            "Every row: PPI coverage / human-only coverage · PPI ÷ human-only median width, per label budget "
            "(coverage outside 0.93–0.97 in bold); bias is the PPI estimate's mean minus the truth, in points, at 100 "
            "labels; *withheld*: draws with no PPI interval, over all budgets."
        ),
        "",
        "| data set | design | predictor | target | truth | "
        + " | ".join(f"{b} labels" for b in budgets)
        + " | bias at 100 | eff. labels at 100 | withheld |",
        "|---|---|---|---|---|" + "---|" * len(budgets) + "---|---|---|",
    ]
    by_row: dict[tuple[str, str, str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        by_row[(r["dataset"], r["design"], r["predictor"], r["target"])][r["budget"]] = r
    for (name, design, predictor, target), per in by_row.items():
        cells = [
            f"{_flag(per[b]['ppi']['coverage'])} / {_flag(per[b]['human']['coverage'])} · {_r(per[b]['width_ratio'])}"
            for b in budgets
        ]
        at100 = per.get(100) or per[budgets[0]]
        lines.append(
            f"| {name} | {design} | {predictor} | {target} | {_c(at100['truth'])} | "
            + " | ".join(cells)
            + f" | {_pp(at100['ppi']['bias'])} | {_r(at100['effective_labels_median'])} | "
            + f"{sum(x['withheld'] for x in per.values())} |"
        )

    lines += [
        "",
        (
            "Today's estimators on the same draws: the consensus with no label (a machine number: its error, "
            "points), the labels' plain share on the labelled subset and the stratified estimate of the analytics "
            "(each stratum's labelled value weighted by its size; under the information design, one stratum: the "
            "plain share). Per "
            "budget: bias (points) / coverage of its percentile-bootstrap interval; *none*: draws with no estimate "
            "(a stratum, a model or a ratio's denominator with no label), over all budgets."
        ),
        "",
        "| data set | design | target | consensus error | plain share: "
        + " | ".join(f"{b}" for b in budgets)
        + " | none | stratified: "
        + " | ".join(f"{b}" for b in budgets)
        + " | none |",
        "|---|---|---|---|" + "---|" * (2 * len(budgets) + 2),
    ]
    by_today: dict[tuple[str, str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for t in today:
        by_today[(t["dataset"], t["design"], t["target"])][t["budget"]] = t
    for (name, design, target), per in by_today.items():
        first = per[budgets[0]]
        plain = [f"{_pp(per[b]['plain']['bias'])} / {_c(per[b]['plain']['coverage'])}" for b in budgets]
        strat = [f"{_pp(per[b]['stratified']['bias'])} / {_c(per[b]['stratified']['coverage'])}" for b in budgets]
        none_p = sum(per[b]["plain"]["no_interval"] for b in budgets)
        none_s = sum(per[b]["stratified"]["no_interval"] for b in budgets)
        lines.append(
            f"| {name} | {design} | {target} | {_pp(first['consensus_error'])} | "
            + " | ".join(plain)
            + f" | {none_p} | "
            + " | ".join(strat)
            + f" | {none_s} |"
        )
    h = res["result"]
    if h["rows_mostly_withheld"]:
        # Withholding hardly depends on the predictor: one entry per target, its budgets, and the
        # draws with an interval (a range where the predictors differ).
        given: dict[tuple[str, str, str], dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for r in h["rows_mostly_withheld"]:
            given[(r["dataset"], r["design"], r["target"])][r["budget"]].append(r["intervals"])
        draws = h["rows_mostly_withheld"][0]["draws"]
        lines += [
            "",
            f"Rows whose PPI interval was withheld in more than {1 - h['measured_share']:.0%} of draws, left out "
            f"of the coverage figures (budget: draws of {draws} with an interval, over the predictors): "
            + "; ".join(
                f"{name} {design} {target} at "
                + ", ".join(
                    f"{b}: {min(n)}" + (f"–{max(n)}" if max(n) != min(n) else "") for b, n in sorted(per.items())
                )
                for (name, design, target), per in given.items()
            )
            + ".",
        ]
    lines += [
        "",
        (
            f"{h['rows_with_coverage']} of {h['rows']} rows have a measured PPI coverage; "
            f"{len(h['rows_outside_band'])} fall outside 0.93–0.97 ({h['below_band']} below, {h['above_band']} "
            "above; human only: "
            f"{len(h['human_rows_outside_band'])}); {h['withheld_total']} draws withheld their PPI interval. "
            f"Seconds: load {res['seconds']['load']}, prepare {res['seconds']['prepare']}, "
            f"simulate {res['seconds']['simulate']}, total {res['seconds']['total']}."
        ),
    ]
    return "\n".join(lines)


def _sides(coverages: Sequence[float]) -> str:
    """How many rows fall below and above the band."""
    return f"{sum(c < BAND[0] for c in coverages)} / {sum(c > BAND[1] for c in coverages)}"


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def result_lines(res: dict[str, Any]) -> str:
    h = res["result"]
    return "\n".join(
        f"RESULT {k} {'nan' if h[k] is None else f'{h[k]:.4f}'}"
        for k in (
            "estimate_width_ratio_good_judge_disputed",
            "estimate_mean_coverage",
            "estimate_min_coverage",
            "estimate_width_ratio_good_judge",
        )
    )
