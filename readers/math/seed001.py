"""Seed 001's four verifiers under seed 001's own calling conventions (arXiv:2609.01354 §2.5).

The readers in readers.math.math_verify, .strip_string and .cascade are this platform's variants,
built to read stored model responses (box extraction, a gold-only `$…$` wrap). Seed 001 audited
bare answer strings under other conventions, and those conventions flip its headline findings, so
they are registered beside ours, under names that say whose convention they follow:

* `math-verify-latex-seed001` / `math-verify-expr-seed001`: math-verify 0.9.0 "with LaTeX
  extraction (library default)" / "restricted to plain-expression extraction", prediction AND gold
  wrapped in `$…$` (the seed's Table 8 direction: `\\frac{1}{2}` accepted, `\\frac{1}{2}.` rejected).
* `strip-string-deepseek`: "the DeepSeek-Math lineage string normalizer" — DeepSeek-Math's
  `strip_string` (evaluation/data_processing/answer_extraction.py @ 21cc5c67), re-implemented here
  step by step with its quirks, compared by equality of the normalised strings; no box extraction
  (seed Table 6: 0 % acceptance of boxed answers).
* `sympy-cascade-seed001`: the reference cascade with no unboxing (a box is a parse failure, so
  "no verdict on boxed input"), after the seed's delimiter and whitespace handling.

Pure Python (no Django). See docs/audit.md §"Seed-convention readers" and docs/seeds.md.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal

from ..base import Item, Reader, Reading
from .cascade import CascadeConfig, SympyCascadeReader
from .common import MATH_VERIFY_VERSION, SYMPY_VERSION, cap
from .math_verify import MathVerifyConfig, MathVerifyReader, wrap_gold

DEEPSEEK_COMMIT = "21cc5c6701a708a11cee0af8b1fe884e3294dc7a"

# ---------------------------------------------------------------------------------------------
# DeepSeek-Math strip_string
# ---------------------------------------------------------------------------------------------
# Upstream quirks reproduced on purpose (each changes verdicts):
#  * `\%` becomes `%` and a bare `%` is kept, so `50\%` != `50` (seed Table 6: 0 % on percent);
#  * the quote-removal lines discard their result: quotes are kept;
#  * `{m}`/`{cm}` (optionally ^2/^3) are deleted anywhere in the string, `p.m.` and a `t` after a
#    digit only at the end;
#  * "inf" becomes `\infty` only when no `\infty` is present yet (after "infinity" was replaced);
#    the `+\inity` replacement upstream never matches anything a normal answer holds;
#  * `j` becomes `i` when the string has no `i`;
#  * `\,` (thin space) and `\ ` are NOT removed (Table 8: `3\,\pm\,\sqrt{2}` rejected);
#  * the Hendrycks `k = 5` prefix rule is commented out upstream, so `x = 5` != `5`.

_TRAILING_TEXT = re.compile(r"\\text{.*?}$")
_METRIC_UNIT = re.compile(r"\{(c|m)?m\}(\^(2|3))?")
_PM = re.compile(r"p\.m\.$")
_DIGIT_T = re.compile(r"(\d)\s*t$")
_MBOX = re.compile(r"\\mbox{.*?}")
_POINT_ZEROS_MID = re.compile(r"(\d+)\.0+([^\d])")
_POINT_ZEROS_END = re.compile(r"(\d+)\.0+$")
_SQRT_BARE = re.compile(r"\\sqrt(-?[0-9.a-zA-Z]+)")
_SQRT_SPACED = re.compile(r"\\sqrt\s+(\w+)$")
_TAN_BARE = re.compile(r"\\tan(-?[0-9.a-zA-Z]+)")
_TAN_SPACED = re.compile(r"\\tan\s+(\w+)$")
_TRAILING_JUNK = re.compile(r"(\\|,|\.)+$")


def _ds_fix_fracs(text: str) -> str:
    """`\\frac12` -> `\\frac{1}{2}`; gives back the input unchanged when a `\\frac` is followed by
    fewer than two characters (upstream's guarded assert)."""
    head, *rest = text.split("\\frac")
    out = [head]
    for part in rest:
        out.append("\\frac")
        if part.startswith("{"):
            out.append(part)
            continue
        if len(part) < 2:
            return text
        first, second, tail = part[0], part[1], part[2:]
        out.append("{" + first + "}" + ("{" + second + "}" if second != "{" else second) + tail)
    return "".join(out)


def _ds_fix_a_slash_b(text: str) -> str:
    """`a/b` -> `\\frac{a}{b}` when both sides are integers written plainly (a side holding
    `sqrt` is taken as it is); anything else unchanged."""
    parts = text.split("/")
    if len(parts) != 2:
        return text
    a_raw, b_raw = parts
    try:
        a = a_raw if "sqrt" in a_raw else int(a_raw)
        b = b_raw if "sqrt" in b_raw else int(b_raw)
    except ValueError:
        return text
    if text != f"{a}/{b}":
        return text
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


def deepseek_strip_string(value: Any) -> str:
    """DeepSeek-Math `strip_string` (answer_extraction.py @ 21cc5c67), step for step."""
    s = str(value).strip()
    s = s.replace("\n", "")
    s = s.rstrip(".")
    s = s.replace("\\!", "")
    if s.startswith("\\text{") and s.endswith("}"):
        s = s.split("{", 1)[1][:-1]
    for old in ("tfrac", "dfrac", "cfrac"):
        s = s.replace(old, "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    without_unit = _TRAILING_TEXT.sub("", s).strip()
    if without_unit and without_unit != s:
        s = without_unit
    s = s.replace("^{\\circ}", "").strip()
    s = s.replace("^\\circ", "").strip()
    s = _METRIC_UNIT.sub("", s).strip()
    s = _PM.sub("", s).strip()
    s = _DIGIT_T.sub(r"\1", s).strip()
    s = s.replace("\\$", "").replace("$", "")
    s = s.replace("x\\in", "")
    s = s.replace("\\%", "%")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    s = s.replace("\\cdot", "")
    s = s.replace("infinity", "\\infty")
    if "\\infty" not in s:
        s = s.replace("inf", "\\infty")
    s = s.replace("+\\inity", "\\infty")
    s = s.replace("\\mathbf", "").replace("\\mathrm", "")
    s = _MBOX.sub("", s)
    if "j" in s and "i" not in s:
        s = s.replace("j", "i")
    s = _POINT_ZEROS_MID.sub(r"\1\2", s)
    s = _POINT_ZEROS_END.sub(r"\1", s)
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    s = _SQRT_SPACED.sub(r"\\sqrt{\1}", _SQRT_BARE.sub(r"\\sqrt{\1}", s))
    s = _TAN_SPACED.sub(r"\\tan{\1}", _TAN_BARE.sub(r"\\tan{\1}", s))
    s = s.replace(" ", "")
    s = _ds_fix_fracs(s)
    s = _ds_fix_a_slash_b(s)
    return _TRAILING_JUNK.sub("", s)


@dataclass(frozen=True)
class DeepSeekStripConfig:
    """The normaliser is fixed upstream; `extract` records that nothing is extracted first."""

    extract: Literal["none"] = "none"
    upstream_commit: str = DEEPSEEK_COMMIT


class DeepSeekStripStringReader(Reader):
    """strip_string(response) == strip_string(gold): the bare normaliser seed 001 audited."""

    name = "strip-string-deepseek"
    version = "1.0"
    kind = "rule"
    # Seed 001's calling conventions, for reproducing the seed's audit: run when named.
    in_default_panel = False
    # Seed 001 scores the normaliser on plain numbers and LaTeX strings; it removes a trailing
    # `\text{...}` unit by design. It extracts nothing, so boxed answers are out of contract
    # (seed §2.2: "a normalizer that never advertised answer extraction"). Sets and unreduced
    # fractions are out by the seed's stratum assignment (readers.audit.contracts).
    contract = frozenset({"plain_number", "latex", "units"})
    upstream = (
        f"deepseek-ai/DeepSeek-Math evaluation/data_processing/answer_extraction.py @ {DEEPSEEK_COMMIT} "
        "strip_string (re-implemented step by step, quirks kept); verdict = strip_string(response) == "
        "strip_string(gold), no answer extraction (seed 001 'DeepSeek-Math lineage string normalizer')"
    )
    Config = DeepSeekStripConfig

    def read(self, item: Item) -> Reading:
        detail: dict[str, Any] = {"extraction": "none"}
        if item.is_multiple_choice:
            detail["out_of_contract"] = "multiple-choice item: strip-string compares strings only"
        if not item.response.strip():
            return Reading("no_answer", detail=detail)
        pred = deepseek_strip_string(item.response)
        gold = deepseek_strip_string(item.gold)
        detail["gold_normalized"] = cap(gold)
        stripped = item.response.strip()
        lead = len(item.response) - len(item.response.lstrip())
        return Reading(
            "correct" if pred == gold else "incorrect",
            answer=cap(stripped),
            normalized=cap(pred),
            span=(lead, lead + len(stripped)),
            detail=detail,
        )


# ---------------------------------------------------------------------------------------------
# the reference cascade, seed conventions
# ---------------------------------------------------------------------------------------------

# Whole-string math-mode wrappers, longest first so that `$$x$$` is not read as `$` + `$x$` + `$`.
_WRAPPERS: tuple[tuple[str, str], ...] = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))


