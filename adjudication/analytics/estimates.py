"""Prediction-powered estimates: every headline number from the machine verdicts on all responses
plus a correction measured on a probability sample of human labels (docs/estimates.md).

Pure (numpy only): the Django layer builds a Population (every response the estimate ranges over,
its groups and every producer's verdicts), the labels with their Design (how they were drawn), and
a predictor (P(correct) per response: a producer, a vote, the consensus posterior).

The inference is design-based: the population is the dataset's responses as they are, the truth of
each is fixed, and the only randomness is which responses the design sent to humans. The labelled
responses fall in cells (a routing stratum, served in a seeded random order); within a cell every
labelled response has a known inclusion probability π_i, and the cell's population size N_c is
known. A target is a smooth function g of means μ_k = (1/N) Σ_i ψ_ik(Y_i), each ψ_ik linear in the
truth: ψ_ik(y) = α_ik·y + β_ik, with α, β known for every response (its group, the producers'
verdicts). Then, for a tuning weight λ:

    μ_k(λ) = (1/N) [ Σ_i β_ik + λ Σ_i α_ik f_i + Σ_c N_c · ȳ_c(α_k (Y − λ f)) ]

where f_i is the predictor and ȳ_c the cell's inverse-probability-weighted (Hájek) mean over its
labelled responses. λ = 0 is the human-only (stratified) estimate, λ = 1 classical PPI; the
estimate is unbiased for any λ fixed in advance and consistent for the tuned one (PPI++). The
variance is the stratified design variance of the linearised residual e_i = ∇g·α_i (Y_i − λ f_i),
with the finite-population correction (1 − π_i); λ minimises it (clipped to [0, 1]), so in large
samples the estimate is never worse than human only. Ratios (false-accept, false-reject) take a
rescaled bootstrap within cells (Rao & Wu 1988, which keeps the finite-population correction).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
from scipy.special import stdtrit
from scipy.stats import norm

from adjudication.errors import ApplicationError
from readers.stats import wilson_share

BINARY = ("correct", "incorrect")
ALPHA = 0.05
# A cell needs two labels for its variance; below that the interval is withheld (naming the cell).
MIN_CELL_LABELS = 2
# Fewer labelled responses than this in a target's domain (a group's responses, the responses a
# producer judged), or in a ratio's denominator (the human-incorrect ones for a false-accept rate,
# the human-correct ones for a false-reject rate), and the interval is withheld: a normal or
# bootstrap interval on a handful of binary outcomes does not hold its level (docs/estimates.md).
MIN_LABELS = 10
# The headline shows the prediction-powered figure once it rests on this many labels and its
# interval is not withheld; else human only, else the machine figure (flagged as such).
HEADLINE_MIN_LABELS = 30
N_BOOT = 1000
# The variance floor (_PostStrata.variance): a cell's residual variance is at least that of this many of
# its labels disagreeing with the predictor at full reach. Calibrated on the validation table.
FLOOR_EVENTS = float(os.environ.get("ESTIMATE_FLOOR", "1"))
# How a ratio's interval is made: "normal" (delta method, with the floor) or "bootstrap" (Rao–Wu).
RATIO_METHOD = os.environ.get("ESTIMATE_RATIO_METHOD", "normal")
# The range each kind's value lives in: an interval is clipped to it (which never lowers coverage).
RANGE = {
    "accuracy": (0.0, 1.0),
    "gain": (-1.0, 1.0),
    "agreement": (0.0, 1.0),
    "bias": (-1.0, 1.0),
    "false-accept": (0.0, 1.0),
    "false-reject": (0.0, 1.0),
}
TARGET_KINDS = ("accuracy", "gain", "format-share", "agreement", "bias", "false-accept", "false-reject")
RATIO_KINDS = ("false-accept", "false-reject")
PRODUCER_KINDS = ("agreement", "bias", "false-accept", "false-reject")
FORMS = (
    "accuracy, accuracy:<group>, accuracy:<field>=<value>, gain:<base>,<rl>, format-share:<base>,<rl>,<reader>, "
    "agreement:<producer>, bias:<producer>, false-accept:<producer>, false-reject:<producer>"
)
GROUP_FIELDS = ("checkpoint", "model", "benchmark", "task_type")
Headline = Literal["prediction-powered", "human only", "machine only"]


class EstimateError(ApplicationError, ValueError):
    """A target that does not parse or names what the data do not have, or a design that does not
    fit its population; the message says what would do."""

    def __init__(self, message: str, *, field: str = "target") -> None:
        super().__init__(message, field=field)


@dataclass(frozen=True)
class EstimateTarget:
    kind: str
    args: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.kind + (":" + ",".join(self.args) if self.args else "")


def parse_estimate_target(text: str) -> EstimateTarget:
    """A target from its text form (FORMS); `reader:<producer>` is agreement, as allocation's
    targets name it. Group names may not hold commas."""
    if not isinstance(text, str) or not text.strip():
        raise EstimateError(f"a target is required: one of {FORMS}")
    kind, sep, rest = text.strip().partition(":")
    kind = "agreement" if kind == "reader" else kind
    if kind not in TARGET_KINDS:
        raise EstimateError(f"unknown target {text!r}: use one of {FORMS}")
    if kind == "accuracy":
        return EstimateTarget(kind, (rest,) if sep and rest else ())
    if kind in PRODUCER_KINDS:
        if not rest:
            raise EstimateError(f"target {text!r} names no producer: write {kind}:<producer>")
        return EstimateTarget(kind, (rest,))
    parts = tuple(rest.split(",")) if rest else ()
    wanted = 2 if kind == "gain" else 3
    if len(parts) != wanted or not all(parts):
        form = "gain:<base>,<rl>" if kind == "gain" else "format-share:<base>,<rl>,<reader>"
        raise EstimateError(f"target {text!r}: write {form}")
    return EstimateTarget(kind, parts)


@dataclass(frozen=True)
class Population:
    """Every response an estimate ranges over: its groups ({field: value}) and every producer's
    verdict on it ({producer: {item: verdict}}; only correct / incorrect count)."""

    items: Sequence[str]
    groups: Mapping[str, Mapping[str, str]]
    verdicts: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class Design:
    """How the labels were drawn: each labelled response's cell and inclusion probability, and each
    cell's number of responses in the population. Within a cell the labelled responses must be a
    probability sample with those probabilities (a simple random sample when they are equal)."""

    cell_of: Mapping[str, str]
    probability: Mapping[str, float]
    cell_sizes: Mapping[str, int]
    name: str = ""
    # The cell of every response of the population, where the design knows it (routing does):
    # each target's domain is then post-stratified by cell with known sizes, so a group the labels
    # of a cell happen to miss is said to be missing instead of silently given that cell's weight
    # elsewhere. None with one cell means every response is in it.
    population_cell: Mapping[str, str] | None = None

    @classmethod
    def simple_random(cls, labelled: Collection[str], *, population: int, name: str = "") -> Design:
        """One cell: the labelled responses are a simple random sample of the population."""
        pi = len(labelled) / population if population else 1.0
        return cls(
            cell_of=dict.fromkeys(labelled, "all"),
            probability=dict.fromkeys(labelled, pi),
            cell_sizes={"all": population},
            name=name or "simple random sample",
        )


@dataclass(frozen=True)
class Sample:
    """The labels as arrays: positions into the population, truths (1 correct, 0 incorrect),
    cell codes, inclusion probabilities, and each cell's population size."""

    index: np.ndarray
    y: np.ndarray
    cell: np.ndarray
    pi: np.ndarray
    cell_sizes: np.ndarray
    cell_names: tuple[str, ...] = ()
    population_cell: np.ndarray | None = None  # every population response's cell code

    @classmethod
    def from_arrays(
        cls,
        *,
        index: Any,
        y: Any,
        cell: Any,
        pi: Any,
        cell_sizes: Any,
        cell_names: Sequence[str] = (),
        population_cell: Any = None,
    ) -> Sample:
        index, cell = np.asarray(index, dtype=np.int64), np.asarray(cell, dtype=np.int64)
        y, pi = np.asarray(y, dtype=float), np.asarray(pi, dtype=float)
        sizes = np.asarray(cell_sizes, dtype=np.int64)
        if not (len(index) == len(y) == len(cell) == len(pi)):
            raise EstimateError("index, y, cell and pi must have one entry per label", field="design")
        if len(index) and (np.any(pi <= 0) or np.any(pi > 1) or not np.all(np.isfinite(pi))):
            raise EstimateError("every inclusion probability must be in (0, 1]", field="design")
        if len(index) and (cell.min() < 0 or cell.max() >= len(sizes)):
            raise EstimateError("a label's cell has no population size", field="design")
        if np.any(~np.isin(y, (0.0, 1.0))):
            raise EstimateError("a truth must be 0 or 1", field="design")
        counts = np.bincount(cell, minlength=len(sizes))
        if np.any(counts > sizes):
            bad = int(np.argmax(counts > sizes))
            name = cell_names[bad] if bad < len(cell_names) else str(bad)
            raise EstimateError(
                f"cell {name!r} holds {counts[bad]} labels but only {sizes[bad]} responses", field="design"
            )
        names = tuple(cell_names) or tuple(str(c) for c in range(len(sizes)))
        everywhere = None
        if population_cell is not None:
            everywhere = np.asarray(population_cell, dtype=np.int64)
            if len(everywhere) and (everywhere.min() < 0 or everywhere.max() >= len(sizes)):
                raise EstimateError("a response of the population is in no cell of the design", field="design")
            if not np.array_equal(np.bincount(everywhere, minlength=len(sizes)), sizes):
                raise EstimateError("the cells' sizes do not match the population's cells", field="design")
            if len(index) and np.any(everywhere[index] != cell):
                raise EstimateError("a label's cell is not its response's cell", field="design")
        return cls(index=index, y=y, cell=cell, pi=pi, cell_sizes=sizes, cell_names=names, population_cell=everywhere)


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided interval and standard error; the interval and error are
    None where they are withheld (Estimate.withheld says why)."""

    estimate: float
    low: float | None
    high: float | None
    se: float | None

    @property
    def width(self) -> float | None:
        return None if self.low is None or self.high is None else self.high - self.low

    def as_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "se": self.se}


@dataclass(frozen=True)
class Estimate:
    """One target three ways: the machine figure (the predictor plugged in everywhere: no interval,
    it inherits the predictor's errors), the human-only figure (the labels alone, weighted by the
    design) and the prediction-powered one (the machine figure corrected on the labels)."""

    target: str
    predictor: str
    design: str
    population: int  # responses the target ranges over
    labels: int  # design labels in the target's domain
    machine: float | None
    human: Interval | None
    ppi: Interval | None
    lam: float | None  # the power-tuning weight of the machine verdicts (0: human only, 1: plain PPI)
    effective_labels: float | None  # labels × human-only variance ÷ prediction-powered variance
    method: str  # "normal" or "bootstrap" (ratios)
    withheld: str | None  # why the intervals are withheld, if they are
    headline: Headline

    @property
    def headline_value(self) -> float | None:
        if self.headline == "prediction-powered" and self.ppi is not None:
            return self.ppi.estimate
        if self.headline == "human only" and self.human is not None:
            return self.human.estimate
        return self.machine

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "predictor": self.predictor,
            "design": self.design,
            "population": self.population,
            "labels": self.labels,
            "machine": self.machine,
            "human": None if self.human is None else self.human.as_dict(),
            "prediction_powered": None if self.ppi is None else self.ppi.as_dict(),
            "lambda": self.lam,
            "effective_labels": self.effective_labels,
            "method": self.method,
            "withheld": self.withheld,
            "headline": self.headline,
            "headline_value": self.headline_value,
        }


def producer_predictor(population: Population, producer: str) -> dict[str, float]:
    """A producer's verdicts as P(correct): 1 for correct, 0 for incorrect; other classes absent."""
    said = population.verdicts.get(producer)
    if said is None:
        raise EstimateError(
            f"no producer {producer!r}; producers: {', '.join(sorted(population.verdicts))}", field="predictor"
        )
    return {i: 1.0 if v == "correct" else 0.0 for i, v in said.items() if v in BINARY}


