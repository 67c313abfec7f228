"""math-verify readers: `verify(parse(gold), parse(response))` under a declared calling convention
(math-verify 0.9.0), and the platform's two named configs, `math-verify-latex` and `math-verify-expr`.

No internal time budget (see `_MV_TIMEOUT`): readers.isolation gives every reading a hard one.
See docs/readers-math.md for calling conventions, contracts and measured departures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

from ..base import Item, Reader, Reading
from .common import ANTLR_VERSION, LATEX2SYMPY_VERSION, MATH_VERIFY_VERSION, SYMPY_VERSION, cap

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


def wrap_gold(gold: str, mode: GoldWrap) -> str:
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

    def __init__(
        self,
        config: MathVerifyConfig | None = None,
        *,
        name: str | None = None,
        contract: frozenset[str] | None = None,
        upstream: str | None = None,
    ) -> None:
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

        gold_parsed = self._parse(wrap_gold(item.gold, cfg.gold_wrap))
        response = "$" + item.response + "$" if cfg.pred_wrap else item.response
        pred_parsed = self._parse(response)

        gold_obj, gold_text = _split_parsed(gold_parsed)
        pred_obj, pred_text = _split_parsed(pred_parsed)
        detail["gold_normalized"] = cap(str(gold_obj)) if gold_obj is not None else cap(gold_text)
        answer = cap(pred_text)
        normalized = cap(str(pred_obj)) if pred_obj is not None else None

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
                        g,
                        t,
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
# named configs
# ---------------------------------------------------------------------------------------------

MV_EXPR_UPSTREAM = (
    f"math-verify {MATH_VERIFY_VERSION} (sympy {SYMPY_VERSION}): verify(parse(gold), "
    "parse(response)) with [ExprExtractionConfig()] only, library defaults otherwise; internal "
    "timeouts disabled"
)


def math_verify_latex() -> MathVerifyReader:
    return MathVerifyReader(MathVerifyConfig(extraction="latex+expr"), name="math-verify-latex")


def math_verify_expr() -> MathVerifyReader:
    return MathVerifyReader(
        # Gold NOT wrapped: ExprExtractionConfig reads "$" as a currency sign and stops at the
        # first operator it cannot take, so "$1/2$" parses as 1 and "$12/36$" as 12 (probe §1,
        # expr-only column A vs B). Measured on math-verify's 270 verdict vectors: 121 agree
        # unwrapped, 91 wrapped. README guidance: plain gold -> ExprExtractionConfig, as is.
        MathVerifyConfig(extraction="expr", gold_wrap="never"),
        name="math-verify-expr",
        # Seed 001: LaTeX fractions, delimiters, sqrt, sets and unreduced fractions are out of
        # mv-expr's contract; it reads plain numbers and plain-text expressions only.
        contract=frozenset({"plain_number"}),
        upstream=MV_EXPR_UPSTREAM,
    )
