"""Answer Regeneration's answer side: log-probability scoring, variant merging, post-processing."""

from __future__ import annotations

import math

import pytest

from judges import answers
from judges.testing.loopback import tokenize


def echo_logprobs(prompt: str, values: dict[int, float]) -> dict:
    toks = tokenize(prompt)
    return {
        "tokens": [t for t, _ in toks],
        "text_offset": [o for _, o in toks],
        "token_logprobs": [None] + [values.get(i, -1.0) for i in range(1, len(toks))],
    }


def test_continuation_logprob_sums_the_tokens_after_the_context():
    context = "Q?\nA. x\nB. y\n\nreasoning\n\nAnswer:"
    prompt = context + " Weber Max"
    lp = echo_logprobs(prompt, {})
    n = len(tokenize(prompt))
    lp["token_logprobs"][-2:] = [-0.5, -0.25]
    # a generated token after the prompt (max_tokens=1) is not part of the option
    lp["tokens"].append(" X")
    lp["text_offset"].append(len(prompt))
    lp["token_logprobs"].append(-9.0)
    assert answers.continuation_logprob(lp, len(context), len(prompt)) == (-0.75, 2)
    assert n == len(lp["tokens"]) - 1


def test_continuation_logprob_without_usable_logprobs():
    assert answers.continuation_logprob({}, 3, 5) is None
    assert answers.continuation_logprob({"tokens": ["a"], "token_logprobs": [], "text_offset": [0]}, 0, 1) is None


def test_letter_variants_are_merged_and_the_vllm_floor_is_minus_infinity():
    top = [
        {"token": " B", "logprob": -1.0},
        {"token": "B", "logprob": -1.0},
        {"token": "(A", "logprob": -0.9},
        {"token": "**C", "logprob": -9999.0},
        {"token": "Weber", "logprob": -0.1},
    ]
    scores = answers.letter_scores_from_top(top, ["A", "B", "C", "D"])
    assert scores.keys() == {"A", "B"}
    assert scores["B"] == pytest.approx(-1.0 + math.log(2))
    assert answers.best(scores) == "B"


@pytest.mark.parametrize(
    "generated, expected",
    [
        (" \\boxed{72}\n\nMore text", "72"),
        ("$\\frac{1}{2}$.", "\\frac{1}{2}"),
        ("\\text{Paris}", "Paris"),
        ("\n\nAnswer: **42**", "42"),
        ("<think>hmm</think> 7", "7"),
        ("", ""),
    ],
)
def test_postprocess(generated, expected):
    assert answers.postprocess(generated) == expected


@pytest.mark.parametrize("gold, expected", [("B", "B"), ("(c)", "C"), ("1", "B"), ("Merton", "C"), ("Comte", None)])
def test_gold_letter(gold, expected):
    assert answers.gold_letter(gold, ["Durkheim", "Weber", "Merton", "Parsons"]) == expected


@pytest.mark.parametrize("gold", ["²", "１"])
def test_a_gold_in_non_ascii_digits_is_no_option_index(gold):
    """A "²" passes str.isdigit() and int("²") raises; "１" is 1 to int(), but no dataset writes an index so."""
    assert answers.gold_letter(gold, ["Durkheim", "Weber", "Merton", "Parsons"]) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        (" B", "B"),
        ("(C) Merton", "C"),
        ("**D**", "D"),
        ("Weber", "B"),
        ("The answer is A.", "A"),
        ("none", None),
    ],
)
def test_letter_from_text(text, expected):
    assert answers.letter_from_text(text, ["Durkheim", "Weber", "Merton", "Parsons"]) == expected


def test_math_verdict_uses_the_fixed_readers_equivalence():
    assert answers.math_verdict("3.5", "\\frac{7}{2}")[0] == "correct"
    assert answers.math_verdict("10001", "10000")[0] == "incorrect"
    assert answers.math_verdict("", "1")[0] == "no_answer"


def test_whitespace_alternatives_are_no_option_letter():
    # llama-cpp-python's top alternatives after "Answer:" include "" and "\n" (seen with SmolLM2)
    top = [{"token": "", "logprob": -2.0}, {"token": "\n", "logprob": -2.4}, {"token": " B", "logprob": -4.3}]
    assert answers.letter_scores_from_top(top, "ABCD") == {"B": -4.3}
