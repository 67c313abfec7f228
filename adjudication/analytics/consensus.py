"""Panel consensus: every producer's error rates and every item's truth from overlapping verdicts,
without full human labels (a latent-class model, crowd-kit's implementation).

Pure functions over (item, producer, verdict) triples; no ORM (the selector `consensus_inputs`
builds them from a dataset, `files.agreement_records` from a JSONL file). docs/consensus.md has
the why; the definitions:

* The latent truth of an item is binary: correct or incorrect. A producer's vote is its verdict
  when it is correct or incorrect. `no_answer`, `timeout` and `error` are abstentions: the row is
  left out of the fit (absent, not a third answer: crowd-kit would turn a third label into a third
  latent class) and counted per producer in `abstentions`.
* model "dawid-skene" (default): the two-coin Dawid–Skene model, one 2×2 confusion matrix per
  producer. sensitivity = P(vote correct | truth correct), specificity = P(vote incorrect | truth
  incorrect), false_accept_rate = 1 − specificity, false_reject_rate = 1 − sensitivity.
  model "mace": MACE (each producer knows the answer with some probability, else draws from its
  own label distribution); its confusion matrix is P(vote k | truth c) = know·[k = c] + spam·θ_k.
* Human labels {item: correct|incorrect} are clamped observations (crowd-kit's `true_labels`): the
  item's posterior is the human label at every EM step. MACE takes no known labels: with it the
  human labels set the posteriors of their items after the fit, and the rates ignore them.
* human_weight = w (Dawid–Skene only): a clamped item counts w times in the M-step. crowd-kit
  cannot weight a known label, so each labelled item that has votes is given to it w times, as w
  tasks carrying the same votes and the same clamp; the copies' posteriors are dropped. w = 1 (the
  default) is the plain clamp. The producers' rates then lean on the human-labelled items w times
  as much as on an unlabelled one: a few hundred labels can pull a fit that took a correlated
  cluster for the truth back toward the humans (docs/consensus.md, "Validation on real labels").
* `by` (model, checkpoint or benchmark): one model per value of that field, so a producer has one
  confusion matrix per stratum (lexical matching is good on short spans and poor on chat prose).
* p_correct of an item: the posterior P(truth = correct | votes, human label).
  accuracy of a group (the `by` field, else checkpoint) = mean p_correct over its items; its
  interval is a seeded percentile bootstrap over items, refitting the model on every replicate.
  Beside it: the human-only accuracy (the share of human-labelled items labelled correct) with
  its Wilson interval.
* human_sensitivity / human_specificity of a producer: its votes against the human labels on the
  items that have both (Wilson intervals), the measured counterpart of the fitted rates.
* phi of a producer pair, within class c: the φ coefficient of the two producers' votes (correct =
  1) on the items both voted on, each item weighted by its posterior P(class c); `phi` is the mean
  of the two classes' φ weighted by their posterior mass. Independent producers (the model's
  assumption) have φ ≈ 0 within a class whatever their accuracy; a pair at φ ≥ CORRELATED_PHI is
  reported in `correlated`.
* group_duplicates = t: producers whose votes agree on at least a share t of the items they both
  voted on (and at least MIN_COMMON of them) are merged, transitively, into one voter named
  "a+b+…", whose vote on an item is the majority of its members' votes (a tie abstains).

Warnings: a producer fitted at sensitivity and specificity both ≥ 1 − DEGENERATE (the model took
it as the truth; the others' rates are then measured against it), a stratum with fewer than
MIN_ITEMS items, a group with some but fewer than MIN_ITEMS human labels (the human-only interval
is wide), MACE with human labels.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from adjudication.analytics.bias import BINARY, VERDICTS
from adjudication.analytics.stats import percentile_interval, proportion

if TYPE_CHECKING:  # pandas is imported with crowd-kit, by the fits only
    import pandas as pd

MODELS = ("dawid-skene", "mace")
STRATA = ("model", "checkpoint", "benchmark")
ABSTENTIONS = ("no_answer", "timeout", "error")
ALL = "all"
BOOTSTRAP = 200
DEGENERATE = 0.005
CORRELATED_PHI = 0.5
MIN_ITEMS = 30
MIN_COMMON = 10

# (item, field or None) -> the item's stratum under that field (ALL for None)
StratumOf = Callable[[str, str | None], str]


@dataclass(frozen=True)
class ConsensusInputs:
    """What a fit reads: votes (item, producer, verdict), human labels, and each item's strata."""

    votes: list[tuple[str, str, str]]
    human: dict[str, str] = field(default_factory=dict)
    strata: dict[str, dict[str, str]] = field(default_factory=dict)
    # The reader of the votes guarantees no (item, producer) twice (a database read under the
    # readings' unique constraint): validation then checks the verdicts only. A set of 1.8 M pairs
    # was ~1 s of a 100,000-response report.
    votes_unique: bool = False


