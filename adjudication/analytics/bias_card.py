"""The judge-bias card: one producer's (an LLM judge's, or any reader's) false-accept rate,
false-reject rate and bias against the final human labels, overall and broken down by stratum, with
a test of whether each rate differs across the strata of each breakdown, and a flag where a judge
grades outputs of its own model family (docs/analytics.md, "The judge-bias card").

Pure functions over arrays (numpy, scipy; the rates and their intervals are analytics.bias's):
analytics.selectors reads the labelled responses' traits, analytics.report calls `judge_cards` once
per report. The labelled responses are coded once per breakdown (`Labelled`), and each producer's
card is a few bincounts over its rows into them.

Breakdowns (`BREAKDOWNS`): response length (quantile bins of the character length over the
labelled responses of the scope, the edges shown), answer format (readers.strata.response_format:
boxed / "the answer is" / bare), checkpoint, model, benchmark, gold type (readers.strata.gold_type:
letter / number / expression / text), format × checkpoint (does the judge favour one checkpoint's
format: the seed-000 question of base vs RL), and for a judge whose endpoint model is known, own
model family vs other families.

The heterogeneity test of a rate across a breakdown's strata is the likelihood-ratio test of a
logistic regression of the producer's verdict with the stratum as a factor against the one without
(among the human-rejected items, "the producer said correct": the false accept; among the
human-accepted ones, "the producer said incorrect": the false reject). With one factor the fitted
probabilities of the larger model are the strata's own rates, so its statistic is the G statistic of
the strata × verdict table, computed here in closed form by scipy (`chi2_contingency` with
`lambda_="log-likelihood"`) rather than by fitting (a test checks it equals statsmodels' Logit
`llr`): df = strata − 1, p from χ². Where an expected cell count is below MIN_EXPECTED the χ²
approximation is unreliable, and p is the Monte Carlo conditional p-value of the same statistic
(MONTE_CARLO tables drawn with the table's margins fixed: scipy's `random_table`). A stratum with
fewer than MIN_STRATUM items in the rate's denominator does not enter on its own: such strata are
merged into one "other" stratum when there are two or more and together they reach MIN_STRATUM,
and are left out otherwise; the card lists both. "Where the bias lives" names the tests below ALPHA
after Holm's adjustment over the card's tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adjudication.analytics.agreement import HumanObs, ReaderObs
from adjudication.analytics.bias import BINARY, BOOTSTRAP, bias_of_cells, producer_binary
from adjudication.analytics.stats import proportion
from readers.strata import GOLD_TYPES, RESPONSE_FORMAT_LABELS, RESPONSE_FORMATS, model_family

ALPHA = 0.05
LENGTH_BINS = 4
MIN_STRATUM = 10
MIN_EXPECTED = 5.0
MONTE_CARLO = 2000
OTHER = "other (merged)"

BREAKDOWNS: dict[str, str] = {
    "length": "response length (characters, quantile bins over the labelled responses)",
    "format": 'answer format (boxed / "the answer is" / bare)',
    "checkpoint": "checkpoint",
    "model": "answering model",
    "benchmark": "benchmark",
    "gold_type": "gold type (letter / number / expression / text)",
    "format_checkpoint": "answer format × checkpoint",
    "self_family": "own model family vs other families (judges with a known endpoint model)",
}
RATES: dict[str, str] = {
    "false_accept": "among items the human rejects: the producer says correct",
    "false_reject": "among items the human accepts: the producer says incorrect",
}
# The per-stratum figures a card keeps of analytics.bias's result.
STRATUM_KEYS = (
    "n",
    "tp",
    "fp",
    "fn",
    "tn",
    "false_accept_rate",
    "false_accept_rate_ci",
    "false_reject_rate",
    "false_reject_rate_ci",
    "bias",
    "bias_ci",
    "bias_p_value",
    "lean",
    "warnings",
)


@dataclass(frozen=True)
class ResponseTraits:
    """What the card breaks a labelled response down by, besides its run's model, checkpoint and
    benchmark (which every reading carries)."""

    length: int
    format: str
    gold_type: str


@dataclass
class Labelled:
    """The labelled responses of one scope, one row each: the human verdict and the stratum of
    every breakdown as an integer code into that breakdown's names (in display order), plus each
    row's answering model (for the self-preference family). Built once per report; every producer's
    card indexes into it."""

    human_correct: np.ndarray
    codes: dict[str, np.ndarray]
    names: dict[str, list[str]]
    models: np.ndarray
    edges: list[int]

    @classmethod
    def of(
        cls,
        *,
        human_correct: Sequence[bool],
        lengths: Sequence[int],
        formats: Sequence[str],
        gold_types: Sequence[str],
        models: Sequence[str],
        checkpoints: Sequence[str],
        benchmarks: Sequence[str],
        edges: Sequence[int] | None = None,
    ) -> Labelled:
        """From one column per trait; `edges`: the length bins' inner edges (default: the quartiles
        of these lengths, length_edges)."""
        length = np.asarray(lengths, dtype=float)
        bins = list(edges) if edges is not None else length_edges(length)
        codes: dict[str, np.ndarray] = {"length": np.searchsorted(np.asarray(bins, dtype=float), length, side="right")}
        names: dict[str, list[str]] = {"length": [_length_label(i, bins) for i in range(len(bins) + 1)]}
        for dimension, values in (
            ("format", formats),
            ("checkpoint", checkpoints),
            ("model", models),
            ("benchmark", benchmarks),
            ("gold_type", gold_types),
        ):
            codes[dimension], names[dimension] = _coded(dimension, values)
        n_checkpoints = len(names["checkpoint"])
        codes["format_checkpoint"] = codes["format"] * n_checkpoints + codes["checkpoint"]
        names["format_checkpoint"] = [f"{f} · {c}" for f in names["format"] for c in names["checkpoint"]]
        return cls(
            human_correct=np.asarray(human_correct, dtype=bool),
            codes=codes,
            names=names,
            models=np.asarray(models, dtype=object),
            edges=bins,
        )


def _coded(dimension: str, values: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Each value's position among the distinct values in display order."""
    if not len(values):
        return np.zeros(0, dtype=np.int64), []
    unique, inverse = np.unique(np.asarray(values, dtype=str), return_inverse=True)
    order = _stratum_order(dimension, [str(u) for u in unique])
    position = np.array([order.index(str(u)) for u in unique], dtype=np.int64)
    return position[inverse], order


