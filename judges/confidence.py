"""A judge's confidence in its verdict, from the log-probabilities of the token that carries it.

A chat completion with `logprobs` gives, for every generated token, its log-probability and the
top alternatives at that position. The verdict token is the first generated token that names a
label of the judge's vocabulary and names the label the parser read (decoration such as "[", "**"
or "Judgement:" names none and is passed over). The confidence is the probability mass of the
alternatives there that name the parsed label, over the mass of those that name any label: a
judge choosing between "Correct" (p 0.6) and "Incorrect" (p 0.3) at that position is 0.67
confident, whatever the other 0.1 went to (whitespace, punctuation, other words).

No confidence (None) when the server sent no log-probabilities, when no position names the parsed
label, or when the chosen token there names another label (the reply and the parser disagree:
nothing honest to report). The verdict's confidence is what calibration measures against human
labels (adjudication.analytics.calibration).

Pure Python, no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judges.parsers import CORRECT, INCORRECT, NOT_ATTEMPTED

# How many alternatives a judge asks for at each position: OpenAI's maximum (vLLM and llama.cpp
# follow it). A label absent from them counts as no mass, so the confidence is an upper bound then;
# with five, SmolLM2-135M's "Correct" (p 0.17) came with no "Incorrect" at all, and read as 1.0.
TOP_LOGPROBS = 20

_DECORATION = re.compile(r"[\s*_`\"'“”‘’\[\](){}<>#:.,;!=\-]+")

# Words of each vocabulary; a token names a label when it is a prefix of exactly one word
# (tokenizers split "Incorrect" as "In" + "correct", "NOT_ATTEMPTED" as "NOT" + "_ATTEMPTED").
_WORDS = {"correct": CORRECT, "incorrect": INCORRECT, "notattempted": NOT_ATTEMPTED}
# Single letters are the templates' letter codes, not word prefixes: SimpleQA's A/B/C, inspect's C/I.
_LETTERS: dict[str, Mapping[str, str]] = {
    "simpleqa": {"a": CORRECT, "b": INCORRECT, "c": NOT_ATTEMPTED},
    "xverify": {},
    "labels": {"c": CORRECT, "i": INCORRECT},
}
_WORDS_OF: dict[str, tuple[str, ...]] = {
    "simpleqa": ("correct", "incorrect", "notattempted"),
    "xverify": ("correct", "incorrect"),
    "labels": ("correct", "incorrect", "notattempted"),
}
# The upstream parsers read the same vocabularies as ours for their templates.
VOCABULARY_OF_PARSER = {
    "simpleqa": "simpleqa",
    "simpleqa_first_capital": "simpleqa",
    "xverify": "xverify",
    "xverify_exact_label": "xverify",
    "labels": "labels",
    "inspect_last_grade": "labels",
}


def token_label(token: str, vocabulary: str) -> str | None:
    """The label a generated token names in `vocabulary`, or None (decoration, other words)."""
    text = _DECORATION.sub("", token).lower()
    if not text:
        return None
    if len(text) == 1:
        return _LETTERS[vocabulary].get(text)
    words = [w for w in _WORDS_OF[vocabulary] if w.startswith(text)]
    return _WORDS[words[0]] if len(words) == 1 else None


@dataclass(frozen=True)
class Confidence:
    value: float  # probability of the parsed label among the labels' alternatives, in [0, 1]
    position: int  # index of the verdict token among the generated tokens
    alternatives: dict[str, float]  # label -> probability mass at that position (not renormalised)


def verdict_confidence(logprobs: Any, *, label: str, parser: str) -> Confidence | None:
    """The confidence of a parsed `label` from a chat completion choice's `logprobs` object
    ({"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}), read in the
    parser's vocabulary. None where there is nothing honest to report (module docstring).

    The verdict token is the first label-naming token of the last line that has one, outside
    <think> blocks: our parsers read the final line, and a label split into sub-word tokens
    ("In" + "correct") is named by its first piece, not its last."""
    vocabulary = VOCABULARY_OF_PARSER.get(parser)
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if vocabulary is None or not isinstance(content, Sequence) or isinstance(content, str | bytes):
        return None
    text, line = "", 0
    found: list[tuple[int, int, Mapping[str, Any], str]] = []  # (line, position, entry, label named)
    for position, entry in enumerate(content):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("token"), str):
            return None
        token: str = entry["token"]
        leading = token[: len(token) - len(token.lstrip())]
        thinking = text.rfind("<think>") > text.rfind("</think>")
        named = None if thinking else token_label(token, vocabulary)
        if named is not None:
            found.append((line + leading.count("\n"), position, entry, named))
        text += token
        line += token.count("\n")
    if not found:
        return None
    last_line = max(f[0] for f in found)
    _, position, entry, named = next(f for f in found if f[0] == last_line)
    if named != label:
        return None
    mass: dict[str, float] = {}
    seen: set[str] = set()
    for alt in [entry, *[t for t in entry.get("top_logprobs") or [] if isinstance(t, Mapping)]]:
        alt_token, logprob = alt.get("token"), alt.get("logprob")
        # The chosen token is usually among its own alternatives too: counted once.
        if not isinstance(alt_token, str) or alt_token in seen or not isinstance(logprob, int | float):
            continue
        if isinstance(logprob, bool) or not math.isfinite(logprob):
            continue
        seen.add(alt_token)
        alt_label = token_label(alt_token, vocabulary)
        if alt_label is not None:
            mass[alt_label] = mass.get(alt_label, 0.0) + math.exp(min(0.0, float(logprob)))
    total = sum(mass.values())
    if total <= 0 or label not in mass:
        return None
    return Confidence(value=mass[label] / total, position=position, alternatives=mass)
