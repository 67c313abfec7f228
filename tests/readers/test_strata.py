"""readers.strata: the response format, gold type and model family the judge-bias card breaks a
judge's bias down by."""

from __future__ import annotations

import pytest

from readers.strata import gold_type, model_family, response_format


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Adding them: 3 + 4 = 7. \\boxed{7}", "boxed"),
        ("The answer is (B). So \\fbox{B}", "boxed"),  # a box wins over a stated answer
        ("Therefore, the answer is (J).", "answer_is"),
        ("**Answer:** 12", "answer_is"),
        ("The final answer is 5", "answer_is"),
        ("7", "bare"),
        ("I think it is Paris, the capital.", "bare"),
        ("", "bare"),
    ],
)
def test_the_format_is_the_box_else_a_stated_answer_else_bare(text: str, expected: str) -> None:
    assert response_format(text) == expected


@pytest.mark.parametrize(
    ("gold", "choices", "expected"),
    [
        ("Paris", ("Paris", "Rome"), "letter"),  # a question with options asks for an option
        ("(C)", (), "letter"),
        ("42", (), "number"),
        ("-3.5", (), "number"),
        ("$18.90", (), "number"),
        ("12%", (), "number"),
        ("3/4", (), "number"),
        ("$\\frac{1}{2}$", (), "number"),
        ("x^2 + 1", (), "expression"),
        ("\\sqrt{2}", (), "expression"),
        ("3, 5, 7", (), "expression"),
        ("George Washington", (), "text"),
        ("", (), "text"),
    ],
)
def test_the_gold_type_is_letter_number_expression_or_text(gold: str, choices: tuple, expected: str) -> None:
    assert gold_type(gold, choices) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("qwen2.5-7b-instruct", "Qwen2.5-72B"),
        ("Qwen/Qwen1.5-72B-Chat", "qwen-2.5-7b-instruct"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-4-maverick"),
        ("deepseek/deepseek-chat-v3-0324", "deepseek-chat-v3-0324"),
    ],
)
def test_one_family_under_its_spellings(a: str, b: str) -> None:
    assert model_family(a) == model_family(b) != ""


@pytest.mark.parametrize(("a", "b"), [("gpt-4o", "gemma-3-27b-it"), ("SmolLM2-135M", "Qwen2.5-7B"), ("Yi-6B", "Phi-3")])
def test_different_families_differ(a: str, b: str) -> None:
    assert model_family(a) != model_family(b)