@dataclass
class ProducerReadings:
    """One producer's readings of the labelled responses: the row of each (into Labelled) and its verdict."""

    producer: str
    kind: str = ""
    rows: list[int] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)


def labelled_readings(
    obs: Iterable[ReaderObs],
    human: Mapping[str, HumanObs],
    traits: Mapping[str, ResponseTraits],
    *,
    scope: str = "reviewed",
    unparsed: Collection[tuple[str, str]] = (),
) -> tuple[Labelled, dict[str, ProducerReadings]]:
    """The labelled responses of `scope` ("reviewed", "controls", "disputed") that a producer read,
    whose human verdict is correct/incorrect and whose traits were read, and each producer's
    readings of them. One pass over the readings: a dictionary look-up and two appends each.
    `unparsed`: (response, producer) pairs whose `error` is a reply no parser understood: their
    verdict is `unparsed` here (the card counts parse failures apart from failed calls)."""
    unparsed = set(unparsed)
    row_of: dict[str, int] = {}
    skipped: set[str] = set()
    columns: dict[str, list[Any]] = {
        k: [] for k in ("human_correct", "lengths", "formats", "gold_types", "models", "checkpoints", "benchmarks")
    }
    producers: dict[str, ProducerReadings] = {}
    for o in obs:
        row = row_of.get(o.response)
        if row is None:
            if o.response in skipped:
                continue
            h, t = human.get(o.response), traits.get(o.response)
            if (
                h is None
                or t is None
                or h.verdict not in BINARY
                or (scope != "reviewed" and (scope == "controls") != h.is_control)
            ):
                skipped.add(o.response)
                continue
            row = row_of[o.response] = len(row_of)
            for key, value in (
                ("human_correct", h.verdict == "correct"),
                ("lengths", t.length),
                ("formats", t.format),
                ("gold_types", t.gold_type),
                ("models", o.model or "-"),
                ("checkpoints", o.checkpoint or "-"),
                ("benchmarks", o.benchmark or "-"),
            ):
                columns[key].append(value)
        readings = producers.get(o.reader)
        if readings is None:
            readings = producers[o.reader] = ProducerReadings(producer=o.reader, kind=o.kind)
        readings.rows.append(row)
        readings.verdicts.append(
            "unparsed" if o.verdict == "error" and unparsed and (o.response, o.reader) in unparsed else o.verdict
        )
    return Labelled.of(**columns), producers


