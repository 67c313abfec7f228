"""Task types: what kind of answer an item asks for, and so which readers apply to it.

A reader written for multiple-choice letters has nothing to say about a GSM8K number, and a SymPy
cascade nothing about option (J): run on an item outside its task types, a reader's verdict is
`not_applicable` (a class apart: never a failure, never incorrect), and the default panel of a
dataset is the readers whose task types meet the dataset's.

An item's task type is the one its caller declares (`task_type_of(item, declared)`: a stored
question whose meta holds `task_type`; the importer does not write one yet), and is read off the
item otherwise: options make it multiple choice; an open-ended gold that is written as mathematics (numbers,
LaTeX, an expression, an interval) makes it maths; any other gold (words: "Paris", "George
Washington") is free-form text.
"""

from __future__ import annotations

import re
from typing import cast

from .base import (
    ALL_TASK_TYPES,
    NOT_APPLICABLE,
    TASK_TYPES,
    Item,
    Reader,
    Reading,
    TaskType,
    task_types_of_contract,
)
from .qa import gold_aliases

__all__ = ["ALL_TASK_TYPES", "TASK_TYPES", "TaskType", "task_type_of", "task_types_of_contract"]

TASK_TYPE_LABELS: dict[str, str] = {
    "multiple_choice": "multiple choice",
    "maths": "maths",
    "free_form": "free-form text",
}

# Words that are mathematics when they stand in a gold ("pi", "sqrt(2)", "sin x", "infinity"): a
# gold made only of these, numbers, single letters and operators is maths.
_MATH_WORDS = frozenset(
    """
    pi e i inf infinity oo sqrt cbrt root sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh
    log ln lg exp abs det max min gcd lcm mod deg degree degrees rad radian radians frac dfrac tfrac
    text mathrm mathbf cup cap emptyset varnothing infty le ge leq geq ne neq cdot times div pm mp
    approx circ left right and or no none undefined dne
    """.split()  # noqa: SIM905 - a word list reads better as words
)
# Units a maths gold may carry ("5 cm", "12 km/h", "3 dollars").
_UNITS = frozenset(
    """
    cm mm m km g kg mg s ms h hr hrs min sec l ml mph kph km/h m/s cents cent dollars dollar units unit
    meters metres meter metre feet foot ft inches inch in miles mile yards yard hours hour minutes minute
    seconds second days day weeks week years year percent
    """.split()  # noqa: SIM905 - a word list reads better as words
)
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")


# The reported reader of a benchmark no reader declares (Reader.harness_benchmarks), by task type:
# MATH-style boxes for maths, lm-eval's generic multiple-choice filter, SQuAD exact match.
TASK_TYPE_HARNESS: dict[str, str] = {
    "maths": "boxed",
    "multiple_choice": "multi-choice-regex",
    "free_form": "qa-exact-match",
}


def benchmark_key(name: str) -> str:
    """A benchmark name as harness declarations are matched: lower case, runs of anything but
    letters and digits as one "-" ("MMLU_Pro", "mmlu pro" and "mmlu-pro" are one benchmark)."""
    return re.sub(r"[^0-9a-z]+", "-", name.lower()).strip("-")


def is_task_type(value: str) -> bool:
    return value in ALL_TASK_TYPES


def gold_is_mathematical(gold: str) -> bool:
    """Whether an open-ended gold is written as mathematics rather than as words.

    Any LaTeX makes it maths (`\\text{Tuesday}` is how MATH writes a word answer). Otherwise every
    word in it must be a mathematical word, a unit, or a single letter (a variable)."""
    # The aliases as the QA readers read them (a JSON list of strings is several golds), unsplit.
    for text in gold_aliases(gold, separator=None) or [""]:
        if not text:
            return False
        if "\\" in text or "$" in text:
            continue
        without_commands = _LATEX_COMMAND.sub(" ", text)
        for word in _WORD.findall(without_commands):
            lowered = word.lower()
            if len(word) == 1 or lowered in _MATH_WORDS or lowered in _UNITS:
                continue
            return False
    return True


def task_type_of(item: Item, declared: str | None = None) -> TaskType:
    """The item's task type: the declared one when given (an import's `task_type`), else read off
    the item (module docstring)."""
    if declared:
        if not is_task_type(declared):
            raise ValueError(f"unknown task type {declared!r}; known: {', '.join(TASK_TYPES)}")
        return cast(TaskType, declared)
    if item.choices:
        return "multiple_choice"
    return "maths" if gold_is_mathematical(item.gold) else "free_form"


def not_applicable(reader: Reader, item: Item) -> Reading | None:
    """The `not_applicable` reading when `reader` does not apply to the task type `item` declares
    (Item.task_type), else None (the reader reads it). Its detail says why, for the item browser."""
    if item.task_type is None:
        return None
    applies = reader.applicable_task_types()
    if item.task_type in applies:
        return None
    return Reading(
        NOT_APPLICABLE,
        detail={
            "reason": "not applicable",
            "task_type": item.task_type,
            "reader_task_types": sorted(applies),
        },
    )
