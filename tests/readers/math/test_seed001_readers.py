"""Seed 001's four verifiers under seed 001's conventions (readers.math.seed001), read in-process."""

from __future__ import annotations

import pytest

from readers import registry
from readers.base import Item
from readers.math.seed001 import deepseek_strip_string, seed_cascade_clean

V1, V2, V3, V4 = (
    "math-verify-expr-seed001",
    "math-verify-latex-seed001",
    "strip-string-deepseek",
    "sympy-cascade-seed001",
)


def verdict(reader: str, gold: str, response: str) -> str:
    return registry.get(reader).read(Item(response=response, gold=gold)).verdict


def accepted(reader: str, gold: str, response: str) -> bool:
    return verdict(reader, gold, response) == "correct"


@pytest.mark.parametrize(
    "gold, variant, rejected_by, accepted_by",
    [
        # seed 001 Table 8, rows 1, 3, 4, 5: the verifiers it names reject, the others accept
        ("\\frac{1}{2}", "\\frac{1}{2}.", (V2, V1), (V3, V4)),
        ("\\frac{1}{2}", "\\dfrac{1}{2}", (V1,), (V2, V3)),
        ("(a+5)(b+2)", "\\left(a+5\\right)\\left(b+2\\right)", (V1,), (V2, V3)),
        ("3\\pm\\sqrt{2}", "3\\,\\pm\\,\\sqrt{2}", (V3,), (V1, V2)),
    ],
)
def test_table_8_pairs_go_the_seeds_way(gold, variant, rejected_by, accepted_by):
    for reader in rejected_by:
        assert not accepted(reader, gold, variant), reader
    for reader in accepted_by:
        assert accepted(reader, gold, variant), reader


def test_the_expression_itself_is_accepted_where_its_period_is_not():
    assert accepted(V2, "\\frac{1}{2}", "\\frac{1}{2}")
    assert not accepted(V2, "\\frac{1}{2}", "\\frac{1}{2}.")


def test_table_8_newline_row_as_an_escaped_newline_goes_the_seeds_way():
    # Row 2 prints its variant as backslash + n. Read that way, both verifiers it names reject it.
    assert not accepted(V1, "\\frac{1}{2}", "\\frac{1}{2}\\n")
    assert not accepted(V2, "\\frac{1}{2}", "\\frac{1}{2}\\n")
    # Our own reader takes a lone escaped newline for the whitespace it stands for.
    assert accepted("fixed", "\\frac{1}{2}", "\\frac{1}{2}\\n")
    assert accepted("fixed", "\\nu", "\\nu\\n") and not accepted("fixed", "\\nu", "\\nu\\neq")


def test_table_8_newline_row_as_a_real_newline_only_partly_reproduces():
    # mv-expr rejects it (it reads no LaTeX), as in the seed; mv-latex accepts this exact pair because
    # its bare-\frac fallback pattern still finds \frac{1}{2} once the newline has broken `$…$`.
    # On any other LaTeX gold the newline inside math mode does cost mv-latex the verdict.
    assert not accepted(V1, "\\frac{1}{2}", "\\frac{1}{2}\n")
    assert accepted(V2, "\\frac{1}{2}", "\\frac{1}{2}\n")
    assert accepted(V2, "3\\sqrt{2}", "3\\sqrt{2}")
    assert not accepted(V2, "3\\sqrt{2}", "3\\sqrt{2}\n")


def test_math_verify_seed_convention_does_not_rewrap_delimited_strings():
    assert accepted(V2, "\\frac{3}{4}", "\\[\\frac{3}{4}\\]")
    assert accepted(V2, "\\frac{3}{4}", "$\\frac{3}{4}$")
    assert not accepted(V2, "\\frac{3}{4}", "$\\frac{3}{4}.$")


@pytest.mark.parametrize(
    "raw, normalised",
    [
        ("50\\%", "50%"),  # \% -> %, a bare % kept
        ("5\\text{ cm}", "5"),  # trailing \text{} unit dropped
        ("\\text{(A)}", "(A)"),  # whole-string \text{} unwrapped
        ("x\\in[1,2)", "[1,2)"),
        ("2.000", "2"),
        ("1.50", "1.50"),
        ("\\sqrt2", "\\sqrt{2}"),
        ("\\frac12", "\\frac{1}{2}"),
        ("3/4", "\\frac{3}{4}"),
        ("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}"),
        ("42.", "42"),
        ("1,2,", "1,2"),
        ("3t", "3"),
        ("3j", "3i"),
        ("inf", "\\infty"),
        ("10 p.m.", "10p.m"),  # the trailing period goes first, so the p.m. rule misses
        ("'a'", "'a'"),  # upstream's quote removal discards its result
        ("\\mathbf{42}", "{42}"),
        ("3\\,\\pm\\,\\sqrt{2}", "3\\,\\pm\\,\\sqrt{2}"),  # \, is kept
    ],
)
def test_deepseek_strip_string_steps(raw, normalised):
    assert deepseek_strip_string(raw) == normalised


def test_strip_string_deepseek_extracts_nothing():
    assert not accepted(V3, "42", "\\boxed{42}")  # seed Table 6: 0 % on boxed answers
    assert not accepted(V3, "50", "50\\%")  # and on percent
    assert not accepted(V3, "5", "x = 5")  # the k = prefix rule is commented out upstream
    assert accepted(V3, "\\frac{1}{2}", "\\dfrac{1}{2}\n")
    assert verdict(V3, "42", "   ") == "no_answer"


def test_seed_cascade_peels_delimiters_and_gives_no_verdict_on_boxes():
    assert seed_cascade_clean("  $$\\frac{1}{2}$$. \n") == "\\frac{1}{2}"
    assert seed_cascade_clean("\\(3\\)") == "3"
    assert seed_cascade_clean("\\$5") == "\\$5"  # a currency sign is not a delimiter
    assert accepted(V4, "42", "$42$")
    assert accepted(V4, "42", "42.")
    assert verdict(V4, "42", "\\boxed{42}") == "error"
    assert verdict(V4, "\\frac{1}{2}", "\\frac{1}{2}.") == "correct"  # exact string once cleaned


def test_seed_cascade_keeps_the_step_at_ten_thousand():
    assert verdict(V4, "9999", "10000") == "incorrect"
    assert verdict(V4, "10000", "10001") == "correct"
    assert verdict(V4, "123456", "123457") == "correct"
    for reader in (V1, V2, V3):
        assert verdict(reader, "10000", "10001") == "incorrect"


def test_seed_readers_declare_identity_apart_from_ours():
    for seed, ours in (
        (V2, "math-verify-latex"),
        (V1, "math-verify-expr"),
        (V3, "strip-string"),
        (V4, "sympy-cascade"),
    ):
        a, b = registry.get(seed), registry.get(ours)
        assert a.config_hash != b.config_hash and a.upstream != b.upstream
        assert "seed 001" in a.upstream or "DeepSeek" in a.upstream