def vote_predictor(population: Population, producers: Collection[str] | None = None) -> dict[str, float]:
    """The share of the producers (default: all) that call a response correct, among those that
    gave it a correct / incorrect verdict."""
    names = sorted(population.verdicts) if producers is None else list(producers)
    tally: dict[str, list[int]] = {}
    for name in names:
        for item, verdict in population.verdicts.get(name, {}).items():
            if verdict in BINARY:
                counts = tally.setdefault(item, [0, 0])
                counts[0] += verdict == "correct"
                counts[1] += 1
    return {item: k / n for item, (k, n) in tally.items()}


@dataclass(frozen=True)
class _Statistics:
    """A target as g(μ), μ_k = (1/N) Σ_i (α_ik y_i + β_ik). Statistic k depends on the truth of
    the responses where α_ik ≠ 0 (its domain, of known size); g is linear, c0 + w·μ, or the ratio
    μ0/μ1."""

    alpha: np.ndarray  # (N, K)
    beta_sum: np.ndarray  # (K,)
    weights: np.ndarray | None  # linear g: w (K,); None: the ratio μ0/μ1
    offset: float  # linear g: c0
    population: int

    @property
    def ratio(self) -> bool:
        return self.weights is None

    @property
    def domain(self) -> np.ndarray:
        return np.any(self.alpha != 0, axis=1)

    def g(self, mu: np.ndarray) -> float | None:
        if self.weights is not None:
            return float(self.offset + self.weights @ mu)
        return None if mu[1] <= 0 else float(mu[0] / mu[1])

    def grad(self, mu: np.ndarray) -> np.ndarray:
        if self.weights is not None:
            return self.weights
        return np.array([1 / mu[1], -mu[0] / mu[1] ** 2]) if mu[1] > 0 else np.zeros(2)


