"""Reading a judge's reply into a label: correct / incorrect / not_attempted, or None (not understood).

Two families:

* Ours (`simpleqa`, `xverify`, `labels`): accept a reply only when it names one label without
  ambiguity; anything else is None, which the platform stores as its own parse status
  ("unparsed"), never as "incorrect".
* Upstream re-implementations (`simpleqa_first_capital`, `inspect_last_grade`,
  `xverify_exact_label`), reproducing the pinned behaviour described in the readers catalogue
  (simple-evals @ ee3b0318, inspect-ai 0.3.285, xVerify @ 5e3606ac) including its quirks. Every
  raw reply is re-read by all of them so that parser-induced disagreement can be counted.

Pure Python, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable

CORRECT = "correct"
INCORRECT = "incorrect"
NOT_ATTEMPTED = "not_attempted"
LABELS = (CORRECT, INCORRECT, NOT_ATTEMPTED)

Parser = Callable[[str | None], "str | None"]

# ---------------------------------------------------------------------------------------------
# Upstream behaviour
# ---------------------------------------------------------------------------------------------

_FIRST_CAPITAL = re.compile(r"(A|B|C)")
_SIMPLEQA_LETTERS = {"A": CORRECT, "B": INCORRECT, "C": NOT_ATTEMPTED}


def simpleqa_first_capital(reply: str | None) -> str | None:
    """simple-evals SimpleQA: the first uppercase A, B or C anywhere in the reply; none -> C.

    So "CORRECT" and "INCORRECT" read as C (NOT_ATTEMPTED) and "NOT_ATTEMPTED" as A (CORRECT).
    Upstream never fails to produce a grade, and neither does this.
    """
    m = _FIRST_CAPITAL.search(reply or "")
    return _SIMPLEQA_LETTERS[m.group(0) if m else "C"]


# The permissive form inspect-ai uses with its default instructions: the word after the LAST
# "GRADE:" (zero-width and invisible spaces tolerated around the colon), case-insensitive.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
_GRADE = re.compile(rf"(?<!\w)GRADE(?!\w)[\s{_INVISIBLE}]*:[\s{_INVISIBLE}]*([A-Za-z]+)", re.IGNORECASE)
_INSPECT_WORDS = {"c": CORRECT, "correct": CORRECT, "i": INCORRECT, "incorrect": INCORRECT}


def inspect_last_grade(reply: str | None) -> str | None:
    """inspect-ai model_graded_qa (0.3.285, default instructions, no partial credit): the grade
    after the last GRADE:; C/correct or I/incorrect. P/partial is not offered without partial
    credit, so it is unscored like a missing grade (None)."""
    matches = _GRADE.findall(reply or "")
    if not matches:
        return None
    return _INSPECT_WORDS.get(matches[-1].lower())


def xverify_exact_label(reply: str | None) -> str | None:
    """The xVerify package's accounting: the stripped, lowercased reply must be exactly
    "correct" or "incorrect"; anything else is invalid (None)."""
    text = (reply or "").strip().lower()
    return text if text in (CORRECT, INCORRECT) else None


def xverify_substring(reply: str | None) -> str | None:
    """xVerify's research script: substring tests, "incorrect" checked before "correct" (every
    "incorrect" contains "correct", so the other order reads every Incorrect as Correct)."""
    text = (reply or "").lower()
    if INCORRECT in text:
        return INCORRECT
    if CORRECT in text:
        return CORRECT
    return None


UPSTREAM: dict[str, Parser] = {
    "simpleqa_first_capital": simpleqa_first_capital,
    "inspect_last_grade": inspect_last_grade,
    "xverify_exact_label": xverify_exact_label,
}

# ---------------------------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_DECOR = re.compile(r"[*_`\"'“”‘’\[\](){}<>#]")
_BARE_LETTER = re.compile(r"^(?:grade|answer|letter|judgement|judgment)?\s*[:=-]?\s*([ABC])\s*[.:!]?$", re.IGNORECASE)
_LETTER_AND_LABEL = re.compile(r"^([ABC])\s*[:.)\-]?\s*(CORRECT|INCORRECT|NOT[\s_-]*ATTEMPTED)\s*\.?$", re.IGNORECASE)
_LABEL_WORDS = re.compile(r"(?<![A-Za-z])(NOT[\s_-]*ATTEMPTED|INCORRECT|CORRECT)(?![A-Za-z])", re.IGNORECASE)


def _clean(reply: str | None) -> str:
    text = _THINK.sub(" ", reply or "")
    if "</think>" in text:  # an opening tag in the prompt, the closing one in the reply
        text = text.rsplit("</think>", 1)[1]
    return _DECOR.sub(" ", text).strip()


def _label_word(word: str) -> str:
    w = re.sub(r"[\s_-]+", "", word.lower())
    return {"correct": CORRECT, "incorrect": INCORRECT, "notattempted": NOT_ATTEMPTED}[w]


_NEGATED = re.compile(
    r"(?:(?<![A-Za-z])(?:not|never|hardly)|n't)\s+(?:\w+\s+)?(?:in)?correct(?![A-Za-z])", re.IGNORECASE
)


def _one_label(text: str) -> str | None:
    """The label the text names, if it names exactly one (by word); else None. A negated label
    ("not correct") is ambiguous for a word test, so it is left unparsed rather than guessed."""
    if _NEGATED.search(text):
        return None
    found = {_label_word(m.group(1)) for m in _LABEL_WORDS.finditer(text)}
    return found.pop() if len(found) == 1 else None


def simpleqa(reply: str | None) -> str | None:
    """Ours for the SimpleQA grader: a bare letter (A/B/C), a letter with its own label
    ("B: INCORRECT", which must agree), or label words naming exactly one grade. On the final
    line first (a reasoning judge ends with its grade), then the whole reply."""
    text = _clean(reply)
    if not text:
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for candidate in ([lines[-1]] if len(lines) > 1 else []) + [text]:
        flat = " ".join(candidate.split())
        m = _BARE_LETTER.match(flat)
        if m:
            return _SIMPLEQA_LETTERS[m.group(1).upper()]
        m = _LETTER_AND_LABEL.match(flat)
        if m:
            by_letter, by_word = _SIMPLEQA_LETTERS[m.group(1).upper()], _label_word(m.group(2))
            return by_letter if by_letter == by_word else None
        label = _one_label(flat)
        if label:
            return label
    return None


def xverify(reply: str | None) -> str | None:
    """Ours for the xVerify grader: the exact label (brackets and markdown ignored), else the one
    label the final line or the whole reply names ("Judgement: Incorrect"). Both labels named,
    or neither: None. NOT_ATTEMPTED is not in xVerify's vocabulary."""
    text = _clean(reply)
    if not text:
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for candidate in ([lines[-1]] if len(lines) > 1 else []) + [text]:
        label = _one_label(candidate)
        if label in (CORRECT, INCORRECT):
            return label
        if label is not None:
            return None
    return None


def labels(reply: str | None) -> str | None:
    """Ours for custom templates: a "GRADE: C/I" line (inspect style, last one), else whatever the
    SimpleQA reader accepts (letters A/B/C, the label words)."""
    graded = inspect_last_grade(_clean(reply))
    return graded if graded is not None else simpleqa(reply)


OURS: dict[str, Parser] = {"simpleqa": simpleqa, "xverify": xverify, "labels": labels}

ALL: dict[str, Parser] = {**OURS, **UPSTREAM}


def resolve(parser: str, template: str) -> str:
    """The parser a judge uses: `auto` means ours for its template."""
    if parser != "auto":
        if parser not in ALL:
            raise KeyError(f"unknown parser {parser!r}; known: auto, {', '.join(ALL)}")
        return parser
    return {
        "simpleqa": "simpleqa",
        "xverify": "xverify",
        "simpleqa-upstream": "simpleqa",
        "xverify-upstream": "xverify",
    }.get(template, "labels")


def reparse(reply: str | None) -> dict[str, str | None]:
    """The reply read by every upstream parser (name -> label or None)."""
    return {name: fn(reply) for name, fn in UPSTREAM.items()}
