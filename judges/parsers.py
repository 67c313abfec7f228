"""Reading a judge's reply into a label: correct / incorrect / not_attempted, or None (not understood).

Two families:

* Ours (`simpleqa`, `xverify`, `labels`): accept a grade only where the template asks for it (the
  final line is one of the template's forms, `FORMS`; a labelled GRADE: field), never a label word
  inside a sentence; anything else is None, which the platform stores as its own parse status
  ("unparsed"), never as correct or incorrect.
* Upstream re-implementations (`simpleqa_first_capital`, `inspect_last_grade`,
  `xverify_exact_label`), reproducing the pinned behaviour described in the readers catalogue
  (simple-evals @ ee3b0318, inspect-ai 0.3.285, xVerify @ 5e3606ac) including its quirks. Every
  raw reply is re-read by all of them so that parser-induced disagreement can be counted.

Pure Python, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

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
#
# A grade is read only where the template asks for it: the reply's final non-empty line (the
# whole reply, when it is one line), after <think> blocks and markdown or bracket decoration are
# removed, must BE one of the template's accepted forms, optionally after a field name such as
# "Judgement:". A label word inside a sentence ("The correct answer is (J).", "the output is not
# correct") is never a grade: a small model that answers the question instead of grading it would
# otherwise be read as "correct". And a reply that states two different grades, each on a line of
# its own, has given no grade. Anything else is None, stored as `unparsed`.

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>", re.IGNORECASE)
_CLOSE_THINK = re.compile(r"</think>", re.IGNORECASE)
# Markdown emphasis, code and heading marks, quotes, brackets; underscores only at a word's edge
# (NOT_ATTEMPTED keeps its own).
_DECOR = re.compile(r"[*`#\"“”‘’«»\[\](){}<>~]|(?<!\w)_+|_+(?!\w)")
_LEAD = re.compile(r"^[\s\-•>:]+")
_FIELD = r"(?:(?:final\s+)?(?:judgement|judgment|verdict|grade|evaluation|decision|label|result)\s*[:=]\s*)?"
_END = r"\s*[.!]?"
_WORD = r"(CORRECT|INCORRECT|NOT[\s_-]*ATTEMPTED)"


def _label_word(word: str) -> str:
    w = re.sub(r"[\s_-]+", "", word.lower())
    return {"correct": CORRECT, "incorrect": INCORRECT, "notattempted": NOT_ATTEMPTED}[w]


def _letter_with_label(m: re.Match[str]) -> str | None:
    """ "B: INCORRECT": the letter and its label must name the same grade."""
    by_letter, by_word = _SIMPLEQA_LETTERS[m.group(1)], _label_word(m.group(2))
    return by_letter if by_letter == by_word else None


@dataclass(frozen=True)
class Form:
    """One way a template's grade may be written: `pattern` must match a whole cleaned line (letters
    case-sensitive, everything else not), and `read` turns the match into a label."""

    name: str
    pattern: re.Pattern[str]
    read: Callable[[re.Match[str]], str | None]


def _form(name: str, body: str, read: Callable[[re.Match[str]], str | None]) -> Form:
    return Form(name, re.compile(rf"^(?i:{_FIELD}){body}{_END}$"), read)


_LABEL_ONLY = _form("label", rf"(?i:{_WORD})", lambda m: _label_word(m.group(1)))
_XVERIFY_LABEL = _form("correct or incorrect", r"(?i:(CORRECT|INCORRECT))", lambda m: _label_word(m.group(1)))
_LETTER = _form("letter", r"([ABC])", lambda m: _SIMPLEQA_LETTERS[m.group(1)])
_LETTER_AND_LABEL = _form("letter and its label", rf"([ABC])\s*[:.)=\-]?\s*(?i:{_WORD})", _letter_with_label)

# The accepted forms per parser, walked in order by `read_grade`.
FORMS: dict[str, tuple[Form, ...]] = {
    "xverify": (_XVERIFY_LABEL,),
    "simpleqa": (_LETTER, _LETTER_AND_LABEL, _LABEL_ONLY),
}


def _clean(reply: str | None) -> str:
    """The reply without its reasoning: closed <think> blocks removed; after a closing tag whose
    opening one was in the prompt, only what follows it; an unclosed <think> (thinking cut off by
    max_tokens) and everything after it dropped, since no grade was given yet."""
    text = _THINK.sub("\n", reply or "")
    closing = list(_CLOSE_THINK.finditer(text))
    if closing:
        text = text[closing[-1].end() :]
    opening = _OPEN_THINK.search(text)
    if opening:
        text = text[: opening.start()]
    return text


def _lines(reply: str | None) -> list[str]:
    """The reply's non-empty lines, each without decoration and with its spaces collapsed."""
    out = []
    for line in _clean(reply).splitlines():
        flat = " ".join(_LEAD.sub("", _DECOR.sub(" ", line)).split())
        if flat:
            out.append(flat)
    return out


