"""Seed 002's GSM8K variants of instructed-format and answer-is-correct (readers/mc/seed002.py).
Pure Python: runs with `-p no:django`. The GSM8K measurement skips when ../shared/data is absent."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readers import registry
from readers.base import Item, Reading
from readers.mc.lm_eval import regex_filter
from readers.mc.seed002 import (
    SEED002_GSM8K_ANSWER_IS_CORRECT,
    SEED002_GSM8K_ANSWER_IS_CORRECT_ALTERNATIVES,
)

GSM8K = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "gsm8k"
AIC = "answer-is-correct-gsm8k"
INSTRUCTED = "instructed-format-gsm8k"


def read(name: str, response: str, gold: str = "18") -> Reading:
    return registry.get(name).read(Item(response=response, gold=gold))


def test_both_are_registered_with_a_version_and_their_own_config_hash() -> None:
    aic, ins = registry.get(AIC), registry.get(INSTRUCTED)
    assert (aic.version, ins.version) == ("1.0", "1.0")
    assert aic.config_hash != ins.config_hash
    assert aic.config_hash != registry.get("answer-is-correct").config_hash
    assert "plain_number" in aic.contract and {"plain_number", "boxed"} <= ins.contract


def test_the_mc_readers_still_refuse_numeric_golds_and_the_variants_read_them() -> None:
    text = "So she makes 9 * 2 = 18 dollars. The answer is 18."
    assert read("answer-is-correct", text).verdict == "error"
    assert read(AIC, text).verdict == "correct"


@pytest.mark.parametrize(
    "text, gold",
    [
        ("The answer is $1,234.", "1234"),  # dollar, thousands comma, trailing period
        ("The answer is \\$1,234", "1,234"),  # LaTeX-escaped dollar; gold with a comma
        ("**Answer:** 42", "42"),
        ("Answer: **42**", "42"),
        ("The correct answer is -3.", "-3"),
        ("So 7.5 is the answer", "7.5"),
        ("I think 250 should be the answer.", "250"),
        ("The answer should be 60", "60"),
        ("answer is $18$.", "18"),
    ],
)
def test_answer_is_correct_gsm8k_reads_the_number_in_each_phrasing(text: str, gold: str) -> None:
    assert read(AIC, text, gold).verdict == "correct"


def test_answer_is_correct_gsm8k_takes_the_last_statement_after_self_correction() -> None:
    reading = read(AIC, "The answer is 16. Wait, 3 eggs are eaten. The answer is 13.", gold="13")
    assert (reading.verdict, reading.answer, reading.normalized) == ("correct", "13.", "13")


def test_answer_is_correct_gsm8k_span_points_at_the_number() -> None:
    text = "Therefore the answer is $2,500 in total."
    reading = read(AIC, text, gold="2500")
    assert text[reading.span[0] : reading.span[1]] == "$2,500"


def test_gsm8k_normalisation_strips_only_dollar_comma_and_trailing_period() -> None:
    # As lm-eval's gsm8k exact_match: 18.00 is not 18, and a unit word is not read at all.
    assert read(AIC, "The answer is 18.00", gold="18").verdict == "incorrect"
    assert read(AIC, "The answer is eighteen.", gold="18").verdict == "no_answer"


def test_a_number_inside_a_longer_number_is_not_read_from_its_middle() -> None:
    reading = read(AIC, "x = 118 is correct", gold="18")
    assert (reading.verdict, reading.answer) == ("incorrect", "118")


def test_gold_in_gsm8k_solution_form_is_read_after_the_hashes() -> None:
    gold = "She has 16 - 3 - 4 = <<16-3-4=9>>9 eggs.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18"
    assert read(AIC, "The answer is 18", gold=gold).verdict == "correct"
    assert read(INSTRUCTED, "\\boxed{18}", gold=gold).verdict == "correct"


def test_a_gold_that_is_not_a_number_is_a_data_error() -> None:
    reading = read(AIC, "The answer is 18", gold="B")
    assert reading.verdict == "error" and "not a number" in reading.detail["reason"]


def test_instructed_format_gsm8k_reads_the_last_box_holding_only_a_number() -> None:
    text = "First guess \\boxed{16}. Correction: \\boxed{ \\$1,800. }"
    reading = read(INSTRUCTED, text, gold="1800")
    assert (reading.verdict, reading.normalized) == ("correct", "1800")


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 18.",  # not the instructed format
        "\\boxed{18 \\text{ dollars}}",  # a deviation: the method is strict
        "\\boxed{\\frac{36}{2}}",
        '"answer": "18"',  # the MC JSON field is not the maths instruction
    ],
)
def test_instructed_format_gsm8k_is_strict(text: str) -> None:
    assert read(INSTRUCTED, text).verdict == "no_answer"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "answer",
                "Answer",
                "correct answer",
                " is ",
                " is correct",
                " is the correct",
                " is the answer",
                " should be the answer",
                " should be ",
                ":",
                "**",
                " ",
                "\n",
                "$",
                "\\$",
                ",",
                ".",
                "-",
                "1",
                "23",
                "4,5",
                "6.7",
                "x",
            ]
        ),
        max_size=14,
    ).map("".join)
)
def test_factored_pattern_reads_exactly_what_the_eleven_alternatives_read(text: str) -> None:
    factored = regex_filter(text, SEED002_GSM8K_ANSWER_IS_CORRECT, -1)
    literal = regex_filter(text, SEED002_GSM8K_ANSWER_IS_CORRECT_ALTERNATIVES, -1)
    assert (factored.value, factored.matched, factored.span) == (literal.value, literal.matched, literal.span)


# --------------------------------------------------------------------------------------------
# GSM8K test set with OpenAI's released GPT-3 solutions (../shared/data/gsm8k)
# --------------------------------------------------------------------------------------------

_ANSWER_LINE = re.compile(r"^A:[ \t]*(.*?)[ \t]*$", re.M)
KEYS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def gsm8k_rows() -> list[tuple[str, str, bool]]:
    """(solution, gold solution, released is_correct) for all 5,276 solutions."""
    if not GSM8K.exists():
        pytest.skip(f"shared data not available: {GSM8K}")
    with open(GSM8K / "test.jsonl", encoding="utf-8") as f:
        golds = [json.loads(line)["answer"] for line in f if line.strip()]
    with open(GSM8K / "example_model_solutions.jsonl", encoding="utf-8") as f:
        sols = [json.loads(line) for line in f if line.strip()]
    return [
        (row[k]["solution"], gold, bool(row[k]["is_correct"]))
        for gold, row in zip(golds, sols, strict=True)
        for k in KEYS
    ]


def agreement(name: str, restyle: Callable[[str], str] | None = None) -> tuple[int, int, Counter]:
    reader = registry.get(name)
    agree, verdicts = 0, Counter()
    rows = gsm8k_rows()
    for solution, gold, is_correct in rows:
        if restyle is not None:
            lines = list(_ANSWER_LINE.finditer(solution))
            if lines:
                m = lines[-1]
                solution = solution[: m.start()] + restyle(m.group(1)) + solution[m.end() :]
        verdict = reader.read(Item(response=solution, gold=gold)).verdict
        verdicts[verdict] += 1
        # Seed 002 scores an answer it cannot find as wrong.
        agree += (verdict == "correct") == is_correct
    return agree, len(rows), verdicts


@pytest.mark.parametrize("name", [AIC, INSTRUCTED])
def test_released_solutions_as_written_are_in_neither_format(name: str) -> None:
    # The GPT-3 solutions end "A: <number>", which is neither "answer is N" nor \boxed{N}: nothing
    # is read, and agreement with is_correct is exactly the share of solutions released as wrong.
    agree, n, verdicts = agreement(name)
    assert verdicts == Counter({"no_answer": n})
    assert (agree, n) == (3275, 5276)


@pytest.mark.parametrize(
    "name, restyle",
    [
        (AIC, lambda number: f"The answer is {number}."),
        (INSTRUCTED, lambda number: f"\\boxed{{{number}}}"),
    ],
)
def test_released_answers_in_each_readers_format_agree_with_is_correct(name: str, restyle) -> None:
    # The final "A: N" line rewritten into the reader's format, N kept as written (28 carry
    # thousands commas): the number handling then agrees with the released labels on every solution.
    agree, n, verdicts = agreement(name, restyle)
    assert (agree, n) == (5276, 5276)
    assert verdicts["correct"] == 2001
