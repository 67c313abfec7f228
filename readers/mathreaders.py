"""Math answer readers: math-verify configs, the Hendrycks `strip_string` normaliser and the
seed-001 reference SymPy cascade. Registered at import (readers.builtin imports this module).

None of these readers enforces its own time budget: math-verify's SIGALRM timeouts are switched
off on purpose (see `_MV_TIMEOUT`), and the cascade's `simplify` can run for ever. The hard
wall-clock and memory budget comes from readers.isolation, which runs every reading in a killable
child process; in-process calls (tests, the bench's bare loop) are for trusted inputs only.

See docs/readers-math.md for calling conventions, contracts and measured departures.
"""
from __future__ import annotations

import io
import keyword
import math
import re
import tokenize
from dataclasses import dataclass
from fractions import Fraction
from importlib import metadata
from typing import Any, Literal

import sympy
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

from .base import Item, Reader, Reading
from .registry import register


def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:  # pragma: no cover - broken install
        return "unknown"


MATH_VERIFY_VERSION = _dist_version("math-verify")
LATEX2SYMPY_VERSION = _dist_version("latex2sympy2_extended")
ANTLR_VERSION = _dist_version("antlr4-python3-runtime")
SYMPY_VERSION = sympy.__version__

# Strings we store in verdict rows are capped: a hostile 1 MB response must not become a 1 MB
# `normalized` column, and str() of a giant SymPy object is itself slow.
_MAX_FIELD_CHARS = 4000


def _cap(s: str | None) -> str | None:
    if s is None or len(s) <= _MAX_FIELD_CHARS:
        return s
    return s[:_MAX_FIELD_CHARS] + f"…[+{len(s) - _MAX_FIELD_CHARS} chars]"


# ---------------------------------------------------------------------------------------------
# math-verify
# ---------------------------------------------------------------------------------------------

# Why None and not math-verify's default 5 s (catalogue §2.8, probe §3):
#  * its timeout is SIGALRM-based: it raises ValueError off the main thread (Celery --pool=threads,
#    runserver, ThreadPoolExecutor) even with raise_on_error=False;
#  * it cancels any outer alarm of the caller (pytest-timeout, a Celery soft limit) and never
#    re-arms it;
#  * it only accepts whole seconds (0.5 silently turns every answer into []/False);
#  * in verify() it applies per gold x target pair, so the real bound is up to 4 x 5 s, and a
#    timeout is reported as False, i.e. indistinguishable from a wrong answer.
# Instead readers.isolation runs each reading in a child process it SIGKILLs at the budget and
# records the distinct verdict "timeout".
_MV_TIMEOUT: None = None

# math-verify logs "Timeout is disabled ... provide the logic for timeout interruption yourself"
# once per process; every freshly forked isolation worker would repeat it. We do provide that
# logic (readers.isolation), so mark the one-time warning as already shown.
try:  # pragma: no branch - module layout of math-verify 0.9.0
    import math_verify.grader as _mv_grader
    import math_verify.parser as _mv_parser

    _mv_parser.TIMEOUT_WARNING_SHOWN = True
    _mv_grader.TIMEOUT_WARNING_SHOWN = True
except (ImportError, AttributeError):  # pragma: no cover
    pass

GoldWrap = Literal["auto", "always", "never"]
Extraction = Literal["latex+expr", "expr", "latex"]

# A gold that already carries a math delimiter is not wrapped again under gold_wrap="auto":
# "$$…$$" around an existing "$…$" changes which environment regex matches. An escaped "\$"
# (MATH golds like "\$36") is a dollar sign, not a delimiter.
_GOLD_HAS_DELIMITER = re.compile(r"(?<!\\)\$|\\\(|\\\[")