@dataclass(frozen=True)
class ProducerRates:
    producer: str
    stratum: str
    n_votes: int
    abstentions: dict[str, int]
    sensitivity: float | None
    specificity: float | None
    false_accept_rate: float | None
    false_reject_rate: float | None
    human_sensitivity: dict[str, Any]  # stats.proportion: k, n, rate, ci
    human_specificity: dict[str, Any]
    degenerate: bool


@dataclass(frozen=True)
class ItemPosterior:
    item: str
    stratum: str
    p_correct: float
    human: str | None


@dataclass(frozen=True)
class GroupAccuracy:
    group: str
    n_items: int
    accuracy: float | None
    ci: list[float] | None
    human: dict[str, Any]  # stats.proportion of human labels saying correct


@dataclass(frozen=True)
class PairCorrelation:
    producers: list[str]
    n: int
    agreement: float
    phi_correct: float | None
    phi_incorrect: float | None
    phi: float | None


@dataclass(frozen=True)
class Consensus:
    model: str
    by: str | None
    accuracy_by: str | None
    producers: list[ProducerRates]
    items: list[ItemPosterior]
    accuracy: list[GroupAccuracy]
    correlations: list[PairCorrelation]
    correlated: list[PairCorrelation]
    groups: dict[str, list[str]]
    n_boot: int
    seed: int
    warnings: list[str]
    human_weight: int = 1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Fit:
    p_correct: dict[str, float]  # task -> posterior
    rates: dict[str, tuple[float | None, float | None]]  # producer -> (sensitivity, specificity)


def validate(inputs: ConsensusInputs) -> None:
    """ValueError naming the offending triple, label or option."""
    if _votes_valid(inputs.votes, unique=inputs.votes_unique):
        votes: Sequence[tuple[str, str, str]] = ()  # nothing to name: the labels are left to check
    else:
        votes = inputs.votes
    seen: set[tuple[str, str]] = set()
    for item, producer, verdict in votes:
        if verdict not in VERDICTS:
            raise ValueError(f"item {item!r}, producer {producer!r}: verdict {verdict!r} not one of {VERDICTS}")
        if (item, producer) in seen:
            raise ValueError(f"item {item!r}, producer {producer!r}: two verdicts")
        seen.add((item, producer))
    for item, label in inputs.human.items():
        if label not in BINARY:
            raise ValueError(f"item {item!r}: human label {label!r} not correct or incorrect")


def _votes_valid(votes: Sequence[tuple[str, str, str]], *, unique: bool = False) -> bool:
    """Every verdict known and no (item, producer) twice (unless `unique`: known already), checked
    in C loops; when False, validate walks the votes to name the first offender."""
    try:
        known = set(map(itemgetter(2), votes)) <= set(VERDICTS)
        return known and (unique or len(set(map(itemgetter(0, 1), votes))) == len(votes))
    except TypeError:  # an unhashable value: the walk says which
        return False