class Frame:
    """A population and a predictor as arrays, built once; estimates then cost O(labels) each,
    apart from one O(N) pass per target (cached)."""

    def __init__(self, population: Population, predictor: Mapping[str, float], *, by: str, name: str) -> None:
        self.items = list(population.items)
        self.position = {item: i for i, item in enumerate(self.items)}
        if len(self.position) != len(self.items):
            raise EstimateError("the population lists a response twice", field="population")
        self.population = population
        self.by = by
        self.name = name
        known = [float(p) for i, p in predictor.items() if i in self.position and p is not None]
        if any(not (0.0 <= p <= 1.0) for p in known):
            raise EstimateError("a predictor's value must be a probability in [0, 1]", field="predictor")
        # A response the predictor has no verdict on takes the predictor's mean: any fixed value
        # keeps the estimate unbiased (the correction measures it), and the mean keeps it central.
        fill = float(np.mean(known)) if known else 0.5
        self.f = np.full(len(self.items), fill)
        for item, p in predictor.items():
            at = self.position.get(item)
            if at is not None and p is not None:
                self.f[at] = float(p)
        self._stats: dict[str, _Statistics] = {}
        self._groups: dict[str, np.ndarray] = {}
        self._verdicts: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _predictor_array(self, predictor: Mapping[str, float] | np.ndarray) -> np.ndarray:
        """P(correct) per response in `items` order, from a mapping, or from an array in that order
        with NaN where the predictor says nothing; filled as __init__ fills it."""
        if isinstance(predictor, np.ndarray):
            f = np.asarray(predictor, dtype=float)
            if f.shape != (len(self.items),):
                raise EstimateError("a predictor array needs one value per response", field="predictor")
            known_values = f[~np.isnan(f)]
        else:
            f = np.full(len(self.items), np.nan)
            for item, p in predictor.items():
                at = self.position.get(item)
                if at is not None and p is not None:
                    f[at] = float(p)
            known_values = f[~np.isnan(f)]
        if np.any((known_values < 0.0) | (known_values > 1.0)):
            raise EstimateError("a predictor's value must be a probability in [0, 1]", field="predictor")
        # A response the predictor has no verdict on takes the predictor's mean: any fixed value
        # keeps the estimate unbiased (the correction measures it), and the mean keeps it central.
        fill = float(np.mean(known_values)) if len(known_values) else 0.5
        return np.where(np.isnan(f), fill, f)

    def with_predictor(self, predictor: Mapping[str, float] | np.ndarray, *, name: str) -> Frame:
        """The same population with another predictor. What depends on the population alone (the
        positions, the groups, the producers' verdicts, each target's statistics) is shared, so a
        predictor per producer (the vote of the others, for that producer's own rates) costs one
        O(N) pass instead of a new frame."""
        other = copy.copy(self)
        other.name = name
        other.f = self._predictor_array(predictor)
        return other

    @classmethod
    def build(
        cls, population: Population, predictor: Mapping[str, float], *, by: str = "checkpoint", name: str = ""
    ) -> Frame:
        return cls(population, predictor, by=by, name=name)

    def sample(self, labels: Mapping[str, str], design: Design) -> Sample:
        """The design's labels as a Sample; labels that are not correct / incorrect are left out.
        A label on a response outside the population, or without a cell, is an EstimateError."""
        names = sorted(design.cell_sizes)
        code = {name: c for c, name in enumerate(names)}
        rows = []
        for item, verdict in labels.items():
            if verdict not in BINARY:
                continue
            at = self.position.get(item)
            if at is None:
                raise EstimateError(f"labelled response {item!r} is not in the population", field="design")
            cell = design.cell_of.get(item)
            if cell not in code or item not in design.probability:
                raise EstimateError(f"labelled response {item!r} has no cell in the design", field="design")
            rows.append((at, 1.0 if verdict == "correct" else 0.0, code[cell], float(design.probability[item])))
        index, y, cell_codes, pi = (list(col) for col in zip(*rows, strict=True)) if rows else ([], [], [], [])
        everywhere = None
        if design.population_cell is not None:
            cells_of = design.population_cell
            missing = [i for i in self.items if cells_of.get(i) not in code]
            if missing:
                raise EstimateError(
                    f"response {missing[0]!r} of the population has no cell in the design", field="design"
                )
            everywhere = np.fromiter((code[cells_of[i]] for i in self.items), dtype=np.int64, count=len(self.items))
        return Sample.from_arrays(
            index=index,
            y=y,
            cell=cell_codes,
            pi=pi,
            cell_sizes=[int(design.cell_sizes[n]) for n in names],
            cell_names=names,
            population_cell=everywhere,
        )

    # -- targets as linear statistics ---------------------------------------------------------

    def _group(self, field: str) -> np.ndarray:
        if field not in self._groups:
            groups = self.population.groups
            self._groups[field] = np.array([(groups.get(i) or {}).get(field) or "-" for i in self.items], dtype=object)
        return self._groups[field]

    def _members(self, target: EstimateTarget, value: str, field: str | None = None) -> np.ndarray:
        field = field or self.by
        column = self._group(field)
        mask = column == value
        if not mask.any():
            known = ", ".join(sorted({str(v) for v in column}))
            raise EstimateError(f"target {target}: no {field} {value!r}; {field}s: {known}")
        return mask

    def _producer(self, target: EstimateTarget, producer: str) -> tuple[np.ndarray, np.ndarray]:
        said = self.population.verdicts.get(producer)
        if said is None:
            known = ", ".join(sorted(self.population.verdicts))
            raise EstimateError(f"target {target}: no producer {producer!r}; producers: {known}")
        if producer not in self._verdicts:
            # Once per producer (its four targets share it), in one pass over the population's
            # order: the headline set reads every producer of a 100k-response panel.
            code: dict[str | None, int] = {"incorrect": 1, "correct": 2}
            found = map(code.get, map(said.get, self.items), itertools.repeat(0))
            codes = np.fromiter(found, dtype=np.int8, count=len(self.items))
            self._verdicts[producer] = (codes > 0, (codes == 2).astype(float))
        mask, s = self._verdicts[producer]
        if not mask.any():
            raise EstimateError(f"target {target}: producer {producer!r} has no correct/incorrect verdict")
        return mask, s

    def producer_verdicts(self, producer: str) -> tuple[np.ndarray, np.ndarray]:
        """(judged, said correct) per response in `items` order: where the producer gave a correct /
        incorrect verdict, and which of those say correct (EstimateError if it gave none)."""
        return self._producer(EstimateTarget("agreement", (producer,)), producer)

    def statistics(self, target: str | EstimateTarget) -> _Statistics:
        t = target if isinstance(target, EstimateTarget) else parse_estimate_target(target)
        key = str(t)
        if key not in self._stats:
            self._stats[key] = self._linear(t)
        return self._stats[key]

    def _linear(self, t: EstimateTarget) -> _Statistics:
        n = len(self.items)
        if n == 0:
            raise EstimateError("the population is empty", field="population")
        if t.kind == "accuracy":
            if not t.args:
                mask = np.ones(n, dtype=bool)
            else:
                field, eq, value = t.args[0].partition("=")
                mask = self._members(t, value, field) if eq else self._members(t, t.args[0])
            return self._linear_of([mask * (n / mask.sum())], [0.0], [1.0])
        if t.kind in ("gain", "format-share"):
            base, rl = (self._members(t, g) for g in t.args[:2])
            means = [base * (n / base.sum()), rl * (n / rl.sum())]
            if t.kind == "gain":
                return self._linear_of(means, [0.0, 0.0], [-1.0, 1.0])
            # The reported gain is the named reader's, on every response: known exactly, no error.
            said, s = self._producer(t, t.args[2])
            correct = said & (s == 1)
            reported = float(correct[rl].mean() - correct[base].mean())
            if reported == 0:
                raise EstimateError(f"target {t}: {t.args[2]!r} reports no gain, so no share of it is defined")
            return self._linear_of(means, [0.0, 0.0], [1 / reported, -1 / reported], offset=1.0)
        mask, s = self._producer(t, t.args[0])
        said = mask.astype(float)
        k = n / said.sum()
        if t.kind == "agreement":
            return self._linear_of([said * (2 * s - 1) * k], [float((said * (1 - s) * k).sum())], [1.0])
        if t.kind == "bias":
            return self._linear_of([-said * k], [float((said * s * k).sum())], [1.0])
        if t.kind == "false-accept":
            # μ0 = mean(said·s·(1 − y)), μ1 = mean(said·(1 − y)): accepted among the truly incorrect.
            alpha = np.stack([-said * s, -said], axis=1)
            beta = np.array([(said * s).sum(), said.sum()], dtype=float)
        else:
            # μ0 = mean(said·(1 − s)·y), μ1 = mean(said·y): rejected among the truly correct.
            alpha = np.stack([said * (1 - s), said], axis=1)
            beta = np.zeros(2)
        return _Statistics(alpha, beta, None, 0.0, n)

    @staticmethod
    def _linear_of(
        alphas: list[np.ndarray], beta_sums: list[float], weights: list[float], offset: float = 0.0
    ) -> _Statistics:
        alpha = np.stack(alphas, axis=1).astype(float)
        return _Statistics(alpha, np.array(beta_sums, dtype=float), np.array(weights), offset, len(alpha))

    def value(self, target: str | EstimateTarget, y_all: Any) -> float | None:
        """The target on the population's true labels (one 0/1 per response, in `items` order)."""
        st = self.statistics(target)
        y = np.asarray(y_all, dtype=float)
        mu = (st.beta_sum + st.alpha.T @ y) / st.population
        return st.g(mu)

    def machine(self, target: str | EstimateTarget) -> float | None:
        st = self.statistics(target)
        return st.g((st.beta_sum + st.alpha.T @ self.f) / st.population)

    # -- estimation ---------------------------------------------------------------------------

    def _pop_sizes(self, st: _Statistics, sample: Sample) -> np.ndarray | None:
        """N_ck: each cell's number of responses in statistic k's domain, where the design says
        which cell every response is in (or has one cell); None: not known."""
        k = len(sample.cell_sizes)
        if sample.population_cell is not None:
            if len(sample.population_cell) != len(self.items):
                raise EstimateError("the design's cells do not cover this population", field="design")
            cols = [
                np.bincount(sample.population_cell[st.alpha[:, j] != 0], minlength=k) for j in range(st.alpha.shape[1])
            ]
            return np.stack(cols, axis=1).astype(float)
        if k == 1:
            return np.count_nonzero(st.alpha, axis=0)[None, :].astype(float)
        return None

    def estimate(
        self,
        target: str | EstimateTarget,
        sample: Sample,
        *,
        alpha: float = ALPHA,
        n_boot: int = N_BOOT,
        seed: int = 0,
        design: str = "",
        ratio_method: str | None = None,
    ) -> Estimate:
        """The target three ways on this sample (Estimate; the module docstring gives the
        estimator). Each statistic's correction is a Hájek mean over the labels in its domain,
        scaled by the domain's known size, so that a predictor constant on the domain gives the
        human-only estimate exactly whatever λ."""
        t = target if isinstance(target, EstimateTarget) else parse_estimate_target(target)
        st = self.statistics(t)
        n = st.population
        af = st.alpha.T @ self.f
        machine = st.g((st.beta_sum + af) / n)
        a_l = st.alpha[sample.index]  # (labels, K)
        f_l = self.f[sample.index]
        labels = int(np.any(a_l != 0, axis=1).sum())
        strata = _PostStrata(sample, st, self._pop_sizes(st, sample), f_l)
        withheld = _withheld(st, sample, labels) or strata.withheld()
        cells = _Bootstrap(sample)

        def mu(lam: float) -> np.ndarray:
            return (st.beta_sum + lam * af + strata.correction(lam)) / n

        human_mu = mu(0.0)
        human_value = st.g(human_mu)
        a, b, reach, shares = strata.residuals(st.grad(human_mu))
        human_var = strata.variance(a, reach, shares) / n**2
        human_df = strata.df
        # λ minimises the design variance at the PPI point (the gradient moves with μ for the
        # ratios only; λ = 1 is close enough to linearise at).
        a, b, _, _ = strata.residuals(st.grad(mu(1.0)))
        lam = strata.tuned(a, b)
        ppi_mu = mu(lam)
        ppi_value = st.g(ppi_mu)
        a, b, reach, shares = strata.residuals(st.grad(ppi_mu))
        ppi_var = strata.variance(a - lam * b, reach, shares) / n**2
        ppi_df = strata.df
        if lam > 0 and ppi_var * _quantile(alpha, ppi_df) ** 2 > human_var * _quantile(alpha, human_df) ** 2:
            # The tuned λ minimises the cells' variance before their floors and degrees of freedom;
            # where those make its interval wider than the labels alone give, λ = 0 (the human-only
            # estimate) is the better weight, and the estimate never does worse than human only.
            lam, ppi_mu, ppi_value, ppi_var, ppi_df = 0.0, human_mu, human_value, human_var, human_df
        method = ratio_method or RATIO_METHOD if st.ratio else "normal"
        if withheld is None and (human_value is None or ppi_value is None):
            withheld = "the target is undefined on these labels (its denominator is 0)"
        bounds = RANGE.get(t.kind)
        if withheld is not None:
            human = None if human_value is None else Interval(human_value, None, None, None)
            ppi = None if ppi_value is None else Interval(ppi_value, None, None, None)
        elif method == "bootstrap" and n_boot > 0:
            boot = {"n_boot": n_boot, "seed": seed, "alpha": alpha}
            human_ci = cells.bootstrap(st, a_l, sample.y, f_l, af, 0.0, **boot)  # type: ignore[arg-type]
            ppi_ci = cells.bootstrap(st, a_l, sample.y, f_l, af, lam, **boot)  # type: ignore[arg-type]
            human = Interval(human_value, *human_ci, math.sqrt(human_var))  # type: ignore[arg-type]
            ppi = Interval(ppi_value, *ppi_ci, math.sqrt(ppi_var))  # type: ignore[arg-type]
        else:
            # An accuracy is a weighted share of binary truths: its variance follows its value, which
            # the score interval accounts for. The other targets carry the producers' verdicts in
            # their linearisation (agreement's (2s − 1)·Y, a ratio's residuals), whose variance is
            # not a binomial one, so an effective n from it would mean nothing.
            interval = _proportion if t.kind == "accuracy" else partial(_normal, bounds=bounds)
            human = interval(human_value, human_var, _quantile(alpha, human_df))  # type: ignore[arg-type]
            ppi = interval(ppi_value, ppi_var, _quantile(alpha, ppi_df))  # type: ignore[arg-type]
        effective = labels * human_var / ppi_var if withheld is None and ppi_var > 0 else None
        if ppi is not None and ppi.low is not None and labels >= HEADLINE_MIN_LABELS:
            headline: Headline = "prediction-powered"
        elif human is not None and human.low is not None:
            headline = "human only"
        else:
            headline = "machine only"
        return Estimate(
            target=str(t),
            predictor=self.name,
            design=design,
            population=int(st.domain.sum()),
            labels=labels,
            machine=machine,
            human=human,
            ppi=ppi,
            lam=lam if withheld is None else None,
            effective_labels=effective,
            method=method,
            withheld=withheld,
            headline=headline,
        )