@dataclass(frozen=True)
class MathVerifyConfig:
    """Calling convention for math-verify 0.9.0.

    extraction: which extraction configs are passed to `parse` (same for gold and prediction).
    boxed_match_priority: LatexExtractionConfig field (50 = library default; 0 = box first, as
        math-verify's own tests use).
    gold_wrap: "auto" wraps the gold in `$…$` unless it already contains `$`, `\\(` or `\\[`
        (README guidance: the gold is LaTeX, so put it in a LaTeX environment); "always"/"never".
    pred_wrap: wrap the prediction in `$…$` too. Only meaningful for bare answer strings; it is
        the convention of the seed-001 audit (Table 8). Full responses must not be wrapped.
    float_rounding, numeric_precision, strict, allow_set_relation_comp: passed to `verify`.
    """

    extraction: Extraction = "latex+expr"
    boxed_match_priority: int = 50
    gold_wrap: GoldWrap = "auto"
    pred_wrap: bool = False
    float_rounding: int = 6
    numeric_precision: int = 15
    strict: bool = True
    allow_set_relation_comp: bool = False


def _extraction_configs(config: MathVerifyConfig) -> list[Any]:
    latex = LatexExtractionConfig(boxed_match_priority=config.boxed_match_priority)
    if config.extraction == "latex+expr":
        return [latex, ExprExtractionConfig()]
    if config.extraction == "expr":
        return [ExprExtractionConfig()]
    if config.extraction == "latex":
        return [latex]
    raise ValueError(f"unknown extraction {config.extraction!r}")


def _wrap_gold(gold: str, mode: GoldWrap) -> str:
    if mode == "never" or (mode == "auto" and _GOLD_HAS_DELIMITER.search(gold)):
        return gold
    return "$" + gold + "$"


def _split_parsed(parsed: list[Any]) -> tuple[Any | None, str | None]:
    """parse() returns [sympy_obj, matched_str], [matched_str] (nothing converted) or []."""
    obj = next((p for p in parsed if not isinstance(p, str)), None)
    text = next((p for p in parsed if isinstance(p, str)), None)
    return obj, text


class MathVerifyReader(Reader):
    """math-verify 0.9.0 `verify(parse(gold), parse(response))` under a declared convention."""

    name = "math-verify-latex"
    version = f"1.0+mv{MATH_VERIFY_VERSION}"
    kind = "rule"
    contract = frozenset({"boxed", "plain_number", "latex", "units", "percent", "sets_intervals"})
    upstream = (
        f"math-verify {MATH_VERIFY_VERSION} (latex2sympy2_extended {LATEX2SYMPY_VERSION}, "
        f"antlr4-python3-runtime {ANTLR_VERSION}, sympy {SYMPY_VERSION}): "
        "verify(parse('$'+gold+'$'), parse(response)) with [LatexExtractionConfig(), "
        "ExprExtractionConfig()] (a gold already holding $, \\( or \\[ is not re-wrapped), "
        "library defaults otherwise; internal timeouts disabled"
    )
    Config = MathVerifyConfig

    def __init__(self, config: MathVerifyConfig | None = None, *, name: str | None = None,
                 contract: frozenset[str] | None = None, upstream: str | None = None) -> None:
        super().__init__(config, name=name, contract=contract, upstream=upstream)
        # LatexExtractionConfig is a frozen, hashable dataclass; math-verify caches its compiled
        # regexes per config object (lru_cache), so build the list once per reader.
        self._configs = _extraction_configs(self.config)

    def _parse(self, text: str) -> list[Any]:
        return parse(text, extraction_config=self._configs, parsing_timeout=_MV_TIMEOUT)

    def read(self, item: Item) -> Reading:
        cfg: MathVerifyConfig = self.config
        detail: dict[str, Any] = {}
        if item.is_multiple_choice:
            # math-verify has no option-letter contract (it needs StringExtractionConfig, which is
            # not part of this convention); we report what it returns and say so.
            detail["out_of_contract"] = "multiple-choice item: math-verify reads no option letters"

        gold_parsed = self._parse(_wrap_gold(item.gold, cfg.gold_wrap))
        response = "$" + item.response + "$" if cfg.pred_wrap else item.response
        pred_parsed = self._parse(response)

        gold_obj, gold_text = _split_parsed(gold_parsed)
        pred_obj, pred_text = _split_parsed(pred_parsed)
        detail["gold_normalized"] = _cap(str(gold_obj)) if gold_obj is not None else _cap(gold_text)
        answer = _cap(pred_text)
        normalized = _cap(str(pred_obj)) if pred_obj is not None else None

        if not pred_parsed:
            return Reading("no_answer", detail=detail)
        if not gold_parsed:
            # verify() is False against an empty gold, and seed 001 counts that as a rejection
            # (math-verify "returns verdicts on 100% of inputs"), so the verdict stays "incorrect";
            # the flag lets the platform tell a reader that cannot read the gold from a wrong answer.
            detail["gold_unparsed"] = True

        # Reproduces verify(gold_list, pred_list) = any(pair for pair in product) pair by pair,
        # with raise_on_error=True so that resource exhaustion is visible: upstream turns a
        # MemoryError (our RLIMIT_AS cap) into False, i.e. a fake "incorrect". Every other
        # exception is swallowed exactly as upstream does (False for that pair, next pair).
        resource_error: str | None = None
        swallowed: list[str] = []
        for g in gold_parsed:
            for t in pred_parsed:
                try:
                    ok = verify(
                        g, t,
                        float_rounding=cfg.float_rounding,
                        numeric_precision=cfg.numeric_precision,
                        strict=cfg.strict,
                        allow_set_relation_comp=cfg.allow_set_relation_comp,
                        timeout_seconds=_MV_TIMEOUT,
                        raise_on_error=True,
                    )
                except (MemoryError, RecursionError) as exc:
                    resource_error = f"{type(exc).__name__} during verify"
                    ok = False
                except Exception as exc:  # noqa: BLE001 - upstream semantics: pair counts False
                    swallowed.append(type(exc).__name__)
                    ok = False
                if ok:
                    if swallowed:
                        detail["swallowed"] = swallowed
                    return Reading("correct", answer=answer, normalized=normalized, detail=detail)
        if swallowed:
            detail["swallowed"] = swallowed
        if resource_error is not None:
            detail["error"] = resource_error
            return Reading("error", answer=answer, normalized=normalized, detail=detail)
        return Reading("incorrect", answer=answer, normalized=normalized, detail=detail)


