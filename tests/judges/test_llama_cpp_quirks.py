"""What a real llama-cpp-python server (SmolLM2-135M through `python -m llama_cpp.server`, see
tests/judges/test_real_model.py) does differently from the scripted server, reproduced by the
loopback server (`one_prompt_only`, `n_ctx`) so that the ordinary suite covers it:

* a completions `prompt` list of more than one entry is an HTTP 500 with an empty message, every
  time: options are scored one request each, the platform remembers it per endpoint, and the same
  500 twice on one request is not retried as if transient;
* a prompt longer than the context is a 400: the response is cut in its middle and sent again.
"""

from __future__ import annotations

import json

import pytest

from adjudication.models import Reading
from judges.fit import MAX_ROUNDS
from judges.models import Judgement, LLMAttempt
from judges.services.calls import REPEATED_500
from judges.services.judging import judgements_create, messages_hash

from ..conftest import math_row, mc_row
from .conftest import regen, response_ids

pytestmark = pytest.mark.django_db

LETTERS = {"A": -2.0, "B": -0.2, "C": -3.0, "D": -4.0}


def attempts_in_order() -> list[tuple[str, int, str, int | None]]:
    return list(
        LLMAttempt.objects.order_by("started_at", "attempt").values_list("purpose", "attempt", "status", "http_status")
    )


def test_a_server_refusing_a_prompt_list_gets_one_prompt_per_option_remembered(loopback, make_endpoint, make_dataset):
    loopback.one_prompt_only = True
    loopback.letter_logprobs = LETTERS
    ep = make_endpoint()
    regen(make_dataset([mc_row(0)], name="first", n_mc=0), ep)
    got = regen(make_dataset([mc_row(1)], name="later", n_mc=0), ep)  # a later run learns from the first
    for key in ("mc-0", "mc-1"):
        r = got[key]
        assert (r.answer, r.verdict, r.detail["fallback"]) == ("B", "correct", False)
        assert r.detail["scores"] == LETTERS and r.detail["scored_by"] == "completions_echo_per_option"
    first, second = (got[k].detail for k in ("mc-0", "mc-1"))
    assert first["prompt_list_refused"].startswith("HTTP 500") and first["attempts"] == 6
    assert "remembered" in second["prompt_list_refused"] and second["attempts"] == 4
    # the list: a 500, the same 500 again (a refusal, not retried further); then one prompt per option
    assert attempts_in_order() == [
        ("regen_logprobs", 1, "retryable_error", 500),
        ("regen_logprobs", 2, "fatal_error", 500),
        *[("regen_logprobs", 1, "ok", 200)] * 8,
    ]
    refused = LLMAttempt.objects.get(attempt=2)
    assert refused.error.endswith(REPEATED_500 % 1)
    prompts = [b["prompt"] for b in loopback.stats.bodies]
    assert [type(p).__name__ for p in prompts] == ["list", "list"] + ["str"] * 8
    assert [p[-2:] for p in prompts[2:6]] == [" A", " B", " C", " D"]
    assert prompts[2][:-2] == prompts[0][0][:-2]  # the same context as the list's entries


def test_the_same_500_twice_on_one_request_is_final_but_a_changing_one_is_retried(
    loopback, make_judge, make_dataset, settings
):
    settings.LLM_RETRY_MAX_ATTEMPTS = "4"
    ds = make_dataset(n_mc=1, n_math=0)
    judge = make_judge("sq")
    loopback.fault_for = lambda body, n: {"status": 500, "message": "assertion failed"}
    judgements_create(judges=[judge], response_ids=response_ids(ds))
    r = Reading.objects.get(reader_spec__name="sq")
    assert (r.verdict, r.detail["failed"], r.detail["attempts"], r.detail["status"]) == (
        "error",
        "call",
        2,
        "fatal_error",
    )
    assert r.judgement.parse_status == Judgement.ParseStatus.CALL_FAILED
    assert [s for *_, s, _ in attempts_in_order()] == ["retryable_error", "fatal_error"]

    # a 500 that says something new each time (a server failing over) keeps its retries
    LLMAttempt.objects.all().delete()
    loopback.fault_for = lambda body, n: {"status": 500, "message": f"worker {n} died"} if n < 6 else None
    judgements_create(judges=[judge], response_ids=response_ids(ds), retry_errors=True)
    r.refresh_from_db()
    assert r.verdict == "correct" and r.detail["attempts"] == 4
    assert [s for *_, s, _ in attempts_in_order()] == ["retryable_error"] * 3 + ["ok"]


def test_a_prompt_list_refused_with_500_and_no_logprobs_at_all_falls_back_saying_why(
    loopback, make_endpoint, make_dataset
):
    loopback.one_prompt_only = True
    loopback.omit_logprobs = True  # the single prompts are answered, without log-probabilities
    loopback.reply = " B"
    ds = make_dataset([mc_row(0)], n_mc=0)
    r = regen(ds, make_endpoint())["mc-0"]
    assert (r.answer, r.verdict, r.detail["fallback"], r.detail["scored_by"]) == ("B", "correct", True, "generation")
    assert r.detail["fallback_reason"] == "no usable echoed log-probabilities for options ['A', 'B', 'C', 'D']"
    assert r.detail["prompt_list_refused"].startswith("HTTP 500")
    assert [p for p, *_ in attempts_in_order()] == ["regen_logprobs"] * 6 + ["regen_generate"]


