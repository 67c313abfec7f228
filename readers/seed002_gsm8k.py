r"""GSM8K variants of seed 002's instructed-format and answer-is-correct extractors.

Seed 002 §6.2 (Table 4) scores GSM8K with the same five extractors as MMLU, two of them adapted
to numbers: instructed-format reads the format "specifically recommended for mathematical
problems", and answer-is-correct is modified "to better handle common mathematical formatting,
such as numbers and symbols like $, ",", and "."". The paper prints only the multiple-choice
regexes (appendix A.2), so both variants are reconstructions, documented in docs/readers-mc.md:

* **`answer-is-correct-gsm8k`**: the eleven alternatives of `answer-is-correct` as run by
  readers/mc.py, with the option-letter capture `(\(?[A-D]\)?)` replaced by a number capture that
  admits `$`, `\$`, thousands commas, a decimal part and one trailing period. Last match, as all
  of seed 002's extractors.
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
from typing import Any, ClassVar

from .base import Item, Reader, Reading
from .mc import (
    FALLBACK, GSM8K_METRIC, ExactMatchOptions, _as_text, _metric_kwargs, exact_match_normalize,
    regex_filter,
)
from .registry import register

# A number as GSM8K answers write it. The lookbehind lets a match start only where a number token
# starts: alternatives that begin with the number ("18 is correct") would otherwise be retried at
# every digit of a long digit run, which is quadratic on a 1 MB response.
_NUMBER_START = r"(?<![0-9.,$\\])"
NUMBER = r"\\?(-?\$?-?[0-9][0-9,]*+(?:\.[0-9]+)?\$?\.?)"

# The eleven alternatives as the MC reader runs them, the letter capture replaced by NUMBER.
SEED002_GSM8K_ANSWER_IS_CORRECT_ALTERNATIVES = "|".join([
    rf"[Aa]nswer:\**\s*{NUMBER}",
    rf"[Aa]nswer\**:\s*{NUMBER}",
    rf"[Aa]nswer is \**{NUMBER}\**",
    rf"[Aa]nswer should be \**{NUMBER}\**",
    rf"[Aa]nswer:\s+\**{NUMBER}\**",
    rf"correct answer is \**{NUMBER}\**",
    rf"correct answer:\s+\**{NUMBER}\**",
    rf"{_NUMBER_START}{NUMBER}\** is correct",
    rf"{_NUMBER_START}{NUMBER}\** is the correct",
    rf"{_NUMBER_START}{NUMBER}\** is the answer",
    rf"{_NUMBER_START}{NUMBER}\** should be the answer",
])
# The same, as run: alternatives sharing a start are factored (same order, so the same branch wins
# at a given position and captures the same text), which halves the per-character cost on long
# responses. A property test pins the equivalence of the two.
SEED002_GSM8K_ANSWER_IS_CORRECT = "|".join([
    rf"[Aa]nswer(?::\**\s*{NUMBER}|\**:\s*{NUMBER}| is \**{NUMBER}\**| should be \**{NUMBER}\**"
    rf"|:\s+\**{NUMBER}\**)",
    rf"correct answer(?: is \**{NUMBER}\**|:\s+\**{NUMBER}\**)",
    rf"{_NUMBER_START}{NUMBER}\**(?: is correct| is the correct| is the answer| should be the answer)",
])
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
    Config = Seed002Gsm8kConfig
    default_config: ClassVar[Seed002Gsm8kConfig] = Seed002Gsm8kConfig(SEED002_GSM8K_ANSWER_IS_CORRECT)

    def __init__(self, config: Seed002Gsm8kConfig | None = None, *, name: str | None = None) -> None:
        super().__init__(config if config is not None else self.default_config, name=name)

    def read(self, item: Item) -> Reading:
        cfg: Seed002Gsm8kConfig = self.config
        kw = _metric_kwargs(cfg.metric)
        gold_raw = _as_text(item.gold)
        gold = exact_match_normalize(gold_raw, **kw).strip()
        if not _GOLD_NUMBER.fullmatch(gold):
            return Reading("error", detail={"reason": "gold is not a number (GSM8K normalisation)",
                                            "gold": gold_raw[:200]})
        ext = regex_filter(_as_text(item.response), cfg.regex_pattern, cfg.group_select, FALLBACK)
        detail: dict[str, Any] = {"filter_output": ext.value, "step": ext.step, "gold_normalized": gold}
        if not ext.matched:
            return Reading("no_answer", detail=detail)
        normalized = exact_match_normalize(ext.value, **kw).strip()
        return Reading("correct" if normalized == gold else "incorrect", answer=ext.value,
                       normalized=normalized, span=ext.span, detail=detail)


class AnswerIsCorrectGsm8k(Seed002Gsm8kReader):
    name = "answer-is-correct-gsm8k"
    upstream = ("seed 002 §6.2 answer-is-correct modified for GSM8K numbers ($ , .), reconstructed from "
                "the appendix A.2 MC regex; last match; lm-eval gsm8k exact_match normalisation")
    default_config = Seed002Gsm8kConfig(SEED002_GSM8K_ANSWER_IS_CORRECT)


class InstructedFormatGsm8k(Seed002Gsm8kReader):
    name = "instructed-format-gsm8k"
    contract = frozenset({"plain_number", "boxed"})
    upstream = ("seed 002 §6.2 instructed-format for GSM8K: the last \\boxed{N} (Qwen's maths instruction), "
                "strict; lm-eval gsm8k exact_match normalisation")
    default_config = Seed002Gsm8kConfig(SEED002_GSM8K_INSTRUCTED)


register(AnswerIsCorrectGsm8k.name, AnswerIsCorrectGsm8k,
         "seed 002 GSM8K: 'answer is N' / 'N is correct' / '**Answer:** N' variants, last match, $ , . stripped")
register(InstructedFormatGsm8k.name, InstructedFormatGsm8k,
         "seed 002 GSM8K: the last \\boxed{N} holding a number and nothing else, $ , . stripped")