# ---------------------------------------------------------------------------------------------
# Hendrycks MATH is_equiv / strip_string
# ---------------------------------------------------------------------------------------------
# Port of hendrycks/math modeling/math_equivalence.py @ 08e65fc4 (the original). The lm-eval
# port (lm_eval/tasks/hendrycks_math/utils.py) differs in two places, both selectable:
#   percent: lm-eval deletes "\%" twice and keeps a bare "%" (its second replace is the literal
#            "\%", the same two characters), so "50%" != "50" there.
#   slash:   lm-eval's fix_a_slash_b catches only AssertionError, so "x/2" (int("x") raises
#            ValueError) aborts strip_string and is_equiv falls back to raw str1 == str2.

PercentMode = Literal["hendrycks", "lm-eval"]
SlashMode = Literal["hendrycks", "lm-eval"]


def _fix_fracs(string: str) -> str:
    substrs = string.split("\\frac")
    new_str = substrs[0]
    if len(substrs) > 1:
        substrs = substrs[1:]
        for substr in substrs:
            new_str += "\\frac"
            # Upstream indexes substr[0] outside its try: "\frac" at the very end raises
            # IndexError, which is_equiv turns into raw equality. Kept on purpose.
            if substr[0] == "{":
                new_str += substr
            else:
                if len(substr) < 2:
                    return string
                a = substr[0]
                b = substr[1]
                if b != "{":
                    if len(substr) > 2:
                        post_substr = substr[2:]
                        new_str += "{" + a + "}{" + b + "}" + post_substr
                    else:
                        new_str += "{" + a + "}{" + b + "}"
                else:
                    if len(substr) > 2:
                        post_substr = substr[2:]
                        new_str += "{" + a + "}" + b + post_substr
                    else:
                        new_str += "{" + a + "}" + b
    return new_str


def _fix_a_slash_b(string: str, slash: SlashMode) -> str:
    if len(string.split("/")) != 2:
        return string
    a_str, b_str = string.split("/")
    try:
        a = int(a_str)
        b = int(b_str)
    except ValueError:
        if slash == "lm-eval":
            raise  # lm-eval: escapes to is_equiv -> raw equality
        return string
    if string != "{}/{}".format(a, b):
        return string
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