def _quantile(alpha: float, df: float) -> float:
    """Student's t quantile with the Satterthwaite degrees of freedom (the normal's past 1,000)."""
    if not math.isfinite(df) or df > 1000:
        return float(norm.isf(alpha / 2))
    # The special function, not scipy.stats.t.isf: the same quantile without the distribution
    # machinery's argument checks, which cost a quarter of a millisecond a call.
    return float(stdtrit(max(df, 1.0), 1 - alpha / 2))


def _proportion(value: float, var: float, z: float) -> Interval:
    """Wilson's score interval on the estimate's effective sample size n* = p(1 − p) / Var
    (Korn & Graubard 1998; Dean & Pagano 2015 for weighted and clustered samples), with the t
    quantile: the Wald interval's half-width moves with the estimate (a draw that undercounts the
    correct answers gets a low estimate and a small variance together), so it misses on one side
    with a dozen labels; the score interval takes the variance where the truth would be. It tends
    to the Wald interval as n* grows (a good predictor's n* is its effective labels)."""
    if not 0.0 < value < 1.0 or var <= 0:
        return _normal(value, var, z, (0.0, 1.0))
    low, high = wilson_share(value, value * (1 - value) / var, z)
    return Interval(value, low, high, math.sqrt(var))


def _normal(value: float, var: float, z: float, bounds: tuple[float, float] | None) -> Interval:
    se = math.sqrt(max(var, 0.0))
    low, high = value - z * se, value + z * se
    # Clipped to the target's range, which never lowers coverage; but not around an estimate that
    # is itself outside it (a difference estimator can leave the range on an unlucky or
    # non-random sample): clipping would then show a width the data do not have.
    if bounds is not None and bounds[0] <= value <= bounds[1]:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Interval(value, low, high, se)


