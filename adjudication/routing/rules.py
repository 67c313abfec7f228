"""Disagreement routing: which responses a panel of readers disputes, as pure functions; and the
serving order of a policy's controls among its other items (disputes, label values).

Kept free of the ORM so the rules are testable on plain tuples and reusable by the analytics.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

MISSING = frozenset({"no_answer", "timeout", "error"})
# A reader outside the item's task type took no part: its reading is left out like an absent one,
# whatever `missing_is_disagreement` says (it found nothing because it did not look).
NOT_APPLICABLE = "not_applicable"
# Verdicts that read nothing: a response whose every panel reading is one of these is unreadable.
READS_NOTHING = MISSING | {NOT_APPLICABLE}
Compare = Literal["either", "answer", "verdict"]
# The order a policy serves its items in (RoutingPolicy.Priority's values).
Priority = Literal["disagreement", "random", "order", "information"]
# How an information policy chooses (RoutingPolicy.Sampling's values): a probability design, or
# the top label values (unfit for estimates).
Sampling = Literal["randomized", "greedy"]
# What routing does with one response: wait for a missing panel reading, route it as disputed,
# route it as a control (undisputed, drawn at random), leave it (undisputed), or, when no panel
# reader could read it, route it in the unreadable stratum (drawn at random) or leave it there.
Outcome = Literal["pending", "disputed", "control", "agreeing", "unreadable", "unreadable_left"]


@dataclass(frozen=True)
class PanelReading:
    reader: str
    answer: str | None
    verdict: str


@dataclass(frozen=True)
class Decision:
    disputed: bool
    # Number of distinct answer keys and verdict classes among the readings that count.
    distinct_answers: int
    distinct_verdicts: int

    @property
    def strength(self) -> float:
        """Priority for review: more distinct answers first, then split verdicts."""
        return float(max(self.distinct_answers - 1, 0) * 2 + max(self.distinct_verdicts - 1, 0))


_LETTER = re.compile(r"^\(?\s*([A-Za-z])\s*\)?\.?$")
_SPACES = re.compile(r"\s+")


def comparable_answer(*, canonical: str | None, normalized: str | None, answer: str | None) -> str | None:
    """The answer a reading is compared on: its canonical answer (readers.answer.canonical: the option
    letter, the maths normal form), so that "(C) Merton" and "C" are one answer whoever read them;
    else (a reading stored without one, or an answer that has none) the reader's own normalized
    form, else its raw answer."""
    for value in (canonical, normalized, answer):
        if value is not None:
            return value
    return None


def answer_key(answer: str | None) -> str | None:
    """A light canonical form so that readers' cosmetic differences ("(B)", "b", "$\\dfrac12$")
    are not counted as disagreement; real equivalence is each reader's own business."""
    if answer is None:
        return None
    text = answer.strip()
    letter = _LETTER.match(text)
    if letter:
        return letter.group(1).upper()
    for old, new in (
        ("\\dfrac", "\\frac"),
        ("\\tfrac", "\\frac"),
        ("\\left", ""),
        ("\\right", ""),
        ("$", ""),
        ("\\!", ""),
        ("\\,", ""),
        ("\\ ", ""),
    ):
        text = text.replace(old, new)
    text = _SPACES.sub("", text).rstrip(".")
    return text or None


def decide(
    readings: Iterable[PanelReading], *, compare: Compare = "either", missing_is_disagreement: bool = False
) -> Decision:
    """Do these readings of one response disagree?

    With `missing_is_disagreement` off, no_answer / timeout / error readings are left out, so a
    reader that found nothing never disputes one that did; with it on, "found nothing" is an answer
    of its own (all three classes count as the same missing answer) and disputes any real answer.
    A not_applicable reading is always left out: that reader did not read this item.
    """
    counted = [
        r for r in readings if r.verdict != NOT_APPLICABLE and (missing_is_disagreement or r.verdict not in MISSING)
    ]
    answers = {answer_key(r.answer) if r.verdict not in MISSING else None for r in counted}
    verdicts = {("missing" if r.verdict in MISSING else r.verdict) for r in counted}
    if compare == "answer":
        disputed = len(answers) > 1
    elif compare == "verdict":
        disputed = len(verdicts) > 1
    else:
        disputed = len(answers) > 1 or len(verdicts) > 1
    return Decision(disputed=disputed, distinct_answers=len(answers), distinct_verdicts=len(verdicts))


@dataclass(frozen=True)
class Route:
    outcome: Outcome
    decision: Decision | None  # None while a panel reading is missing


