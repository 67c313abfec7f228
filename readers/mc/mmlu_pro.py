r"""**`mmlu-pro-released`** / **`mmlu-pro-released-first-pattern`**: the MMLU-Pro authors' own
extractor (TIGER-AI-Lab/MMLU-Pro `extract_answer` → `extract_again` → `extract_final`), and
its first pattern alone as the older released runs used it. Upstream bounds nothing by the
item's option count (a read "H" on a four-option item is simply wrong) and reads nothing
beyond J. Where upstream extracts nothing its scorer counts a seeded "random" guess; that is
`no_answer` here, with the guess in `detail`. Stages 2 and 3 are rewritten into exact
linear-time equivalents of upstream's regexes (one is quadratic per line, the other per
standalone letter); a property test compares them with the literal regexes.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

from ..base import Item, Reader, Reading
from ..options import LETTERS, as_text, choices_of, letters_for
from .lm_eval import gold_error, gold_letter

# ---------------------------------------------------------------------------------------------
# mmlu-pro-released: the MMLU-Pro authors' own extractor
# ---------------------------------------------------------------------------------------------

MMLU_PRO_UPSTREAM_COMMITS = "evaluate_from_local.py @7478e26, evaluate_from_api.py @2a7ec7e"
# Stage 1 is upstream's pattern verbatim (a literal prefix, so `re.search` is linear).
MMLU_PRO_ANSWER_IS = re.compile(r"answer is \(?([A-J])\)?")
# Stage 2, upstream `re.search(r'.*[aA]nswer:\s*([A-J])', text)`, is quadratic on a long line
# without a match (every start position re-runs `.*` to the end of its line). Its result is: of the
# candidates `[aA]nswer:\s*[A-J]` (overlapping ones included, hence the lookahead), take the first
# one, then the LAST one that starts on the same line (`.` stops at "\n" only; `\s*` may still
# run on into the following lines). A property test pins this against the literal regex.
_MMLU_PRO_ANSWER_COLON_AT = re.compile(r"(?=[aA]nswer:\s*([A-J]))")
# Stage 3, upstream `re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)`, costs one scan to
# the end per standalone letter; the letter it finds is simply the last `\b[A-J]\b`, which an
# anchored greedy `.*` reaches with one scan and one backtrack.
_MMLU_PRO_LAST_LETTER = re.compile(r"(?s).*\b([A-J])\b")
# The upstream scorer's "random" guess is seeded afresh for every item (`random.seed(12345)`).
MMLU_PRO_GUESS_SEED = 12345


@dataclass(frozen=True)
class MmluProFound:
    letter: str
    span: tuple[int, int]
    step: Literal["answer_is", "answer_colon", "last_letter"]


def _mmlu_pro_answer_colon(text: str) -> MmluProFound | None:
    first = _MMLU_PRO_ANSWER_COLON_AT.search(text)
    if first is None:
        return None
    line_end = text.find("\n", first.start())
    if line_end < 0:
        line_end = len(text)
    last = first
    for m in _MMLU_PRO_ANSWER_COLON_AT.finditer(text, first.start() + 1):
        if m.start() >= line_end:
            break
        last = m
    return MmluProFound(last.group(1), last.span(1), "answer_colon")


def mmlu_pro_released_extract(text: str, *, fallbacks: bool = True) -> MmluProFound | None:
    """What TIGER-AI-Lab/MMLU-Pro's `extract_answer` returns for `text` (None = nothing), and
    which stage found it. `fallbacks=False` is the first pattern alone, as the older runs used."""
    m = MMLU_PRO_ANSWER_IS.search(text)
    if m is not None:
        return MmluProFound(m.group(1), m.span(1), "answer_is")
    if not fallbacks:
        return None
    found = _mmlu_pro_answer_colon(text)
    if found is not None:
        return found
    m = _MMLU_PRO_LAST_LETTER.match(text)
    if m is not None:
        return MmluProFound(m.group(1), m.span(1), "last_letter")
    return None


@lru_cache(maxsize=32)
def mmlu_pro_scorer_guess(n_options: int) -> str:
    """The letter the released scorer counts when nothing was extracted (`save_res` in
    evaluate_from_local.py, `update_result` in evaluate_from_api.py): `random.seed(12345)`, then
    `random.randint(0, len(options) - 1)`. A private `Random` gives the same draw without touching
    the process-wide generator."""
    index = random.Random(MMLU_PRO_GUESS_SEED).randint(0, max(n_options, 1) - 1)
    return LETTERS[index] if index < len(LETTERS) else str(index)


# compute_accuracy.py guesses `random.choice` over A-J with the same seed, whatever the option
# count; the Llama-3.1 and mathstral archives hold this letter in `pred` where extraction failed.
MMLU_PRO_COMPUTE_ACCURACY_GUESS = random.Random(MMLU_PRO_GUESS_SEED).choice("ABCDEFGHIJ")


@dataclass(frozen=True)
class MmluProReleasedConfig:
    # "full": extract_answer → extract_again → extract_final (the Llama-3.1, mathstral and gemini
    # runs); "first-pattern": extract_answer's regex only (the Mixtral, Phi-3 and Qwen1.5 runs).
    cascade: Literal["full", "first-pattern"] = "full"


class MmluProReleased(Reader):
    """The MMLU-Pro authors' extractor; `no_answer` where their scorer would have guessed."""

    name = "mmlu-pro-released"
    version = "1.0"
    contract = frozenset({"option_letter"})
    harness_benchmarks = frozenset({"mmlu-pro"})
    upstream = (
        f"TIGER-AI-Lab/MMLU-Pro extract_answer → extract_again → extract_final "
        f"({MMLU_PRO_UPSTREAM_COMMITS}); no extraction = the scorer's seeded random guess"
    )
    Config = MmluProReleasedConfig
    default_config: ClassVar[MmluProReleasedConfig] = MmluProReleasedConfig()

    def read(self, item: Item) -> Reading:
        cfg: MmluProReleasedConfig = self.config
        choices = choices_of(item)
        if not choices:
            return Reading(
                "no_answer",
                detail={"out_of_contract": "open-ended item: the MMLU-Pro extractor reads option letters only"},
            )
        gold = gold_letter(item.gold, choices)
        if gold is None:
            return gold_error(item.gold)
        text = as_text(item.response)
        found = mmlu_pro_released_extract(text, fallbacks=cfg.cascade == "full")
        detail: dict[str, Any] = {"cascade": cfg.cascade, "gold_letter": gold}
        if found is None:
            # Upstream scores a seeded guess here; a guess is not a reading of the response.
            return Reading(
                "no_answer",
                detail={
                    **detail,
                    "step": None,
                    "released_fallback": "random_guess",
                    "released_guess": mmlu_pro_scorer_guess(len(choices)),
                    "released_guess_compute_accuracy": MMLU_PRO_COMPUTE_ACCURACY_GUESS,
                },
            )
        # Upstream never bounds the letter by the option count: "H" on a 4-option item is a wrong
        # answer, not a missing one.
        detail.update(step=found.step, letter_in_range=found.letter in letters_for(choices))
        return Reading(
            "correct" if found.letter == gold else "incorrect",
            answer=found.letter,
            normalized=found.letter,
            span=found.span,
            detail=detail,
        )


class MmluProReleasedFirstPattern(MmluProReleased):
    name = "mmlu-pro-released-first-pattern"
    harness_benchmarks = frozenset()  # the older runs' cascade: the released harness is the full one
    upstream = (
        "TIGER-AI-Lab/MMLU-Pro extract_answer's first pattern only, as the released Mixtral, "
        "Phi-3 and Qwen1.5 runs were extracted; no extraction = the scorer's seeded random guess"
    )
    default_config = MmluProReleasedConfig(cascade="first-pattern")
