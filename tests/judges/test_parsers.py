"""Judge reply parsers: ours (unambiguous or nothing) and the upstream ones with their quirks."""

from __future__ import annotations

import pytest

from judges import parsers
from judges.parsers import CORRECT, INCORRECT, NOT_ATTEMPTED


@pytest.mark.parametrize(
    "reply, upstream, ours",
    [
        ("A", CORRECT, CORRECT),
        ("B", INCORRECT, INCORRECT),
        ("C", NOT_ATTEMPTED, NOT_ATTEMPTED),
        # simple-evals reads the first capital A/B/C anywhere: the words themselves mislead it.
        ("CORRECT", NOT_ATTEMPTED, CORRECT),
        ("INCORRECT", NOT_ATTEMPTED, INCORRECT),
        ("NOT_ATTEMPTED", CORRECT, NOT_ATTEMPTED),
        ("A: CORRECT", CORRECT, CORRECT),
        ("**B**", INCORRECT, INCORRECT),
        ("(C).", NOT_ATTEMPTED, NOT_ATTEMPTED),
        # a grade inside a sentence is not where the template asks for it: ours leaves it unparsed
        ("The grade is B: INCORRECT", INCORRECT, None),
        ("The answer is B", INCORRECT, None),
        ("Grade: B", INCORRECT, INCORRECT),  # a field name before the letter is the grade's own field
        # no capital A/B/C at all: upstream defaults to C; ours does not guess.
        ("yes", NOT_ATTEMPTED, None),
        ("", NOT_ATTEMPTED, None),
        # a letter that contradicts its own label: ours refuses
        ("A: INCORRECT", CORRECT, None),
        # any capital counts upstream, even the B of a word in the judge's reasoning
        ("<think>Both agree with the gold.</think>A", INCORRECT, CORRECT),
    ],
)
def test_simpleqa_first_capital_vs_ours(reply, upstream, ours):
    assert parsers.simpleqa_first_capital(reply) == upstream
    assert parsers.simpleqa(reply) == ours


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("The submission matches.\nGRADE: C", CORRECT),
        ("GRADE: I at first, but on reflection\nGRADE: C", CORRECT),  # the last GRADE wins
        ("GRADE: C ... no wait. GRADE: I", INCORRECT),
        ("grade: incorrect", INCORRECT),
        ("GRADE\u200b: C", CORRECT),  # invisible spaces around the colon are tolerated
        ("GRADE: P", None),  # partial credit not offered: unscored
        ("The answer is right.", None),  # no grade: unscored
        ("UPGRADE: C", None),  # GRADE must be a word of its own
    ],
)
def test_inspect_last_grade(reply, expected):
    assert parsers.inspect_last_grade(reply) == expected


@pytest.mark.parametrize(
    "reply, exact, substring, ours",
    [
        ("Correct", CORRECT, CORRECT, CORRECT),
        ("  incorrect\n", INCORRECT, INCORRECT, INCORRECT),
        ("[Correct]", None, CORRECT, CORRECT),
        ("[Incorrect]", None, INCORRECT, INCORRECT),
        ("Judgement: Incorrect.", None, INCORRECT, INCORRECT),
        ("Judgement: [Incorrect]", None, INCORRECT, INCORRECT),
        ("**Incorrect**", None, INCORRECT, INCORRECT),
        # a label word inside a sentence is not a grade: the judge answered the question (issue 37)
        ("The correct answer is (J).", None, CORRECT, None),
        ("The final answer is correct.", None, CORRECT, None),
        ("It is not correct.", None, CORRECT, None),
        ("Correct? No: Incorrect", None, INCORRECT, None),  # both labels named
        ("maybe", None, None, None),
    ],
)
def test_xverify_exact_label_vs_substring_order(reply, exact, substring, ours):
    assert parsers.xverify_exact_label(reply) == exact
    assert parsers.xverify_substring(reply) == substring
    assert parsers.xverify(reply) == ours