def _read_line(line: str, forms: tuple[Form, ...]) -> tuple[bool, str | None]:
    """(whether some form matched, its label: None when the form matched but names no grade)."""
    for form in forms:
        m = form.pattern.match(line)
        if m:
            return True, form.read(m)
    return False, None


def read_grade(reply: str | None, forms: tuple[Form, ...]) -> str | None:
    """The grade on the reply's final non-empty line, if that line is one of `forms` and no other
    line is a form naming a different grade; else None."""
    lines = _lines(reply)
    if not lines:
        return None
    matched, label = _read_line(lines[-1], forms)
    if not matched or label is None:
        return None
    for line in lines[:-1]:
        other_matched, other = _read_line(line, forms)
        if other_matched and other != label:
            return None  # two grades, or a grade and a self-contradicting one
    return label


def simpleqa(reply: str | None) -> str | None:
    """Ours for the SimpleQA grader: the final line is a letter ("B", "(B)", "**B**", "Grade: B"),
    a letter with its own, agreeing label ("B: INCORRECT") or a label alone ("INCORRECT")."""
    return read_grade(reply, FORMS["simpleqa"])


def xverify(reply: str | None) -> str | None:
    """Ours for the xVerify grader: the final line is the label itself ("Incorrect", "[Correct]",
    "**Incorrect**", "Judgement: [Incorrect]"). NOT_ATTEMPTED is not in xVerify's vocabulary."""
    return read_grade(reply, FORMS["xverify"])


# The labelled GRADE: field of an inspect-style template, its value the whole rest of its line.
_GRADE_FIELD = re.compile(rf"^GRADE[\s{_INVISIBLE}]*:[\s{_INVISIBLE}]*(C|I|CORRECT|INCORRECT){_END}$", re.IGNORECASE)


def labels(reply: str | None) -> str | None:
    """Ours for custom templates: the last line that is a "GRADE: C/I" field (inspect style); with
    none, the SimpleQA forms (letters A/B/C, the label words) on the final line."""
    graded = [m.group(1) for line in _lines(reply) if (m := _GRADE_FIELD.match(line))]
    if graded:
        return _INSPECT_WORDS[graded[-1].lower()]
    return simpleqa(reply)


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


# The upstream parser of the grader each template follows: where ours and it read a reply
# differently, the verdict depends on the parser, not only on the judge (analytics count it).
_UPSTREAM_OF_TEMPLATE = {
    "simpleqa": "simpleqa_first_capital",
    "simpleqa-upstream": "simpleqa_first_capital",
    "xverify": "xverify_exact_label",
    "xverify-upstream": "xverify_exact_label",
}


def upstream_for(template: str) -> str:
    """The upstream parser a judge's template is compared with: the grader's own for the SimpleQA
    and xVerify templates, inspect-ai's last GRADE: for custom (GRADE-style) templates."""
    return _UPSTREAM_OF_TEMPLATE.get(template, "inspect_last_grade")


def disagrees(label: str | None, reparses: dict[str, str | None], upstream: str) -> bool:
    """Whether the judge's label (None or "" when unparsed) differs from the upstream parser's
    reading of the same reply (None when upstream finds no grade)."""
    return (label or None) != reparses.get(upstream)
