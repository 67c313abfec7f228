"""The transform suite: size, strata, classes, discarding, and certified value preservation."""

from __future__ import annotations

import re

import pytest
import sympy
from math_verify import LatexExtractionConfig, parse

from readers.audit.contracts import SEED_STRATA
from readers.audit.golds import GoldsError, load_golds
from readers.audit.transforms import (
    ADVERSARIAL,
    BY_NAME,
    CERTIFIED,
    CLASSES,
    CONTRACT_DEP,
    STRATA,
    TRANSFORMS,
    Transform,
    build_variants,
    gold_forms,
    number_value,
)
from readers.base import ANSWER_FORMS

# A deliberate pin, not an import of readers.audit.contracts.SEED_STRATA: the strata seed 001's findings are
# compared on (its S-strata, its Table 6 input classes, the adversarial probes) must stay in the suite even when
# the contract table is edited in the same change.
PINNED_STRATA = (
    {"fraction_display", "fraction_decimal", "delimiters", "math_mode", "whitespace_punct", "sqrt_exponent"}
    | {"grouping", "sets", "unreduced"}
    | {"boxing", "units", "text_prefix", "percent", "scientific"}
    | {"off_by_one", "sign_flip", "wrong_fraction", "dropped_term"}
)

NUMERIC_GOLDS = [
    "0",
    "7",
    "-3",
    "42",
    "9999",
    "10000",
    "123456",
    "65,960",
    "10,\\!080",
    "0.15",
    ".35625",
    "-2.5",
    "\\frac{3}{8}",
    "-\\frac{24}{25}",
    "\\frac 34",
    "\\frac14",
    "\\dfrac{17}{50}",
    "3/4",
    "3\\sqrt{2}",
    "\\sqrt{51}",
    "\\frac{\\sqrt{3}}{3}",
    "1+2\\sqrt{3}",
    "2\\pi",
    "11 \\sqrt{5} + 11",
    "-\\sqrt{3}",
    "18+2\\pi",
    "2^{10}",
    "\\frac{448}{15625}",
    "1\\frac{4}{5}",
    "288 \\pi",
]

_LATEX = [LatexExtractionConfig()]


def value(text: str):
    """The number a (possibly decorated) answer string denotes, via math-verify's LaTeX parser."""
    s = text.strip()
    if s.endswith("\\n") and not s.endswith("\\\\n"):
        s = s[:-2].strip()  # a newline as its escape sequence is whitespace, as trailing_escaped_newline claims
    if s.endswith("."):
        s = s[:-1].strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) > len(left) + len(right):
            s = s[len(left) : -len(right)].strip()
            break
    if s.endswith("."):
        s = s[:-1].strip()
    exact = number_value(s)
    if exact is not None:
        return sympy.Rational(exact.numerator, exact.denominator)
    s = s.replace("\\displaystyle", "").replace("\\bigl", "").replace("\\bigr", "")
    s = re.sub(r"\\mathbf\{(.*)\}", r"\1", s)
    if s.startswith("+"):
        s = s[1:]
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1]
    parsed = parse("$" + s + "$", extraction_config=_LATEX, parsing_timeout=None)
    objs = [p for p in parsed if not isinstance(p, str)]
    assert objs, f"cannot evaluate {text!r}"
    return objs[0]


def same(a, b) -> bool:
    return sympy.simplify(sympy.nsimplify(a) - sympy.nsimplify(b)) == 0