class _UnitsSplitError(ValueError):
    """Upstream `assert len(splits) == 2` in _remove_right_units."""


def _remove_right_units(string: str) -> str:
    # "\\text{ " only ever occurs (at least in the val set) when describing units
    if "\\text{ " in string:
        splits = string.split("\\text{ ")
        if len(splits) != 2:
            raise _UnitsSplitError("more than one '\\text{ ' in the string")
        return splits[0]
    return string


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    splits = string.split("\\sqrt")
    new_string = splits[0]
    for split in splits[1:]:
        # split[0] raises IndexError on a trailing "\sqrt" exactly like upstream.
        if split[0] != "{":
            a = split[0]
            new_substr = "\\sqrt{" + a + "}" + split[1:]
        else:
            new_substr = "\\sqrt" + split
        new_string += new_substr
    return new_string


def strip_string(string: str, *, percent: PercentMode = "hendrycks", slash: SlashMode = "hendrycks") -> str:
    """Hendrycks `_strip_string`. May raise, exactly where upstream raises; use `is_equiv`."""
    string = string.replace("\n", "")
    string = string.replace("\\!", "")
    string = string.replace("\\\\", "\\")
    string = string.replace("tfrac", "frac")
    string = string.replace("dfrac", "frac")
    string = string.replace("\\left", "")
    string = string.replace("\\right", "")
    string = string.replace("^{\\circ}", "")
    string = string.replace("^\\circ", "")
    string = string.replace("\\$", "")
    string = _remove_right_units(string)
    string = string.replace("\\%", "")
    if percent == "hendrycks":
        string = string.replace("%", "")
    # percent == "lm-eval": upstream's second replace is "\%" again, i.e. a no-op.
    string = string.replace(" .", " 0.")
    string = string.replace("{.", "{0.")
    if len(string) == 0:
        return string
    if string[0] == ".":
        string = "0" + string
    if len(string.split("=")) == 2:
        if len(string.split("=")[0]) <= 2:
            string = string.split("=")[1]
    string = _fix_sqrt(string)
    string = string.replace(" ", "")
    string = _fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    string = _fix_a_slash_b(string, slash)
    return string


def is_equiv(str1: str | None, str2: str | None, *, percent: PercentMode = "hendrycks",
             slash: SlashMode = "hendrycks") -> bool:
    """Hendrycks `is_equiv` (no print on double None)."""
    if str1 is None and str2 is None:
        return True
    if str1 is None or str2 is None:
        return False
    try:
        return strip_string(str1, percent=percent, slash=slash) == strip_string(str2, percent=percent, slash=slash)
    except Exception:  # noqa: BLE001 - upstream: bare except -> raw equality
        return str1 == str2


