"""Answer Regeneration against the loopback server: options by log-probability (completions echo and
chat top_logprobs), fallback to a short generation, short math answers, and the run_readers route."""

from __future__ import annotations

import json

import pytest

from adjudication.models import ReaderSpec, Reading
from adjudication.pipeline.selectors import default_panel
from judges.models import LLMAttempt

from ..conftest import math_row, mc_row, run_command
from .conftest import regen

pytestmark = pytest.mark.django_db

UNFINISHED = "<think>Durkheim? No. Merton wrote on anomie too, but the Protestant ethic is Weber's, so"


def test_completions_echo_picks_the_option_with_the_highest_logprob(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0, response=UNFINISHED)], n_mc=0)
    loopback.letter_logprobs = {"A": -3.0, "B": -2.5, "C": -0.4, "D": -5.0}
    loopback.reply = "A"  # a generation would say A: the log-probabilities must decide, not this
    ep = make_endpoint(logprob_method="completions_echo")
    r = regen(ds, ep)["mc-0"]
    assert (r.answer, r.normalized, r.verdict) == ("C", "C", "incorrect")  # gold is B
    assert r.detail["scores"] == {"A": -3.0, "B": -2.5, "C": -0.4, "D": -5.0}
    assert r.detail["fallback"] is False and r.detail["method"] == "completions_echo"
    # one request scoring all four options: the prompt list is context + " A" ... context + " D"
    (body,) = loopback.stats.bodies
    assert loopback.stats.paths == ["/v1/completions"]
    assert body["echo"] is True and body["logprobs"] == 1 and body["max_tokens"] == 1 and body["temperature"] == 0
    prompts = body["prompt"]
    assert [p[-2:] for p in prompts] == [" A", " B", " C", " D"]
    context = prompts[0][:-2]
    assert context.startswith("Which sociologist wrote question 0?\nA. Durkheim\nB. Weber\nC. Merton\nD. Parsons")
    assert UNFINISHED in context and context.endswith("\n\nAnswer:")  # unfinished thinking included
    spec = r.reader_spec
    assert (spec.name, spec.kind, spec.config["endpoint_model"]) == ("regeneration", "regeneration", "loop-model")
    (attempt,) = LLMAttempt.objects.all()
    assert (attempt.purpose, attempt.status) == ("regen_logprobs", "ok")


def test_chat_top_logprobs_merges_letter_variants(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0)], n_mc=0)
    # " B" and "B" are the same choice: together they beat "A"; "(C" alone does not
    loopback.chat_top = [("A", -0.9), (" B", -1.2), ("B", -1.3), ("(C", -1.0), ("The", -2.0), ("D", -9999.0)]
    ep = make_endpoint(logprob_method="chat_top_logprobs", top_logprobs=10)
    r = regen(ds, ep)["mc-0"]
    assert (r.answer, r.verdict) == ("B", "correct")
    assert set(r.detail["scores"]) == {"A", "B", "C"}
    (body,) = loopback.stats.bodies
    assert body["logprobs"] is True and body["top_logprobs"] == 10 and body["max_tokens"] == 1
    # vLLM flavour: the output and "Answer:" are the assistant message, continued
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["messages"][-1]["role"] == "assistant" and body["messages"][-1]["content"].endswith("\n\nAnswer:")


def test_chat_on_an_openai_style_endpoint_asks_in_a_final_user_turn(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0)], n_mc=0)
    loopback.chat_top = [("B", -0.1), ("A", -3.0)]
    ep = make_endpoint(logprob_method="chat_top_logprobs", flavour="openai")
    assert regen(ds, ep)["mc-0"].answer == "B"
    (body,) = loopback.stats.bodies
    assert "continue_final_message" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][-1]["content"].endswith("Answer:")


@pytest.mark.parametrize("method", ["completions_echo", "chat_top_logprobs"])
def test_missing_logprobs_fall_back_to_parsing_a_short_generation(loopback, make_endpoint, make_dataset, method):
    ds = make_dataset([mc_row(0)], n_mc=0)
    loopback.omit_logprobs = True  # the server ignores the logprob request
    loopback.reply = " (B) Weber"
    r = regen(ds, make_endpoint(logprob_method=method))["mc-0"]
    assert (r.answer, r.verdict) == ("B", "correct")
    assert r.detail["fallback"] is True and r.detail["generated"] == " (B) Weber" and r.detail["logprobs_missing"]
    assert list(LLMAttempt.objects.order_by("started_at").values_list("purpose", flat=True)) == [
        "regen_logprobs",
        "regen_generate",
    ]