def consensus(
    inputs: ConsensusInputs,
    *,
    by: str | None = None,
    model: str = "dawid-skene",
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
    group_duplicates: float | None = None,
    human_weight: int = 1,
    with_items: bool = True,
) -> Consensus:
    """Fit the model (one per `by` stratum) and assemble the producer, item, accuracy and
    correlation tables (definitions in the module docstring). `with_items=False` leaves the
    per-item posteriors out (`items` empty): the analytics page shows none of them."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    if by is not None and by not in STRATA:
        raise ValueError(f"by must be one of {', '.join(STRATA)}, got {by!r}")
    if group_duplicates is not None and not 0.5 < group_duplicates <= 1:
        raise ValueError("group_duplicates must be in (0.5, 1]")
    if isinstance(human_weight, bool) or not isinstance(human_weight, int) or human_weight < 1:
        raise ValueError(f"human_weight must be an integer >= 1, got {human_weight!r}")
    if human_weight > 1 and model != "dawid-skene":
        raise ValueError("human_weight needs model dawid-skene (MACE takes no known labels)")
    validate(inputs)
    notes: list[str] = []
    groups: dict[str, list[str]] = {}
    votes = list(inputs.votes)
    if group_duplicates is not None:
        votes, groups = group_producers(votes, threshold=group_duplicates)
    binary = [v for v in votes if v[2] in BINARY]
    abstentions = [v for v in votes if v[2] not in BINARY]
    if not binary:
        raise ValueError("no correct/incorrect votes to fit (only abstentions)")
    if model == "mace" and inputs.human:
        notes.append("MACE takes no known labels: the human labels set their items' posteriors, not the rates")

    def stratum_of(item: str, key: str | None) -> str:
        if key is None:
            return ALL
        return (inputs.strata.get(item) or {}).get(key) or "-"

    # Accuracy per checkpoint by default, the usual question; without checkpoints, one figure.
    has_checkpoints = any((s or {}).get("checkpoint") for s in inputs.strata.values())
    accuracy_by = by or ("checkpoint" if has_checkpoints else None)
    items = sorted({i for i, _, _ in binary} | set(inputs.human), key=str)
    fits = _fit_strata(binary, inputs.human, by=by, stratum_of=stratum_of, model=model, human_weight=human_weight)
    posterior = {i: p for f in fits.values() for i, p in f.p_correct.items()}
    for i, label in inputs.human.items():
        # Dawid-Skene has clamped these already; MACE takes no known labels, and crowd-kit drops a
        # human label on an item no producer voted on, which is still a known truth.
        posterior[i] = 1.0 if label == "correct" else 0.0

    producers = _producer_table(binary, abstentions, inputs.human, fits, stratum_of=lambda i: stratum_of(i, by))
    for row in producers:
        if row.degenerate:
            notes.append(
                f"{row.producer} ({row.stratum}): fitted at sensitivity ≈ specificity ≈ 1, the model took it "
                "as the truth; the other producers' rates are measured against it (check `correlated`, "
                "group near-duplicates, or fit per stratum)"
            )
    for s in sorted({stratum_of(i, by) for i in items}):
        n = sum(stratum_of(i, by) == s for i in items)
        if n < MIN_ITEMS:
            notes.append(f"stratum {s}: only {n} item(s) (< {MIN_ITEMS}): the fitted rates are unreliable")

    group_of = {i: stratum_of(i, accuracy_by) for i in items}
    accuracy = _accuracy_table(
        items,
        posterior,
        inputs.human,
        group_of,
        binary=binary,
        by=by,
        stratum_of=stratum_of,
        model=model,
        n_boot=n_boot,
        seed=seed,
        human_weight=human_weight,
    )
    for g in accuracy:
        if 0 < g.human["n"] < MIN_ITEMS:
            notes.append(
                f"{accuracy_by or 'all items'} {g.group}: only {g.human['n']} human label(s) (< {MIN_ITEMS}): "
                "the human-only estimate is wide"
            )
    correlations = producer_correlations(binary, posterior)
    return Consensus(
        model=model,
        by=by,
        accuracy_by=accuracy_by,
        producers=producers,
        items=[
            ItemPosterior(item=i, stratum=stratum_of(i, by), p_correct=posterior[i], human=inputs.human.get(i))
            for i in items
        ]
        if with_items
        else [],
        accuracy=accuracy,
        correlations=correlations,
        correlated=[c for c in correlations if c.phi is not None and c.phi >= CORRELATED_PHI],
        groups=groups,
        n_boot=n_boot,
        seed=seed,
        warnings=notes,
        human_weight=human_weight,
    )


def _fit_strata(
    binary: Sequence[tuple[str, str, str]],
    human: Mapping[str, str],
    *,
    by: str | None,
    stratum_of: StratumOf,
    model: str,
    human_weight: int = 1,
) -> dict[str, _Fit]:
    stratum = {item: stratum_of(item, by) for item in dict.fromkeys(map(itemgetter(0), binary))}
    per: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    if len(set(stratum.values())) == 1:  # one stratum (by=None): every row, in order
        per[next(iter(stratum.values()))] = list(binary)
    else:
        for row in binary:
            per[stratum[row[0]]].append(row)
    return {s: fit_model(rows, human, model=model, human_weight=human_weight) for s, rows in sorted(per.items())}


def _replicate_labelled(
    votes: Sequence[tuple[str, str, str]], human: Mapping[str, str], weight: int
) -> tuple[list[tuple[str, str, str]], dict[str, str], set[str]]:
    """The votes and clamps with every labelled item given `weight` times (module docstring,
    human_weight), and the names of the added copies."""
    tasks = {t for t, _, _ in votes}
    by_item: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for row in votes:
        if row[0] in human:
            by_item[row[0]].append(row)
    rows, known, copies = list(votes), dict(human), set()
    for item, item_votes in by_item.items():
        for k in range(1, weight):
            name = f"{item}\x1fw{k}"
            while name in tasks:  # an item id that already looks like a copy keeps its own name
                name += "'"
            copies.add(name)
            known[name] = human[item]
            rows += [(name, p, v) for _, p, v in item_votes]
    return rows, known, copies


def _column(rows: Sequence[tuple[str, str, str]], k: int) -> np.ndarray:
    """Field k of every row, as an object array (for whole-array comparisons)."""
    return np.array(list(map(itemgetter(k), rows)), dtype=object)


def _codes(rows: Sequence[tuple[str, str, str]], k: int) -> tuple[np.ndarray, dict[str, int]]:
    """Field k of every row as integer codes in order of first appearance, and {value: code}: what
    a `setdefault(value, len(codes))` per row gives, in C loops (1.8 million votes at 100,000
    responses were ~6 s of Python per column; issue 36 item 15)."""
    values = list(map(itemgetter(k), rows))
    index = {value: code for code, value in enumerate(dict.fromkeys(values))}
    return np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values)), index


_EPS = 1e-10  # crowd-kit's (dawid_skene._EPS): the floor of a rate, a prior and a posterior


def _dawid_skene_binary(
    votes: Sequence[tuple[str, str, str]], known: Mapping[str, str], *, n_iter: int = 100, tol: float = 1e-5
) -> _Fit | None:
    """crowd-kit 1.4.2's DawidSkene(n_iter, tol).fit on binary votes, step for step, in numpy: its
    pandas joins and group-bys cost ~0.3 s a fit on 18,000 votes, and the report's bootstrap refits
    the model fifty times (issue 36 item 15). Same initialisation (the vote shares, clamped), the
    same M-step (clip at _EPS, normalise per producer over its observed labels), E-step (log2,
    shifted), clamp, and evidence lower bound as the stopping rule (crowd-kit's, which adds the log
    prior once per vote). None when both labels are not among the votes: crowd-kit then grows a
    class from the clamps, which this does not copy (fit_model falls back to crowd-kit)."""
    if len(votes) == 0:
        return None
    labels = (_column(votes, 2) == "incorrect").astype(np.int64)
    if labels.min() == labels.max():
        return None
    t, task_ids = _codes(votes, 0)
    w, worker_ids = _codes(votes, 1)
    clamp_rows = np.array([task_ids[i] for i in known if i in task_ids], dtype=np.int64)
    clamp_values = np.array([known[i] == "incorrect" for i in known if i in task_ids], dtype=np.int64)
    probas, errors = _dawid_skene_arrays(
        t, w, labels, len(task_ids), len(worker_ids), clamp_rows, clamp_values, n_iter=n_iter, tol=tol
    )
    names = list(task_ids)
    rates: dict[str, tuple[float | None, float | None]] = {
        p: (float(errors[k, 0, 0]), float(errors[k, 1, 1])) for p, k in sorted(worker_ids.items())
    }
    return _Fit(p_correct={str(names[k]): float(probas[k, 0]) for k in range(len(names))}, rates=rates)


def _dawid_skene_arrays(
    t: np.ndarray,
    w: np.ndarray,
    labels: np.ndarray,
    n_tasks: int,
    n_workers: int,
    clamp_rows: np.ndarray,
    clamp_values: np.ndarray,
    *,
    n_iter: int = 100,
    tol: float = 1e-5,
) -> tuple[np.ndarray, np.ndarray]:
    """The fit on integer-coded votes (task t, producer w, label 0 correct / 1 incorrect; both labels
    present, every task voted on): (posteriors (n_tasks, 2), error matrices (n_workers, observed,
    true))."""
    cell = w * 2 + labels  # (producer, observed label): a row of the error matrix
    observed = np.bincount(cell, minlength=2 * n_workers) > 0

    def clamp(probas: np.ndarray) -> np.ndarray:
        if len(clamp_rows):
            probas[clamp_rows] = 0.0
            probas[clamp_rows, clamp_values] = 1.0
        return probas

    def m_step(probas: np.ndarray) -> np.ndarray:
        errors = np.stack([np.bincount(cell, weights=probas[t, c], minlength=2 * n_workers) for c in (0, 1)], axis=1)
        errors = np.maximum(errors, _EPS)
        errors[~observed] = 0.0  # crowd-kit has no row for a label the producer never gave
        errors = errors.reshape(n_workers, 2, 2)
        return errors / errors.sum(axis=1, keepdims=True)

    counts = np.stack([np.bincount(t, weights=(labels == c).astype(float), minlength=n_tasks) for c in (0, 1)], axis=1)
    probas = clamp(counts / counts.sum(axis=1, keepdims=True))
    priors = probas.mean(axis=0)
    errors = m_step(probas)
    loss = -np.inf
    for _ in range(n_iter):
        log_errors = np.log2(errors.reshape(2 * n_workers, 2)[cell])
        log_lik = np.log2(np.maximum(priors, _EPS)) + np.stack(
            [np.bincount(t, weights=log_errors[:, c], minlength=n_tasks) for c in (0, 1)], axis=1
        )
        scaled = np.exp2(log_lik - log_lik.max(axis=1, keepdims=True))
        probas = clamp(scaled / scaled.sum(axis=1, keepdims=True))
        priors = probas.mean(axis=0)
        errors = m_step(probas)
        log_terms = np.log(errors.reshape(2 * n_workers, 2)[cell]) + np.log(np.maximum(priors, _EPS))
        joint = float((probas[t] * log_terms).sum())
        probas = np.maximum(probas, _EPS)
        entropy = float(-(np.log(probas) * probas).sum())
        new_loss = (joint + entropy) / len(t)
        if new_loss - loss < tol:
            break
        loss = new_loss
    return probas, errors


def fit_model(
    votes: Sequence[tuple[str, str, str]], human: Mapping[str, str], *, model: str, human_weight: int = 1
) -> _Fit:
    """One crowd-kit fit over binary votes (item, producer, correct|incorrect)."""
    import pandas as pd
    from pandas.errors import PandasChangeWarning

    copies: set[str] = set()
    if human_weight > 1 and human:
        votes, human, copies = _replicate_labelled(votes, human, human_weight)
    if model == "dawid-skene":
        fast = _dawid_skene_binary(votes, human)
        if fast is not None:
            return _Fit(p_correct={t: p for t, p in fast.p_correct.items() if t not in copies}, rates=fast.rates)
    df = pd.DataFrame(votes, columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 calls pandas APIs deprecated for pandas 4 hundreds of times per fit; the
        # warnings are about crowd-kit's code, not ours, and would bury every other message.
        warnings.simplefilter("ignore", category=PandasChangeWarning)
        from crowdkit.aggregation import MACE, DawidSkene

        if model == "mace":
            return _mace(df, MACE)
        known = pd.Series(dict(human), dtype=object)
        known = known[known.index.isin(df["task"].unique())]
        ds = DawidSkene(n_iter=100, tol=1e-5).fit(df, true_labels=known if len(known) else None)
    # None until fitted: fit() has set both.
    assert ds.probas_ is not None and ds.errors_ is not None
    probas = ds.probas_.reindex(columns=list(BINARY), fill_value=0.0)
    errors = ds.errors_
    rates: dict[str, tuple[float | None, float | None]] = {}
    for w in sorted(df["worker"].unique()):
        # errors_ has rows only for (producer, label) pairs observed; a missing row is P = 0.
        def p(observed: str, true: str, w: str = w) -> float | None:
            if true not in errors.columns:
                return None  # no item of that class: the rate is undefined
            key = (w, observed)
            return float(errors.loc[key, true]) if key in errors.index else 0.0

        rates[w] = (p("correct", "correct"), p("incorrect", "incorrect"))
    return _Fit(p_correct={str(t): float(v) for t, v in probas["correct"].items() if str(t) not in copies}, rates=rates)


def _mace(df: pd.DataFrame, mace_cls: type) -> _Fit:
    # crowd-kit 1.4.2 rebuilds thetas_ in sorted (worker, label) order but indexes it by
    # first-appearance codes: sorted input makes the two orders the same (docs/consensus.md).
    df = df.sort_values(["worker", "label"]).reset_index(drop=True)
    workers = sorted(df["worker"].unique())
    labels = sorted(df["label"].unique())
    m = mace_cls(n_restarts=1, n_iter=50, random_state=0).fit(df)
    rates: dict[str, tuple[float | None, float | None]] = {}
    for wi, w in enumerate(workers):
        spam, know = (float(x) for x in m.spamming_[wi])
        theta = dict(zip(labels, (float(x) for x in m.thetas_[wi]), strict=True))
        rates[w] = (know + spam * theta.get("correct", 0.0), know + spam * theta.get("incorrect", 0.0))
    probas = m.probas_.reindex(columns=list(BINARY), fill_value=0.0)
    return _Fit(p_correct={str(t): float(v) for t, v in probas["correct"].items()}, rates=rates)


def _producer_table(
    binary: Sequence[tuple[str, str, str]],
    abstentions: Sequence[tuple[str, str, str]],
    human: Mapping[str, str],
    fits: Mapping[str, _Fit],
    *,
    stratum_of: Callable[[str], str],
) -> list[ProducerRates]:
    # Counted, not listed: the stratum once per item, the votes per (producer, stratum) in a C
    # loop, and only the labelled items' votes walked in Python (1.8 million votes at 100,000
    # responses were ~10 s as lists per key; issue 36 item 15).
    items = dict.fromkeys(map(itemgetter(0), binary))
    items.update(dict.fromkeys(map(itemgetter(0), abstentions)))
    stratum = {item: stratum_of(item) for item in items}
    n_votes = Counter(zip(map(itemgetter(1), binary), map(stratum.__getitem__, map(itemgetter(0), binary))))
    abstained: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for item, producer, verdict in abstentions:
        abstained[(producer, stratum[item])][verdict] += 1
    # (producer, stratum) -> [items the human accepts, of which the producer accepted; items the
    # human rejects, of which the producer rejected]
    human_counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for item, producer, verdict in [row for row in binary if row[0] in human]:
        h = human[item]
        if h == "correct":
            c = human_counts[(producer, stratum[item])]
            c[0] += 1
            c[1] += verdict == "correct"
        elif h == "incorrect":
            c = human_counts[(producer, stratum[item])]
            c[2] += 1
            c[3] += verdict == "incorrect"
    out = []
    # A producer that only abstained in a stratum still gets its row: no rates, its abstentions.
    for key in sorted(set(n_votes) | set(abstained)):
        producer, stratum_name = key
        fit = fits.get(stratum_name)
        se, sp = fit.rates.get(producer, (None, None)) if fit else (None, None)
        pos_n, pos_k, neg_n, neg_k = human_counts.get(key, (0, 0, 0, 0))
        out.append(
            ProducerRates(
                producer=producer,
                stratum=stratum_name,
                n_votes=n_votes.get(key, 0),
                abstentions=dict(sorted(abstained.get(key, Counter()).items())),
                sensitivity=se,
                specificity=sp,
                false_accept_rate=None if sp is None else 1 - sp,
                false_reject_rate=None if se is None else 1 - se,
                human_sensitivity=proportion(pos_k, pos_n),
                human_specificity=proportion(neg_k, neg_n),
                degenerate=se is not None and sp is not None and se >= 1 - DEGENERATE and sp >= 1 - DEGENERATE,
            )
        )
    return out


def _bootstrap_arrays(
    items: Sequence[str],
    human: Mapping[str, str],
    group_of: Mapping[str, str],
    samples: dict[str, list[float]],
    *,
    binary: Sequence[tuple[str, str, str]],
    by: str | None,
    stratum_of: StratumOf,
    n_boot: int,
    seed: int,
) -> None:
    """The Dawid-Skene bootstrap of _accuracy_table on integer arrays: the same draws, the same
    copies (a drawn item as many tasks as it was drawn, clamped when labelled), one fit per stratum
    and replicate, the same means; the copies' votes are gathered by index instead of built as
    strings (fifty replicates of 18,000 votes were ~3 s of tuples alone; issue 36 item 15). Appends
    each replicate's group means to `samples`."""
    index = {item: k for k, item in enumerate(items)}
    n = len(items)
    vote_item = np.fromiter((index[i] for i, _, _ in binary), dtype=np.int64, count=len(binary))
    producers = sorted({p for _, p, _ in binary})
    producer_code = {p: k for k, p in enumerate(producers)}
    vote_producer = np.fromiter((producer_code[p] for _, p, _ in binary), dtype=np.int64, count=len(binary))
    vote_label = np.fromiter((v == "incorrect" for _, _, v in binary), dtype=np.int64, count=len(binary))
    order = np.argsort(vote_item, kind="stable")  # an item's votes together, in their given order
    n_votes = np.bincount(vote_item, minlength=n)
    first_vote = np.concatenate(([0], np.cumsum(n_votes)[:-1]))
    is_known = np.array([i in human for i in items], dtype=bool)
    known_p = np.array([1.0 if human.get(i) == "correct" else 0.0 for i in items])
    groups = sorted(samples)
    group_code = {g: k for k, g in enumerate(groups)}
    item_group = np.array([group_code[group_of[i]] for i in items], dtype=np.int64)
    strata = sorted({stratum_of(i, by) for i in items})
    item_stratum = np.array([strata.index(stratum_of(i, by)) for i in items], dtype=np.int64)
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        draw = rng.integers(0, n, size=n)
        count = n_votes[draw]
        vote_copy = np.repeat(np.arange(n), count)
        within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        votes = order[np.repeat(first_vote[draw], count) + within]
        p_copy = np.full(n, np.nan)
        copy_stratum = item_stratum[draw][vote_copy]
        for s in range(len(strata)):
            mine = copy_stratum == s
            if not mine.any():
                continue
            copies, t = np.unique(vote_copy[mine], return_inverse=True)
            workers, w = np.unique(vote_producer[votes[mine]], return_inverse=True)
            labels = vote_label[votes[mine]]
            clamped = np.flatnonzero(is_known[draw[copies]])
            if labels.min() == labels.max():
                # One label only: crowd-kit's own path (fit_model), on this stratum's copies.
                rows = [
                    (str(c), producers[workers[k]], BINARY[labels[j]])
                    for j, (c, k) in enumerate(zip(copies[t], w, strict=True))
                ]
                known = {str(copies[j]): "correct" if known_p[draw[copies[j]]] else "incorrect" for j in clamped}
                fit = fit_model(rows, known, model="dawid-skene")
                p_copy[copies] = [fit.p_correct[str(c)] for c in copies]
                continue
            clamp_values = (1 - known_p[draw[copies[clamped]]]).astype(np.int64)
            probas, _ = _dawid_skene_arrays(t, w, labels, len(copies), len(workers), clamped, clamp_values)
            p_copy[copies] = probas[:, 0]
        known_copies = is_known[draw]
        p_copy[known_copies] = known_p[draw[known_copies]]
        copy_group = item_group[draw]
        for g, name in enumerate(groups):
            values = p_copy[(copy_group == g) & ~np.isnan(p_copy)]
            if len(values):
                samples[name].append(float(np.mean(values)))