def last_boxed_only_string(string: str) -> tuple[str, int] | None:
    """lm-eval `last_boxed_only_string`, also returning where the returned string starts.

    Upstream quirk kept: if "\\boxed " (with a space) occurs anywhere, the text after its LAST
    occurrence up to the next "$" wins, even when a later "\\boxed{...}" exists.
    """
    if "\\boxed " in string:
        start = string.rfind("\\boxed ")
        return "\\boxed " + string[start + len("\\boxed "):].split("$")[0], start
    idx = string.rfind("\\boxed")
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    i = idx
    depth = 0
    while i < len(string):
        ch = string[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return string[idx:i + 1], idx
        i += 1
    return None


def _unbox(s: str) -> tuple[str, int]:
    """(content, prefix length) of a string returned by last_boxed_only_string."""
    if s.startswith("\\boxed "):
        return s[len("\\boxed "):], len("\\boxed ")
    for left in ("\\boxed{", "\\fbox{"):
        if s.startswith(left) and s.endswith("}"):
            return s[len(left):-1], len(left)
    raise ValueError(f"not a box: {s[:40]!r}")


def remove_boxed(s: str) -> str:
    """lm-eval `remove_boxed`, extended to "\\fbox{…}".

    Upstream asserts the "\\boxed{" prefix, so a response whose last box is "\\fbox{…}" crashes
    lm-eval's process_results; we unwrap it instead (documented departure).
    """
    return _unbox(s)[0]


def extract_boxed(response: str) -> tuple[str, tuple[int, int]] | None:
    """Content of the last balanced box and its [start, end) span in `response`, or None."""
    found = last_boxed_only_string(response)
    if found is None:
        return None
    boxed, start = found
    try:
        content, prefix = _unbox(boxed)
    except ValueError:
        return None
    return content, (start + prefix, start + prefix + len(content))


@dataclass(frozen=True)
class StripStringConfig:
    """percent/slash: which port's behaviour to reproduce (see module comments)."""

    percent: PercentMode = "hendrycks"
    slash: SlashMode = "hendrycks"


class StripStringReader(Reader):
    """Hendrycks MATH `is_equiv` on the last boxed answer (or the whole stripped response)."""

    name = "strip-string"
    version = "1.0"
    kind = "rule"
    # Seed 001 scores strip-string on plain numbers and LaTeX strings (sets and unreduced
    # fractions are out of its contract). We add "boxed" because this reader, unlike the bare
    # normaliser the audit ran, extracts the last \boxed{} itself, and "percent" because the
    # original deletes every % sign (so "50\%" == "50" by design).
    contract = frozenset({"boxed", "plain_number", "latex", "percent"})
    upstream = (
        "hendrycks/math modeling/math_equivalence.py @ 08e65fc48dee2821625f466674f6abffc754e334 "
        "(_strip_string + is_equiv, bare % deleted); prediction = lm-eval "
        "last_boxed_only_string/remove_boxed, else the whole response stripped"
    )
    Config = StripStringConfig

    def _normalize(self, s: str) -> str | None:
        try:
            return strip_string(s, percent=self.config.percent, slash=self.config.slash)
        except Exception:  # noqa: BLE001 - upstream falls back to raw equality
            return None

    def read(self, item: Item) -> Reading:
        cfg: StripStringConfig = self.config
        detail: dict[str, Any] = {}
        boxed = extract_boxed(item.response)
        if boxed is not None:
            answer, span = boxed
            detail["extraction"] = "last_boxed"
        else:
            # No box: the seed-001 audit feeds bare answer strings to is_equiv; we do the same with
            # the whole response (stripped). On a chain of thought this is almost always wrong,
            # which is what the upstream normaliser would say too.
            stripped = item.response.strip()
            lead = len(item.response) - len(item.response.lstrip())
            answer, span = stripped, (lead, lead + len(stripped))
            detail["extraction"] = "whole_response"
        if item.is_multiple_choice:
            detail["out_of_contract"] = "multiple-choice item: strip-string compares strings only"
        if not answer.strip():
            return Reading("no_answer", detail=detail)

        gold = item.gold
        gold_box = extract_boxed(gold) if ("\\boxed" in gold or "\\fbox" in gold) else None
        if gold_box is not None:
            gold = gold_box[0]
        normalized = self._normalize(answer)
        gold_norm = self._normalize(gold)
        if normalized is None or gold_norm is None:
            detail["fallback"] = "strip_string raised; raw string equality (upstream behaviour)"
        detail["gold_normalized"] = _cap(gold_norm)
        ok = is_equiv(answer, gold, percent=cfg.percent, slash=cfg.slash)
        return Reading("correct" if ok else "incorrect", answer=_cap(answer), normalized=_cap(normalized),
                       span=span, detail=detail)


# ---------------------------------------------------------------------------------------------
# seed-001 reference SymPy cascade
# ---------------------------------------------------------------------------------------------
# exact string (stripped) -> numeric (float() or a SymPy-evaluated number; |a-b| <= rel_tol*|gold|)
# -> symbolic simplify(parse_expr(a) - parse_expr(b)) == 0. Anything it cannot parse is an
# execution failure (verdict "error"), which is what gives it 87.3% coverage in seed 001.
#
# parse_expr runs eval(). On model output that is remote code execution ("__import__('os')…"),
# so we validate the token stream first and evaluate in a namespace without builtins. Both
# only reject strings parse_expr could not turn into a comparable number/expression anyway
# (strings, attribute access, keywords, brackets/braces, comparisons), with one deliberate
# difference: names outside _SAFE_NAMES become Symbols (default parse_expr would resolve any
# name in `from sympy import *`, e.g. "N" -> the function N, "Q" -> the assumptions object).

_SAFE_NAMES: tuple[str, ...] = (
    # emitted by the standard transformations
    "Integer", "Float", "Rational", "Symbol", "Function", "factorial", "factorial2",
    # constants and functions a maths answer plausibly uses
    "pi", "E", "I", "oo", "zoo", "nan", "sqrt", "cbrt", "root", "exp", "log", "ln",
    "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "acot", "asec", "acsc",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "Abs", "sign", "floor", "ceiling",
    "binomial", "gamma", "Min", "Max", "Mod", "re", "im", "conjugate", "gcd", "lcm",
)
_ALLOWED_OPS = frozenset({"+", "-", "*", "/", "**", "^", "(", ")", ",", "%", "!"})


def _safe_global_dict() -> dict[str, Any]:
    g: dict[str, Any] = {name: getattr(sympy, name) for name in _SAFE_NAMES}
    # eval() inserts the real builtins when the key is missing.
    g["__builtins__"] = {}
    return g


_SAFE_GLOBALS = _safe_global_dict()


class CascadeParseError(ValueError):
    pass


def _validate_tokens(s: str) -> None:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(s).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise CascadeParseError(f"tokenize: {exc}") from None
    for tok in tokens:
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.NUMBER):
            continue
        if tok.type == tokenize.NAME:
            if tok.string.startswith("_") or keyword.iskeyword(tok.string) or keyword.issoftkeyword(tok.string):
                raise CascadeParseError(f"name {tok.string!r} not allowed")
            continue
        # Python 3.11 tokenizes "!" (factorial notation) as ERRORTOKEN; 3.12 as OP.
        if tok.type == tokenize.OP or (tok.type == tokenize.ERRORTOKEN and tok.string == "!"):
            # "." as an operator is attribute access (a number keeps its dot inside NUMBER).
            if tok.string not in _ALLOWED_OPS:
                raise CascadeParseError(f"token {tok.string!r} not allowed")
            continue
        if tok.type == tokenize.ERRORTOKEN and tok.string.isspace():
            continue
        raise CascadeParseError(f"token {tok.string!r} not allowed")