def test_suite_size_strata_and_classes():
    assert len(TRANSFORMS) >= 40
    assert len(STRATA) >= 12
    assert len(BY_NAME) == len(TRANSFORMS)
    assert {t.klass for t in TRANSFORMS} == set(CLASSES)
    for t in TRANSFORMS:
        assert t.forms <= set(ANSWER_FORMS), t.name
        assert t.description, t.name
    assert set(STRATA) >= PINNED_STRATA, PINNED_STRATA - set(STRATA)
    # and the pin covers every stratum the contract table maps to the seed
    assert {s for s, seed in SEED_STRATA.items() if seed} <= PINNED_STRATA
    # each class has real weight, and every stratum holds one class only
    counts = {c: sum(t.klass == c for t in TRANSFORMS) for c in CLASSES}
    assert counts[CERTIFIED] >= 30 and counts[CONTRACT_DEP] >= 10 and counts[ADVERSARIAL] >= 8
    for stratum in STRATA:
        assert len({t.klass for t in TRANSFORMS if t.stratum == stratum}) == 1, stratum


def test_contract_dependent_and_adversarial_strata_are_the_seeds():
    dep = {t.stratum for t in TRANSFORMS if t.klass == CONTRACT_DEP}
    assert {"boxing", "units", "text_prefix", "percent", "scientific"} <= dep
    adv = {t.stratum for t in TRANSFORMS if t.klass == ADVERSARIAL}
    assert {"off_by_one", "sign_flip", "wrong_fraction", "dropped_term"} <= adv
    assert BY_NAME["trailing_period"].klass == CERTIFIED and BY_NAME["trailing_newline"].klass == CERTIFIED
    assert BY_NAME["frac_to_dfrac"].apply("\\frac{1}{2}") == "\\dfrac{1}{2}"
    assert BY_NAME["frac_to_tfrac"].apply("\\frac{1}{2}") == "\\tfrac{1}{2}"
    assert BY_NAME["left_right"].apply("(1,2)") == "\\left(1,2\\right)"
    assert BY_NAME["dollar"].apply("42") == "$42$" and BY_NAME["paren_math"].apply("42") == "\\(42\\)"
    assert BY_NAME["trailing_period"].apply("42") == "42." and BY_NAME["trailing_newline"].apply("42") == "42\n"
    assert BY_NAME["set_reverse"].apply("\\{1,2\\}") == "\\{2, 1\\}"
    assert BY_NAME["frac_double"].apply("\\frac{1}{3}") == "\\frac{2}{6}"
    assert BY_NAME["answer_is"].apply("42") == "The answer is 42"
    assert BY_NAME["off_by_one_plus"].apply("10000") == "10001"
    assert BY_NAME["off_by_one_minus"].apply("65,960") == "65,959"
    assert BY_NAME["sign_flip"].apply("-7") == "7"
    assert BY_NAME["wrong_fraction"].apply("\\frac{3}{8}") == "\\frac{4}{8}"
    assert BY_NAME["dropped_term"].apply("1 \\pm \\sqrt{19}") == "1"


def test_empty_and_unchanged_outputs_are_discarded():
    empty = Transform("empty", "test", CERTIFIED, frozenset(), lambda g: "  ", "blank")
    none = Transform("none", "test", CERTIFIED, frozenset(), lambda g: None, "n/a")
    same_t = Transform("same", "test", CERTIFIED, frozenset(), lambda g: g, "unchanged")
    boom = Transform("boom", "test", CERTIFIED, frozenset(), lambda g: g[100], "raises IndexError")
    assert build_variants(["42", "\\frac{1}{2}"], [empty, none, same_t, boom]) == []
    # the identity baseline is the one transform allowed to leave the gold unchanged
    ident = build_variants(["42"], [BY_NAME["identity"]])
    assert [v.text for v in ident] == ["42"]
    # no suite transform produces an empty or unchanged (non-identity) variant on real-looking golds
    golds = [
        *NUMERIC_GOLDS,
        "(2,4)",
        "\\{1,2\\}",
        "\\text{Evelyn}",
        "p - q",
        "x^3+3x-6",
        "(3,4]",
        "3, 5, 7",
        "\\left( 3, \\frac{\\pi}{2} \\right)",
        "(0,9) \\cup (9,36)",
        "y = 2x + 3",
        "15\\mbox{ cm}^2",
    ]
    for v in build_variants(golds):
        assert v.text.strip(), v
        assert v.text != v.gold or v.transform.name == "identity", v