def test_a_server_refusing_logprobs_with_400_falls_back_too(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0)], n_mc=0)
    loopback.fault_for = lambda body, n: {"status": 400, "message": "echo is not supported"} if "echo" in body else None
    loopback.reply = "Weber"
    r = regen(ds, make_endpoint())["mc-0"]
    assert (r.answer, r.verdict, r.detail["fallback"], r.detail["scored_by"]) == ("B", "correct", True, "generation")
    assert "HTTP 400" in r.detail["logprobs_refused"] and "echo is not supported" in r.detail["fallback_reason"]
    # the list refused, then one option alone refused too: log-probabilities are impossible here
    assert [type(b["prompt"]).__name__ for b in loopback.stats.bodies] == ["list", "str", "str"]
    assert list(LLMAttempt.objects.order_by("started_at").values_list("purpose", "status")) == [
        ("regen_logprobs", "fatal_error"),
        ("regen_logprobs", "fatal_error"),
        ("regen_generate", "ok"),
    ]
    assert r.detail["attempts"] == 3


def test_logprob_faults_are_retried_before_the_answer(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0)], n_mc=0)
    loopback.inject({"status": 503}, {"malformed": True})
    loopback.letter_logprobs = {"A": -2.0, "B": -0.1, "C": -2.0, "D": -2.0}
    r = regen(ds, make_endpoint(max_concurrency=1))["mc-0"]
    assert (r.answer, r.verdict, r.detail["attempts"]) == ("B", "correct", 3)
    assert list(LLMAttempt.objects.order_by("attempt").values_list("status", flat=True)) == [
        "retryable_error",
        "retryable_error",
        "ok",
    ]


def test_a_method_none_endpoint_generates(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0)], n_mc=0)
    loopback.reply = "**D**"
    r = regen(ds, make_endpoint(logprob_method="none"))["mc-0"]
    assert (r.answer, r.verdict, r.detail["fallback"]) == ("D", "incorrect", False)
    assert loopback.stats.paths == ["/v1/chat/completions"]


@pytest.mark.parametrize(
    "reply, gold, answer, verdict",
    [
        (" \\boxed{72}\n\nBecause the terms cancel.", "72", "72", "correct"),
        (" $\\frac{1}{2}$", "\\frac{1}{2}", "\\frac{1}{2}", "correct"),
        (" 0.5", "\\frac{1}{2}", "0.5", "correct"),
        (" \\text{73}", "72", "73", "incorrect"),
        ("   \n", "72", None, "no_answer"),
    ],
)
def test_a_short_math_answer_is_generated_and_compared(
    loopback, make_endpoint, make_dataset, reply, gold, answer, verdict
):
    ds = make_dataset([math_row(0, gold=gold, response="<think>Let me add: 0 + 72 = 72, minus 0")], n_mc=0)
    loopback.reply = reply
    r = regen(ds, make_endpoint())["math-0"]
    assert (r.answer, r.verdict) == (answer, verdict)
    (body,) = loopback.stats.bodies
    assert body["prompt"].endswith("minus 0\n\nAnswer:") and "echo" not in body and body["max_tokens"] == 32


def test_failed_calls_give_an_error_reading_that_retry_errors_redoes(loopback, make_endpoint, make_dataset, settings):
    settings.LLM_RETRY_MAX_ATTEMPTS = "2"
    ds = make_dataset([mc_row(0), math_row(0)], n_mc=0)
    # an outage (a gateway's 503 every time): not a refusal, so no fallback to a generation
    loopback.fault_for = lambda body, n: {"status": 503}
    ep = make_endpoint(max_concurrency=1)
    got = regen(ds, ep)
    assert {k: (r.verdict, r.detail["failed"], r.detail["attempts"]) for k, r in got.items()} == {
        "mc-0": ("error", "call", 2),
        "math-0": ("error", "call", 2),
    }
    loopback.fault_for = None
    loopback.letter_logprobs = {"B": -0.1}
    loopback.reply = "72"
    got = regen(ds, ep, retry_errors=True)
    assert {k: r.verdict for k, r in got.items()} == {"mc-0": "correct", "math-0": "correct"}
    assert Reading.objects.count() == 2 and LLMAttempt.objects.count() == 6