def cascade_parse(s: str, *, convert_xor_: bool = False) -> Any:
    """`parse_expr(s)` with default (standard) transformations, behind the safety checks."""
    _validate_tokens(s)
    transformations = standard_transformations + ((convert_xor,) if convert_xor_ else ())
    try:
        return parse_expr(s, global_dict=dict(_SAFE_GLOBALS), transformations=transformations)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - any parse failure is the cascade's "error"
        raise CascadeParseError(f"parse_expr: {type(exc).__name__}: {exc}") from None


def _as_float(value: Any) -> float | None:
    """A real SymPy number as float, else None."""
    if not isinstance(value, sympy.Basic) or not getattr(value, "is_number", False):
        return None
    try:
        ev = value.evalf()
        if not ev.is_real:
            return None
        return float(ev)
    except (TypeError, ValueError, OverflowError):
        return None


def _as_exact(value: Any) -> Fraction | None:
    if isinstance(value, sympy.Rational):
        return Fraction(int(value.p), int(value.q))
    return None


IntegerMode = Literal["tolerance", "exact"]


@dataclass(frozen=True)
class CascadeConfig:
    """rel_tol: numeric step accepts |pred - gold| <= rel_tol * |gold| (non-strict, gold-relative;
    the reading that reproduces the seed-001 step at 10^4, see math-verify-probe.md §2).
    integers: "tolerance" (reference cascade) or "exact" (never accept two distinct numbers when
    either side is an integer; tolerance only between non-integers).
    convert_xor: read "^" as power. Off in the reference: parse_expr's default transformations
    read "2^3" as Python XOR (= 1).
    """

    rel_tol: float = 1e-4
    integers: IntegerMode = "tolerance"
    convert_xor: bool = False
    # The seed's cascade judges bare answer strings. On a stored response it first takes the last
    # \boxed{} (as strip-string and lm-eval's hendrycks_math do); with no box, the whole response
    # is the candidate, which the cascade can rarely parse (that is its coverage gap, kept).
    extract: Literal["last_boxed", "none"] = "last_boxed"


