"""Judges and regeneration through a real Celery worker (prefork, 2 children) on the `llm` queue."""

from __future__ import annotations

from collections import Counter

import pytest

from adjudication.models import Reading, Response
from judges.models import Judge, LLMAttempt

from ..conftest import math_row, mc_row, run_command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_run_judges_through_a_real_worker(loopback, make_endpoint, make_dataset, celery_worker):
    ds = make_dataset([mc_row(i) for i in range(12)] + [math_row(i) for i in range(4)], n_mc=0)
    loopback.latency_s = 0.05
    # An overloaded server's 500s differ from one to the next; the same 500 twice on one request is a
    # refusal by design (judges.services.calls.deterministic_500), which the two worker processes'
    # interleaving would otherwise hit now and then when a retry lands on the next multiple of 5.
    loopback.fault_for = lambda body, n: {"status": 500, "message": f"overloaded (request {n})"} if n % 5 == 0 else None
    ep = make_endpoint(max_concurrency=3)
    Judge.objects.create(name="sq", endpoint=ep, template="simpleqa")
    Judge.objects.create(name="xv", endpoint=ep, template="xverify")
    # small batches: several tasks, run by both worker children at once
    out = run_command("run_judges", dataset=ds.name, judges=["sq", "xv"], batch_size=4, timeout=120)
    assert [line.split()[:2] for line in out.strip().splitlines()] == [["sq", "16"], ["xv", "16"]]

    keys = Counter(Reading.objects.values_list("response_id", "reader_spec__name"))
    assert len(keys) == 32 and set(keys.values()) == {1}
    assert set(Reading.objects.values_list("verdict", flat=True)) == {"correct"}
    assert LLMAttempt.objects.count() == loopback.stats.requests
    assert LLMAttempt.objects.filter(status="retryable_error", http_status=500).count() == loopback.stats.faults > 0
    # the endpoint's concurrency held across the worker's two processes (leases in Redis)
    assert loopback.stats.max_in_flight <= 3
    assert "judges.tasks.judge_batch" in celery_worker.log()

    # a second run enqueues nothing
    out = run_command("run_judges", dataset=ds.name, judges=["sq", "xv"], timeout=60)
    assert [line.split()[1] for line in out.strip().splitlines()] == ["0", "0"]


def test_regeneration_through_a_real_worker(loopback, make_endpoint, make_dataset, celery_worker, settings):
    ds = make_dataset([mc_row(i) for i in range(3)] + [math_row(0)], n_mc=0)
    loopback.letter_logprobs = {"A": -2.0, "B": -0.3, "C": -2.0, "D": -2.0}
    loopback.reply = " \\boxed{72}"
    make_endpoint("loop")
    out = run_command("run_readers", dataset=ds.name, readers=["regeneration"], endpoint="loop", timeout=120)
    assert out.split()[:2] == ["regeneration", "4"]
    got = dict(Reading.objects.filter(reader_spec__name="regeneration").values_list("response__external_id", "verdict"))
    assert got == {"mc-0": "correct", "mc-1": "correct", "mc-2": "correct", "math-0": "correct"}
    assert Reading.objects.count() == Response.objects.count()
