"""Pure label logic (no database): how two labels compare, and how much an item's labels agree."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from adjudication.models import FinalLabel, Label

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class LabelEntry:
    """What an annotator enters for an item (a skip's reason aside): the fields a Label stores as
    given, once the review services have checked and normalised them for the queue."""

    kind: str
    answer: str = ""
    correctness: str = ""
    confidence: int | None = None
    note: str = ""


def normalise_answer(kind: str, answer: str) -> str:
    if kind == Label.Kind.OPTION:
        return answer.strip().strip("()").strip().upper()
    if kind == Label.Kind.TEXT:
        return _SPACES.sub(" ", answer.strip()).casefold()
    return ""


class LabelValues(Protocol):
    """What label equality reads: a Label, a FinalLabel, or the same three columns loaded as values."""

    @property
    def kind(self) -> str: ...
    @property
    def answer(self) -> str: ...
    @property
    def correctness(self) -> str: ...


def label_key(label: Label | FinalLabel | LabelValues, judge_correctness: bool) -> tuple:
    """Two labels are equal when their keys are: same kind, same normalised answer, and (on a queue
    that judges correctness) the same correctness. Agreement, settling and the item browser's
    `disagree` filter all compare labels by this key."""
    key = (label.kind, normalise_answer(label.kind, label.answer))
    return key + ((label.correctness,) if judge_correctness else ())


def label_category(kind: str, answer: str, correctness: str, judge_correctness: bool) -> str:
    """A label as one nominal category for agreement statistics (κ, α): kind and normalised answer,
    and the correctness when the queue judges it; the form analytics.selectors.annotator_ratings uses."""
    entry = LabelEntry(kind=kind, answer=answer, correctness=correctness)
    return ":".join(label_key(entry, judge_correctness))


def agreement(labels: Sequence[LabelValues], judge_correctness: bool) -> float:
    if not labels:
        return 1.0
    counts = Counter(label_key(lab, judge_correctness) for lab in labels)
    return counts.most_common(1)[0][1] / len(labels)