class SympyCascadeReader(Reader):
    """Seed-001 reference three-level cascade on the last boxed answer (else the whole response)."""

    name = "sympy-cascade"
    version = "1.0"
    kind = "rule"
    # Seed 001 scores the cascade on plain numbers, LaTeX strings and sets/intervals (its zero
    # coverage on sets and unreduced LaTeX fractions is counted against it); boxed answers and
    # scientific notation are out of its contract (it does no extraction).
    contract = frozenset({"plain_number", "latex", "sets_intervals"})
    upstream = (
        "seed 001 (arXiv:2609.01354) reference cascade: exact string -> numeric rel_tol 1e-4 "
        f"(|a-b| <= rel_tol*|gold|) -> simplify(parse_expr(a)-parse_expr(b)) == 0; sympy {SYMPY_VERSION}"
    )
    Config = CascadeConfig

    # -- numeric step ------------------------------------------------------------------------
    def _number(self, s: str, parsed: dict[str, Any]) -> tuple[float, Fraction | None] | None:
        """(float value, exact value or None) if `s` is a real number, else None."""
        try:
            f = float(s)
        except (ValueError, OverflowError):
            f = None
        if f is not None:
            try:
                exact: Fraction | None = Fraction(s.strip()) if math.isfinite(f) else None
            except (ValueError, ZeroDivisionError):
                exact = None
            return f, exact
        expr = self._parse(s, parsed)
        fv = _as_float(expr)
        if fv is None:
            return None
        return fv, _as_exact(expr)

    def _parse(self, s: str, parsed: dict[str, Any]) -> Any:
        if s not in parsed:
            try:
                parsed[s] = cascade_parse(s, convert_xor_=self.config.convert_xor)
            except CascadeParseError as exc:
                parsed[s] = exc
        return parsed[s]

    def _numeric_equal(self, gold: tuple[float, Fraction | None], pred: tuple[float, Fraction | None]) -> bool:
        cfg: CascadeConfig = self.config
        (gf, ge), (pf, pe) = gold, pred
        if cfg.integers == "exact":
            g_int = ge is not None and ge.denominator == 1
            p_int = pe is not None and pe.denominator == 1
            if g_int or p_int:
                if ge is not None and pe is not None:
                    return ge == pe
                return gf == pf
            if ge is not None and pe is not None:
                return abs(pe - ge) <= Fraction(cfg.rel_tol) * abs(ge)
        return abs(pf - gf) <= cfg.rel_tol * abs(gf)

    def read(self, item: Item) -> Reading:
        gold = item.gold.strip()
        detail: dict[str, Any] = {}
        if item.is_multiple_choice:
            detail["out_of_contract"] = "multiple-choice item: the cascade compares whole strings"
        boxed = extract_boxed(item.response) if self.config.extract == "last_boxed" else None
        if boxed is not None:
            content, (start, end) = boxed
            pred = content.strip()
            lead = len(content) - len(content.lstrip())
            span = (start + lead, start + lead + len(pred))
            detail["extraction"] = "last_boxed"
        else:
            pred = item.response.strip()
            lead = len(item.response) - len(item.response.lstrip())
            span = (lead, lead + len(pred))
        if not pred:
            return Reading("no_answer", detail=detail)
        answer = _cap(pred)

        # 1. exact string
        if pred == gold:
            detail["stage"] = "exact"
            return Reading("correct", answer=answer, normalized=answer, span=span, detail=detail)

        parsed: dict[str, Any] = {}
        # 2. numeric
        gnum = self._number(gold, parsed)
        pnum = self._number(pred, parsed) if gnum is not None else None
        if gnum is not None and pnum is not None:
            detail["stage"] = "numeric"
            detail["gold_normalized"] = repr(gnum[0])
            ok = self._numeric_equal(gnum, pnum)
            return Reading("correct" if ok else "incorrect", answer=answer, normalized=repr(pnum[0]),
                           span=span, detail=detail)

        # 3. symbolic
        detail["stage"] = "symbolic"
        g_expr = self._parse(gold, parsed)
        p_expr = self._parse(pred, parsed)
        for side, value in (("gold", g_expr), ("response", p_expr)):
            if isinstance(value, CascadeParseError):
                detail["error"] = f"{side}: {value}"[:500]
                return Reading("error", answer=answer, span=span, detail=detail)
        try:
            ok = sympy.simplify(p_expr - g_expr) == 0
        except (MemoryError, RecursionError):
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. tuple - tuple: the cascade cannot judge it
            detail["error"] = f"simplify: {type(exc).__name__}: {exc}"[:500]
            return Reading("error", answer=answer, span=span, detail=detail)
        detail["gold_normalized"] = _cap(str(g_expr))
        return Reading("correct" if ok else "incorrect", answer=answer, normalized=_cap(str(p_expr)),
                       span=span, detail=detail)