def seed_cascade_clean(text: str) -> str:
    """The seed cascade's delimiter and whitespace handling: strip, drop line breaks, peel
    whole-string math-mode delimiters, drop trailing sentence periods.

    Why these: seed 001 says its cascade "handles math-mode delimiters" (no math-mode row among its
    failures), and its whitespace failures (694) are exactly strip-string's, all parse exceptions:
    the cascade loses the same `\\,`-style variants and none of the period / newline ones. An
    escaped `\\$` (a currency sign) is not a delimiter.
    """
    s = text.strip().replace("\n", "")
    changed = True
    while changed:
        changed = False
        s = s.strip()
        for left, right in _WRAPPERS:
            if (
                len(s) >= len(left) + len(right)
                and s.startswith(left)
                and s.endswith(right)
                and not s.endswith("\\" + right)
            ):
                inner = s[len(left) : len(s) - len(right)]
                if inner.strip():
                    s, changed = inner, True
                    break
        stripped = s.rstrip(".").rstrip()
        if stripped != s and stripped:
            s, changed = stripped, True
    return s


@dataclass(frozen=True)
class SeedCascadeConfig(CascadeConfig):
    """CascadeConfig with no unboxing, plus the seed's delimiter/whitespace handling."""

    extract: Literal["last_boxed", "none"] = "none"
    clean: Literal["seed001"] = "seed001"


