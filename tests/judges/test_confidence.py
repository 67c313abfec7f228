"""A judge's confidence in its verdict (issue 37 item 5): read from the log-probabilities of the
verdict token, in the vocabulary of the judge's parser, and stored with the judgement when the
judge asks for log-probabilities."""

from __future__ import annotations

import math

import pytest

from judges.confidence import TOP_LOGPROBS, token_label, verdict_confidence
from judges.models import Judgement

from ..conftest import mc_row
from .conftest import response_ids


def _entry(token: str, p: float, *alternatives: tuple[str, float]) -> dict:
    top = [{"token": token, "logprob": math.log(p)}] + [{"token": t, "logprob": math.log(q)} for t, q in alternatives]
    return {"token": token, "logprob": math.log(p), "top_logprobs": top}


def _plain(token: str) -> dict:
    return {"token": token, "logprob": -0.01, "top_logprobs": [{"token": token, "logprob": -0.01}]}


@pytest.mark.parametrize(
    ("token", "vocabulary", "label"),
    [
        ("Correct", "xverify", "correct"),
        (" Incorrect", "xverify", "incorrect"),
        ("In", "xverify", "incorrect"),  # "Incorrect" split into sub-word tokens
        ("[", "xverify", None),
        ("Judgement", "xverify", None),
        ("A", "xverify", None),  # xVerify has no letter codes
        ("A", "simpleqa", "correct"),
        (" B", "simpleqa", "incorrect"),
        ("C", "simpleqa", "not_attempted"),
        ("NOT", "simpleqa", "not_attempted"),
        ("C", "labels", "correct"),  # inspect's GRADE: C
        ("I", "labels", "incorrect"),
        ("The", "simpleqa", None),
    ],
)
def test_a_token_names_a_label_only_in_its_parsers_vocabulary(token, vocabulary, label):
    assert token_label(token, vocabulary) == label


def test_confidence_is_the_parsed_labels_share_of_the_label_alternatives_at_the_verdict_token():
    logprobs = {
        "content": [
            _plain("["),
            # 0.6 Correct, 0.3 Incorrect, 0.1 something else: 0.6 / 0.9.
            _entry("Correct", 0.6, ("Incorrect", 0.3), ("Wrong", 0.1)),
            _plain("]"),
        ]
    }
    c = verdict_confidence(logprobs, label="correct", parser="xverify")
    assert c is not None
    assert c.position == 1
    assert c.value == pytest.approx(0.6 / 0.9)
    assert c.alternatives == pytest.approx({"correct": 0.6, "incorrect": 0.3})


def test_the_verdict_token_is_on_the_last_line_that_names_a_label_and_a_split_label_is_named_by_its_first_piece():
    logprobs = {
        "content": [
            _entry("The", 0.9),
            _entry(" answer", 0.9),
            _entry(" looks", 0.9),
            _entry(" correct", 0.5, (" wrong", 0.4)),  # reasoning on the first line, not the verdict
            _entry("\n", 0.9),
            _entry("Judgement", 0.9),
            _entry(":", 0.9),
            _entry(" In", 0.8, (" Correct", 0.2)),
            _entry("correct", 0.99),
        ]
    }
    c = verdict_confidence(logprobs, label="incorrect", parser="xverify")
    assert c is not None
    assert c.position == 7
    assert c.value == pytest.approx(0.8)


def test_labels_inside_a_think_block_are_not_the_verdict():
    logprobs = {
        "content": [
            _plain("<think>"),
            _entry("B", 0.5, ("A", 0.5)),
            _plain("</think>"),
            _entry("A", 0.7, ("B", 0.2), ("C", 0.1)),
        ]
    }
    c = verdict_confidence(logprobs, label="correct", parser="simpleqa")
    assert c is not None
    assert c.position == 3
    assert c.value == pytest.approx(0.7)