def _withheld(st: _Statistics, sample: Sample, labels: int) -> str | None:
    counts = np.bincount(sample.cell, minlength=len(sample.cell_sizes))
    for c, (k, size) in enumerate(zip(counts, sample.cell_sizes, strict=True)):
        # A cell labelled whole (a one-item cell of disputes served in priority order, say) is
        # known exactly: it needs no variance.
        if size > 0 and k < MIN_CELL_LABELS and k < size:
            name = sample.cell_names[c] if c < len(sample.cell_names) else str(c)
            return f"cell {name!r} has {k} label(s) of {size} responses (at least {MIN_CELL_LABELS} are needed)"
    if labels < MIN_LABELS:
        return f"{labels} labelled response(s) in the target's domain (at least {MIN_LABELS})"
    if st.ratio:
        # The denominator counts the labelled responses whose truth puts them in it: μ1's
        # α is −1 (false accept: the truly incorrect) or +1 (false reject: the truly correct).
        weight = st.alpha[sample.index, 1]
        truth = 1.0 if weight.max(initial=0) > 0 else 0.0
        inside = int(((weight != 0) & (sample.y == truth)).sum())
        if inside < MIN_LABELS:
            return f"{inside} labelled response(s) in the ratio's denominator (at least {MIN_LABELS})"
    return None