def route_response(
    readings: Sequence[PanelReading],
    *,
    panel_size: int,
    compare: Compare = "either",
    missing_is_disagreement: bool = False,
    control_fraction: float = 0.0,
    unreadable_fraction: float = 0.0,
    seed: int = 0,
    response_key: str,
) -> Route:
    """The one routing decision per response, shared by the routing itself and its read-only
    preview, so that what a manager is told a queue will hold is what creating it routes. A
    response no panel reader could read (loops, truncations) is neither a dispute nor agreement:
    it is drawn into the unreadable stratum with `unreadable_fraction`."""
    if len(readings) < panel_size:
        return Route("pending", None)
    decision = decide(readings, compare=compare, missing_is_disagreement=missing_is_disagreement)
    if is_unreadable(readings):
        drawn = is_unreadable_drawn(seed=seed, response_key=response_key, fraction=unreadable_fraction)
        return Route("unreadable" if drawn else "unreadable_left", decision)
    if decision.disputed:
        return Route("disputed", decision)
    if is_control(seed=seed, response_key=response_key, fraction=control_fraction):
        return Route("control", decision)
    return Route("agreeing", decision)


def is_control(*, seed: int, response_key: str, fraction: float) -> bool:
    """A deterministic, reproducible draw: the same (seed, response) is always in or out, so
    re-running the routing never changes which agreeing items were sampled as controls."""
    if fraction <= 0:
        return False
    digest = hashlib.sha256(f"{seed}:{response_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def is_unreadable(readings: Sequence[PanelReading]) -> bool:
    """Whether no reader of the panel read anything in the response."""
    return bool(readings) and all(r.verdict in READS_NOTHING for r in readings)


def is_unreadable_drawn(*, seed: int, response_key: str, fraction: float) -> bool:
    """The unreadable stratum's draw: like is_control, reproducible, and independent of it."""
    if fraction <= 0:
        return False
    digest = hashlib.sha256(f"unreadable:{seed}:{response_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def random_priority(*, seed: int, response_key: str) -> float:
    digest = hashlib.sha256(f"priority:{seed}:{response_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def controls_spread(*, priorities: Mapping[int, float], controls: Collection[int], seed: int) -> dict[int, float]:
    """The priority of every open item of a policy that serves controls among other items: each
    other item keeps its own (`priorities`: a label value, a dispute's strength, the import order);
    the controls are spread evenly through that order (the j-th of n controls, in a seeded shuffle,
    takes the value found at rank (j + ½)·m/n of the m other items, and ties with it), so that a
    queue served from the top keeps its random share at every point, however the others' priorities
    move. Which controls come first is the seeded shuffle, independent of the items: the labelled
    controls of a part-served queue are a simple random sample of its controls. Controls without
    any other item left: a seeded random order."""
    ranked = sorted(priorities.values(), reverse=True)
    out = dict(priorities)
    shuffled = sorted(controls, key=lambda i: random_priority(seed=seed, response_key=str(i)))
    n, m = len(shuffled), len(ranked)
    for j, i in enumerate(shuffled):
        out[i] = ranked[min(m - 1, int((j + 0.5) * m / n))] if m else random_priority(seed=seed, response_key=str(i))
    return out


def controls_tiebreaks(*, others: Sequence[tuple[float, int]], controls: Sequence[tuple[int, float]]) -> dict[int, int]:
    """Where a queue serves its open controls among its other open items, as tiebreaks (a queue
    serves by priority, highest first, then by tiebreak). `others`: the (priority, tiebreak) of the
    other items; `controls`: (key, priority) of each control in its seeded order, its priority from
    controls_spread. The j-th of n controls is placed just before the other item at rank
    (j + ½)·m/n of the m others, whose priority it took: evenly spread from the first item served,
    not wherever the shuffle puts it within a block of equal priorities (a block of 170 disputes of
    equal strength would otherwise serve its controls anywhere in it, none among the first ones). A
    control whose priority is not that item's (the queue holds other items than the policy's open
    ones) keeps its tiebreak."""
    ranked = sorted(others, key=lambda pt: (-pt[0], pt[1]))
    n, m = len(controls), len(ranked)
    out: dict[int, int] = {}
    for j, (key, priority) in enumerate(controls):
        if not m:
            break
        at_priority, at_tiebreak = ranked[min(m - 1, int((j + 0.5) * m / n))]
        if at_priority == priority:
            out[key] = at_tiebreak - 1
    return out