@pytest.mark.parametrize("gold", NUMERIC_GOLDS)
def test_certified_transforms_preserve_the_value(gold):
    expected = value(gold)
    checked = 0
    for v in build_variants([gold]):
        if v.klass != CERTIFIED:
            continue
        assert same(value(v.text), expected), f"{v.transform.name}: {gold!r} -> {v.text!r}"
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("gold", [g for g in NUMERIC_GOLDS if g != "0"])
def test_adversarial_transforms_change_the_value(gold):
    expected = value(gold)
    for v in build_variants([gold]):
        if v.klass == ADVERSARIAL and v.transform.name != "tuple_swap":
            assert not same(value(v.text), expected), f"{v.transform.name}: {gold!r} -> {v.text!r}"


def test_gold_forms():
    assert gold_forms("42") == {"plain_number"}
    assert gold_forms("65,960") == {"plain_number"}
    assert gold_forms("10,\\!080") == {"plain_number", "latex"}
    assert gold_forms("\\frac{1}{2}") == {"latex"}
    assert gold_forms("(2,4)") == {"sets_intervals"}
    assert gold_forms("\\{1,2\\}") == {"sets_intervals", "latex"}
    assert gold_forms("50\\%") >= {"percent"}
    assert "units" in gold_forms("15\\mbox{ cm}^2") and "units" in gold_forms("106^\\circ")
    assert "boxed" in gold_forms("\\boxed{3}")
    # a variant exercises its gold's forms plus the transform's
    v = {x.transform.name: x for x in build_variants(["42"])}
    assert v["boxed"].forms == {"plain_number", "boxed"}
    assert v["dollar"].forms == {"plain_number", "latex"}
    assert v["trailing_period"].forms == {"plain_number"}


def test_load_golds_text_and_jsonl(tmp_path):
    text = tmp_path / "golds.txt"
    text.write_text("42\n\n \\frac{1}{2} \n42\n{1,2}\n", encoding="utf-8")
    assert load_golds(text) == ["42", "\\frac{1}{2}", "{1,2}"]
    jl = tmp_path / "rows.jsonl"
    jl.write_text(
        '{"id": 1, "gold": "7"}\n{"id": 2, "gold": 12}\n\n{"id": 3, "gold": "A", "choices": ["x", "y"]}\n',
        encoding="utf-8",
    )
    assert load_golds(jl) == ["7", "12"]
    auto = tmp_path / "rows.txt"  # JSON objects are recognised without the extension
    auto.write_text('{"gold": "\\\\frac{1}{2}"}\n', encoding="utf-8")
    assert load_golds(auto) == ["\\frac{1}{2}"]


@pytest.mark.parametrize(
    "content, where, what",
    [
        ('{"gold": "1"}\n{"gold": "2"\n', "line 2", "not valid JSON"),
        ('{"gold": "1"}\n{"id": 3}\n', "line 2", "'gold': missing"),
        ('{"gold": "1"}\n{"gold": ["x"]}\n', "line 2", "must be a string or a number"),
        ('{"gold": "1"}\n{"gold": "  "}\n', "line 2", "must not be empty"),
        ("\n\n", "", "empty"),
    ],
)
def test_load_golds_errors_name_file_and_line(tmp_path, content, where, what):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(GoldsError) as err:
        load_golds(path)
    assert "bad.jsonl" in str(err.value) and where in str(err.value) and what in str(err.value)


def test_load_golds_bad_utf8_and_missing_file(tmp_path):
    path = tmp_path / "golds.txt"
    path.write_bytes(b"42\n\xff\xfe\n")
    with pytest.raises(GoldsError, match=r"golds.txt, line 2: not valid UTF-8"):
        load_golds(path)
    with pytest.raises(GoldsError, match="cannot open"):
        load_golds(tmp_path / "nope.txt")
