"""Short-answer QA readers: the lexical scores open-domain QA evaluations use (SQuAD, TriviaQA,
Natural Questions), as readers, so that a dataset of short free-text answers gets machine verdicts.

All three compare under the SQuAD v1.1 evaluation script's `normalize_answer`: lowercase, delete
ASCII punctuation (`string.punctuation`, as upstream: "–" or "’" stay), replace the articles
a / an / the (whole words) by a space, collapse whitespace. Each takes the best gold alias
(upstream's `metric_max_over_ground_truths`):

* `qa-exact-match`: the normalised response equals a normalised alias (`exact_match_score`).
* `qa-contains`: a normalised alias is a substring of the normalised response, EVOUNA's "lexical
  matching" (Wang et al. 2023, QA-Eval `lexical_match_score`): a plain substring, so "art" is in
  "party", as upstream.
* `qa-token-f1`: SQuAD's token F1 (bag-of-tokens overlap; no shared token is 0) against the best
  alias, correct at F1 >= `threshold` (default 0.5).

Gold aliases. A response stores one gold string (`Response.gold`); `Item.gold` is that string. It
may carry several aliases in either of two forms: a JSON array of strings (`["Paris", "Paris,
France"]`, lossless), or text joined by `alias_separator` (default "/", as EVOUNA's files join
them). With a separator the whole string stays an alias beside its parts, so that a gold which
merely contains the separator ("AC/DC", "1/2") still matches itself. `alias_separator=None` never
splits. A gold whose aliases all normalise to nothing is an `error` (upstream would count an empty
gold as contained in every response); an empty normalised response is `no_answer`. A
multiple-choice or maths item is outside their task type (readers.tasks): `not_applicable`. They
are in the default panel of a dataset with free-form items, and of no other.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import Item, Reader, Reading

SHORT_TEXT = frozenset({"short_text"})
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
# The response is the answer for these readers; a longer one is prose, not stored as the answer.
MAX_ANSWER_CHARS = 1_000
SQUAD = "SQuAD v1.1 evaluate-v1.1.py normalize_answer"


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation, in upstream's order: lower, punctuation, articles, whitespace."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def gold_aliases(gold: str, separator: str | None = "/") -> list[str]:
    """The gold's aliases, in order, without duplicates (module docstring)."""
    stripped = gold.strip()
    if stripped.startswith("["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and parsed and all(isinstance(a, str) for a in parsed):
            return list(dict.fromkeys(a for a in parsed if a.strip()))
    aliases = [stripped]
    if separator and separator in stripped:
        aliases += [part.strip() for part in stripped.split(separator)]
    return list(dict.fromkeys(a for a in aliases if a))


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD v1.1's f1_score over already-normalised strings: no shared token gives 0 (so two
    empty strings give 0 too, as in v1.1)."""
    pred, ref = prediction.split(), gold.split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class AliasConfig:
    alias_separator: str | None = "/"


@dataclass(frozen=True)
class TokenF1Config:
    alias_separator: str | None = "/"
    threshold: float = 0.5


class _ShortAnswerReader(Reader):
    """Shared: aliases, normalisation, the abstentions; subclasses score one (response, alias)."""

    version = "1.0"
    contract: ClassVar[frozenset[str]] = SHORT_TEXT

    def score(self, response: str, alias: str) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def passes(self, score: float) -> bool:
        return score >= 1.0

    def read(self, item: Item) -> Reading:
        if item.is_multiple_choice:
            return Reading("error", detail={"reason": "multiple-choice item: the QA readers compare free text"})
        aliases = [(a, normalize_answer(a)) for a in gold_aliases(item.gold, self.config.alias_separator)]
        aliases = [(a, n) for a, n in aliases if n]
        if not aliases:
            return Reading("error", detail={"reason": "no gold alias left after normalisation"})
        response = normalize_answer(item.response)
        if not response:
            return Reading("no_answer", detail={"reason": "empty after normalisation"})
        best_score, best_alias = max(((self.score(response, n), a) for a, n in aliases), key=lambda t: t[0])
        detail: dict[str, Any] = {"score": round(best_score, 6), "alias": best_alias[:200], "aliases": len(aliases)}
        answer = item.response.strip()
        short = len(answer) <= MAX_ANSWER_CHARS
        return Reading(
            "correct" if self.passes(best_score) else "incorrect",
            answer=answer if short else None,
            normalized=response if short else None,
            detail=detail,
        )


class QAExactMatch(_ShortAnswerReader):
    name = "qa-exact-match"
    upstream = f"{SQUAD} + exact_match_score, max over gold aliases (metric_max_over_ground_truths)"
    Config = AliasConfig

    def score(self, response: str, alias: str) -> float:
        return 1.0 if response == alias else 0.0


class QAContains(_ShortAnswerReader):
    name = "qa-contains"
    upstream = f"EVOUNA (QA-Eval) lexical_match_score: {SQUAD} on both, gold a substring of the response"
    Config = AliasConfig

    def score(self, response: str, alias: str) -> float:
        return 1.0 if alias in response else 0.0


class QATokenF1(_ShortAnswerReader):
    name = "qa-token-f1"
    upstream = f"{SQUAD} + f1_score (token overlap), max over gold aliases, correct at F1 >= threshold"
    Config = TokenF1Config

    def __init__(self, config: Any | None = None, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        if not 0.0 < self.config.threshold <= 1.0:
            raise ValueError(f"qa-token-f1 threshold must be in (0, 1], got {self.config.threshold!r}")

    def score(self, response: str, alias: str) -> float:
        return token_f1(response, alias)

    def passes(self, score: float) -> bool:
        return score >= self.config.threshold