def _accuracy_table(
    items: Sequence[str],
    posterior: Mapping[str, float],
    human: Mapping[str, str],
    group_of: Mapping[str, str],
    *,
    binary: Sequence[tuple[str, str, str]],
    by: str | None,
    stratum_of: StratumOf,
    model: str,
    n_boot: int,
    seed: int,
    human_weight: int = 1,
) -> list[GroupAccuracy]:
    groups = sorted(set(group_of.values()))
    samples: dict[str, list[float]] = {g: [] for g in groups}
    if n_boot > 0 and model == "dawid-skene" and human_weight == 1:
        _bootstrap_arrays(
            items, human, group_of, samples, binary=binary, by=by, stratum_of=stratum_of, n_boot=n_boot, seed=seed
        )
    elif n_boot > 0:
        by_item: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for item, producer, verdict in binary:
            by_item[item].append((producer, verdict))
        rng = np.random.default_rng(seed)
        for _ in range(n_boot):
            # Resample items, refit: a drawn item appears as many times as it was drawn, each copy
            # a task of its own (the model sees it with its weight).
            draw = rng.integers(0, len(items), size=len(items))
            copies = [(f"{items[j]}#{k}", items[j]) for k, j in enumerate(draw)]
            rows = [(copy, p, v) for copy, orig in copies for p, v in by_item.get(orig, ())]
            known = {copy: human[orig] for copy, orig in copies if orig in human}
            fits = _fit_strata(
                rows,
                known,
                by=by,
                stratum_of=lambda i, key: stratum_of(i.rsplit("#", 1)[0], key),
                model=model,
                human_weight=human_weight,
            )
            post = {i: p for f in fits.values() for i, p in f.p_correct.items()}
            acc: dict[str, list[float]] = defaultdict(list)
            for copy, orig in copies:
                p = (1.0 if known[copy] == "correct" else 0.0) if copy in known else post.get(copy)
                if p is not None:
                    acc[group_of[orig]].append(p)
            for g in groups:
                if acc.get(g):
                    samples[g].append(float(np.mean(acc[g])))
    out = []
    for g in groups:
        members = [i for i in items if group_of[i] == g]
        labelled = [human[i] for i in members if i in human]
        ci = percentile_interval(samples[g]) if samples[g] else None
        out.append(
            GroupAccuracy(
                group=g,
                n_items=len(members),
                accuracy=float(np.mean([posterior[i] for i in members])) if members else None,
                ci=list(ci) if ci else None,
                human=proportion(labelled.count("correct"), len(labelled)),
            )
        )
    return out