class _PostStrata:
    """Each statistic's domain split by cell, with known sizes N_ck where the design gives them:
    the correction of statistic k is Σ_c N_ck · (the Hájek mean of α_k(y − λf) over the cell's
    labels in the domain). Where the design does not say which cell every response is in, N_ck is
    estimated as N_c × the domain's weighted share of the cell's labels (the plain domain Hájek
    estimate). Variances are the cells' design variances of each label's linearised contribution,
    with the finite-population correction, floored per post-stratum (docs/estimates.md, "Rare
    disagreements")."""

    def __init__(self, sample: Sample, st: _Statistics, sizes: np.ndarray | None, f_l: np.ndarray) -> None:
        self.sample = sample
        self.cells = len(sample.cell_sizes)
        self.a_l = st.alpha[sample.index]
        self.inside = (self.a_l != 0).astype(float)
        self.w = 1.0 / sample.pi if len(sample.pi) else np.zeros(0)
        cell = sample.cell
        self.n_cell = np.bincount(cell, minlength=self.cells).astype(float)
        k = self.a_l.shape[1]
        self.weight = np.stack(
            [np.bincount(cell, weights=self.w * self.inside[:, j], minlength=self.cells) for j in range(k)], axis=1
        )  # W_ck
        self.count = np.stack(
            [np.bincount(cell, weights=self.inside[:, j], minlength=self.cells) for j in range(k)], axis=1
        )  # n_ck
        if sizes is None:
            cell_w = np.bincount(cell, weights=self.w, minlength=self.cells)
            share = self.weight / np.where(cell_w > 0, cell_w, 1.0)[:, None]
            sizes = sample.cell_sizes.astype(float)[:, None] * share
        self.sizes = sizes  # N_ck
        self.safe = np.where(self.weight > 0, self.weight, 1.0)
        self.y = sample.y
        self.df = math.inf
        self.f_l = f_l
        self._mean_y = self._means(self.a_l * sample.y[:, None])
        self._mean_f = self._means(self.a_l * f_l[:, None])

    def _means(self, x: np.ndarray) -> np.ndarray:
        """(C, K): each post-stratum's Hájek mean of x."""
        cell = self.sample.cell
        k = x.shape[1]
        sums = np.stack(
            [np.bincount(cell, weights=self.w * x[:, j] * self.inside[:, j], minlength=self.cells) for j in range(k)],
            axis=1,
        )
        return sums / self.safe

    def withheld(self) -> str | None:
        names = self.sample.cell_names
        for c, j in zip(*np.nonzero((self.sizes > 0) & (self.count < MIN_CELL_LABELS)), strict=True):
            if self.count[c, j] >= self.sizes[c, j]:
                continue  # labelled whole: known exactly
            name = names[c] if c < len(names) else str(c)
            return (
                f"cell {name!r} holds {round(self.sizes[c, j])} response(s) of the target's domain but "
                f"{int(self.count[c, j])} of its labels (at least {MIN_CELL_LABELS} are needed)"
            )
        effective = self._effective()
        if np.any(effective < MIN_LABELS):
            return f"{float(effective.min()):.1f} effective labels in the target's domain (at least {MIN_LABELS})"
        return None

    def _effective(self) -> np.ndarray:
        """Kish's effective number of labels of each statistic's domain estimate: (Σω)² / Σω²
        with ω_i = N_ck · w_i / W_ck, each label's share of the estimate."""
        omega = self.sizes[self.sample.cell] * self.w[:, None] / self.safe[self.sample.cell] * self.inside
        total = omega.sum(axis=0)
        squares = (omega**2).sum(axis=0)
        return np.where(squares > 0, total**2 / np.where(squares > 0, squares, 1.0), 0.0)

    def correction(self, lam: float) -> np.ndarray:
        return (self.sizes * (self._mean_y - lam * self._mean_f)).sum(axis=0)

    def residuals(self, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each label's linearised contribution to the estimate's total, a (with y) and b (with
        the predictor), so that the PPI residual is a − λ b; its reach (a whole-unit
        disagreement's contribution); and its share of the estimate (for the degrees of freedom)."""
        f_l = self.f_l
        cell = self.sample.cell
        share = self.w[:, None] / self.safe[cell] * self.inside  # h: the label's share of its post-stratum
        coef = self.sizes[cell] * share * grad  # (labels, K)
        reach = np.abs(coef * self.a_l).sum(axis=1)
        # Deleting one label moves a Hájek mean by w(z − m)/(W − w), not the linearisation's
        # w(z − m)/W: each residual is inflated by 1/(1 − h), h its share of its post-stratum, as
        # HC3 inflates a regression residual by its leverage (MacKinnon & White 1985: close to the
        # delete-one jackknife; on a plain mean, (n/(n − 1))² above the unbiased variance). It
        # matters where a post-stratum has few labels or one heavy label (a group's dozen labels in
        # an information draw), whose linearised variance is too small and whose interval missed on
        # real labels; a post-stratum labelled whole has no sampling variance to inflate.
        whole = (self.count >= self.sizes)[cell]
        coef = coef / np.where((share < 1) & ~whole, 1 - share, 1.0)
        a = (coef * (self.a_l * self.y[:, None] - self._mean_y[cell])).sum(axis=1)
        b = (coef * (self.a_l * f_l[:, None] - self._mean_f[cell])).sum(axis=1)
        return a, b, reach, np.abs(coef).sum(axis=1)

    def covariance(self, x: np.ndarray, z: np.ndarray) -> float:
        if not len(x):
            return 0.0
        cell = self.sample.cell
        n = np.maximum(self.n_cell, 1)
        mx = np.bincount(cell, weights=x, minlength=self.cells) / n
        mz = np.bincount(cell, weights=z, minlength=self.cells) / n
        terms = (1 - self.sample.pi) * (x - mx[cell]) * (z - mz[cell])
        factor = np.where(self.n_cell > 1, self.n_cell / np.maximum(self.n_cell - 1, 1), 0.0)
        return float((factor * np.bincount(cell, weights=terms, minlength=self.cells)).sum())

    def variance(self, e: np.ndarray, reach: np.ndarray, shares: np.ndarray) -> float:
        """Σ_c of the cell's design variance of its labels' contributions, each cell at least its
        floor: as if one label per post-stratum disagreed at full reach among its effective
        labels (FLOOR_EVENTS), Var ≥ (1 − f) · r² · FLOOR_EVENTS / (n_eff + 2)."""
        if not len(e):
            return 0.0
        cell = self.sample.cell
        n = np.maximum(self.n_cell, 1)
        me = np.bincount(cell, weights=e, minlength=self.cells) / n
        terms = (1 - self.sample.pi) * (e - me[cell]) ** 2
        factor = np.where(self.n_cell > 1, self.n_cell / np.maximum(self.n_cell - 1, 1), 0.0)
        actual = factor * np.bincount(cell, weights=terms, minlength=self.cells)
        # The floor per post-stratum: r the largest reach of its labels (a contribution, so the
        # weights are in it); the mean finite-population correction of its labels.
        k = self.inside.shape[1]
        floor = np.zeros(self.cells)
        for j in range(k):
            on = self.inside[:, j] > 0
            if not on.any():
                continue
            r = np.zeros(self.cells)
            np.maximum.at(r, cell[on], reach[on])
            fpc = np.bincount(cell[on], weights=1 - self.sample.pi[on], minlength=self.cells)
            cnt = np.bincount(cell[on], minlength=self.cells)
            mean_fpc = fpc / np.maximum(cnt, 1)
            floor += mean_fpc * FLOOR_EVENTS * r**2 * np.where(cnt > 0, cnt / (cnt + 2.0), 0.0)
        per_cell = np.maximum(actual, floor)
        # Welch–Satterthwaite: the degrees of freedom of a sum of cell variances, each estimated
        # from the labels that carry it; the interval takes Student's t with them (a cell of 30
        # labels dominating the variance gives t with about 29, not the normal's infinity). A
        # cell's labels count by Kish's effective number over their shares of the estimate
        # (Korn & Graubard): a group's dozen labels in a cell of 50 give about 11, not 49.
        total_w = np.bincount(cell, weights=shares, minlength=self.cells)
        square_w = np.bincount(cell, weights=shares**2, minlength=self.cells)
        n_eff = np.where(square_w > 0, total_w**2 / np.where(square_w > 0, square_w, 1.0), 0.0)
        carried = n_eff > 1 + 1e-9
        spread = per_cell[carried] ** 2 / (n_eff[carried] - 1)
        total = float(per_cell.sum())
        self.df = total**2 / float(spread.sum()) if spread.sum() > 0 else math.inf
        return total

    def tuned(self, a: np.ndarray, b: np.ndarray) -> float:
        """λ minimising the variance of a − λ b, clipped to [0, 1] (PPI++ power tuning)."""
        denom = self.covariance(b, b)
        # b is 0 up to rounding when the predictor is constant on the target's domains: then it
        # has nothing to add, and λ = 0 (a ratio of two rounding errors would be arbitrary).
        if denom <= 1e-12 * max(self.covariance(a, a), 1e-300):
            return 0.0
        return float(min(1.0, max(0.0, self.covariance(a, b) / denom)))


class _Bootstrap:
    """The Rao–Wu rescaled bootstrap within cells, for ratios when ESTIMATE_RATIO_METHOD asks for
    it (the default is the delta method: docs/estimates.md, "Rare disagreements")."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample
        self.k = len(sample.cell_sizes)
        self.w = 1.0 / sample.pi if len(sample.pi) else np.zeros(0)
        self.size = sample.cell_sizes.astype(float)

    def bootstrap(
        self,
        st: _Statistics,
        a_l: np.ndarray,
        y: np.ndarray,
        f_l: np.ndarray,
        af: np.ndarray,
        lam: float,
        *,
        n_boot: int,
        seed: int,
        alpha: float,
    ) -> tuple[float | None, float | None]:
        """The percentile interval of g(μ) over Rao–Wu rescaled bootstrap replicates: within each
        cell n_c − 1 draws with replacement, weights rescaled by √(1 − f_c) so that the replicates
        keep the finite-population correction; λ stays the estimate's, and each replicate takes
        its own Hájek domain means, as the estimate does."""
        rng = np.random.default_rng(seed)
        inside = (a_l != 0).astype(float)
        x = np.concatenate([a_l * (y - lam * f_l)[:, None], inside], axis=1)  # (labels, 2K)
        reps = np.zeros((n_boot, x.shape[1]))
        for c in range(self.k):
            rows = np.flatnonzero(self.sample.cell == c)
            n_c = len(rows)
            if n_c == 0:
                continue
            if n_c == 1:
                reps += self.size[c] * x[rows[0]]
                continue
            f_c = float(np.mean(self.sample.pi[rows]))
            scale = math.sqrt(max(1.0 - f_c, 0.0))
            draws = rng.multinomial(n_c - 1, np.full(n_c, 1 / n_c), size=n_boot)  # (B, n_c)
            weights = self.w[rows] * (1 - scale + scale * n_c / (n_c - 1) * draws)
            totals = weights.sum(axis=1, keepdims=True)
            reps += self.size[c] * (weights @ x[rows]) / np.where(totals > 0, totals, 1.0)
        k = a_l.shape[1]
        sizes = np.count_nonzero(st.alpha, axis=0)
        estimated = reps[:, k:]
        corrections = np.where(estimated > 0, sizes * reps[:, :k] / np.where(estimated > 0, estimated, 1.0), np.nan)
        mus = (st.beta_sum + lam * af + corrections) / st.population
        values = np.array([v for v in (st.g(m) for m in mus if np.all(np.isfinite(m))) if v is not None])
        if not len(values):
            return None, None
        low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
        return float(low), float(high)


def estimate(
    population: Population,
    *,
    labels: Mapping[str, str],
    design: Design,
    target: str | EstimateTarget,
    predictor: Mapping[str, float],
    predictor_name: str = "",
    by: str = "checkpoint",
    alpha: float = ALPHA,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Estimate:
    """One target, three ways (Estimate): the dict-level entry of the module."""
    frame = Frame.build(population, predictor, by=by, name=predictor_name)
    sample = frame.sample(labels, design)
    return frame.estimate(target, sample, alpha=alpha, n_boot=n_boot, seed=seed, design=design.name)