def test_two_regenerating_models_are_two_specs(loopback, make_endpoint, make_dataset):
    ds = make_dataset([mc_row(0)], n_mc=0)
    loopback.letter_logprobs = {"B": -0.1}
    regen(ds, make_endpoint("small", model="qwen3-0.6b"))
    regen(ds, make_endpoint("big", model="qwen3-32b"))
    specs = ReaderSpec.objects.filter(name="regeneration")
    assert sorted(s.config["endpoint_model"] for s in specs) == ["qwen3-0.6b", "qwen3-32b"]
    assert Reading.objects.filter(reader_spec__name="regeneration").count() == 2


def test_default_panel_excludes_llm_readers(loopback, make_endpoint, make_judge):
    make_judge("sq")
    panel = default_panel()
    assert "regeneration" not in panel and "sq" not in panel and "fixed" in panel


@pytest.mark.django_db(transaction=True)
def test_run_readers_routes_regeneration_to_the_endpoint(loopback, make_endpoint, make_dataset, eager):
    from django.core.management.base import CommandError

    ds = make_dataset([mc_row(0), mc_row(1), math_row(0)], n_mc=0)
    loopback.letter_logprobs = {"A": -1.0, "B": -0.2, "C": -3.0, "D": -3.0}
    loopback.reply = " 72"
    make_endpoint("loop")
    out = run_command("run_readers", dataset=ds.name, readers=["regeneration", "boxed"], endpoint="loop")
    lines = out.strip().splitlines()
    assert lines[0].split()[:2] == ["regeneration", "3"] and "loop-model via loop" in lines[0]
    assert lines[1].split()[:2] == ["boxed", "3"]
    verdicts = dict(
        Reading.objects.filter(reader_spec__name="regeneration").values_list("response__external_id", "verdict")
    )
    assert verdicts == {"mc-0": "correct", "mc-1": "correct", "math-0": "correct"}
    # again: nothing missing
    out = run_command("run_readers", dataset=ds.name, readers=["regeneration"], endpoint="loop")
    assert out.split()[:2] == ["regeneration", "0"]
    with pytest.raises(CommandError, match="--endpoint"):
        run_command("run_readers", dataset=ds.name, readers=["regeneration"])
    with pytest.raises(CommandError, match="no endpoint"):
        run_command("run_readers", dataset=ds.name, readers=["regeneration"], endpoint="nope")
    with pytest.raises(CommandError, match="add --reader regeneration"):
        run_command("run_readers", dataset=ds.name, readers=["boxed"], endpoint="loop")
    with pytest.raises(CommandError, match="unknown reader 'nope-reader'"):
        run_command("run_readers", dataset=ds.name, readers=["regeneration", "nope-reader"], endpoint="loop")
    # export shows it like any reader
    from adjudication.pipeline.selectors import export_rows

    assert {r["reader"] for r in export_rows(dataset=ds)} == {"regeneration", "boxed"}
    assert json.dumps(list(export_rows(dataset=ds)))  # serialisable


@pytest.mark.django_db(transaction=True)
def test_the_regenerate_command_reads_what_is_missing_and_names_bad_arguments(
    loopback, make_endpoint, make_dataset, eager
):
    from django.core.management.base import CommandError

    ds = make_dataset([mc_row(0), math_row(0)], n_mc=0)
    loopback.letter_logprobs = {"A": -1.0, "B": -0.2, "C": -3.0, "D": -3.0}
    loopback.reply = " 72"
    make_endpoint("loop")
    out = run_command("regenerate", dataset=ds.name, endpoint="loop")
    assert out.split()[:2] == ["regeneration", "2"] and "loop-model via loop" in out
    assert run_command("regenerate", dataset=ds.name, endpoint="loop").split()[:2] == ["regeneration", "0"]
    assert Reading.objects.filter(reader_spec__name="regeneration").count() == 2
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        run_command("regenerate", dataset="nope", endpoint="loop")
    with pytest.raises(CommandError, match="no endpoint named 'nope'"):
        run_command("regenerate", dataset=ds.name, endpoint="nope")
    with pytest.raises(CommandError, match="--batch-size"):
        run_command("regenerate", dataset=ds.name, endpoint="loop", batch_size=0)
