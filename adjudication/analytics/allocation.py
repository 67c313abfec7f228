"""Where the next human label helps most: the value of labelling each item for a chosen target,
given a panel-consensus fit (consensus.py). Pure functions, no ORM.

A target is a number computed from the items' truths t_i ∈ {0, 1} (1 = correct):

* ``accuracy`` / ``accuracy:<group>``: mean t over the items (of the group: a value of the fit's
  accuracy_by field, the checkpoint by default).
* ``reader:<producer>``: the producer's accuracy, mean [v_i = t_i] over the items it voted
  correct/incorrect on (abstentions are not votes, as in the fit).
* ``bias:<producer>``: mean [v_i = correct] − mean t over the same items (analytics.bias's
  judge_correct_rate − human_correct_rate).
* ``false-accept:<producer>``: Σ [v_i = correct](1 − t_i) / Σ (1 − t_i);
  ``false-reject:<producer>``: Σ [v_i = incorrect] t_i / Σ t_i.
* ``format-share:<base>,<rl>``: the gain accuracy(rl) − accuracy(base) with the consensus as the
  fixed reader (what format share compares the reported gain with); with a third argument,
  ``format-share:<base>,<rl>,<reader>``, the format share itself, 1 − fixed gain / reported gain,
  the reported gain being that reader's (its share of correct verdicts per group, a missing or
  abstaining verdict counting as not correct, as a harness would score it).

The estimate plugs the posteriors p_i in for t_i. Its uncertainty, given the fitted rates, is
that of the unlabelled items' truths, which the fit makes independent Bernoullis: to first order
Var = Σ w_i² p_i (1 − p_i), w_i = ∂target/∂t_i (exact for the linear targets, the delta method
for the ratios). A human label fixes t_i, so labelling item i is worth w_i² p_i (1 − p_i): the
posterior entropy (as variance) weighted by the target's sensitivity to the item. That is the
`label_values` ranking. It is first order: it ignores that a label also moves the fitted rates
(and so every posterior), which is why the greedy order (`choose_labels`) keeps a random share (the
unbiased controls) and refits after labels arrive, and why the default design draws instead, with
probabilities that grow with the value over a uniform floor (`inclusion_probabilities`). The width
2 · 1.96 · sd is the posterior interval of the target on these items; it does not include the
uncertainty of the rates themselves (the consensus bootstrap does).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from adjudication.analytics.bias import BINARY
from adjudication.analytics.consensus import ALL, Consensus, ConsensusInputs, consensus
from adjudication.analytics.stats import Z95
from adjudication.errors import ApplicationError

TARGET_KINDS = ("accuracy", "reader", "bias", "false-accept", "false-reject", "format-share")
PRODUCER_KINDS = ("reader", "bias", "false-accept", "false-reject")
# "information" is the randomized design routing runs by default; "greedy" the top-value order it
# keeps as sampling=greedy (unfit for estimates); "random" uniform labels.
STRATEGIES = ("information", "greedy", "random")
FORMS = (
    "accuracy, accuracy:<group>, reader:<producer>, bias:<producer>, false-accept:<producer>, "
    "false-reject:<producer>, format-share:<base>,<rl>[,<reader>]"
)


class TargetError(ApplicationError, ValueError):
    """A target that does not parse, or that names a group or producer the fit does not have; the
    message lists what would do. A ValueError too, as it was before it had a class."""

    def __init__(self, message: str) -> None:
        super().__init__(message, field="target")


@dataclass(frozen=True)
class Target:
    kind: str
    args: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.kind + (":" + ",".join(self.args) if self.args else "")


def parse_target(text: str) -> Target:
    """A target from its text form (module docstring); TargetError listing the accepted forms."""
    if not isinstance(text, str) or not text.strip():
        raise TargetError(f"a target is required: one of {FORMS}")
    kind, sep, rest = text.strip().partition(":")
    if kind not in TARGET_KINDS:
        raise TargetError(f"unknown target {text!r}: use one of {FORMS}")
    if kind == "accuracy":
        return Target(kind, (rest,) if sep and rest else ())
    if kind in PRODUCER_KINDS:
        if not rest:
            raise TargetError(f"target {text!r} names no producer: write {kind}:<producer>")
        return Target(kind, (rest,))
    # Group names may not contain commas here; checkpoints are names like "base", "rl-step-400".
    parts = tuple(p for p in rest.split(",")) if rest else ()
    if len(parts) not in (2, 3) or not all(parts):
        raise TargetError(f"target {text!r}: write format-share:<base>,<rl> or format-share:<base>,<rl>,<reader>")
    return Target(kind, parts)


def _group_of(inputs: ConsensusInputs, result: Consensus) -> dict[str, str]:
    key = result.accuracy_by
    # As consensus.stratum_of: a missing field is the group "-".
    return {i.item: ALL if key is None else ((inputs.strata.get(i.item) or {}).get(key) or "-") for i in result.items}


def _producer_votes(inputs: ConsensusInputs, producer: str) -> dict[str, str]:
    return {item: v for item, p, v in inputs.votes if p == producer and v in BINARY}


def check_target(target: Target, inputs: ConsensusInputs, result: Consensus) -> None:
    """TargetError naming the unknown group or producer, and the ones the fit has."""
    groups = sorted(set(_group_of(inputs, result).values()))
    producers = sorted({p for _, p, _ in inputs.votes})
    if target.kind == "accuracy":
        wanted = list(target.args)
    elif target.kind == "format-share":
        wanted = list(target.args[:2])
        if len(target.args) == 3 and target.args[2] not in producers:
            raise TargetError(f"target {target}: no producer {target.args[2]!r}; producers: {', '.join(producers)}")
    else:
        wanted = []
        if target.args[0] not in producers:
            raise TargetError(f"target {target}: no producer {target.args[0]!r}; producers: {', '.join(producers)}")
        if not _producer_votes(inputs, target.args[0]):
            raise TargetError(f"target {target}: producer {target.args[0]!r} has no correct/incorrect verdict")
    for g in wanted:
        if g not in groups:
            by = result.accuracy_by or "group"
            raise TargetError(f"target {target}: no {by} {g!r}; {by}s: {', '.join(groups)}")


@dataclass(frozen=True)
class _Linearised:
    value: float | None
    weights: dict[str, float]  # item -> ∂target/∂t_i at t


def _linearise(target: Target, inputs: ConsensusInputs, result: Consensus, t: Mapping[str, float]) -> _Linearised:
    """The target's value with truths `t` (probabilities; items missing from t are left out) and
    its derivative in every t_i."""
    group_of = _group_of(inputs, result)
    kind = target.kind
    if kind == "accuracy":
        members = [i for i, g in group_of.items() if i in t and (not target.args or g == target.args[0])]
        return _mean(members, t)
    if kind == "format-share":
        base, rl = (_mean([i for i, g in group_of.items() if i in t and g == name], t) for name in target.args[:2])
        if base.value is None or rl.value is None:
            return _Linearised(None, {})
        gain = rl.value - base.value
        weights = {**{i: -w for i, w in base.weights.items()}, **rl.weights}
        if len(target.args) == 2:
            return _Linearised(gain, weights)
        reported = _reported_gain(inputs, group_of, target.args)
        if not reported:
            return _Linearised(None, {})  # no reported gain: the share is undefined
        return _Linearised(1 - gain / reported, {i: -w / reported for i, w in weights.items()})
    said = {i: v for i, v in _producer_votes(inputs, target.args[0]).items() if i in t}
    if not said:
        return _Linearised(None, {})
    n = len(said)
    if kind == "reader":
        value = sum(t[i] if v == "correct" else 1 - t[i] for i, v in said.items()) / n
        return _Linearised(value, {i: (1 if v == "correct" else -1) / n for i, v in said.items()})
    if kind == "bias":
        value = sum((v == "correct") - t[i] for i, v in said.items()) / n
        return _Linearised(value, dict.fromkeys(said, -1 / n))
    # The ratios: R = num/den, ∂R/∂t_i = (∂num_i − R ∂den_i) / den.
    if kind == "false-accept":
        den = sum(1 - t[i] for i in said)
        if den <= 0:
            return _Linearised(None, {})
        r = sum((v == "correct") * (1 - t[i]) for i, v in said.items()) / den
        return _Linearised(r, {i: (r - (v == "correct")) / den for i, v in said.items()})
    den = sum(t[i] for i in said)  # false-reject
    if den <= 0:
        return _Linearised(None, {})
    r = sum((v == "incorrect") * t[i] for i, v in said.items()) / den
    return _Linearised(r, {i: ((v == "incorrect") - r) / den for i, v in said.items()})


def _mean(members: list[str], t: Mapping[str, float]) -> _Linearised:
    if not members:
        return _Linearised(None, {})
    return _Linearised(sum(t[i] for i in members) / len(members), dict.fromkeys(members, 1 / len(members)))


def _reported_gain(inputs: ConsensusInputs, group_of: Mapping[str, str], args: tuple[str, ...]) -> float | None:
    base, rl, reader = args
    said = {i: v for i, p, v in inputs.votes if p == reader}
    rates = []
    for name in (base, rl):
        members = [i for i, g in group_of.items() if g == name]
        if not members:
            return None
        rates.append(sum(said.get(i) == "correct" for i in members) / len(members))
    return rates[1] - rates[0]


def _posterior(result: Consensus) -> dict[str, float]:
    return {i.item: i.p_correct for i in result.items}


@dataclass(frozen=True)
class TargetEstimate:
    estimate: float | None
    sd: float | None
    width: float | None
    n_items: int


def target_estimate(target: Target, inputs: ConsensusInputs, result: Consensus) -> TargetEstimate:
    """The target with the posteriors plugged in, and its posterior sd and interval width
    (module docstring). None where the target is undefined on these data."""
    p = _posterior(result)
    lin = _linearise(target, inputs, result, p)
    if lin.value is None:
        return TargetEstimate(None, None, None, len(lin.weights))
    sd = math.sqrt(sum(w * w * p[i] * (1 - p[i]) for i, w in lin.weights.items()))
    return TargetEstimate(lin.value, sd, 2 * Z95 * sd, len(lin.weights))


def target_truth(target: Target, inputs: ConsensusInputs, result: Consensus, truth: Mapping[str, str]) -> float | None:
    """The target computed from known truths, on the items that have one."""
    t = {i: 1.0 if v == "correct" else 0.0 for i, v in truth.items() if v in BINARY}
    return _linearise(target, inputs, result, t).value


def label_values(target: Target, inputs: ConsensusInputs, result: Consensus) -> dict[str, float]:
    """Every item of the fit -> w_i² p_i (1 − p_i), the expected drop of the target's posterior
    variance if a human labels it: 0 for labelled items (p is 0 or 1) and for items the target
    does not depend on."""
    p = _posterior(result)
    lin = _linearise(target, inputs, result, p)
    values = dict.fromkeys(p, 0.0)
    for i, w in lin.weights.items():
        values[i] = w * w * p[i] * (1 - p[i])
    return values


def _hash_key(seed: int, item: str) -> int:
    return int.from_bytes(hashlib.sha256(f"allocation:{seed}:{item}".encode()).digest()[:8], "big")


def choose_labels(
    values: Mapping[str, float],
    *,
    k: int,
    random_share: float = 0.0,
    seed: int = 0,
    candidates: Collection[str] | None = None,
) -> list[str]:
    """Up to k candidates (default: every item of `values`) in the order a queue should serve
    them: round(k · random_share) drawn uniformly at random (seeded), the rest by highest value
    (ties in a seeded hash order), the random picks spread evenly through the list so that a
    queue served from the top keeps its random share at every point."""
    if k < 0:
        raise ValueError("k must be at least 0")
    if not (math.isfinite(random_share) and 0.0 <= random_share <= 1.0):
        raise ValueError("random_share must be between 0 and 1")
    pool = sorted(values if candidates is None else [c for c in candidates if c in values], key=str)
    k = min(k, len(pool))
    n_random = round(k * random_share)
    rng = np.random.default_rng(seed)
    drawn = [pool[j] for j in rng.choice(len(pool), size=n_random, replace=False)] if n_random else []
    taken = set(drawn)
    # Zero-valued items come last: they are chosen only once every informative one is.
    ranked = sorted((c for c in pool if c not in taken), key=lambda c: (-values[c], _hash_key(seed, c)))
    informative = ranked[: k - n_random]
    if not drawn:
        return informative
    out: list[str] = []
    step = k / n_random
    slots = {min(k - 1, int(j * step + step / 2)) for j in range(n_random)}
    it_random, it_info = iter(drawn), iter(informative)
    for position in range(k):
        out.append(next(it_random) if position in slots else next(it_info))
    return out


# The least share of a randomized information design spread uniformly over every response (a
# policy's control fraction, when larger, raises it): every response then has a known probability
# at least k·floor/N of being drawn, so that no part of the population is left to the model alone.
# Half: on the real-data validation (docs/estimates.md) a tenth left groups the no-label model was
# sure of with weights over 1,000, and their intervals covered 7-60 % of the time; a half keeps
# the draw's advantage for its target (the good judge's interval at 0.53 of human only's) and
# brings every group's coverage near its nominal level.
INFORMATION_FLOOR = 0.5


def design_floor(control_fraction: float) -> float:
    """The uniform share δ of a randomized information design: the control fraction, at least
    INFORMATION_FLOOR."""
    return max(control_fraction, INFORMATION_FLOOR)


def inclusion_probabilities(values: Mapping[str, float], *, k: float, floor: float) -> dict[str, float]:
    """Every item of `values` (its label value v_i, label_values) -> its inclusion probability in
    a draw of expected size k: π_i = min(1, k·q_i), q_i = (1 − δ)·√v_i / Σ√v + δ/N, the mass of
    the items capped at 1 redistributed over the others in proportion to q, so that Σπ = min(k, N).

    √v_i is the standard deviation a label on item i removes (its value is the variance it
    removes): sampling in proportion to it is the variance-optimal rule of active inference
    (Zrnic & Candès 2024), and the uniform share δ = `floor` gives every item π_i ≥ k·δ/N, so the
    inverse-probability weights stay bounded where the model is confidently wrong. No value above
    0: the draw is uniform, k/N each."""
    if not (math.isfinite(floor) and 0.0 <= floor <= 1.0):
        raise ValueError("floor must be between 0 and 1")
    if not math.isfinite(k) or k < 0:
        raise ValueError("k must be a finite number at least 0")
    items = list(values)
    n = len(items)
    if n == 0 or k == 0:
        return dict.fromkeys(items, 0.0)
    k = min(k, n)
    sd = {i: math.sqrt(v) if math.isfinite(v) and v > 0 else 0.0 for i, v in values.items()}
    total = math.fsum(sd.values())
    q = {i: (1 - floor) * sd[i] / total + floor / n for i in items} if total > 0 else dict.fromkeys(items, 1 / n)
    capped: set[str] = set()
    while True:
        # q > 0 for every item (the floor, or the uniform draw), so the rest always has mass.
        rest = [i for i in items if i not in capped]
        scale = (k - len(capped)) / math.fsum(q[i] for i in rest) if rest else 0.0
        over = {i for i in rest if scale * q[i] >= 1.0}
        if not over:
            break
        capped |= over
    return {i: 1.0 if i in capped else scale * q[i] for i in items}


def draw_uniform(*, seed: int, item: str) -> float:
    """The item's seeded uniform in [0, 1) of a Poisson draw: the same (seed, item) always gets the
    same number, so a draw is reproducible and an item's inclusion does not depend on the others."""
    digest = hashlib.sha256(f"inclusion:{seed}:{item}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def poisson_draw(probabilities: Mapping[str, float], *, seed: int) -> list[str]:
    """A Poisson sample: each item independently, with its own probability (an item is in when its
    seeded uniform is below its π), in the order of `probabilities`."""
    return [i for i, p in probabilities.items() if p > 0 and draw_uniform(seed=seed, item=i) < p]


def systematic_draw(probabilities: Mapping[str, float], *, seed: int) -> list[str]:
    """A fixed-size draw with exactly these inclusion probabilities: randomized systematic πps
    sampling (Madow 1949; Goodman & Kish 1950). The items in a seeded random order lay their π end
    to end on [0, Σπ); the points u, u + 1, …, u + n − 1 (u uniform in [0, 1), n = Σπ) each fall in
    one item's interval. An interval of length π ≤ 1 holds a point with probability π, at most one,
    so item i is in with probability π_i and the draw has exactly n items, in the random order.
    The size of a Poisson draw is random around Σπ; this one is not (its joint inclusion
    probabilities differ, not the π). Σπ must be a whole number: ValueError otherwise."""
    if any(not (math.isfinite(p) and 0.0 <= p <= 1.0) for p in probabilities.values()):
        raise ValueError("every inclusion probability must be between 0 and 1")
    total = math.fsum(probabilities.values())
    n = round(total)
    if abs(total - n) > 1e-6:
        raise ValueError(f"a fixed-size draw needs whole Σπ, got {total}")
    if n == 0:
        return []
    rng = np.random.default_rng(seed)
    items = sorted(probabilities, key=str)
    order = [items[j] for j in rng.permutation(len(items))]
    ends = np.cumsum([probabilities[i] for i in order])
    points = rng.random() + np.arange(n)
    # side="right": a point on an interval's end belongs to the next one (half-open intervals);
    # the clip keeps a point above a float-rounded Σπ in the last item's interval.
    at = np.minimum(np.searchsorted(ends, points, side="right"), len(order) - 1)
    return [order[j] for j in dict.fromkeys(int(j) for j in at)]


def batch_picks(
    strategy: str,
    *,
    target: Target,
    inputs: ConsensusInputs,
    result: Consensus,
    hidden: list[str],
    k: int,
    random_share: float,
    seed: int,
    round_no: int,
    rng: np.random.Generator,
) -> list[str]:
    """The next k of the `hidden` items to label under `strategy`, given the current fit: one
    batch of simulate_budget (and of any copy of its loop, which then makes the same picks).

    "information" is the randomized design as routing runs it: π from inclusion_probabilities on
    the label values of the hidden items, the floor design_floor(random_share), and a draw of
    exactly k with those π (systematic_draw: a Poisson draw's random size would put every run on
    its own label grid and could draw nothing in a round). Routing draws once; here each batch is
    a new draw after a refit, a multi-stage design whose π are known at each stage. "greedy" is
    choose_labels (the top values, round(k · random_share) of them drawn uniformly). "random" takes
    k uniformly from `rng`, which also seeds the randomized draws."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if strategy == "random":
        return [hidden[j] for j in rng.choice(len(hidden), size=k, replace=False)]
    values = label_values(target, inputs, result)
    if strategy == "greedy":
        return choose_labels(values, k=k, random_share=random_share, seed=seed + round_no, candidates=hidden)
    probabilities = inclusion_probabilities(
        {i: values.get(i, 0.0) for i in hidden}, k=k, floor=design_floor(random_share)
    )
    return systematic_draw(probabilities, seed=int(rng.integers(2**63)))


@dataclass(frozen=True)
class BudgetStep:
    labels: int
    estimate: float | None
    width: float | None
    error: float | None


def simulate_budget(
    inputs: ConsensusInputs,
    truth: Mapping[str, str],
    *,
    target: Target,
    strategy: str,
    batch: int = 20,
    max_labels: int | None = None,
    stop_width: float | None = None,
    random_share: float = 0.0,
    by: str | None = None,
    model: str = "dawid-skene",
    seed: int = 0,
) -> list[BudgetStep]:
    """Reveal the hidden `truth` labels a batch at a time, chosen by `strategy`, refitting after
    each batch: one step per fit, until max_labels labels, an interval width ≤ stop_width, or no
    hidden label is left. The human labels already in `inputs` stay; `error` is |estimate −
    target_truth(all of truth)|. Strategies (batch_picks): "information", the randomized design
    routing runs by default, drawn afresh among the hidden labels after each refit; "greedy",
    choose_labels' top values with `random_share` drawn uniformly; "random", uniformly at random."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if batch < 1:
        raise ValueError("batch must be at least 1")
    labels = dict(inputs.human)
    items = {i for i, _, _ in inputs.votes} | set(inputs.human)
    hidden = sorted((i for i, v in truth.items() if v in BINARY and i not in labels and i in items), key=str)
    rng = np.random.default_rng(seed)
    steps: list[BudgetStep] = []
    revealed = 0
    true_value: float | None = None
    round_no = 0
    while True:
        current = ConsensusInputs(
            votes=inputs.votes, human=labels, strata=inputs.strata, votes_unique=inputs.votes_unique
        )
        result = consensus(current, by=by, model=model, n_boot=0, seed=seed)
        if round_no == 0:
            check_target(target, inputs, result)
            true_value = target_truth(target, inputs, result, {**truth, **inputs.human})
        est = target_estimate(target, current, result)
        error = None if est.estimate is None or true_value is None else abs(est.estimate - true_value)
        steps.append(BudgetStep(revealed, est.estimate, est.width, error))
        if stop_width is not None and est.width is not None and est.width <= stop_width:
            break
        if (max_labels is not None and revealed >= max_labels) or not hidden:
            break
        k = min(batch, len(hidden), (max_labels - revealed) if max_labels is not None else batch)
        picks = batch_picks(
            strategy,
            target=target,
            inputs=current,
            result=result,
            hidden=hidden,
            k=k,
            random_share=random_share,
            seed=seed,
            round_no=round_no,
            rng=rng,
        )
        for item in picks:
            labels[item] = truth[item]
        chosen = set(picks)
        hidden = [i for i in hidden if i not in chosen]
        revealed += len(picks)
        round_no += 1
    return steps


def labels_to_reach(steps: list[BudgetStep], *, field: str, below: float) -> int | None:
    """The fewest labels after which `field` ("width" or "error") is ≤ `below` from then on
    (None if the run never settles there)."""
    reached: int | None = None
    for step in steps:
        value = getattr(step, field)
        if value is not None and value <= below:
            if reached is None:
                reached = step.labels
        else:
            reached = None
    return reached