def test_a_long_response_is_cut_in_its_middle_to_fit_the_context_and_judged(loopback, make_judge, make_dataset):
    loopback.n_ctx = 900
    words = " ".join(f"step{i}" for i in range(3000))
    text = f"FIRST-WORDS {words} so the answer is (B). LAST-WORDS"
    ds = make_dataset([mc_row(0, response=text)], n_mc=0)
    judge = make_judge("sq", template="simpleqa", max_tokens=64)
    judgements_create(judges=[judge], response_ids=response_ids(ds))
    r = Reading.objects.select_related("judgement").get(reader_spec__name="sq")
    assert r.verdict == "correct" and r.judgement.parse_status == "parsed"
    t = r.detail["truncated"]
    assert t["original_chars"] == len(text) and t["kept_chars"] + t["omitted_chars"] == len(text)
    assert t["context_tokens"] == 900 and 1 <= t["rounds"] <= MAX_ROUNDS
    assert "maximum context length is 900 tokens" in t["refusal"]
    # every refused try is an attempt of its own; the last request fitted
    statuses = [(s, h) for *_, s, h in attempts_in_order()]
    assert statuses == [("fatal_error", 400)] * t["rounds"] + [("ok", 200)]
    assert r.detail["attempts"] == t["rounds"] + 1
    sent = loopback.stats.bodies[-1]["messages"]
    prompt = sent[0]["content"]
    assert "FIRST-WORDS" in prompt and "so the answer is (B). LAST-WORDS" in prompt
    assert f"[… {t['omitted_chars']} characters of the response omitted to fit the model's context …]" in prompt
    assert r.judgement.prompt_hash == messages_hash(sent)  # what was asked is what was sent


def test_regeneration_cuts_a_long_output_and_scores_every_option_on_the_same_context(
    loopback, make_endpoint, make_dataset
):
    loopback.one_prompt_only = True
    loopback.n_ctx = 400
    loopback.letter_logprobs = LETTERS
    output = "<think>" + " ".join(f"thought{i}" for i in range(1500)) + " so Weber"
    ds = make_dataset([mc_row(0, response=output), math_row(0, response=output.replace("Weber", "72"))], n_mc=0)
    loopback.reply = " 72"
    got = regen(ds, make_endpoint(max_concurrency=1))
    mc, math = got["mc-0"], got["math-0"]
    assert (mc.answer, mc.verdict, mc.detail["scored_by"]) == ("B", "correct", "completions_echo_per_option")
    assert (math.answer, math.verdict) == ("72", "correct")
    for r in (mc, math):
        assert r.detail["truncated"]["rounds"] >= 1 and r.detail["truncated"]["context_tokens"] == 400
    scored = [b["prompt"] for b in loopback.stats.bodies if b.get("echo") and isinstance(b["prompt"], str)]
    assert len({p[:-2] for p in scored[-4:]}) == 1 and all(" so Weber\n\nAnswer:" in p for p in scored)


def test_a_template_longer_than_the_context_fails_after_cutting_all_of_the_response(loopback, make_judge, make_dataset):
    loopback.n_ctx = 50  # the judge's template alone is longer
    ds = make_dataset(n_mc=1, n_math=0)
    judgements_create(judges=[make_judge("sq")], response_ids=response_ids(ds))
    r = Reading.objects.get(reader_spec__name="sq")
    assert (r.verdict, r.detail["failed"], r.detail["http_status"]) == ("error", "call", 400)
    assert r.detail["truncated"]["rounds"] <= MAX_ROUNDS
    assert r.detail["attempts"] == LLMAttempt.objects.count() == r.detail["truncated"]["rounds"] + 1
    assert json.dumps(r.detail)  # stored as JSON


def test_shifted_echo_logprobs_are_not_scores_the_top_logprobs_of_the_same_prompt_are(
    loopback, make_endpoint, make_dataset
):
    # llama-cpp-python: a list refused, and each echoed token carries the next position's value
    loopback.one_prompt_only = True
    loopback.echo_shifted = True
    loopback.letter_logprobs = LETTERS  # what an aligned echo would give: never seen through the shift
    loopback.chat_top = [(" C", -0.3), (" B", -1.5), ("\n", -2.0), (" A", -2.5)]
    ep = make_endpoint(top_logprobs=30)
    r = regen(make_dataset([mc_row(0)], name="first", n_mc=0), ep)["mc-0"]
    assert (r.answer, r.verdict, r.detail["scored_by"], r.detail["fallback"]) == (
        "C",
        "incorrect",
        "completions_top_logprobs",
        False,
    )
    assert r.detail["scores"] == {"A": -2.5, "B": -1.5, "C": -0.3} and r.detail["echo_shifted"] is True
    # the list (500, then the same 500), one echoed option found shifted, then the top alternatives
    bodies = loopback.stats.bodies
    assert [(type(b["prompt"]).__name__, b.get("echo", False)) for b in bodies] == [
        ("list", True),
        ("list", True),
        ("str", True),
        ("str", False),
    ]
    last = bodies[-1]
    assert last["logprobs"] == 20 and last["max_tokens"] == 1 and last["prompt"].endswith("\n\nAnswer:")
    # remembered: a later run goes straight to the top alternatives
    loopback.reset_stats()
    r = regen(make_dataset([mc_row(1)], name="later", n_mc=0), ep)["mc-1"]
    assert r.detail["scored_by"] == "completions_top_logprobs" and "remembered" in r.detail["echo_shifted"]
    assert len(loopback.stats.bodies) == 1 and r.detail["attempts"] == 1
