"""The prediction-powered figures beside two of today's tables (issue 34; docs/estimates.md).

* Format share with the final human labels as the fixed reader. Today's table compares the
  checkpoints on the labelled questions only, and under routing by disagreement those are a
  selected subset (the disputed responses, the hard ones, plus the controls). Beside it: the true
  gain and the format share over every response of the two checkpoints (all models, benchmarks
  and prompts pooled), targets `gain:<base>,<rl>` and `format-share:<base>,<rl>,<reported reader>`.
* The judge-bias table. Today's figures rest on the labelled subset. Beside them: each producer's
  false-accept rate, false-reject rate, bias and agreement over every response it judged. The
  predictor of a producer's rates is the vote of the OTHER producers: its own verdicts would
  predict its errors as none (every response it gets wrong would look right to it).

Each figure three ways (estimates.Estimate): machine only (the predictor plugged in everywhere: no
interval, it inherits the predictor's errors), human only (the design's labels alone, weighted by
their inclusion probabilities) and prediction-powered (interval, labels, effective labels). The
headline is the prediction-powered figure once its interval rests on HEADLINE_MIN_LABELS labels,
since it is unbiased under the recorded design and valid whatever the predictor's errors, and at
least as narrow as human only; with fewer labels, human only with its interval; with no interval
at all, the machine figure, flagged as inheriting the predictor's errors.

Pure: a Population, the labels and their Design in, JSON-ready dicts out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

import numpy as np

from adjudication.analytics.estimates import (
    HEADLINE_MIN_LABELS,
    N_BOOT,
    Estimate,
    EstimateError,
    Frame,
    Population,
    Sample,
)

# The judge-bias block's rates: (JSON key, estimate target kind).
ESTIMATED_RATES = (
    ("false_accept", "false-accept"),
    ("false_reject", "false-reject"),
    ("bias", "bias"),
    ("agreement", "agreement"),
)
HEADLINE_RULE = (
    f"the prediction-powered figure when its interval rests on at least {HEADLINE_MIN_LABELS} design labels "
    "(unbiased under the recorded design and valid whatever the predictor's errors, and never wider than human "
    "only in large samples); else human only, with its interval; else the machine figure, which inherits the "
    "predictor's errors"
)
GAIN_UNIT = "share of responses (0.05 = 5 accuracy points; the comparisons above are in points)"
FORMAT_SHARE_SCOPE = (
    "every response of the two checkpoints (all models, benchmarks and prompts pooled), not only the "
    "labelled questions the comparisons above are computed on"
)
JUDGE_BIAS_PREDICTOR = "the vote of the other producers (a producer's own verdicts never predict its own errors)"


def headline_reason(e: Estimate) -> str:
    """Why the estimate's headline is the figure it is."""
    if e.headline == "prediction-powered":
        return f"prediction-powered: its interval rests on {e.labels} design labels (≥ {HEADLINE_MIN_LABELS})"
    if e.headline == "human only":
        return f"human only: {e.labels} design labels (< {HEADLINE_MIN_LABELS}) are too few to lean on the predictor"
    why = e.withheld or "no interval"
    return f"machine only (inherits the predictor's errors): no interval ({why})"


def estimate_dict(e: Estimate) -> dict[str, Any]:
    """Estimate.as_dict() (the figures `manage.py estimate` prints) with the headline's reason."""
    return {**e.as_dict(), "headline_reason": headline_reason(e)}


def _checkpoints(population: Population) -> list[str]:
    return sorted({str(g.get("checkpoint") or "-") for g in population.groups.values()})


def reported_gain(frame: Frame, *, base: str, rl: str, reader: str) -> float:
    """The reader's gain over every response of the two checkpoints, as the format-share target
    takes it: accuracy(rl) − accuracy(base), a response without a correct verdict counting as not
    correct (as a harness scores it)."""
    try:
        _, said_correct = frame.producer_verdicts(reader)
    except EstimateError:  # no correct / incorrect verdict at all: nothing counts as correct
        said_correct = np.zeros(len(frame.items))
    gain = frame.value(f"gain:{base},{rl}", said_correct)
    assert gain is not None  # a linear target always has a value
    return gain


