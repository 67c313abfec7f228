"""A dataset's estimates as one table: the `estimates` report's JSON and the analytics page's
section (docs/estimates.md, docs/analytics.md). Which targets (one, or the headline set), each
three ways (machine only, human only, prediction-powered) on one Frame built once for the
predictor, and the design the labels were drawn by.

Pure: the Django layer (analytics.estimate_report) reads the population, the predictor's values
and the labels with their design; this module decides nothing about where they come from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from adjudication.analytics.estimates import (
    BINARY,
    HEADLINE_MIN_LABELS,
    MIN_CELL_LABELS,
    MIN_LABELS,
    PRODUCER_KINDS,
    Design,
    EstimateError,
    Frame,
    Population,
    parse_estimate_target,
)
from adjudication.analytics.stats import jsonable

# Gains and format shares compare checkpoints: the headline set has them when the groups are checkpoints.
GAIN_FIELD = "checkpoint"


def _accuracy_target(by: str, group: str) -> str:
    # A group whose name holds "=" would read as `accuracy:<field>=<value>`: name the field then.
    return f"accuracy:{by}={group}" if "=" in group else f"accuracy:{group}"


def headline_targets(population: Population, *, by: str, base: str, reported: str) -> tuple[list[str], list[str]]:
    """The headline set, and a note for each part of it the data cannot have: pooled accuracy, the
    accuracy of each group (value of `by`), the gain base → each other checkpoint and the format
    share of that gain under the `reported` reader (groups being checkpoints), and each
    producer's agreement, bias, false-accept and false-reject rates."""
    groups = sorted({str((population.groups.get(i) or {}).get(by) or "-") for i in population.items})
    targets = ["accuracy", *(_accuracy_target(by, g) for g in groups)]
    notes: list[str] = []
    if by != GAIN_FIELD:
        notes.append(f"gains and format shares compare checkpoints: they are listed with by={GAIN_FIELD}")
    elif base not in groups:
        notes.append(f"no gains: the dataset has no checkpoint {base!r} (checkpoints: {', '.join(groups)})")
    else:
        others = [g for g in groups if g != base and "," not in g]
        if len(others) < len(groups) - 1:
            notes.append("a checkpoint whose name holds a comma is left out of the gains (a target cannot name it)")
        targets += [f"gain:{base},{g}" for g in others]
        if reported in population.verdicts and "," not in reported:
            targets += [f"format-share:{base},{g},{reported}" for g in others]
        else:
            notes.append(f"no format shares: the reported reader {reported!r} gave no verdicts on this dataset")
    for producer in sorted(population.verdicts):
        targets += [f"{kind}:{producer}" for kind in PRODUCER_KINDS]
    return targets, notes


def design_summary(
    *, policy: str | None, design: Design, labels: Mapping[str, str], population: int, left_out: Mapping[str, int]
) -> dict[str, Any]:
    """What the labels rest on: the policy, each cell (its responses, labels and inclusion
    probabilities), and the labels left out with why."""
    used = {item: cell for item, cell in design.cell_of.items() if labels.get(item) in BINARY}
    per_cell = Counter(used.values())
    cells = []
    for name in sorted(design.cell_sizes):
        pis = [float(design.probability[i]) for i, c in used.items() if c == name and i in design.probability]
        cells.append(
            {
                "cell": name,
                "responses": int(design.cell_sizes[name]),
                "labels": per_cell.get(name, 0),
                "probability_min": min(pis) if pis else None,
                "probability_max": max(pis) if pis else None,
            }
        )
    dropped = dict(left_out)
    other = sum(1 for verdict in labels.values() if verdict not in BINARY)
    if other:
        dropped["not a correct/incorrect verdict"] = dropped.get("not a correct/incorrect verdict", 0) + other
    return {
        "policy": policy,
        "name": design.name,
        "population": population,
        "labels": len(used),
        "cells": cells,
        "left_out": dropped,
        "min_cell_labels": MIN_CELL_LABELS,
        "min_labels": MIN_LABELS,
        "headline_min_labels": HEADLINE_MIN_LABELS,
    }


def _about_predictor(kind: str, args: tuple[str, ...], predictor: str) -> str | None:
    if kind in PRODUCER_KINDS and args and args[0] == predictor:
        return (
            f"{predictor} is the predictor: its machine figure measures it against itself "
            "(read the human-only and prediction-powered columns)"
        )
    return None


def estimates_table(
    population: Population,
    *,
    predictor: Mapping[str, float],
    predictor_name: str,
    labels: Mapping[str, str],
    design: Design,
    target: str | None,
    by: str,
    base: str,
    reported: str,
    seed: int,
    n_boot: int,
) -> dict[str, Any]:
    """One target (an error in it is the caller's EstimateError) or the headline set (a target the
    data cannot have is listed under `errors` with why), each as Estimate.as_dict() plus its kind
    and a note where one is due. The Frame is built once and every target reuses it."""
    notes: list[str] = []
    if target is not None:
        targets = [str(parse_estimate_target(target))]
    else:
        targets, notes = headline_targets(population, by=by, base=base, reported=reported)
    frame = Frame.build(population, predictor, by=by, name=predictor_name)
    sample = frame.sample(labels, design)
    rows: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for text in targets:
        parsed = parse_estimate_target(text)
        try:
            est = frame.estimate(parsed, sample, n_boot=n_boot, seed=seed, design=design.name)
        except EstimateError as exc:
            if target is not None:
                raise
            errors.append({"target": text, "error": exc.message})
            continue
        row = {"kind": parsed.kind, **est.as_dict()}
        note = _about_predictor(parsed.kind, parsed.args, predictor_name)
        if note:
            row["note"] = note
        rows.append(row)
    return jsonable({"by": by, "target": target, "estimates": rows, "errors": errors, "notes": notes})
