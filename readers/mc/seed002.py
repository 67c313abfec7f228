r"""Seed 002's five multiple-choice extractors, and their GSM8K variants.

**Seed 002's five MC extractors** (`strict-match`, `flexible-extract`, `instructed-format`,
`answer-is-correct`, `last-extract`), from section 4.1 and appendix A.2 of the paper. The
appendix regexes are damaged by PDF extraction; reconstructions (details in the docs):
  * Every extractor takes the LAST match (section 4.1: "designed to select the last match to
    accommodate potential self-correction"), i.e. `group_select = -1`.
  * YAML escaping is undone (`\\s` → `\s`, `\"` → `"`), as the appendix itself explains.
  * `\$` is read as a mangled `\(` / `\)` (LaTeX `\( … \)` inline-math delimiters become
    `$ … $` in the PDF text layer). Evidence: flexible-extract's `(\$[A-D]\$)` is described
    in the text as finding "(A), (B), (C), or (D)", which is lm-eval's mmlu
    flan_cot_zeroshot `(\([A-Z]\))`; answer-is-correct's `[Aa]nswer is \**(\$?[A-D]\$?)`
    is then lm-eval mmlu_pro's `answer is \(?([A-J])\)?` with bold markers.
  * strict-match is lm-eval's mmlu flan_cot_zeroshot strict-match pattern verbatim.
  * flexible-extract is lm-eval's `MultiChoiceRegexFilter` with the flan_cot_zeroshot
    options (ignore_case, ignore_punctuation, group_select -1) and primary regex
    `(\([A-D]\))` (the paper's `[A-D]`, lm-eval's `[A-Z]`), including both fallbacks
    (choice text, `: X`).
  * instructed-format: the appendix shows `[Aa]nswer"?:\s* "?\(?([A-D])"|"?\**(?([A-D])"`.
    The space after `\s*` is a line-join artefact (`\s*` already covers it), the second
    alternative's `(?(` is an invalid conditional that stands for `\(?`, and its answer-key
    prefix was lost at a line break (as it is, it would match any `C"` anywhere, which is
    not the "strict" reader the text describes). Reconstructed as one pattern:
    `[Aa]nswer"?:\s*"?\**\(?([A-D])\)?\**"` — the JSON-ish `"answer": "C"` field with the
    optional bold/paren variants of both alternatives and the closing `\)?` implied by
    the optional `\(?`.
  * answer-is-correct: the line break after `is correct|` ate `\\*` (the second line starts
    with `*(`); restored as `\**(…)\** is the correct`. The four alternatives that *start*
    with `\**` are written without it: it can never change a capture (an optional prefix of
    stars only moves the match start back), but leaving it in makes a run of n stars cost
    O(n²). A property test pins the equivalence. "X could be the correct answer", which the
    text mentions, is not in the appendix regex and is not added.
  * last-extract is the appendix regex verbatim, including its quirks: the letter needs a
    non-alphanumeric character on both sides (a letter at the very end of the text is not
    seen) and neighbouring letters share a separator (" A B " yields only A).
  * `[A-D]` becomes `[A-<last>]` for items with more than four choices (MMLU-Pro: A–J);
    items without choices use A–D.
The extracted capture is turned into a letter the way the paper scored it: lm-eval
`exact_match` with ignore_case + ignore_punctuation (so "(B)", "**B**", "b." all read B).
No match → `no_answer`; a match whose capture has nothing left after that normalisation →
`no_answer`; any other non-letter capture → `incorrect`.

**GSM8K variants** of instructed-format and answer-is-correct. Seed 002 §6.2 (Table 4) scores
GSM8K with the same five extractors as MMLU, two of them adapted to numbers: instructed-format
reads the format "specifically recommended for mathematical problems", and answer-is-correct is
modified "to better handle common mathematical formatting, such as numbers and symbols like $,
",", and "."". The paper prints only the multiple-choice regexes (appendix A.2), so both
variants are reconstructions, documented in docs/readers-mc.md:

* **`answer-is-correct-gsm8k`**: the eleven alternatives of `answer-is-correct` as run by
  the MC reader above, with the option-letter capture `(\(?[A-D]\)?)` replaced by a number
  capture that admits `$`, `\$`, thousands commas, a decimal part and one trailing period. Last
  match, as all of seed 002's extractors.
* **`instructed-format-gsm8k`**: the last `\boxed{N}` whose content is such a number and nothing
  else. The maths instruction Qwen recommends for its models (the source of the MC
  instructed-format prompt) asks for the final answer "within \boxed{}"; the method is strict
  (§4.1), so `\boxed{18 \text{ dollars}}` is a deviation and is not read.

Both score the capture the way lm-eval scores GSM8K (`exact_match` with the gsm8k task's
`regexes_to_ignore`: `,`, `\$`, `(?s).*#### `, `\.$`, ignore_case), on the prediction and the
gold alike: `$1,234.` and `1234` are the same answer, `18.00` and `18` are not (as upstream).
A gold that is not a number after that normalisation gives verdict `error`: a data problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..base import Item, Reader, Reading
from ..options import as_text, choices_of, letter_span, letters_for
from .lm_eval import (
    FALLBACK,
    GSM8K_METRIC,
    MMLU_METRIC,
    ExactMatchOptions,
    exact_match_normalize,
    gold_error,
    gold_letter,
    metric_kwargs,
    multi_choice_regex_filter,
    regex_filter,
)

# ---------------------------------------------------------------------------------------------
# Seed 002's five MC extractors
# ---------------------------------------------------------------------------------------------

SEED002_STRICT = (
    r"((?<=The answer is )(.*)(?=.)|(?<=answer is )(.*)(?=.)"
    r"|(?<=The answer: )(.*)(?=.)|(?<=The final answer: )(.*)(?=.))"
)
SEED002_FLEXIBLE = r"(\([A-D]\))"
SEED002_INSTRUCTED = r'[Aa]nswer"?:\s*"?\**\(?([A-D])\)?\**"'
_AIC_LETTER = r"(\(?[A-D]\)?)"


def _answer_is_correct(capture: str, start: str = "") -> str:
    """Seed 002's eleven answer-is-correct alternatives (appendix A.2) around `capture`; `start`
    guards where an alternative that begins with the capture may start."""
    return "|".join(
        [
            rf"[Aa]nswer:\**\s*{capture}",
            rf"[Aa]nswer\**:\s*{capture}",
            rf"[Aa]nswer is \**{capture}\**",
            rf"[Aa]nswer should be \**{capture}\**",
            rf"[Aa]nswer:\s+\**{capture}\**",
            rf"correct answer is \**{capture}\**",
            rf"correct answer:\s+\**{capture}\**",
            rf"{start}{capture}\** is correct",
            rf"{start}{capture}\** is the correct",
            rf"{start}{capture}\** is the answer",
            rf"{start}{capture}\** should be the answer",
        ]
    )


SEED002_ANSWER_IS_CORRECT = _answer_is_correct(_AIC_LETTER)
SEED002_LAST_EXTRACT = r"[^a-zA-Z0-9]([A-D])[^a-zA-Z0-9]"


@dataclass(frozen=True)
class Seed002Config:
    """One of seed 002's extractors. `[A-D]` in the pattern is re-ranged to the item's letters."""

    regex_pattern: str
    group_select: int = -1
    filter: Literal["regex", "multi_choice_regex"] = "regex"
    # MultiChoiceRegexFilter options (flexible-extract only).
    ignore_case: bool = False
    ignore_punctuation: bool = False
    # How a capture is compared with the gold letter: lm-eval exact_match options.
    metric: ExactMatchOptions = field(default_factory=lambda: MMLU_METRIC)
    letters_without_choices: str = "ABCD"


class Seed002Reader(Reader):
    """Seed 002 (section 4.1, appendix A.2) multiple-choice extractor; output = option letter."""

    version = "1.0"
    contract = frozenset({"option_letter"})
    Config = Seed002Config
    default_config: ClassVar[Seed002Config] = Seed002Config(SEED002_STRICT)

    def _pattern(self, letters: str) -> str:
        cfg: Seed002Config = self.config
        return cfg.regex_pattern.replace("[A-D]", f"[A-{letters[-1]}]")

    def read(self, item: Item) -> Reading:
        cfg: Seed002Config = self.config
        text = as_text(item.response)
        choices = choices_of(item)
        letters = letters_for(choices) if choices else cfg.letters_without_choices
        gold = gold_letter(item.gold, choices)
        if gold is None:
            return gold_error(item.gold)
        pattern = self._pattern(letters)
        if cfg.filter == "multi_choice_regex":
            ext = multi_choice_regex_filter(
                text,
                choices,
                pattern,
                cfg.group_select,
                FALLBACK,
                cfg.ignore_case,
                cfg.ignore_punctuation,
                None,
                colon_letters=None if choices else tuple(letters),
            )
        else:
            ext = regex_filter(text, pattern, cfg.group_select, FALLBACK)
        detail: dict[str, Any] = {
            "filter_output": ext.value,
            "step": ext.step,
            "regex": pattern,
            "letters": letters,
            "gold_letter": gold,
        }
        if not ext.matched:
            return Reading("no_answer", detail=detail)
        capture = ext.value
        normalized = exact_match_normalize(capture, **metric_kwargs(cfg.metric)).strip()
        letter = normalized.upper() if len(normalized) == 1 and "a" <= normalized <= "z" else None
        if letter is None:
            if not normalized:
                # e.g. strict-match on "...answer is B" at the very end: `(.*)(?=.)` captures "".
                return Reading("no_answer", answer=None, span=ext.span, detail={**detail, "capture": capture})
            return Reading(
                "incorrect",
                answer=capture,
                normalized=normalized,
                span=ext.span,
                detail={**detail, "capture": capture, "letter": None},
            )
        detail.update(capture=capture, letter=letter, letter_in_range=letter in letters)
        # A choice-text match spans the option text, which holds no letter to point at.
        span = ext.span if ext.step == "choice_text" else letter_span(text, ext.span, letter)
        return Reading(
            "correct" if letter == gold else "incorrect", answer=letter, normalized=letter, span=span, detail=detail
        )


class StrictMatch(Seed002Reader):
    name = "strict-match"
    upstream = "seed 002 §4.1/A.2 strict-match = lm-eval 0.4.13 mmlu flan_cot_zeroshot strict-match pattern, last match"
    default_config = Seed002Config(SEED002_STRICT)


class FlexibleExtract(Seed002Reader):
    name = "flexible-extract"
    contract = frozenset({"option_letter", "option_text"})
    upstream = (
        "seed 002 §4.1/A.2 flexible-extract = lm-eval 0.4.13 mmlu flan_cot_zeroshot "
        "flexible-extract (multi_choice_regex) with [A-D]"
    )
    default_config = Seed002Config(SEED002_FLEXIBLE, -1, "multi_choice_regex", True, True)


class InstructedFormat(Seed002Reader):
    name = "instructed-format"
    upstream = 'seed 002 §4.1/A.2 instructed-format ("answer": "C" field, Qwen3 report prompt)'
    default_config = Seed002Config(SEED002_INSTRUCTED)


class AnswerIsCorrect(Seed002Reader):
    name = "answer-is-correct"
    upstream = "seed 002 §4.1/A.2 answer-is-correct (reconstructed appendix regex), last match"
    default_config = Seed002Config(SEED002_ANSWER_IS_CORRECT)


class LastExtract(Seed002Reader):
    name = "last-extract"
    upstream = "seed 002 §4.1/A.2 last-extract (last isolated capital letter)"
    default_config = Seed002Config(SEED002_LAST_EXTRACT)


# ---------------------------------------------------------------------------------------------
# Seed 002's GSM8K variants (§6.2)
# ---------------------------------------------------------------------------------------------

# A number as GSM8K answers write it. The lookbehind lets a match start only where a number token
# starts: alternatives that begin with the number ("18 is correct") would otherwise be retried at
# every digit of a long digit run, which is quadratic on a 1 MB response.
_NUMBER_START = r"(?<![0-9.,$\\])"
NUMBER = r"\\?(-?\$?-?[0-9][0-9,]*+(?:\.[0-9]+)?\$?\.?)"

# The eleven alternatives as the MC reader runs them, the letter capture replaced by NUMBER.
SEED002_GSM8K_ANSWER_IS_CORRECT_ALTERNATIVES = _answer_is_correct(NUMBER, _NUMBER_START)
# The same, as run: alternatives sharing a start are factored (same order, so the same branch wins
# at a given position and captures the same text), which halves the per-character cost on long
# responses. A property test pins the equivalence of the two.
SEED002_GSM8K_ANSWER_IS_CORRECT = "|".join(
    [
        (
            rf"[Aa]nswer(?::\**\s*{NUMBER}|\**:\s*{NUMBER}| is \**{NUMBER}\**| should be \**{NUMBER}\**"
            rf"|:\s+\**{NUMBER}\**)"
        ),
        rf"correct answer(?: is \**{NUMBER}\**|:\s+\**{NUMBER}\**)",
        rf"{_NUMBER_START}{NUMBER}\**(?: is correct| is the correct| is the answer| should be the answer)",
    ]
)
SEED002_GSM8K_INSTRUCTED = rf"\\boxed\{{\s*{NUMBER}\s*\}}"

# What the gold must look like once normalised: the number after GSM8K's "#### ".
_GOLD_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


@dataclass(frozen=True)
class Seed002Gsm8kConfig:
    regex_pattern: str
    group_select: int = -1
    # Applied to the capture and to the gold alike (lm-eval gsm8k's exact_match options).
    metric: ExactMatchOptions = field(default_factory=lambda: GSM8K_METRIC)


class Seed002Gsm8kReader(Reader):
    """Seed 002 (§6.2) GSM8K extractor: a number, scored by lm-eval's GSM8K exact match."""

    version = "1.0"
    contract = frozenset({"plain_number"})
    # Seed 002's GSM8K conventions, for reproducing the seed: run when named.
    in_default_panel = False
    Config = Seed002Gsm8kConfig
    default_config: ClassVar[Seed002Gsm8kConfig] = Seed002Gsm8kConfig(SEED002_GSM8K_ANSWER_IS_CORRECT)

    def read(self, item: Item) -> Reading:
        cfg: Seed002Gsm8kConfig = self.config
        kw = metric_kwargs(cfg.metric)
        gold_raw = as_text(item.gold)
        gold = exact_match_normalize(gold_raw, **kw).strip()
        if not _GOLD_NUMBER.fullmatch(gold):
            return Reading(
                "error", detail={"reason": "gold is not a number (GSM8K normalisation)", "gold": gold_raw[:200]}
            )
        ext = regex_filter(as_text(item.response), cfg.regex_pattern, cfg.group_select, FALLBACK)
        detail: dict[str, Any] = {"filter_output": ext.value, "step": ext.step, "gold_normalized": gold}
        if not ext.matched:
            return Reading("no_answer", detail=detail)
        normalized = exact_match_normalize(ext.value, **kw).strip()
        return Reading(
            "correct" if normalized == gold else "incorrect",
            answer=ext.value,
            normalized=normalized,
            span=ext.span,
            detail=detail,
        )


class AnswerIsCorrectGsm8k(Seed002Gsm8kReader):
    name = "answer-is-correct-gsm8k"
    upstream = (
        "seed 002 §6.2 answer-is-correct modified for GSM8K numbers ($ , .), reconstructed from "
        "the appendix A.2 MC regex; last match; lm-eval gsm8k exact_match normalisation"
    )
    default_config = Seed002Gsm8kConfig(SEED002_GSM8K_ANSWER_IS_CORRECT)


class InstructedFormatGsm8k(Seed002Gsm8kReader):
    name = "instructed-format-gsm8k"
    contract = frozenset({"plain_number", "boxed"})
    upstream = (
        "seed 002 §6.2 instructed-format for GSM8K: the last \\boxed{N} (Qwen's maths instruction), "
        "strict; lm-eval gsm8k exact_match normalisation"
    )
    default_config = Seed002Gsm8kConfig(SEED002_GSM8K_INSTRUCTED)