def length_edges(lengths: Sequence[int] | np.ndarray, bins: int = LENGTH_BINS) -> list[int]:
    """The inner edges of `bins` quantile bins of the lengths (a length below edge i is in bin i or
    lower), rounded up to whole characters; ties can leave fewer bins."""
    values = np.asarray(lengths, dtype=float)
    if values.size == 0:
        return []
    inner = np.ceil(np.quantile(values, np.arange(1, bins) / bins))
    return [int(e) for e in np.unique(inner) if values.min() < e <= values.max()]


def _length_label(i: int, edges: Sequence[int]) -> str:
    lo = f"{edges[i - 1]:,}" if i > 0 else "0"
    hi = f"{edges[i] - 1:,}" if i < len(edges) else "∞"
    return f"Q{i + 1}: {lo}–{hi} chars"


def heterogeneity(
    strata: Sequence[str], k: np.ndarray, n: np.ndarray, *, rng: np.random.Generator | None = None
) -> dict[str, Any]:
    """The likelihood-ratio test that a rate (k_s of n_s in each stratum s) is the same in every
    stratum (module docstring): statistic, df, p-value and how it was computed, with the strata
    tested, merged and left out."""
    small = [i for i in range(len(strata)) if n[i] < MIN_STRATUM]
    tested = [i for i in range(len(strata)) if n[i] >= MIN_STRATUM]
    names = [strata[i] for i in tested]
    ks, ns = [int(k[i]) for i in tested], [int(n[i]) for i in tested]
    merged: list[str] = []
    left_out: list[str] = []
    if small:
        pooled_n = int(sum(n[i] for i in small))
        if pooled_n >= MIN_STRATUM and len(small) > 1:
            merged = [strata[i] for i in small]
            names.append(OTHER)
            ks.append(int(sum(k[i] for i in small)))
            ns.append(pooled_n)
        else:
            left_out = [strata[i] for i in small]
    out: dict[str, Any] = {
        "strata": names,
        "merged": merged,
        "left_out": left_out,
        "n": int(sum(ns)),
        "statistic": None,
        "df": None,
        "p_value": None,
        "method": "",
        "reject": False,
        "reason": "",
    }
    if len(names) < 2:
        out["reason"] = (
            f"fewer than two strata with {MIN_STRATUM} or more items in the rate's denominator: nothing to compare"
        )
        return out
    table = np.array([ks, [a - b for a, b in zip(ns, ks, strict=True)]], dtype=float).T
    total_k = table[:, 0].sum()
    if total_k == 0 or total_k == table.sum():
        out["reason"] = "the producer said the same on every item of the denominator: no variation to test"
        out["df"] = len(names) - 1
        return out
    from scipy.stats import chi2_contingency

    result = chi2_contingency(table, correction=False, lambda_="log-likelihood")
    statistic, df, expected = float(result.statistic), int(result.dof), result.expected_freq
    out.update({"statistic": statistic, "df": df})
    if float(expected.min()) >= MIN_EXPECTED:
        out.update({"p_value": float(result.pvalue), "method": "likelihood ratio, χ² approximation"})
    else:
        out.update(
            {
                "p_value": _monte_carlo_p(table, expected, statistic, rng or np.random.default_rng(0)),
                "method": (
                    f"likelihood ratio, Monte Carlo p ({MONTE_CARLO} tables with these margins): "
                    f"an expected count below {MIN_EXPECTED:g}"
                ),
            }
        )
    out["reject"] = out["p_value"] < ALPHA
    return out


def _monte_carlo_p(table: np.ndarray, expected: np.ndarray, statistic: float, rng: np.random.Generator) -> float:
    """P(G ≥ observed) under homogeneity, conditional on the margins: the exact test's p-value,
    estimated from MONTE_CARLO tables (the observed table counted among them, so never 0)."""
    from scipy.stats import random_table

    drawn = random_table(table.sum(axis=1), table.sum(axis=0), seed=rng).rvs(size=MONTE_CARLO).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(drawn > 0, drawn * np.log(drawn / expected), 0.0)
    g = 2.0 * terms.sum(axis=(1, 2))
    # A tolerance: the same table computed two ways differs in the last bits.
    return float((1 + np.count_nonzero(g >= statistic - 1e-9)) / (MONTE_CARLO + 1))