def _phi(table: np.ndarray) -> float | None:
    """φ of a weighted 2×2 table [[n11, n10], [n01, n00]]; None when a margin is empty."""
    (a, b), (c, d) = table
    den = (a + b) * (c + d) * (a + c) * (b + d)
    if den <= 1e-12:
        return None
    return float((a * d - b * c) / math.sqrt(den))


def producer_correlations(
    binary: Sequence[tuple[str, str, str]], posterior: Mapping[str, float]
) -> list[PairCorrelation]:
    """Every producer pair's within-class residual correlation (module docstring), most
    correlated first."""
    # Every item once, in sorted order, and each producer's verdicts as a row over them: a pair's
    # common items are then a mask, in the order sorted() gives (the same arrays, so the same sums,
    # as building them per pair; ~150 pairs × every item in Python were 34 s at 100,000 responses;
    # issue 36 item 15).
    items = sorted(dict.fromkeys(map(itemgetter(0), binary)))
    position = {item: k for k, item in enumerate(items)}
    item_at = np.fromiter(map(position.__getitem__, map(itemgetter(0), binary)), dtype=np.int64, count=len(binary))
    producer_at, producer_code = _codes(binary, 1)
    said = sorted(producer_code)
    correct = (_column(binary, 2) == "correct").astype(np.int64)
    # A producer's second verdict on an item replaces its first, as a dictionary would.
    cell = producer_at * len(items) + item_at
    _, last = np.unique(cell[::-1], return_index=True)
    keep = len(cell) - 1 - last
    voted = np.zeros((len(producer_code), len(items)), dtype=bool)
    value = np.zeros((len(producer_code), len(items)), dtype=np.int64)
    voted[producer_at[keep], item_at[keep]] = True
    value[producer_at[keep], item_at[keep]] = correct[keep]
    p_all = np.array([posterior.get(i, 0.5) for i in items], dtype=float)
    out = []
    for a, b in combinations(said, 2):
        ka, kb = producer_code[a], producer_code[b]
        common = np.flatnonzero(voted[ka] & voted[kb])
        if not len(common):
            continue
        va = value[ka][common]
        vb = value[kb][common]
        pc = p_all[common]
        phis: list[float | None] = []
        masses: list[float] = []
        for w in (pc, 1 - pc):
            table = np.array(
                [
                    [np.sum(w * va * vb), np.sum(w * va * (1 - vb))],
                    [np.sum(w * (1 - va) * vb), np.sum(w * (1 - va) * (1 - vb))],
                ]
            )
            phis.append(_phi(table))
            masses.append(float(w.sum()))
        defined = [(p, m) for p, m in zip(phis, masses, strict=True) if p is not None and m > 0]
        phi = sum(p * m for p, m in defined) / sum(m for _, m in defined) if defined else None
        out.append(
            PairCorrelation(
                producers=[a, b],
                n=len(common),
                agreement=float(np.mean(va == vb)),
                phi_correct=phis[0],
                phi_incorrect=phis[1],
                phi=phi,
            )
        )
    return sorted(out, key=lambda c: (-(c.phi if c.phi is not None else -2.0), c.producers))