@pytest.mark.parametrize(
    "logprobs",
    [
        None,
        {},
        {"content": None},
        {"content": "Correct"},
        {"content": [_plain("[")]},  # no token names a label
        {"content": [_entry("Incorrect", 0.9, ("Correct", 0.1))]},  # the token names another label than parsed
        {"content": [{"token": None}]},
        {"content": [{"token": "Correct", "top_logprobs": "x"}]},  # no log-probability at all
        {"content": [{"token": "Correct", "logprob": float("nan"), "top_logprobs": []}]},
    ],
)
def test_no_confidence_where_there_is_nothing_honest_to_report(logprobs):
    assert verdict_confidence(logprobs, label="correct", parser="xverify") is None


def test_an_unknown_parser_or_a_positive_log_probability_cannot_make_a_confidence_above_one():
    entry = {"token": "Correct", "logprob": 5.0, "top_logprobs": [{"token": "Incorrect", "logprob": 3.0}]}
    c = verdict_confidence({"content": [entry]}, label="correct", parser="xverify")
    assert c is not None and 0.0 <= c.value <= 1.0
    assert verdict_confidence({"content": [entry]}, label="correct", parser="no-such-parser") is None


@pytest.mark.django_db(transaction=True)
def test_a_judge_with_logprobs_asks_for_them_and_stores_its_verdicts_confidence(loopback, make_judge, make_dataset):
    """End to end on the loopback server: the request carries logprobs and top_logprobs, the
    verdict token's alternatives become the judgement's confidence and the reading's detail, and a
    judge without the option asks for none and stores none."""
    from judges.services.judging import judgements_create

    ds = make_dataset(rows=[mc_row(i) for i in range(4)], n_math=0)

    def top(body: dict) -> list[tuple[str, float]]:
        prompt = body["messages"][0]["content"]
        # Not one confidence for every response: decided by the prompt, so the same on a retry.
        share = 0.9 if len(prompt) % 2 else 0.6
        return [("Correct", math.log(share)), ("Incorrect", math.log(1 - share))]

    loopback.chat_top = top
    sure = make_judge("calibrated", template="xverify", logprobs=True)
    judgements_create(judges=[sure], response_ids=response_ids(ds))
    sent = [b for b in loopback.stats.bodies if "messages" in b]
    assert sent and all(b.get("logprobs") is True and b.get("top_logprobs") == TOP_LOGPROBS for b in sent)
    judgements = list(Judgement.objects.filter(judge=sure).select_related("reading"))
    assert len(judgements) == 4
    for j in judgements:
        assert j.label == "correct" and j.reading.verdict == "correct"
        assert j.confidence in (pytest.approx(0.9), pytest.approx(0.6))
        assert j.reading.detail["confidence"] == pytest.approx(j.confidence)
        assert set(j.verdict_alternatives) == {"correct", "incorrect"}

    loopback.stats.bodies.clear()
    plain = make_judge("plain", endpoint=sure.endpoint, template="xverify")
    judgements_create(judges=[plain], response_ids=response_ids(ds))
    sent = [b for b in loopback.stats.bodies if "messages" in b]
    assert sent and not any("logprobs" in b for b in sent)
    assert not Judgement.objects.filter(judge=plain, confidence__isnull=False).exists()


@pytest.mark.django_db
def test_add_judge_turns_logprobs_on_and_off_and_an_update_without_the_flag_keeps_it(make_endpoint):
    from judges.models import Judge

    from ..conftest import run_command

    make_endpoint("loop")
    out = run_command("add_judge", "xv", endpoint="loop", template="xverify", logprobs=True)
    assert Judge.objects.get(name="xv").logprobs and "log-probabilities on" in out
    run_command("add_judge", "xv", endpoint="loop", template="xverify", temperature=0.2)
    assert Judge.objects.get(name="xv").logprobs
    run_command("add_judge", "xv", endpoint="loop", template="xverify", logprobs=False)
    assert not Judge.objects.get(name="xv").logprobs