def _holm(tests: list[dict[str, Any]]) -> None:
    """Holm's step-down adjustment over the card's tests with a p-value: each test's `p_holm`, so
    that "where the bias lives" names a breakdown at 5 % family-wise, not one in every twenty
    breakdowns of a judge with no such bias. Written out (a test checks it against statsmodels'
    `multipletests(method="holm")`): statsmodels runs a full garbage collection on every call,
    which costs more than the tests themselves in a report's heap."""
    with_p = [t for t in tests if t["p_value"] is not None]
    if not with_p:
        return
    p = np.array([t["p_value"] for t in with_p], dtype=float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    for t, value in zip(with_p, adjusted, strict=True):
        t["p_holm"] = float(value)


def _stratum_order(dimension: str, names: Sequence[str]) -> list[str]:
    if dimension == "format":
        return sorted(names, key=lambda s: (RESPONSE_FORMATS.index(s) if s in RESPONSE_FORMATS else 99, s))
    if dimension == "gold_type":
        return sorted(names, key=lambda s: (GOLD_TYPES.index(s) if s in GOLD_TYPES else 99, s))
    if dimension == "length":
        return sorted(names, key=lambda s: int(s[1 : s.index(":")]))
    return sorted(names)


def _stratum_stats(cells: np.ndarray, *, seed: int, n_boot: int) -> dict[str, Any]:
    stats = bias_of_cells(cells.reshape(2, 2), seed=seed, n_boot=n_boot)
    return {k: stats[k] for k in STRATUM_KEYS}


def judge_card(
    readings: ProducerReadings,
    labelled: Labelled,
    *,
    judge_model: str = "",
    template_hash: str = "",
    no_answer: str = "incorrect",
    seed: int = 0,
    n_boot: int = BOOTSTRAP,
) -> dict[str, Any]:
    """One producer's card (module docstring) over its readings of the labelled responses;
    `judge_model`: the judge's endpoint model (empty for a reader), for the self-preference flag."""
    binary = {v: producer_binary(v, no_answer) for v in set(readings.verdicts)}
    said = np.array([_SAID[binary[v]] for v in readings.verdicts], dtype=np.int8)
    usable = said >= 0
    excluded = Counter(f"producer_{v or 'missing'}" for v in readings.verdicts if binary[v] is None)
    rows = np.asarray(readings.rows, dtype=np.int64)[usable]
    judge_correct = said[usable] == 1
    human_correct = labelled.human_correct[rows]
    # The 2×2 cell of each item, in bias_of_cells's order: TP, FP, FN, TN.
    cell = np.where(judge_correct, np.where(human_correct, 0, 1), np.where(human_correct, 2, 3))
    codes = {dimension: c[rows] for dimension, c in labelled.codes.items()}
    names = dict(labelled.names)
    family = model_family(judge_model) if judge_model else ""
    own = np.zeros(len(cell), dtype=bool)
    if family:
        families = {m: model_family(m) for m in set(labelled.models.tolist())}
        own_row = np.array([families[m] == family for m in labelled.models], dtype=bool)
        own = own_row[rows] if len(own_row) else own
        codes["self_family"] = np.where(own, 0, 1)
        names["self_family"] = [f"own family ({family})", "other families"]

    overall = bias_of_cells(np.bincount(cell, minlength=4).reshape(2, 2), excluded=excluded, seed=seed, n_boot=n_boot)
    rng = np.random.default_rng(seed)
    breakdowns: dict[str, Any] = {}
    tests: list[dict[str, Any]] = []
    for dimension in BREAKDOWNS:
        if dimension not in codes:
            continue
        counts = np.bincount(codes[dimension] * 4 + cell, minlength=len(names[dimension]) * 4).reshape(-1, 4)
        present = [i for i in range(len(names[dimension])) if counts[i].sum()]
        order = [names[dimension][i] for i in present]
        ordered = counts[present].reshape(-1, 4)
        strata = [
            {
                "stratum": name,
                "label": RESPONSE_FORMAT_LABELS.get(name, name),
                **_stratum_stats(ordered[j], seed=seed, n_boot=n_boot),
            }
            for j, name in enumerate(order)
        ]
        block: dict[str, Any] = {"title": BREAKDOWNS[dimension], "strata": strata, "tests": {}}
        if dimension == "length":
            block["edges"] = list(labelled.edges)
        for rate, (k_col, other_col) in (("false_accept", (1, 3)), ("false_reject", (2, 0))):
            k = ordered[:, k_col]
            test = heterogeneity(order, k, k + ordered[:, other_col], rng=rng)
            test.update({"dimension": dimension, "rate": rate})
            block["tests"][rate] = test
            tests.append(test)
        breakdowns[dimension] = block
    _holm(tests)
    found = [t for t in tests if t.get("p_holm") is not None and t["p_holm"] < ALPHA]
    where = [
        {k: t[k] for k in ("dimension", "rate", "p_value", "p_holm", "df")}
        for t in sorted(found, key=lambda t: (t["p_holm"], t["p_value"], t["dimension"], t["rate"]))
    ]
    return {
        "producer": readings.producer,
        "kind": readings.kind,
        "template_hash": template_hash,
        "n": overall["n"],
        "overall": {**{k: overall[k] for k in STRATUM_KEYS}, "excluded": overall["excluded"]},
        "parse_failures": int(excluded.get("producer_unparsed", 0)),
        # Of the labelled items it was asked about (its readings of them), the replies no parser read.
        "parse_failure_rate": proportion(int(excluded.get("producer_unparsed", 0)), len(readings.verdicts)),
        "judged": len(readings.verdicts),
        "breakdowns": breakdowns,
        "where": where,
        "tests_run": sum(t["p_value"] is not None for t in tests),
        "self_preference": _self_preference(family, judge_model, own, cell, seed=seed, n_boot=n_boot),
    }


# A producer's verdict as correct (1), incorrect (0) or left out (-1), from producer_binary.
_SAID = {"correct": 1, "incorrect": 0, None: -1}


def _self_preference(
    family: str, judge_model: str, own: np.ndarray, cell: np.ndarray, *, seed: int, n_boot: int
) -> dict[str, Any] | None:
    """Whether the judge grades outputs of its own model family, how many, and its figures on them
    beside the others'. None for a producer without an endpoint model (a rule reader)."""
    if not judge_model:
        return None
    n_own = int(own.sum())
    out: dict[str, Any] = {
        "judge_model": judge_model,
        "family": family,
        "n_own": n_own,
        "flagged": n_own > 0,
    }
    if n_own:
        out["own"] = _stratum_stats(np.bincount(cell[own], minlength=4), seed=seed, n_boot=n_boot)
        out["other"] = _stratum_stats(np.bincount(cell[~own], minlength=4), seed=seed, n_boot=n_boot)
    return out


def judge_cards(
    obs: Iterable[ReaderObs],
    human: Mapping[str, HumanObs],
    traits: Mapping[str, ResponseTraits],
    *,
    scope: str,
    judge_models: Mapping[str, str] | None = None,
    templates: Mapping[str, str] | None = None,
    unparsed: Collection[tuple[str, str]] = (),
    no_answer: str = "incorrect",
    seed: int = 0,
    n_boot: int = BOOTSTRAP,
) -> dict[str, Any]:
    """Every producer's card on the labelled responses of `scope`: {"scope", "length_edges",
    "cards": [judges first, then readers, by name], ...}. The length bins are shared: quartiles over
    the labelled responses of the scope that a producer read."""
    labelled, producers = labelled_readings(obs, human, traits, scope=scope, unparsed=unparsed)
    judge_models = judge_models or {}
    templates = templates or {}
    cards = [
        judge_card(
            readings,
            labelled,
            judge_model=judge_models.get(name, ""),
            template_hash=templates.get(name, ""),
            no_answer=no_answer,
            seed=seed,
            n_boot=n_boot,
        )
        for name, readings in producers.items()
    ]
    cards.sort(key=lambda c: (c["kind"] != "judge", c["producer"]))
    return {
        "scope": scope,
        "n_responses": len(labelled.human_correct),
        "length_edges": labelled.edges,
        "alpha": ALPHA,
        "min_stratum": MIN_STRATUM,
        "min_expected": MIN_EXPECTED,
        "monte_carlo": MONTE_CARLO,
        "breakdowns": dict(BREAKDOWNS),
        # jsonb keeps no key order: the display order of every card's breakdowns.
        "breakdown_order": list(BREAKDOWNS),
        "rates": dict(RATES),
        "cards": cards,
    }