# ---------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------

_MV_EXPR_UPSTREAM = (
    f"math-verify {MATH_VERIFY_VERSION} (sympy {SYMPY_VERSION}): verify(parse(gold), "
    "parse(response)) with [ExprExtractionConfig()] only, library defaults otherwise; internal "
    "timeouts disabled"
)

register(
    "math-verify-latex",
    lambda: MathVerifyReader(MathVerifyConfig(extraction="latex+expr"), name="math-verify-latex"),
    "math-verify 0.9.0, library-default extraction (LaTeX + plain expressions); gold wrapped in $…$",
)
register(
    "math-verify-expr",
    lambda: MathVerifyReader(
        # Gold NOT wrapped: ExprExtractionConfig reads "$" as a currency sign and stops at the
        # first operator it cannot take, so "$1/2$" parses as 1 and "$12/36$" as 12 (probe §1,
        # expr-only column A vs B). Measured on math-verify's 270 verdict vectors: 121 agree
        # unwrapped, 91 wrapped. README guidance: plain gold -> ExprExtractionConfig, as is.
        MathVerifyConfig(extraction="expr", gold_wrap="never"), name="math-verify-expr",
        # Seed 001: LaTeX fractions, delimiters, sqrt, sets and unreduced fractions are out of
        # mv-expr's contract; it reads plain numbers and plain-text expressions only.
        contract=frozenset({"plain_number"}), upstream=_MV_EXPR_UPSTREAM,
    ),
    "math-verify 0.9.0, plain-expression extraction only (reads no LaTeX)",
)
register(
    "strip-string",
    lambda: StripStringReader(StripStringConfig(), name="strip-string"),
    "Hendrycks MATH is_equiv/_strip_string (original: bare % deleted) on the last \\boxed{}",
)
register(
    "strip-string-lm-eval",
    lambda: StripStringReader(
        StripStringConfig(percent="lm-eval", slash="lm-eval"), name="strip-string-lm-eval",
        contract=frozenset({"boxed", "plain_number", "latex"}),
        upstream=(
            "EleutherAI/lm-evaluation-harness lm_eval/tasks/hendrycks_math/utils.py (4e7e0d47) "
            "strip_string/is_equiv: bare % kept, non-integer a/b falls back to raw equality; "
            "prediction = last_boxed_only_string/remove_boxed, else the whole response stripped"
        ),
    ),
    "lm-eval's port of Hendrycks strip_string (keeps bare %) on the last \\boxed{}",
)
register(
    "sympy-cascade",
    lambda: SympyCascadeReader(CascadeConfig(), name="sympy-cascade"),
    "seed-001 reference cascade on the last \\boxed{}: exact -> numeric (rel 1e-4 of gold) -> sympy simplify; parse failure = error",
)
register(
    "sympy-cascade-magnitude-safe",
    lambda: SympyCascadeReader(
        CascadeConfig(integers="exact"), name="sympy-cascade-magnitude-safe",
        upstream=(
            "seed-001 reference cascade with one change: numbers are compared exactly when either "
            "side is an integer (no off-by-one acceptance at |gold| >= 10^4); rel_tol 1e-4 between "
            f"non-integers only; sympy {SYMPY_VERSION}"
        ),
    ),
    "sympy-cascade without the magnitude step: integers compared exactly",
)
