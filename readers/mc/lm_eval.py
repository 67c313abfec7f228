r"""**lm-eval 0.4.13 named configs** (`gsm8k-strict-match`, `gsm8k-flexible-extract`,
`gsm8k-cot-strict-match`, `mmlu-pro-custom-extract`, `multi-choice-regex`): one port of
`RegexFilter` / `MultiChoiceRegexFilter` (lm_eval/filters/extraction.py) and of the
`exact_match` metric (lm_eval/api/metrics.py, `exact_match_hf_evaluate`), registered once per
task config. Upstream quirks are kept on purpose, because the point of these readers is to
say "this verdict is what lm-eval 0.4.13 would have scored":
  * `findall` semantics: several groups give tuples and the first non-empty group wins;
    a tuple whose groups are all empty gives the fallback in `RegexFilter` but `""` (so:
    "try the next step") in `MultiChoiceRegexFilter`;
  * a single-group match that is empty returns `""`, *not* the fallback;
  * the fallback is returned unstripped, a tuple fallback is stripped;
  * an out-of-range `group_select` on a non-empty match list raises `IndexError`;
  * `MultiChoiceRegexFilter`'s choice-text alternation is sorted longest-first (PyPI wheel
    0.4.13; git HEAD 4e7e0d47 still uses dataset order), the matched text is looked up in
    the choice table and returned *as text* when the lookup misses (e.g. when punctuation
    removal left a leading space in the key);
  * `exact_match` runs on NumPy unicode arrays: trailing NULs vanish whenever a string is
    stored in an array, and `np.char.lower` cannot grow a string (``"İX"`` → ``"i̇"``);
    the port reproduces both without importing NumPy.
The upstream `"[invalid]"` fallback maps to verdict `no_answer`; the literal is kept in
`detail["filter_output"]`.

The letter helpers shared by every multiple-choice reader family (`gold_letter`: the gold as lm-eval's
`exact_match` with ignore_case + ignore_punctuation compares it with an "(X)" target) live here too,
next to the metric they are defined by. See docs/readers-mc.md for the full table.
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Literal

from ..base import Item, Reader, Reading
from ..options import LETTERS, as_text, choices_of, letters_for

FALLBACK = "[invalid]"

# ---------------------------------------------------------------------------------------------
# lm-eval 0.4.13 ports (pure functions)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Extraction:
    """What an upstream filter produced for one response.

    `value` is exactly the string upstream outputs (the fallback literal included); `matched`
    is False when `value` is the fallback; `span` locates `value` (after strip) in the text the
    regex ran on, translated back to the raw response when possible; `step` names the
    MultiChoiceRegexFilter step that produced it.
    """

    value: str
    matched: bool
    span: tuple[int, int] | None = None
    step: str = "regex"


@lru_cache(maxsize=256)
def _compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _select(matches: Iterator[re.Match[str]], group_select: int) -> re.Match[str] | None:
    """`findall(...)[group_select]` without materialising the list (1 MB inputs).

    Returns None when there is no match at all; raises IndexError, as upstream does, when
    there are matches but `group_select` is out of range.
    """
    if group_select >= 0:
        seen = 0
        for m in matches:
            if seen == group_select:
                return m
            seen += 1
        if seen == 0:
            return None
        raise IndexError("list index out of range")
    window: deque[re.Match[str]] = deque(maxlen=-group_select)
    for m in matches:
        window.append(m)
    if not window:
        return None
    if len(window) < -group_select:
        raise IndexError("list index out of range")
    return window[0]


def strip_span(value: str, start: int) -> tuple[str, tuple[int, int]]:
    stripped = value.strip()
    if not stripped:
        return "", (start, start)
    lead = len(value) - len(value.lstrip())
    return stripped, (start + lead, start + lead + len(stripped))


def _findall_item(m: re.Match[str]) -> tuple[bool, str, tuple[int, int] | None]:
    """The element `findall` would have produced for `m`, as (is_tuple, value, span).

    For a tuple the value is the first non-empty group (`""` when all are empty), mirroring
    `[m for m in match if m][0]`.
    """
    ngroups = m.re.groups
    if ngroups == 0:
        return False, m.group(0), m.span(0)
    if ngroups == 1:
        g = m.group(1)
        return False, g or "", (m.span(1) if g is not None else None)
    for i in range(1, ngroups + 1):
        g = m.group(i)
        if g:
            return True, g, m.span(i)
    return True, "", None


def regex_filter(
    text: str,
    regex_pattern: str = r"#### (\-?[0-9\.\,]+)",
    group_select: int = 0,
    fallback: str = FALLBACK,
) -> Extraction:
    """lm-eval 0.4.13 `RegexFilter` on one response."""
    if not isinstance(text, str):
        text = ""  # upstream: non-string responses are read as ""
    m = _select(_compile(regex_pattern).finditer(text), group_select)
    if m is None:
        return Extraction(fallback, matched=False, span=None, step="fallback")
    is_tuple, value, span = _findall_item(m)
    if is_tuple and span is None:
        # Upstream strips the fallback on this path only (`match = self.fallback` then strip).
        return Extraction(fallback.strip(), matched=False, span=None, step="fallback")
    stripped, sspan = strip_span(value, span[0] if span else 0)
    return Extraction(stripped, matched=True, span=sspan if span else None)


# The one gsm8k ignore-regex whose literal `re.sub` is quadratic on long strings without
# "#### " (each start position re-scans the rest). With DOTALL and a greedy `.*` the only
# possible match runs from position 0 to the end of the LAST "#### ", so this is exact.
_FAST_SUBS = {"(?s).*#### ": "#### "}


def _sub_ignore(regex: str, s: str) -> str:
    needle = _FAST_SUBS.get(regex)
    if needle is not None:
        i = s.rfind(needle)
        return s[i + len(needle) :] if i >= 0 else s
    return _compile(regex).sub("", s)


_ASCII_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_DIGIT_TABLE = str.maketrans("", "", string.digits)


def exact_match_normalize(
    s: str,
    regexes_to_ignore: Sequence[str] | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> str:
    """One side of lm-eval 0.4.13 `exact_match_hf_evaluate`, as NumPy would store it.

    Upstream scores one document at a time through 1-element NumPy unicode arrays, so: every
    time a string is stored, trailing NULs disappear; `np.char.lower` keeps the array's item
    width, truncating a lowercase form that grew (``"İ"`` → ``"i̇"`` is 2 chars).
    """
    if not isinstance(s, str):
        s = str(s)
    width = len(s)
    if regexes_to_ignore is not None:
        for regex in regexes_to_ignore:
            s = _sub_ignore(regex, s)
            width = len(s)
            s = s.rstrip("\x00")
    else:
        s = s.rstrip("\x00")
    if ignore_case:
        s = s.lower()[: max(width, 1)].rstrip("\x00")
    if ignore_punctuation:
        s = s.translate(_ASCII_PUNCT_TABLE).rstrip("\x00")
    if ignore_numbers:
        s = s.translate(_DIGIT_TABLE).rstrip("\x00")
    return s


def exact_match(
    prediction: str,
    reference: str,
    regexes_to_ignore: Sequence[str] | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> bool:
    """lm-eval 0.4.13 `exact_match` for one (prediction, reference) pair."""
    opts = (regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers)
    return exact_match_normalize(prediction, *opts) == exact_match_normalize(reference, *opts)


@lru_cache(maxsize=1)
def unicode_punct_table() -> dict[int, None]:
    """`MultiChoiceRegexFilter`'s table: every code point < sys.maxunicode of category P*.

    Depends on the interpreter's Unicode database (Python 3.11: Unicode 14), as upstream does.
    """
    return dict.fromkeys(i for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P"))


def mc_filter_ignores(
    st: str,
    regexes_to_ignore: Sequence[str] | None,
    ignore_case: bool,
    ignore_punctuation: bool,
) -> str:
    """`MultiChoiceRegexFilter.filter_ignores` (step-1 normalisation of choices and response)."""
    if regexes_to_ignore is not None:
        for regex in regexes_to_ignore:
            st = _sub_ignore(regex, st)
    if ignore_case:
        st = st.lower()
    if ignore_punctuation:
        st = st.translate(unicode_punct_table())
    return st


def _ignores_index_map(
    raw: str,
    normalised: str,
    regexes_to_ignore: Sequence[str] | None,
    ignore_case: bool,
    ignore_punctuation: bool,
) -> list[int] | None:
    """Raw-text index of each character of `normalised`, when it can be traced back.

    Only for spans: regex deletions, and lowercasing that changes the length, are not
    traceable and give None (the reading then has no span, its verdict is unaffected).
    """
    if regexes_to_ignore:
        return None
    lowered = raw.lower() if ignore_case else raw
    if len(lowered) != len(raw):
        return None
    if ignore_punctuation:
        table = unicode_punct_table()
        index = [i for i, ch in enumerate(lowered) if ord(ch) not in table]
    else:
        index = list(range(len(lowered)))
    if len(index) != len(normalised):
        return None
    return index


def _find_match(
    regex: re.Pattern[str],
    text: str,
    group_select: int,
    convert: dict[str, str] | None = None,
) -> tuple[str, tuple[int, int] | None] | None:
    """`MultiChoiceRegexFilter.find_match`: None for no match (upstream's falsy `[]`)."""
    m = _select(regex.finditer(text), group_select)
    if m is None:
        return None
    is_tuple, value, span = _findall_item(m)
    if is_tuple and span is None:
        return "", None
    stripped, sspan = strip_span(value, span[0] if span else 0)
    if stripped and convert and stripped in convert:
        stripped = convert[stripped]
    return stripped, (sspan if span else None)


def multi_choice_regex_filter(
    text: str,
    choices: Sequence[str],
    regex_pattern: str = r"#### (\-?[0-9\.\,]+)",
    group_select: int = 0,
    fallback: str = FALLBACK,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    regexes_to_ignore: Sequence[str] | None = None,
    colon_letters: Sequence[str] | None = None,
) -> Extraction:
    """lm-eval 0.4.13 (PyPI wheel) `MultiChoiceRegexFilter` on one response.

    `colon_letters` overrides the letters of the `: X` fallback (default: one per choice, as
    upstream); readers pass A–D for items stored without choices.
    """
    if not isinstance(text, str):
        text = ""
    choice_to_alpha: dict[str, str] = {}
    branches: list[str] = []
    letters: list[str] = []
    for idx, c in enumerate(choices):
        m = mc_filter_ignores(c.strip(), regexes_to_ignore, ignore_case, ignore_punctuation)
        letter = chr(ord("A") + idx)
        branches.append(re.escape(m))
        choice_to_alpha[m] = f"({letter})"
        letters.append(letter)
    if colon_letters is not None:
        letters = list(colon_letters)

    primary = _find_match(_compile(regex_pattern), text, group_select)
    if primary is not None and primary[0]:
        return Extraction(primary[0], matched=True, span=primary[1], step="regex")

    if branches:
        # Longest-first, as in the 0.4.13 wheel: a choice that is a prefix of another ("Guilty"
        # vs "Guilty of Romance") cannot shadow it; sorted() is stable for equal lengths.
        choice_regex = _compile("|".join(sorted(branches, key=len, reverse=True)))
        norm = mc_filter_ignores(text, regexes_to_ignore, ignore_case, ignore_punctuation)
        found = _find_match(choice_regex, norm, group_select, choice_to_alpha)
        if found is not None and found[0]:
            span = None
            if found[1] is not None and found[1][1] > found[1][0]:
                index = _ignores_index_map(text, norm, regexes_to_ignore, ignore_case, ignore_punctuation)
                if index is not None:
                    span = (index[found[1][0]], index[found[1][1] - 1] + 1)
            return Extraction(found[0], matched=True, span=span, step="choice_text")
    # (With no choices upstream's alternation is the empty regex, which only ever yields "" and
    # falls through; skipping it is the same result without a 1M-element findall.)

    if letters:
        # re.escape is a no-op for A–Z; it only keeps a >26-choice item from compiling "[".
        colon_regex = _compile(r":[\s]*(" + "|".join(re.escape(x) for x in letters) + ")")
        found = _find_match(colon_regex, text, group_select, {x: f"({x})" for x in letters})
        if found is not None and found[0]:
            return Extraction(found[0], matched=True, span=found[1], step="colon_letter")
    return Extraction(fallback, matched=False, span=None, step="fallback")


# ---------------------------------------------------------------------------------------------
# Gold letters of the multiple-choice readers
# ---------------------------------------------------------------------------------------------


def _letter_of(s: str) -> str | None:
    """The option letter a capture stands for, as lm-eval exact_match(ignore_case,
    ignore_punctuation) would compare it with an "(X)" target; None if it is not one letter."""
    norm = exact_match_normalize(s, ignore_case=True, ignore_punctuation=True).strip()
    if len(norm) == 1 and "a" <= norm <= "z":
        return norm.upper()
    return None


def gold_letter(gold: Any, choices: Sequence[str]) -> str | None:
    """Gold as an option letter: "B", "(B)", "b." … or, failing that, an exact option text."""
    text = as_text(gold)
    letter = _letter_of(text)
    if letter is not None:
        return letter
    stripped = text.strip()
    for idx, c in enumerate(choices[: len(LETTERS)]):
        if stripped and c.strip() == stripped:
            return LETTERS[idx]
    return None


def gold_error(gold: Any) -> Reading:
    return Reading(
        "error", detail={"reason": "gold is not an option letter (or option text)", "gold": as_text(gold)[:200]}
    )


# ---------------------------------------------------------------------------------------------
# lm-eval named configs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExactMatchOptions:
    """The task's `exact_match` metric options (lm_eval/api/metrics.py)."""

    regexes_to_ignore: tuple[str, ...] | None = None
    ignore_case: bool = False
    ignore_punctuation: bool = False
    ignore_numbers: bool = False


GSM8K_METRIC = ExactMatchOptions(
    regexes_to_ignore=(",", "\\$", "(?s).*#### ", "\\.$"), ignore_case=True, ignore_punctuation=False
)
MMLU_METRIC = ExactMatchOptions(ignore_case=True, ignore_punctuation=True)


@dataclass(frozen=True)
class RegexFilterConfig:
    """`RegexFilter` kwargs + the task's metric options + how the task builds its target."""

    regex_pattern: str = r"#### (\-?[0-9\.\,]+)"
    group_select: int = 0
    fallback: str = FALLBACK
    metric: ExactMatchOptions = field(default_factory=ExactMatchOptions)
    # "raw": doc_to_target is the whole gold (gsm8k: "{{answer}}");
    # "after_hashes": "{{answer.split('####')[-1].strip()}}" (gsm8k-cot).
    target: Literal["raw", "after_hashes"] = "raw"


@dataclass(frozen=True)
class MultiChoiceRegexConfig:
    """`MultiChoiceRegexFilter` kwargs + the task's metric options."""

    regex_pattern: str = r"#### (\-?[0-9\.\,]+)"
    group_select: int = 0
    fallback: str = FALLBACK
    ignore_case: bool = False
    ignore_punctuation: bool = False
    regexes_to_ignore: tuple[str, ...] | None = None
    metric: ExactMatchOptions = field(default_factory=ExactMatchOptions)


def metric_kwargs(metric: ExactMatchOptions) -> dict[str, Any]:
    return dict(
        regexes_to_ignore=metric.regexes_to_ignore,
        ignore_case=metric.ignore_case,
        ignore_punctuation=metric.ignore_punctuation,
        ignore_numbers=metric.ignore_numbers,
    )


def _score_upstream(ext: Extraction, target: str, metric: ExactMatchOptions) -> Reading:
    if not ext.matched:
        return Reading("no_answer", detail={"filter_output": ext.value, "step": ext.step})
    kw = metric_kwargs(metric)
    pred_n = exact_match_normalize(ext.value, **kw)
    ref_n = exact_match_normalize(target, **kw)
    ok = pred_n == ref_n
    return Reading(
        "correct" if ok else "incorrect",
        answer=ext.value,
        normalized=pred_n,
        span=ext.span,
        detail={
            "filter_output": ext.value,
            "step": ext.step,
            "target": target,
            "target_normalized": ref_n,
            "exact_match": int(ok),
        },
    )


class LmEvalRegexReader(Reader):
    """lm-eval `RegexFilter` + `exact_match`, one registry entry per task config."""

    version = "0.4.13"
    Config = RegexFilterConfig
    default_config: ClassVar[RegexFilterConfig] = RegexFilterConfig()

    def read(self, item: Item) -> Reading:
        cfg: RegexFilterConfig = self.config
        ext = regex_filter(as_text(item.response), cfg.regex_pattern, cfg.group_select, cfg.fallback)
        gold = as_text(item.gold)
        target = gold.split("####")[-1].strip() if cfg.target == "after_hashes" else gold
        return _score_upstream(ext, target, cfg.metric)


class LmEvalMultiChoiceReader(Reader):
    """lm-eval `MultiChoiceRegexFilter` + `exact_match`."""

    version = "0.4.13"
    Config = MultiChoiceRegexConfig
    default_config: ClassVar[MultiChoiceRegexConfig] = MultiChoiceRegexConfig()

    def read(self, item: Item) -> Reading:
        cfg: MultiChoiceRegexConfig = self.config
        choices = choices_of(item)
        ext = multi_choice_regex_filter(
            as_text(item.response),
            choices,
            cfg.regex_pattern,
            cfg.group_select,
            cfg.fallback,
            cfg.ignore_case,
            cfg.ignore_punctuation,
            cfg.regexes_to_ignore,
            colon_letters=None if choices else tuple(letters_for(())),
        )
        return _score_upstream(ext, as_text(item.gold), cfg.metric)


class Gsm8kStrictMatch(LmEvalRegexReader):
    name = "gsm8k-strict-match"
    contract = frozenset({"plain_number"})
    harness_benchmarks = frozenset({"gsm8k"})
    upstream = "lm-eval 0.4.13 gsm8k strict-match (lm_eval/tasks/gsm8k/gsm8k.yaml)"
    default_config = RegexFilterConfig(r"#### (\-?[0-9\.\,]+)", 0, FALLBACK, GSM8K_METRIC, "raw")


class Gsm8kFlexibleExtract(LmEvalRegexReader):
    name = "gsm8k-flexible-extract"
    contract = frozenset({"plain_number"})
    upstream = "lm-eval 0.4.13 gsm8k flexible-extract (lm_eval/tasks/gsm8k/gsm8k.yaml)"
    default_config = RegexFilterConfig(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1, FALLBACK, GSM8K_METRIC, "raw")


class Gsm8kCotStrictMatch(LmEvalRegexReader):
    name = "gsm8k-cot-strict-match"
    contract = frozenset({"plain_number"})
    upstream = (
        "lm-eval 0.4.13 gsm8k_cot strict-match (lm_eval/tasks/gsm8k/gsm8k-cot.yaml; "
        "same filter in gsm8k-cot-zeroshot.yaml)"
    )
    default_config = RegexFilterConfig(r"The answer is (\-?[0-9\.\,]+).", 0, FALLBACK, GSM8K_METRIC, "after_hashes")


class MmluProCustomExtract(LmEvalRegexReader):
    name = "mmlu-pro-custom-extract"
    contract = frozenset({"option_letter"})
    upstream = "lm-eval 0.4.13 mmlu_pro custom-extract (lm_eval/tasks/mmlu_pro/_default_template_yaml)"
    default_config = RegexFilterConfig(r"answer is \(?([ABCDEFGHIJ])\)?", 0, FALLBACK, MMLU_METRIC, "raw")


class MultiChoiceRegex(LmEvalMultiChoiceReader):
    name = "multi-choice-regex"
    contract = frozenset({"option_letter", "option_text"})
    upstream = (
        "lm-eval 0.4.13 mmlu flan_cot_zeroshot flexible-extract "
        "(lm_eval/tasks/mmlu/flan_cot_zeroshot/_mmlu_flan_cot_zeroshot_template_yaml)"
    )
    default_config = MultiChoiceRegexConfig(r"(\([A-Z]\))", -1, FALLBACK, True, True, None, MMLU_METRIC)