class SeedCascadeReader(SympyCascadeReader):
    """Reference cascade on `seed_cascade_clean`ed strings; a box is a parse failure (no verdict)."""

    name = "sympy-cascade-seed001"
    in_default_panel = False
    contract = frozenset({"plain_number", "latex", "sets_intervals"})
    upstream = (
        "seed 001 (arXiv:2609.01354) reference cascade, seed conventions: strip, drop line breaks, peel "
        "$…$/$$…$$/\\(…\\)/\\[…\\] and trailing periods; no unboxing; exact string -> numeric rel_tol 1e-4 "
        f"(|a-b| <= rel_tol*|gold|) -> simplify(parse_expr(a)-parse_expr(b)) == 0; sympy {SYMPY_VERSION}"
    )
    Config = SeedCascadeConfig

    def read(self, item: Item) -> Reading:
        response, gold = seed_cascade_clean(item.response), seed_cascade_clean(item.gold)
        reading = super().read(Item(response=response, gold=gold, choices=item.choices, question=item.question))
        if response != item.response.strip():
            # the span would point into the cleaned string, not the response
            reading = dataclasses.replace(reading, span=None)
        return reading


# ---------------------------------------------------------------------------------------------
# math-verify, seed conventions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedMathVerifyConfig(MathVerifyConfig):
    """MathVerifyConfig with the prediction wrapped like the gold: in `$…$` unless it already holds
    a math delimiter (`$`, `\\(`, `\\[`; an escaped `\\$` is a currency sign, not one).

    Why "unless": seed 001 reports no math-mode failures for mv-latex (its S5 row exists only for
    mv-expr and strip-string), and `$\\[g\\]$` or `$$g.$$` cannot be parsed at all, so a harness
    that re-wrapped delimited strings would show S5 and S6 failures the seed does not have."""

    gold_wrap: Literal["auto", "always", "never"] = "auto"
    pred_wrap_mode: Literal["auto", "always", "never"] = "auto"


class SeedMathVerifyReader(MathVerifyReader):
    """math-verify on bare answer strings, both sides wrapped in `$…$` (seed 001 §2.5)."""

    Config = SeedMathVerifyConfig
    in_default_panel = False

    def read(self, item: Item) -> Reading:
        cfg: SeedMathVerifyConfig = self.config
        wrapped = wrap_gold(item.response, cfg.pred_wrap_mode)
        return super().read(Item(response=wrapped, gold=item.gold, choices=item.choices, question=item.question))


# ---------------------------------------------------------------------------------------------
# named configs
# ---------------------------------------------------------------------------------------------

MV_LATEX_SEED = (
    f"math-verify {MATH_VERIFY_VERSION}, seed 001 convention: verify(parse('$'+gold+'$'), parse('$'+response+'$')) "
    "(a string already holding $, \\( or \\[ is not re-wrapped) with the library-default extraction "
    "[LatexExtractionConfig(), ExprExtractionConfig()]; internal timeouts disabled"
)
MV_EXPR_SEED = (
    f"math-verify {MATH_VERIFY_VERSION}, seed 001 convention: verify(parse('$'+gold+'$'), parse('$'+response+'$')) "
    "(a string already holding $, \\( or \\[ is not re-wrapped) with [ExprExtractionConfig()] only; "
    "internal timeouts disabled"
)


def mv_latex() -> SeedMathVerifyReader:
    return SeedMathVerifyReader(
        SeedMathVerifyConfig(extraction="latex+expr"), name="math-verify-latex-seed001", upstream=MV_LATEX_SEED
    )


def mv_expr() -> SeedMathVerifyReader:
    return SeedMathVerifyReader(
        SeedMathVerifyConfig(extraction="expr"),
        name="math-verify-expr-seed001",
        contract=frozenset({"plain_number"}),
        upstream=MV_EXPR_SEED,
    )


def deepseek_strip_string_reader() -> DeepSeekStripStringReader:
    return DeepSeekStripStringReader(DeepSeekStripConfig(), name="strip-string-deepseek")


def cascade() -> SeedCascadeReader:
    return SeedCascadeReader(SeedCascadeConfig(), name="sympy-cascade-seed001")