def group_producers(
    votes: Iterable[tuple[str, str, str]], *, threshold: float
) -> tuple[list[tuple[str, str, str]], dict[str, list[str]]]:
    """Merge near-duplicate producers (module docstring) into one voter each: the votes with the
    groups' majority in place of their members', and {group name: members} for groups of two or
    more. An item where a group's members all abstain, or tie, is an abstention of the group."""
    rows = list(votes)
    said: dict[str, dict[str, str]] = defaultdict(dict)
    for item, producer, verdict in rows:
        said[producer][item] = verdict
    parent = {p: p for p in said}

    def root(p: str) -> str:
        while parent[p] != p:
            p = parent[p]
        return p

    for a, b in combinations(sorted(said), 2):
        common = [i for i in said[a] if i in said[b] and said[a][i] in BINARY and said[b][i] in BINARY]
        if len(common) < MIN_COMMON:
            continue
        agree = sum(said[a][i] == said[b][i] for i in common) / len(common)
        if agree >= threshold:
            parent[root(b)] = root(a)
    members: dict[str, list[str]] = defaultdict(list)
    for p in sorted(said):
        members[root(p)].append(p)
    name = {p: "+".join(ms) for ms in members.values() for p in ms}
    out: list[tuple[str, str, str]] = []
    for ms in members.values():
        if len(ms) == 1:
            out += [(i, ms[0], v) for i, v in said[ms[0]].items()]
            continue
        for item in sorted({i for p in ms for i in said[p]}):
            tally = Counter(said[p][item] for p in ms if item in said[p])
            c, n = tally["correct"], tally["incorrect"]
            if c > n:
                verdict = "correct"
            elif n > c:
                verdict = "incorrect"
            elif c == 0:  # every member abstained: the group abstains the same way
                verdict = next(v for v in ABSTENTIONS if tally[v])
            else:  # a tie between votes is no vote
                verdict = "no_answer"
            out.append((item, name[ms[0]], verdict))
    return out, {name[ms[0]]: ms for ms in members.values() if len(ms) > 1}