def format_share_estimates(
    frame: Frame,
    sample: Sample,
    *,
    base: str,
    reported: str,
    design: str = "",
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Per checkpoint other than `base`: the reported reader's gain over every response, and the
    true gain and the format share three ways. The frame's groups are by checkpoint. The share is
    undefined, as in the comparisons, when the reported gain is not positive."""
    population = frame.population
    checkpoints = _checkpoints(population)
    if base not in checkpoints:
        raise EstimateError(f"no checkpoint {base!r}; checkpoints: {', '.join(checkpoints)}", field="base_checkpoint")
    out = []
    for rl in (c for c in checkpoints if c != base):
        row: dict[str, Any] = {"base": base, "rl": rl, "reported_reader": reported}
        row["reported_gain"] = gain = reported_gain(frame, base=base, rl=rl, reader=reported)
        true_gain = frame.estimate(f"gain:{base},{rl}", sample, n_boot=n_boot, seed=seed, design=design)
        row["gain"] = estimate_dict(true_gain)
        if gain <= 0:
            row["format_share"] = None
            row["format_share_error"] = (
                f"the reported gain under {reported} is {100 * gain:+.4g} points (≤ 0): "
                "the format share (reported − true) / reported is undefined"
            )
        else:
            target = f"format-share:{base},{rl},{reported}"
            share = frame.estimate(target, sample, n_boot=n_boot, seed=seed, design=design)
            row["format_share"] = estimate_dict(share)
            row["format_share_error"] = None
        out.append(row)
    return out


def leave_one_out_votes(frame: Frame, producers: Collection[str]) -> Iterator[tuple[str, np.ndarray]]:
    """(producer, the vote of every other producer of the population) per producer, as P(correct)
    per response in the frame's order, NaN where no other producer gave a correct / incorrect
    verdict: estimates.vote_predictor over the others, from one pass over each producer's
    verdicts instead of one over all the others' per producer."""
    n = len(frame.items)
    judged: dict[str, np.ndarray] = {}
    correct: dict[str, np.ndarray] = {}
    for name in frame.population.verdicts:
        try:
            mask, said = frame.producer_verdicts(name)
        except EstimateError:  # no correct / incorrect verdict: no vote
            mask, said = np.zeros(n, dtype=bool), np.zeros(n)
        judged[name], correct[name] = mask, said
    votes = np.zeros(n)
    voters = np.zeros(n)
    for name in judged:
        votes += correct[name]
        voters += judged[name]
    for name in producers:
        k = votes - correct.get(name, 0.0)
        m = voters - judged.get(name, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            yield name, np.where(m > 0, k / np.where(m > 0, m, 1.0), np.nan)


def judge_bias_estimates(
    frame: Frame,
    sample: Sample,
    *,
    producers: Collection[str] | None = None,
    design: str = "",
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """{producer: {"predictor", "false_accept", "false_reject", "bias", "agreement"}}: each rate
    three ways, the predictor being the vote of the other producers (JUDGE_BIAS_PREDICTOR); a
    producer with no correct / incorrect verdict has an "error" instead."""
    names = sorted(frame.population.verdicts) if producers is None else sorted(producers)
    others = len(frame.population.verdicts) - 1
    out: dict[str, dict[str, Any]] = {}
    for name, vote in leave_one_out_votes(frame, names):
        predictor = f"vote of the other {others} producers" if others > 0 else "none (no other producer): human only"
        own = frame.with_predictor(vote, name=predictor)
        entry: dict[str, Any] = {"predictor": predictor}
        try:
            for key, kind in ESTIMATED_RATES:
                e = own.estimate(f"{kind}:{name}", sample, n_boot=n_boot, seed=seed, design=design)
                entry[key] = estimate_dict(e)
        except EstimateError as exc:
            entry = {"predictor": predictor, "error": exc.message}
        out[name] = entry
    return out


# -- text ---------------------------------------------------------------------------------------


def _points(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.2f}"


def _share(x: float | None) -> str:
    return "–" if x is None else f"{x:.1%}"


def _rate(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.3f}"


def _with_interval(interval: Mapping[str, Any] | None, fmt: Any) -> str:
    if not interval:
        return "–"
    text = fmt(interval["estimate"])
    if interval.get("low") is not None and interval.get("high") is not None:
        text += f" [{fmt(interval['low'])}, {fmt(interval['high'])}]"
    return text


def three_columns(e: Mapping[str, Any], fmt: Any) -> str:
    """One estimate's machine only | human only | prediction-powered, labels and effective labels."""
    effective = "–" if e.get("effective_labels") is None else f"{e['effective_labels']:.1f}"
    text = (
        f"machine {fmt(e['machine'])} | human only {_with_interval(e['human'], fmt)} | "
        f"prediction-powered {_with_interval(e['prediction_powered'], fmt)} "
        f"({e['labels']} labels, {effective} effective) -> headline {e['headline']}"
    )
    if e.get("withheld"):
        text += f"; intervals withheld: {e['withheld']}"
    return text


def design_text(design: Mapping[str, Any]) -> str:
    cells = ", ".join(f"{c['cell']} {c['labels']} of {c['responses']}" for c in design["cells"])
    left = ", ".join(f"{k} {v}" for k, v in design["left_out"].items())
    return f"design {design['policy']}: {design['labels']} labels over {design['population']} responses ({cells})" + (
        f"; labelled responses left out: {left}" if left else ""
    )


def format_share_block_text(block: Mapping[str, Any]) -> list[str]:
    """The lines `format_share --fixed-reader human` prints after the comparisons."""
    lines = ["", f"prediction-powered estimates over {block['scope']}:"]
    if block.get("design", {}).get("cells"):
        lines.append(f"  {design_text(block['design'])}")
        lines.append(f"  predictor {block['predictor']} ({block['predictor_why']})")
    if block.get("error"):
        lines.append(f"  ! {block['error']}")
    for row in block.get("checkpoints") or []:
        lines.append(
            f"  {row['base']}→{row['rl']}: reported gain under {row['reported_reader']} "
            f"{_points(row['reported_gain'])} points (every response)"
        )
        lines.append(f"    true gain (points): {three_columns(row['gain'], _points)}")
        if row["format_share"] is None:
            lines.append(f"    format share: {row['format_share_error']}")
        else:
            lines.append(f"    format share: {three_columns(row['format_share'], _share)}")
    lines.append(f"  headline: {block['headline_rule']}")
    return lines


def judge_bias_text(row: Mapping[str, Any]) -> list[str]:
    """A judge-bias row's prediction-powered lines (the analytics report's text), if it has them."""
    entry = row.get("estimates")
    if not entry:
        return []
    if entry.get("error"):
        return [f"      every response: {entry['error']}"]
    return [
        f"      every response, {name}: {three_columns(entry[key], fmt)}"
        for key, name, fmt in (
            ("bias", "bias", _signed),
            ("false_accept", "false accept", _rate),
            ("false_reject", "false reject", _rate),
        )
    ]
