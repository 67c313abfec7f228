"""Smoke test against a real OpenAI-compatible endpoint; skipped unless one is named.

    LLM_SMOKE_BASE_URL=http://localhost:8001/v1 LLM_SMOKE_MODEL=Qwen/Qwen3-0.6B \
        make test PYTEST_ARGS=tests/judges/test_smoke.py
    LLM_SMOKE_BASE_URL=https://api.openai.com/v1 LLM_SMOKE_MODEL=gpt-4.1-mini LLM_SMOKE_API_KEY_ENV=OPENAI_API_KEY ...

Optional: LLM_SMOKE_FLAVOUR (vllm|openai|other; default openai for api.openai.com, else vllm) and
LLM_SMOKE_LOGPROB_METHOD (default chat_top_logprobs for OpenAI, completions_echo otherwise).
"""

from __future__ import annotations

import os

import pytest

from adjudication.models import Reading
from judges.models import Endpoint, Judge, Judgement
from judges.services.judging import judgements_create
from judges.services.regeneration import regenerations_create

from ..conftest import math_row, mc_row
from .conftest import response_ids

BASE_URL = os.environ.get("LLM_SMOKE_BASE_URL", "")

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not BASE_URL, reason="set LLM_SMOKE_BASE_URL (and LLM_SMOKE_MODEL) to a real endpoint"),
]


@pytest.fixture
def real_endpoint() -> Endpoint:
    model = os.environ.get("LLM_SMOKE_MODEL")
    if not model:
        pytest.skip("LLM_SMOKE_MODEL is not set")
    openai_hosted = "api.openai.com" in BASE_URL
    flavour = os.environ.get("LLM_SMOKE_FLAVOUR") or ("openai" if openai_hosted else "vllm")
    method = os.environ.get("LLM_SMOKE_LOGPROB_METHOD") or (
        "chat_top_logprobs" if openai_hosted else "completions_echo"
    )
    return Endpoint.objects.create(
        name="smoke",
        base_url=BASE_URL,
        model=model,
        flavour=flavour,
        logprob_method=method,
        api_key_env=os.environ.get("LLM_SMOKE_API_KEY_ENV", ""),
        max_concurrency=2,
        timeout_s=120,
    )


def test_a_real_endpoint_judges_and_regenerates(real_endpoint, make_dataset):
    rows = [
        mc_row(
            0,
            question="Who wrote The Protestant Ethic and the Spirit of Capitalism?",
            response="Max Weber wrote it, so the answer is (B).",
        ),
        math_row(0, question="What is 6 times 12?", response="6 times 12 is 72. \\boxed{72}"),
    ]
    ds = make_dataset(rows, n_mc=0)
    judge = Judge.objects.create(name="smoke-sq", endpoint=real_endpoint, template="simpleqa", max_tokens=512)
    judgements_create(judges=[judge], response_ids=response_ids(ds))
    regenerations_create(endpoint=real_endpoint, response_ids=response_ids(ds))
    judged = Reading.objects.filter(reader_spec__name="smoke-sq")
    assert judged.count() == 2
    # the calls went through: replies were received (a judge may still be wrong or unparseable)
    assert not Judgement.objects.filter(parse_status="call_failed").exists(), list(judged.values("detail"))
    regen = Reading.objects.filter(reader_spec__name="regeneration")
    assert regen.count() == 2
    for r in regen:
        assert "failed" not in r.detail, r.detail
        assert r.verdict in {"correct", "incorrect", "no_answer"}
