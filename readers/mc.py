r"""Multiple-choice and lm-eval regex readers: faithful ports plus seed 002's five extractors.

Four groups of readers are registered here (see docs/readers-mc.md for the full table):

1. **lm-eval 0.4.13 named configs** (`gsm8k-strict-match`, `gsm8k-flexible-extract`,
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

2. **Seed 002's five MC extractors** (`strict-match`, `flexible-extract`, `instructed-format`,
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

3. **`boxed`**: seed 000's box-only harness reader. Only the last `\boxed` / `\fbox` counts
   (the later of the two in the text, Hendrycks' `last_boxed_only_string` style: if that last
   box's braces never close, the reading is `no_answer`, there is no fallback to an earlier
   box). Brace counting ignores `\{` escapes, as upstream's does. The content is unwrapped
   (`\text{}`, `\textbf{}`, `$`, `(C)`, trailing period) and compared as a letter for MC items
   — option *text* in the box is deliberately not mapped to its letter (the harness reads
   letters only) — or, for open-ended items, compared with the gold after the same light
   normalisation.

4. **`mmlu-pro-released`** / **`mmlu-pro-released-first-pattern`**: the MMLU-Pro authors' own
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
import string
import sys
import unicodedata
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Literal

from .base import Item, Reader, Reading
from .registry import register

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


def _strip_span(value: str, start: int) -> tuple[str, tuple[int, int]]:
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
    text: str, regex_pattern: str = r"#### (\-?[0-9\.\,]+)", group_select: int = 0,
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
    stripped, sspan = _strip_span(value, span[0] if span else 0)
    return Extraction(stripped, matched=True, span=sspan if span else None)


# The one gsm8k ignore-regex whose literal `re.sub` is quadratic on long strings without
# "#### " (each start position re-scans the rest). With DOTALL and a greedy `.*` the only
# possible match runs from position 0 to the end of the LAST "#### ", so this is exact.
_FAST_SUBS = {"(?s).*#### ": "#### "}


def _sub_ignore(regex: str, s: str) -> str:
    needle = _FAST_SUBS.get(regex)
    if needle is not None:
        i = s.rfind(needle)
        return s[i + len(needle):] if i >= 0 else s
    return _compile(regex).sub("", s)


_ASCII_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_DIGIT_TABLE = str.maketrans("", "", string.digits)


def exact_match_normalize(
    s: str, regexes_to_ignore: Sequence[str] | None = None, ignore_case: bool = False,
    ignore_punctuation: bool = False, ignore_numbers: bool = False,
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
    prediction: str, reference: str, regexes_to_ignore: Sequence[str] | None = None,
    ignore_case: bool = False, ignore_punctuation: bool = False, ignore_numbers: bool = False,
) -> bool:
    """lm-eval 0.4.13 `exact_match` for one (prediction, reference) pair."""
    opts = (regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers)
    return exact_match_normalize(prediction, *opts) == exact_match_normalize(reference, *opts)


@lru_cache(maxsize=1)
def unicode_punct_table() -> dict[int, None]:
    """`MultiChoiceRegexFilter`'s table: every code point < sys.maxunicode of category P*.

    Depends on the interpreter's Unicode database (Python 3.11: Unicode 14), as upstream does.
    """
    return dict.fromkeys(
        i for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P")
    )


def mc_filter_ignores(
    st: str, regexes_to_ignore: Sequence[str] | None, ignore_case: bool, ignore_punctuation: bool,
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
    raw: str, normalised: str, regexes_to_ignore: Sequence[str] | None, ignore_case: bool,
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
    regex: re.Pattern[str], text: str, group_select: int, convert: dict[str, str] | None = None,
) -> tuple[str, tuple[int, int] | None] | None:
    """`MultiChoiceRegexFilter.find_match`: None for no match (upstream's falsy `[]`)."""
    m = _select(regex.finditer(text), group_select)
    if m is None:
        return None
    is_tuple, value, span = _findall_item(m)
    if is_tuple and span is None:
        return "", None
    stripped, sspan = _strip_span(value, span[0] if span else 0)
    if stripped and convert and stripped in convert:
        stripped = convert[stripped]
    return stripped, (sspan if span else None)


def multi_choice_regex_filter(
    text: str, choices: Sequence[str], regex_pattern: str = r"#### (\-?[0-9\.\,]+)",
    group_select: int = 0, fallback: str = FALLBACK, ignore_case: bool = False,
    ignore_punctuation: bool = False, regexes_to_ignore: Sequence[str] | None = None,
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
                index = _ignores_index_map(text, norm, regexes_to_ignore, ignore_case,
                                           ignore_punctuation)
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
# Shared helpers for letter readers
# ---------------------------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _choices(item: Item) -> tuple[str, ...]:
    raw = item.choices if isinstance(item.choices, (tuple, list)) else ()
    return tuple(_as_text(c) for c in raw)


def _letters_for(choices: Sequence[str]) -> str:
    n = min(len(choices), 26) if choices else 4
    return "".join(chr(ord("A") + i) for i in range(n))


def _letter_of(s: str) -> str | None:
    """The option letter a capture stands for, as lm-eval exact_match(ignore_case,
    ignore_punctuation) would compare it with an "(X)" target; None if it is not one letter."""
    norm = exact_match_normalize(s, ignore_case=True, ignore_punctuation=True).strip()
    if len(norm) == 1 and "a" <= norm <= "z":
        return norm.upper()
    return None


def gold_letter(gold: Any, choices: Sequence[str]) -> str | None:
    """Gold as an option letter: "B", "(B)", "b." … or, failing that, an exact option text."""
    text = _as_text(gold)
    letter = _letter_of(text)
    if letter is not None:
        return letter
    stripped = text.strip()
    for idx, c in enumerate(choices[:26]):
        if stripped and c.strip() == stripped:
            return chr(ord("A") + idx)
    return None


def _letter_span(text: str, span: tuple[int, int] | None, letter: str) -> tuple[int, int] | None:
    if span is None:
        return None
    start, end = span
    end = min(end, len(text))
    # Exact case first, so the "b" of a `\textbf{B}` wrapper is not taken for the letter B.
    for i in range(start, end):
        if text[i] == letter:
            return (i, i + 1)
    for i in range(start, end):
        if text[i].upper() == letter and text[i].isalpha():
            return (i, i + 1)
    return span


def _gold_error(gold: Any) -> Reading:
    return Reading("error", detail={"reason": "gold is not an option letter (or option text)",
                                    "gold": _as_text(gold)[:200]})


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


GSM8K_METRIC = ExactMatchOptions(regexes_to_ignore=(",", "\\$", "(?s).*#### ", "\\.$"),
                                 ignore_case=True, ignore_punctuation=False)
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


def _metric_kwargs(metric: ExactMatchOptions) -> dict[str, Any]:
    return dict(regexes_to_ignore=metric.regexes_to_ignore, ignore_case=metric.ignore_case,
                ignore_punctuation=metric.ignore_punctuation, ignore_numbers=metric.ignore_numbers)


def _score_upstream(ext: Extraction, target: str, metric: ExactMatchOptions) -> Reading:
    if not ext.matched:
        return Reading("no_answer", detail={"filter_output": ext.value, "step": ext.step})
    kw = _metric_kwargs(metric)
    pred_n = exact_match_normalize(ext.value, **kw)
    ref_n = exact_match_normalize(target, **kw)
    ok = pred_n == ref_n
    return Reading(
        "correct" if ok else "incorrect", answer=ext.value, normalized=pred_n, span=ext.span,
        detail={"filter_output": ext.value, "step": ext.step, "target": target,
                "target_normalized": ref_n, "exact_match": int(ok)},
    )


class LmEvalRegexReader(Reader):
    """lm-eval `RegexFilter` + `exact_match`, one registry entry per task config."""

    version = "0.4.13"
    Config = RegexFilterConfig
    default_config: ClassVar[RegexFilterConfig] = RegexFilterConfig()

    def __init__(self, config: RegexFilterConfig | None = None, *, name: str | None = None) -> None:
        super().__init__(config if config is not None else self.default_config, name=name)

    def read(self, item: Item) -> Reading:
        cfg: RegexFilterConfig = self.config
        ext = regex_filter(_as_text(item.response), cfg.regex_pattern, cfg.group_select,
                           cfg.fallback)
        gold = _as_text(item.gold)
        target = gold.split("####")[-1].strip() if cfg.target == "after_hashes" else gold
        return _score_upstream(ext, target, cfg.metric)


class LmEvalMultiChoiceReader(Reader):
    """lm-eval `MultiChoiceRegexFilter` + `exact_match`."""

    version = "0.4.13"
    Config = MultiChoiceRegexConfig
    default_config: ClassVar[MultiChoiceRegexConfig] = MultiChoiceRegexConfig()

    def __init__(self, config: MultiChoiceRegexConfig | None = None, *,
                 name: str | None = None) -> None:
        super().__init__(config if config is not None else self.default_config, name=name)

    def read(self, item: Item) -> Reading:
        cfg: MultiChoiceRegexConfig = self.config
        choices = _choices(item)
        ext = multi_choice_regex_filter(
            _as_text(item.response), choices, cfg.regex_pattern, cfg.group_select, cfg.fallback,
            cfg.ignore_case, cfg.ignore_punctuation, cfg.regexes_to_ignore,
            colon_letters=None if choices else tuple(_letters_for(())),
        )
        return _score_upstream(ext, _as_text(item.gold), cfg.metric)


class Gsm8kStrictMatch(LmEvalRegexReader):
    name = "gsm8k-strict-match"
    contract = frozenset({"plain_number"})
    upstream = "lm-eval 0.4.13 gsm8k strict-match (lm_eval/tasks/gsm8k/gsm8k.yaml)"
    default_config = RegexFilterConfig(r"#### (\-?[0-9\.\,]+)", 0, FALLBACK, GSM8K_METRIC, "raw")


class Gsm8kFlexibleExtract(LmEvalRegexReader):
    name = "gsm8k-flexible-extract"
    contract = frozenset({"plain_number"})
    upstream = "lm-eval 0.4.13 gsm8k flexible-extract (lm_eval/tasks/gsm8k/gsm8k.yaml)"
    default_config = RegexFilterConfig(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1, FALLBACK,
                                       GSM8K_METRIC, "raw")


class Gsm8kCotStrictMatch(LmEvalRegexReader):
    name = "gsm8k-cot-strict-match"
    contract = frozenset({"plain_number"})
    upstream = ("lm-eval 0.4.13 gsm8k_cot strict-match (lm_eval/tasks/gsm8k/gsm8k-cot.yaml; "
                "same filter in gsm8k-cot-zeroshot.yaml)")
    default_config = RegexFilterConfig(r"The answer is (\-?[0-9\.\,]+).", 0, FALLBACK,
                                       GSM8K_METRIC, "after_hashes")


class MmluProCustomExtract(LmEvalRegexReader):
    name = "mmlu-pro-custom-extract"
    contract = frozenset({"option_letter"})
    upstream = "lm-eval 0.4.13 mmlu_pro custom-extract (lm_eval/tasks/mmlu_pro/_default_template_yaml)"
    default_config = RegexFilterConfig(r"answer is \(?([ABCDEFGHIJ])\)?", 0, FALLBACK,
                                       MMLU_METRIC, "raw")


class MultiChoiceRegex(LmEvalMultiChoiceReader):
    name = "multi-choice-regex"
    contract = frozenset({"option_letter", "option_text"})
    upstream = ("lm-eval 0.4.13 mmlu flan_cot_zeroshot flexible-extract "
                "(lm_eval/tasks/mmlu/flan_cot_zeroshot/_mmlu_flan_cot_zeroshot_template_yaml)")
    default_config = MultiChoiceRegexConfig(r"(\([A-Z]\))", -1, FALLBACK, True, True, None,
                                            MMLU_METRIC)


# ---------------------------------------------------------------------------------------------
# Seed 002's five MC extractors
# ---------------------------------------------------------------------------------------------

SEED002_STRICT = (r"((?<=The answer is )(.*)(?=.)|(?<=answer is )(.*)(?=.)"
                  r"|(?<=The answer: )(.*)(?=.)|(?<=The final answer: )(.*)(?=.))")
SEED002_FLEXIBLE = r"(\([A-D]\))"
SEED002_INSTRUCTED = r'[Aa]nswer"?:\s*"?\**\(?([A-D])\)?\**"'
_AIC_LETTER = r"(\(?[A-D]\)?)"
SEED002_ANSWER_IS_CORRECT = "|".join([
    rf"[Aa]nswer:\**\s*{_AIC_LETTER}",
    rf"[Aa]nswer\**:\s*{_AIC_LETTER}",
    rf"[Aa]nswer is \**{_AIC_LETTER}\**",
    rf"[Aa]nswer should be \**{_AIC_LETTER}\**",
    rf"[Aa]nswer:\s+\**{_AIC_LETTER}\**",
    rf"correct answer is \**{_AIC_LETTER}\**",
    rf"correct answer:\s+\**{_AIC_LETTER}\**",
    rf"{_AIC_LETTER}\** is correct",
    rf"{_AIC_LETTER}\** is the correct",
    rf"{_AIC_LETTER}\** is the answer",
    rf"{_AIC_LETTER}\** should be the answer",
])
SEED002_LAST_EXTRACT = r"[^a-zA-Z0-9]([A-D])[^a-zA-Z0-9]"

# The appendix text as printed (PDF text layer), kept for provenance and the docs.
SEED002_APPENDIX_AS_PRINTED = {
    "strict-match": SEED002_STRICT,
    "flexible-extract": r"(\$[A-D]\$)",
    "instructed-format": r'[Aa]nswer\"?:\\s* \"?\\(?([A-D])\"|\"?\\**(?([A-D])\"',
    "answer-is-correct": (
        r"\\**[Aa]nswer:\\**\\s*(\$?[A-D]\$?)|\\**[Aa]nswer\\**:\\s*(\$?[A-D]\$?)|[Aa]nswer is "
        r"\\**(\$?[A-D]\$?)\\**|[Aa]nswer should be \\**(\$?[A-D]\$?)\\**|[Aa]nswer:\\s+\\**"
        r"(\$?[A-D]\$?)\\**|correct answer is \\**(\$?[A-D]\$?)\\**|correct answer:\\s+\\**"
        r"(\$?[A-D]\$?)\\**|\\**(\$?[A-D]\$?)\\** is correct|" "\n"
        r"*(\$?[A-D]\$?)\\** is the correct|\\**(\$?[A-D]\$?)\\** is the answer|\\**(\$?[A-D]"
        r"\$?)\\** should be the answer"
    ),
    "last-extract": SEED002_LAST_EXTRACT,
}


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

    def __init__(self, config: Seed002Config | None = None, *, name: str | None = None) -> None:
        super().__init__(config if config is not None else self.default_config, name=name)

    def _pattern(self, letters: str) -> str:
        cfg: Seed002Config = self.config
        return cfg.regex_pattern.replace("[A-D]", f"[A-{letters[-1]}]")

    def read(self, item: Item) -> Reading:
        cfg: Seed002Config = self.config
        text = _as_text(item.response)
        choices = _choices(item)
        letters = _letters_for(choices) if choices else cfg.letters_without_choices
        gold = gold_letter(item.gold, choices)
        if gold is None:
            return _gold_error(item.gold)
        pattern = self._pattern(letters)
        if cfg.filter == "multi_choice_regex":
            ext = multi_choice_regex_filter(
                text, choices, pattern, cfg.group_select, FALLBACK, cfg.ignore_case,
                cfg.ignore_punctuation, None, colon_letters=None if choices else tuple(letters),
            )
        else:
            ext = regex_filter(text, pattern, cfg.group_select, FALLBACK)
        detail: dict[str, Any] = {"filter_output": ext.value, "step": ext.step, "regex": pattern,
                                  "letters": letters, "gold_letter": gold}
        if not ext.matched:
            return Reading("no_answer", detail=detail)
        capture = ext.value
        normalized = exact_match_normalize(capture, **_metric_kwargs(cfg.metric)).strip()
        letter = normalized.upper() if len(normalized) == 1 and "a" <= normalized <= "z" else None
        if letter is None:
            if not normalized:
                # e.g. strict-match on "...answer is B" at the very end: `(.*)(?=.)` captures "".
                return Reading("no_answer", answer=None, span=ext.span,
                               detail={**detail, "capture": capture})
            return Reading("incorrect", answer=capture, normalized=normalized, span=ext.span,
                           detail={**detail, "capture": capture, "letter": None})
        detail.update(capture=capture, letter=letter, letter_in_range=letter in letters)
        # A choice-text match spans the option text, which holds no letter to point at.
        span = ext.span if ext.step == "choice_text" else _letter_span(text, ext.span, letter)
        return Reading("correct" if letter == gold else "incorrect", answer=letter,
                       normalized=letter, span=span, detail=detail)


class StrictMatch(Seed002Reader):
    name = "strict-match"
    upstream = ("seed 002 §4.1/A.2 strict-match = lm-eval 0.4.13 mmlu flan_cot_zeroshot "
                "strict-match pattern, last match")
    default_config = Seed002Config(SEED002_STRICT)


class FlexibleExtract(Seed002Reader):
    name = "flexible-extract"
    contract = frozenset({"option_letter", "option_text"})
    upstream = ("seed 002 §4.1/A.2 flexible-extract = lm-eval 0.4.13 mmlu flan_cot_zeroshot "
                "flexible-extract (multi_choice_regex) with [A-D]")
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
# boxed: seed 000's box-only harness reader
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoxedConfig:
    commands: tuple[str, ...] = ("\\boxed", "\\fbox")
    unwrap: tuple[str, ...] = ("\\text", "\\textbf")
    letters_without_choices: str = "ABCD"


_BRACE = re.compile(r"[{}]")


def _close_brace(text: str, open_at: int) -> int | None:
    """Index of the brace closing text[open_at] == "{" (escapes are not special, as upstream)."""
    depth = 0
    for m in _BRACE.finditer(text, open_at):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    return None


def last_box(text: str, commands: Sequence[str] = ("\\boxed", "\\fbox")
             ) -> tuple[str, tuple[int, int], str] | None | Literal[False]:
    """(content, content span, form) of the last box; None if there is no box, False if the
    last box is malformed (unbalanced, or a command with no argument)."""
    best = -1
    best_cmd = ""
    for cmd in commands:
        i = text.rfind(cmd)
        if i > best:
            best, best_cmd = i, cmd
    if best < 0:
        return None
    pos = best + len(best_cmd)
    n = len(text)
    skip = pos
    while skip < n and text[skip] in " \t":
        skip += 1
    if skip < n and text[skip] == "{":
        close = _close_brace(text, skip)
        if close is None:
            return False
        return text[skip + 1:close], (skip + 1, close), "braces"
    if skip > pos and skip < n:
        # `\boxed C`: the token after the space, up to whitespace or a `$` (Hendrycks stops at `$`).
        end = skip
        while end < n and not text[end].isspace() and text[end] != "$":
            end += 1
        if end > skip:
            return text[skip:end], (skip, end), "space"
    return False


def _unwrap_command(s: str, commands: Iterable[str]) -> str | None:
    for cmd in commands:
        head = cmd + "{"
        if s.startswith(head) and s.endswith("}") and _close_brace(s, len(cmd)) == len(s) - 1:
            return s[len(head):-1]
    return None


def light_normalize(s: str, unwrap: Sequence[str] = ("\\text", "\\textbf"),
                    parens: bool = False) -> str:
    """Harness-grade clean-up: strip, drop `\\$` and `$`, unwrap `\\text{…}`-style wrappers, drop one
    trailing period; with `parens`, unwrap `(C)`. Not an equivalence check."""
    s = s.replace("\\$", "").replace("$", "").strip()
    for _ in range(8):  # bounded: each pass removes at least one wrapper or stops
        before = s
        inner = _unwrap_command(s, unwrap)
        if inner is not None:
            s = inner.strip()
        if s.endswith("."):
            s = s[:-1].rstrip()
        if parens and len(s) >= 2 and s[0] == "(" and s[-1] == ")":
            s = s[1:-1].strip()
        if s == before:
            break
    return s


class BoxedReader(Reader):
    name = "boxed"
    version = "1.0"
    contract = frozenset({"boxed", "option_letter"})
    upstream = ("seed 000 box-only harness reader (last \\boxed{}/\\fbox{}, "
                "Hendrycks last_boxed_only_string style)")
    Config = BoxedConfig

    def read(self, item: Item) -> Reading:
        cfg: BoxedConfig = self.config
        text = _as_text(item.response)
        choices = _choices(item)
        box = last_box(text, cfg.commands)
        if box is None:
            return Reading("no_answer", detail={"reason": "no box"})
        if box is False:
            return Reading("no_answer", detail={"reason": "last box malformed or unbalanced"})
        content, span, form = box
        detail: dict[str, Any] = {"box": content, "form": form}
        if choices:
            gold = gold_letter(item.gold, choices)
            if gold is None:
                return _gold_error(item.gold)
            letters = _letters_for(choices)
            cleaned = light_normalize(content, cfg.unwrap, parens=True)
            if not cleaned:
                return Reading("no_answer", span=span, detail={**detail, "reason": "empty box"})
            detail.update(gold_letter=gold, letters=letters)
            if len(cleaned) == 1 and "A" <= cleaned <= "Z":
                return Reading("correct" if cleaned == gold else "incorrect", answer=cleaned,
                               normalized=cleaned, span=_letter_span(text, span, cleaned),
                               detail={**detail, "letter_in_range": cleaned in letters})
            # Option text in the box is not mapped back to its letter: the harness reads letters.
            return Reading("incorrect", answer=content.strip(), normalized=cleaned, span=span,
                           detail={**detail, "letter": None})
        cleaned = light_normalize(content, cfg.unwrap)
        if not cleaned:
            return Reading("no_answer", span=span, detail={**detail, "reason": "empty box"})
        gold_n = light_normalize(_as_text(item.gold), cfg.unwrap)
        stripped, sspan = _strip_span(content, span[0])
        return Reading("correct" if cleaned == gold_n else "incorrect", answer=stripped,
                       normalized=cleaned, span=sspan, detail={**detail, "gold_normalized": gold_n})


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
    return chr(ord("A") + index) if index < 26 else str(index)


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
    upstream = (f"TIGER-AI-Lab/MMLU-Pro extract_answer → extract_again → extract_final "
                f"({MMLU_PRO_UPSTREAM_COMMITS}); no extraction = the scorer's seeded random guess")
    Config = MmluProReleasedConfig
    default_config: ClassVar[MmluProReleasedConfig] = MmluProReleasedConfig()

    def __init__(self, config: MmluProReleasedConfig | None = None, *, name: str | None = None) -> None:
        super().__init__(config if config is not None else self.default_config, name=name)

    def read(self, item: Item) -> Reading:
        cfg: MmluProReleasedConfig = self.config
        choices = _choices(item)
        if not choices:
            return Reading("no_answer", detail={
                "out_of_contract": "open-ended item: the MMLU-Pro extractor reads option letters only"})
        gold = gold_letter(item.gold, choices)
        if gold is None:
            return _gold_error(item.gold)
        text = _as_text(item.response)
        found = mmlu_pro_released_extract(text, fallbacks=cfg.cascade == "full")
        detail: dict[str, Any] = {"cascade": cfg.cascade, "gold_letter": gold}
        if found is None:
            # Upstream scores a seeded guess here; a guess is not a reading of the response.
            return Reading("no_answer", detail={
                **detail, "step": None, "released_fallback": "random_guess",
                "released_guess": mmlu_pro_scorer_guess(len(choices)),
                "released_guess_compute_accuracy": MMLU_PRO_COMPUTE_ACCURACY_GUESS,
            })
        # Upstream never bounds the letter by the option count: "H" on a 4-option item is a wrong
        # answer, not a missing one.
        detail.update(step=found.step, letter_in_range=found.letter in _letters_for(choices))
        return Reading("correct" if found.letter == gold else "incorrect", answer=found.letter,
                       normalized=found.letter, span=found.span, detail=detail)


class MmluProReleasedFirstPattern(MmluProReleased):
    name = "mmlu-pro-released-first-pattern"
    upstream = ("TIGER-AI-Lab/MMLU-Pro extract_answer's first pattern only, as the released Mixtral, "
                "Phi-3 and Qwen1.5 runs were extracted; no extraction = the scorer's seeded random guess")
    default_config = MmluProReleasedConfig(cascade="first-pattern")


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------

_READERS: tuple[tuple[type[Reader], str], ...] = (
    (StrictMatch, "seed 002: 'answer is X' (lm-eval mmlu flan_cot strict-match), last match"),
    (FlexibleExtract, "seed 002: last '(X)', then option text, then ': X' (lm-eval multi_choice_regex)"),
    (InstructedFormat, "seed 002: the '\"answer\": \"C\"' field asked for in the prompt, last match"),
    (AnswerIsCorrect, "seed 002: 'answer is X' / 'X is correct' / '**Answer:** X' variants, last match"),
    (LastExtract, "seed 002: last capital option letter standing alone"),
    (Gsm8kStrictMatch, "lm-eval gsm8k strict-match: first '#### N'"),
    (Gsm8kFlexibleExtract, "lm-eval gsm8k flexible-extract: last number-like token"),
    (Gsm8kCotStrictMatch, "lm-eval gsm8k_cot strict-match: first 'The answer is N.'"),
    (MmluProCustomExtract, "lm-eval mmlu_pro custom-extract: first 'answer is (X)'"),
    (MultiChoiceRegex, "lm-eval mmlu flan_cot_zeroshot flexible-extract (multi_choice_regex)"),
    (BoxedReader, "seed 000 box-only harness reader: last \\boxed{}/\\fbox{} only"),
    (MmluProReleased, "MMLU-Pro authors' extractor: first 'answer is (X)', else 'Answer: X', else last standalone A-J"),
    (MmluProReleasedFirstPattern, "MMLU-Pro authors' extractor as the older runs used it: first 'answer is (X)' only"),
)

for _cls, _summary in _READERS:
    register(_cls.name, _cls, _summary)