def test_substring_order_matters_every_incorrect_contains_correct():
    def correct_first(reply: str) -> str | None:  # the order xVerify's script avoids
        text = reply.lower()
        return CORRECT if "correct" in text else (INCORRECT if "incorrect" in text else None)

    assert correct_first("Incorrect") == CORRECT
    assert parsers.xverify_substring("Incorrect") == INCORRECT


def test_reparse_reports_every_upstream_parser():
    assert parsers.reparse("CORRECT") == {
        "simpleqa_first_capital": NOT_ATTEMPTED,
        "inspect_last_grade": None,
        "xverify_exact_label": CORRECT,
    }


def test_labels_parser_for_custom_templates_reads_grade_lines_then_labels():
    assert parsers.labels("reasoning...\nGRADE: I") == INCORRECT
    assert parsers.labels("NOT_ATTEMPTED") == NOT_ATTEMPTED
    assert parsers.labels("no idea") is None
    # the GRADE field's value is the whole rest of its line, not the first word of a sentence
    assert parsers.labels("GRADE: Correct answer is B") is None
    assert parsers.inspect_last_grade("GRADE: Correct answer is B") == CORRECT


@pytest.mark.parametrize(
    "reply",
    ["Correct\nIncorrect", "[Correct]\n\nJudgement: [Incorrect]", "Judgement: Incorrect\nCorrect"],
)
def test_a_reply_with_two_different_grades_on_lines_of_their_own_has_none(reply):
    assert parsers.xverify(reply) is None


def test_reasoning_before_the_final_line_may_mention_labels_in_sentences():
    assert parsers.xverify("The output says (C), which is not correct for gold B.\nIncorrect") == INCORRECT
    assert parsers.simpleqa("Option A would be correct, but the output picks D.\nB") == INCORRECT


def test_an_unfinished_thinking_block_gives_no_grade_whatever_it_says():
    assert parsers.xverify("<think>clearly Correct") is None
    assert parsers.simpleqa("<think>so A") is None
    # a closing tag whose opening one was in the prompt: only what follows it is the reply
    assert parsers.xverify("so it matches</think>\nCorrect") == CORRECT


def test_a_line_is_a_grade_only_when_it_matches_a_form_of_the_table_in_full():
    assert parsers.read_grade("Judgement: Incorrect", parsers.FORMS["xverify"]) == INCORRECT
    assert parsers.read_grade("Judgement: Incorrect, clearly", parsers.FORMS["xverify"]) is None


@pytest.mark.parametrize(
    "template, upstream",
    [
        ("simpleqa", "simpleqa_first_capital"),
        ("simpleqa-upstream", "simpleqa_first_capital"),
        ("xverify", "xverify_exact_label"),
        ("xverify-upstream", "xverify_exact_label"),
        ("custom", "inspect_last_grade"),
    ],
)
def test_each_template_is_compared_with_its_graders_upstream_parser(template, upstream):
    assert parsers.upstream_for(template) == upstream


def test_disagreement_counts_an_unparsed_reply_that_upstream_grades():
    reply = "The correct answer is (J)."
    reparses = parsers.reparse(reply)
    assert parsers.disagrees(parsers.simpleqa(reply), reparses, "simpleqa_first_capital")  # upstream: C
    assert not parsers.disagrees(parsers.xverify(reply), reparses, "xverify_exact_label")  # both: none
    assert not parsers.disagrees("", reparses, "xverify_exact_label")  # a stored empty label is none too


def test_resolve():
    assert parsers.resolve("auto", "simpleqa") == "simpleqa"
    assert parsers.resolve("auto", "xverify") == "xverify"
    assert parsers.resolve("auto", "custom") == "labels"
    assert parsers.resolve("inspect_last_grade", "custom") == "inspect_last_grade"
    with pytest.raises(KeyError):
        parsers.resolve("nope", "custom")
