"""Lost or stuck LLM work: hostile values in a server's reply, one bad row in a flush, tasks that
fail while a command waits, trickling and oversized replies, and an API key echoed back."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.management.base import CommandError
from django.db import connection
from tqdm import tqdm

from adjudication.models import ReaderSpec, Reading
from judges.client import AttemptResult
from judges.models import Judgement, LLMAttempt
from judges.services.calls import AttemptEvent, Finished
from judges.services.judging import judge_spec_for, judgements_create
from judges.services.records import ReadingResult, write

from ..conftest import FakeClock, math_row, mc_row, run_command, wait_until
from .conftest import response_ids

pytestmark = pytest.mark.django_db

SECRET = "sk-loop-5f1e0c9a7b3d42e8"


def judge_all(dataset, *judges, retry_errors=False) -> int:
    return judgements_create(judges=list(judges), response_ids=response_ids(dataset), retry_errors=retry_errors)


def readings_of(name: str) -> list[Reading]:
    return list(
        Reading.objects.filter(reader_spec__name=name).select_related("judgement", "response").order_by("response_id")
    )


@contextmanager
def table_away(table: str) -> Iterator[None]:
    """`table` renamed for the block, so that every write to it fails as on a lost table; put back after."""
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} RENAME TO {table}_away")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table}_away RENAME TO {table}")


# -- item 6: every text from a server is stored verbatim-safely; one bad row loses nothing else ----------------


def test_nul_and_lone_surrogates_in_served_model_and_finish_reason_are_stored_verbatim(
    loopback, make_judge, make_dataset
):
    ds = make_dataset(n_mc=3, n_math=0)
    loopback.reply = "A"
    model, finish = "loop\x00model \ud800", "st\x00p \udfff"
    loopback.inject({"model": model, "finish_reason": finish})
    judge = make_judge("sq")
    assert judge_all(ds, judge) == 3
    readings = readings_of("sq")
    # the healthy replies of the same batch are there too
    assert [r.verdict for r in readings] == ["correct"] * 3
    served = Counter((r.judgement.served_model, r.judgement.finish_reason) for r in readings)
    assert served == {(model, finish): 1, ("loop-model", "stop"): 2}


@pytest.mark.parametrize(
    "fault",
    [{"status": 400, "message": "upstream \x00 exploded \ud800"}, {"status": 400, "text": "upstream \x00 exploded"}],
    ids=["json", "text"],
)
def test_an_error_message_holding_a_nul_or_lone_surrogate_is_stored_verbatim(loopback, make_judge, make_dataset, fault):
    ds = make_dataset(n_mc=2, n_math=0)
    loopback.inject(fault)
    judge = make_judge("sq")
    judge_all(ds, judge)
    failed = LLMAttempt.objects.get(status="fatal_error")
    assert failed.http_status == 400 and "upstream \x00 exploded" in failed.error
    assert failed.error.endswith(fault.get("message", fault.get("text")))
    verdicts = Counter(r.verdict for r in readings_of("sq"))
    assert verdicts == {"error": 1, "correct": 1}


def test_every_server_text_field_round_trips_nul_and_lone_surrogates(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    judge = make_judge("sq")
    spec = judge_spec_for(judge)
    response = ds.responses.get()
    hostile = "a\x00b\ud800c\udfff" * 30  # longer than the old 200- and 40-character columns once escaped
    reading = Reading.objects.create(response=response, reader_spec=spec, verdict="correct")
    Judgement.objects.create(
        reading=reading,
        judge=judge,
        prompt_hash="p",
        template_hash="t",
        raw_reply=hostile,
        label="correct",
        parse_status="parsed",
        parser="simpleqa",
        served_model=hostile[:200],
        finish_reason=hostile[:40],
    )
    LLMAttempt.objects.create(
        endpoint=judge.endpoint,
        reader_spec=spec,
        response=response,
        purpose="judge",
        attempt=1,
        status="fatal_error",
        latency_ms=1.0,
        error=hostile,
        request_hash="h",
        started_at="2026-01-01T00:00:00Z",
    )
    j = Judgement.objects.get()
    assert (j.raw_reply, j.served_model, j.finish_reason) == (hostile, hostile[:200], hostile[:40])
    assert LLMAttempt.objects.get().error == hostile


def test_absurd_token_counts_from_the_server_do_not_lose_the_batch(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=3, n_math=0)
    loopback.reply = "A"
    loopback.inject({"usage": {"prompt_tokens": 2**40, "completion_tokens": 2**35}})
    judge = make_judge("sq")
    judge_all(ds, judge)
    assert [r.verdict for r in readings_of("sq")] == ["correct"] * 3
    tokens = sorted(LLMAttempt.objects.values_list("prompt_tokens", flat=True), key=lambda t: (t is not None, t))
    assert LLMAttempt.objects.count() == 3 and tokens[0] is None and all(t and t < 2**31 for t in tokens[1:])


def test_a_row_the_database_refuses_does_not_lose_the_other_rows_of_the_flush(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=4, n_math=0)
    sq = make_judge("sq")
    xv = make_judge("xv", endpoint=sq.endpoint, template="xverify")
    specs = {j.name: judge_spec_for(j) for j in (sq, xv)}
    rids = response_ids(ds)
    now = time.time()

    def attempt(rid: int, spec: ReaderSpec, **result) -> AttemptEvent:
        res = AttemptResult(status="ok", latency_ms=5.0, started_at=now, http_status=200, **result)
        return AttemptEvent((rid, spec.id), sq.endpoint_id, "judge", 1, "h" * 64, res)

    def finished(rid: int, spec: ReaderSpec, judge, label: str = "correct") -> Finished:
        judgement = {
            "judge_id": judge.pk,
            "prompt_hash": "p",
            "template_hash": "t",
            "parser": "simpleqa",
            "raw_reply": "A",
            "label": label,
            "parse_status": "parsed",
            "reparses": {},
        }
        return Finished(
            (rid, spec.id), ReadingResult(rid, spec.id, "correct", detail={"label": label}, judgement=judgement), 5.0
        )

    # one attempt with a token count PostgreSQL's integer cannot hold, one judgement whose label does not
    # fit its column: each fails alone; every other attempt, reading and judgement of the flush is kept
    attempts = [
        attempt(rid, specs[name], prompt_tokens=2**40 if (rid, name) == (rids[1], "sq") else 10)
        for rid in rids
        for name in specs
    ]
    done = [
        finished(rid, specs[j.name], j, label="x" * 50 if (rid, j.name) == (rids[2], "xv") else "correct")
        for rid in rids
        for j in (sq, xv)
    ]
    write(attempts, done)

    assert LLMAttempt.objects.count() == 8
    assert LLMAttempt.objects.get(response_id=rids[1], reader_spec=specs["sq"]).prompt_tokens is None
    assert Reading.objects.count() == 8 and Judgement.objects.count() == 8
    bad = Reading.objects.get(response_id=rids[2], reader_spec=specs["xv"])
    assert bad.verdict == "error" and bad.detail["failed"] == "internal"
    assert "could not be stored" in bad.detail["error"]
    assert bad.judgement.parse_status == "call_failed"
    others = Reading.objects.exclude(pk=bad.pk)
    assert set(others.values_list("verdict", flat=True)) == {"correct"}
    assert set(Judgement.objects.exclude(reading=bad).values_list("label", flat=True)) == {"correct"}


def test_waiting_stops_with_a_clear_error_when_a_batch_task_failed(
    loopback, make_judge, make_dataset, settings, monkeypatch
):
    from adjudication.models import TaskBatch
    from adjudication.pipeline import progress
    from adjudication.pipeline.progress import wait_for_run
    from judges.services.runs import dataset_judge

    settings.CELERY_TASK_ALWAYS_EAGER = False
    ds = make_dataset(n_mc=6, n_math=0)
    judge = make_judge("sq")
    # inside the test's transaction nothing is really enqueued (on_commit): we play the workers
    run = dataset_judge(dataset=ds, judges=[judge], batch_size=2)
    batches = list(TaskBatch.objects.filter(run=run.id).order_by("id"))
    assert len(batches) == 3 and {b.status for b in batches} == {"queued"}
    judgements_create(judges=[judge], response_ids=response_ids(ds)[:2])
    TaskBatch.objects.filter(pk=batches[0].pk).update(status="done")
    TaskBatch.objects.filter(pk=batches[1].pk).update(status="failed", error="OperationalError: the disk is full")
    TaskBatch.objects.filter(pk=batches[2].pk).update(status="done")
    clock = FakeClock()
    monkeypatch.setattr(progress, "time", clock)
    with pytest.raises(CommandError, match=r"1 of 3 LLM tasks failed.*the disk is full"):
        wait_for_run(run, bar=tqdm(disable=True), timeout=60)
    # every task had ended: the wait stopped at its first look, without one poll interval
    assert clock.sleeps == []


def test_waiting_stops_when_every_task_finished_but_readings_are_missing(loopback, make_judge, make_dataset, settings):
    from adjudication.models import TaskBatch
    from adjudication.pipeline.progress import wait_for_run
    from judges.services.runs import dataset_judge

    settings.CELERY_TASK_ALWAYS_EAGER = False
    ds = make_dataset(n_mc=2, n_math=0)
    run = dataset_judge(dataset=ds, judges=[make_judge("sq")])
    TaskBatch.objects.filter(run=run.id).update(status="done")  # e.g. the judge was deleted meanwhile
    with pytest.raises(CommandError, match=r"every LLM task finished but 2 of 2 readings are missing"):
        wait_for_run(run, bar=tqdm(disable=True), timeout=60)


def test_a_failing_batch_task_records_its_failure(loopback, make_judge, make_dataset, settings):
    from adjudication.models import TaskBatch
    from judges.services.runs import dataset_judge
    from judges.tasks import BatchFailed, judge_batch

    settings.CELERY_TASK_ALWAYS_EAGER = False
    ds = make_dataset(n_mc=2, n_math=0)
    judge = make_judge("sq")
    run = dataset_judge(dataset=ds, judges=[judge])
    (batch,) = TaskBatch.objects.filter(run=run.id)
    with connection.cursor() as cursor:  # a write that fails for every row: no table (rolled back with the test)
        cursor.execute("ALTER TABLE judges_judgement RENAME TO judges_judgement_away")
    with pytest.raises(BatchFailed, match="judges_judgement"):
        judge_batch.run([judge.pk], response_ids(ds), False, "", batch.pk)
    batch.refresh_from_db()
    assert batch.status == "failed" and "judges_judgement" in batch.error and batch.deliveries == 1


def test_a_task_failure_is_stored_and_logged_without_the_api_key(
    loopback, make_endpoint, make_dataset, monkeypatch, caplog
):
    from adjudication.models import TaskBatch
    from judges.services.batches import llm_batch_tracked

    monkeypatch.setenv("LOOP_KEY", SECRET)
    make_endpoint(api_key_env="LOOP_KEY")
    batch = TaskBatch.objects.create(
        run="7f0e8c1e-0000-4000-8000-000000000000", kind="judge", responses=1, dataset=make_dataset(n_mc=1, n_math=0)
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(Exception) as raised, llm_batch_tracked(batch.pk):
        raise RuntimeError(f"the proxy said: bad key {SECRET}")
    batch.refresh_from_db()
    assert batch.status == "failed" and "bad key [redacted API key]" in batch.error
    assert SECRET not in batch.error and SECRET not in str(raised.value) and SECRET not in caplog.text
    assert "bad key [redacted API key]" in caplog.text


@pytest.mark.django_db(transaction=True)  # autocommit, as in `manage.py`: on_commit fires at once
def test_run_judges_in_eager_mode_fails_with_the_tasks_error(loopback, make_judge, make_dataset, eager):
    ds = make_dataset(n_mc=2, n_math=0)
    make_judge("sq")
    with (
        table_away("judges_judgement"),
        pytest.raises(CommandError, match=r"batch \d+ failed: ProgrammingError: .*judges_judgement"),
    ):
        run_command("run_judges", dataset=ds.name, judges=["sq"], timeout=60)


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_run_judges_exits_with_a_clear_error_when_a_worker_task_failed(
    loopback, make_endpoint, make_dataset, celery_worker
):
    from judges.models import Judge

    ds = make_dataset([mc_row(i) for i in range(4)], n_mc=0)
    Judge.objects.create(name="sq", endpoint=make_endpoint(), template="simpleqa")
    # noticed, not timed out: a wait that ran into its timeout says "timed out after 100s" instead
    with (
        table_away("judges_judgement"),
        pytest.raises(CommandError, match=r"2 of 2 LLM tasks failed.*judges_judgement"),
    ):
        run_command("run_judges", dataset=ds.name, judges=["sq"], batch_size=2, timeout=100)


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_regeneration_wait_exits_with_a_clear_error_when_a_worker_task_failed(
    loopback, make_endpoint, make_dataset, celery_worker
):
    ds = make_dataset([math_row(0), math_row(1)], n_mc=0)
    loopback.reply = " \\boxed{72}"
    make_endpoint("loop")
    # noticed, not timed out: a wait that ran into its timeout says "timed out after 100s" instead
    with (
        table_away("judges_llmattempt"),
        pytest.raises(CommandError, match=r"1 of 1 LLM task failed.*judges_llmattempt"),
    ):
        run_command("run_readers", dataset=ds.name, readers=["regeneration"], endpoint="loop", timeout=100)


# -- issue 32, item 10: batches the broker lost are sent again; a timeout says what is still out ---------------


@pytest.mark.django_db(transaction=True)  # autocommit, as in `manage.py`: the batches really reach Redis
def test_run_judges_wait_sends_again_the_batches_the_broker_lost_and_says_no_worker_started_them(
    loopback, make_judge, make_dataset, broker, monkeypatch, capsys
):
    import redis
    from django.conf import settings

    from adjudication.models import TaskBatch
    from adjudication.pipeline import progress
    from adjudication.pipeline.broker import batches_held
    from adjudication.pipeline.progress import wait_for_run
    from judges.services.runs import dataset_judge

    ds = make_dataset(n_mc=6, n_math=0)
    run = dataset_judge(dataset=ds, judges=[make_judge("sq")], batch_size=2)
    ids = set(TaskBatch.objects.filter(run=run.id).values_list("id", flat=True))
    assert len(ids) == 3 and batches_held() == ids
    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()  # Redis restarted without persistence
    clock = FakeClock()
    monkeypatch.setattr(progress, "time", clock)
    # No worker in this test: the wait ends at its timeout, after the lost batches were sent again.
    with pytest.raises(CommandError) as ended:
        wait_for_run(run, bar=tqdm(disable=True), timeout=30)
    assert batches_held() == ids
    assert "the broker no longer held 3 LLM task(s) of this run" in capsys.readouterr().err
    message = str(ended.value)
    assert message.startswith("timed out after 30s with 0/6 readings; 3 LLM task(s) not started by any worker")
    assert "is a worker consuming their queue?" in message and "workers keep going" not in message


# -- item 7: a total deadline per attempt, however the bytes trickle ------------------------------------------


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers-and-body"])
def test_a_trickling_server_is_cut_off_at_the_attempt_deadline(
    loopback, make_judge, make_dataset, settings, headers_too
):
    settings.LLM_RETRY_MAX_ATTEMPTS = "1"
    ds = make_dataset(n_mc=1, n_math=0)
    # one byte every 0.25 s: every read returns well inside the timeout, the reply takes over a minute
    loopback.inject({"trickle_s": 0.25, "trickle_headers": headers_too})
    judge = make_judge("sq", endpoint=None)
    judge.endpoint.timeout_s = 1.0
    judge.endpoint.save()
    judge_all(ds, judge)
    (attempt,) = LLMAttempt.objects.all()
    assert attempt.status == "timeout" and "deadline of 1s" in attempt.error
    (r,) = readings_of("sq")
    assert r.verdict == "timeout" and r.detail["failed"] == "call"
    # the client hung up mid-reply (the server's next byte found the connection closed): it was cut
    # off at its deadline, not after waiting the minute-long trickle out
    assert wait_until(lambda: loopback.stats.statuses.get(499) == 1, timeout=10)


def test_a_reply_read_whole_in_time_but_parsed_past_the_deadline_is_a_timeout(
    loopback, make_judge, make_dataset, settings, monkeypatch
):
    """The deadline is the attempt's wall clock to the end, parse included: under load a parse (or
    the wait for the GIL while another thread parses a 64 MiB reply) can end well past it, and
    every read having returned in time is no excuse. The stall is simulated where it happens."""
    from judges import client

    settings.LLM_RETRY_MAX_ATTEMPTS = "2"
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.reply = "A"
    judge = make_judge("sq", endpoint=None)
    judge.endpoint.timeout_s = 0.5
    judge.endpoint.save()
    real_parse = client.parse_reply
    stalls = [0.8]  # the first attempt's parse ends past its deadline; the retry's does not

    def stalled_parse(text: str, **kwargs: object) -> object:
        if stalls:
            time.sleep(stalls.pop())
        return real_parse(text)

    monkeypatch.setattr(client, "parse_reply", stalled_parse)
    judge_all(ds, judge)
    first, second = LLMAttempt.objects.order_by("attempt")
    assert first.status == "timeout" and "deadline of 0.5s exceeded" in first.error
    assert "read whole, then parsed past the deadline" in first.error and first.latency_ms >= 500
    assert second.status == "ok"
    (r,) = readings_of("sq")
    assert r.verdict == "correct" and r.detail["attempts"] == 2


# -- item 8: the reply read and stored is capped ---------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_reply_is_an_error_reading_and_is_never_read_whole(
    loopback, make_judge, make_dataset, settings, chunked
):
    settings.LLM_MAX_REPLY_BYTES = "100000"
    ds = make_dataset(n_mc=2, n_math=0)
    loopback.reply = "A"
    loopback.inject({"oversize": 64 * 2**20, "chunked": chunked})
    judge = make_judge("sq")
    judge_all(ds, judge)
    verdicts = {r.verdict: r for r in readings_of("sq")}
    assert set(verdicts) == {"error", "correct"}
    bad = verdicts["error"]
    assert bad.detail["failed"] == "call" and bad.judgement.raw_reply is None
    assert "larger than 100000 bytes (LLM_MAX_REPLY_BYTES)" in bad.detail["error"]
    attempt = LLMAttempt.objects.get(response=bad.response)  # too large is final: never fetched again
    assert attempt.status == "fatal_error" and attempt.http_status == 200
    assert max(len(j.raw_reply or "") for j in Judgement.objects.all()) < 100000
    assert wait_until(lambda: loopback.stats.statuses.get(499) == 1, timeout=10)  # 64 MiB never sent whole


def test_an_oversized_error_body_is_capped_too(loopback, make_judge, make_dataset, settings):
    settings.LLM_MAX_REPLY_BYTES = "100000"
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.inject({"status": 500, "oversize": 64 * 2**20, "chunked": True})
    judge = make_judge("sq")
    judge_all(ds, judge)
    (r,) = readings_of("sq")
    assert r.verdict == "error" and "larger than 100000 bytes" in r.detail["error"]
    (attempt,) = LLMAttempt.objects.all()
    assert attempt.status == "fatal_error" and len(attempt.error) < 5000
    assert wait_until(lambda: loopback.stats.statuses.get(499) == 1, timeout=10)


def test_a_reply_under_the_cap_is_stored_whole(loopback, make_judge, make_dataset, settings):
    settings.LLM_MAX_REPLY_BYTES = "100000"
    ds = make_dataset(n_mc=1, n_math=0)
    reply = "fine " * 10000 + "\nA"  # 50 kB: half the cap
    loopback.inject({"content": reply})
    judge = make_judge("sq")
    judge_all(ds, judge)
    (r,) = readings_of("sq")
    assert r.verdict == "correct" and r.judgement.raw_reply == reply


# -- item 9: the API key's value is never stored or logged ---------------------------------------------------


def test_an_echoed_api_key_is_redacted_from_everything_stored_and_logged(
    loopback, make_endpoint, make_judge, make_dataset, monkeypatch, caplog, settings
):
    settings.LLM_RETRY_MAX_ATTEMPTS = "2"
    monkeypatch.setenv("LOOP_KEY", SECRET)
    ds = make_dataset(n_mc=3, n_math=0)
    faults = {
        0: [{"status": 401, "message": f"Incorrect API key provided: {SECRET}"}],  # final at once
        1: [
            {"status": 502, "text": f"proxy: upstream refused Bearer {SECRET}"},  # retried, then not JSON
            {"status": 200, "text": f"<html>gateway page for {SECRET}</html>"},
        ],
        2: [{"content": f"A (your key is {SECRET})", "model": f"model-{SECRET}", "finish_reason": SECRET}],
    }

    def fault_for(body: dict, n: int) -> dict | None:
        text = json.dumps(body)
        queue = next(q for i, q in faults.items() if f"[{i}]" in text)
        return queue.pop(0) if queue else None

    loopback.fault_for = fault_for
    judge = make_judge("sq", endpoint=make_endpoint(api_key_env="LOOP_KEY"))
    with caplog.at_level(logging.DEBUG):
        judge_all(ds, judge)

    errors = list(LLMAttempt.objects.order_by("response_id", "attempt").values_list("error", flat=True))
    details = json.dumps(list(Reading.objects.values_list("detail", flat=True)))
    (replied,) = Judgement.objects.exclude(raw_reply=None)
    assert all(
        SECRET not in text
        for text in [*errors, details, replied.raw_reply, replied.served_model, replied.finish_reason, caplog.text]
    )
    assert "Incorrect API key provided: [redacted API key]" in errors[0]
    assert "Bearer [redacted API key]" in errors[1] and "gateway page for [redacted API key]" in errors[2]
    assert (replied.raw_reply, replied.served_model, replied.finish_reason) == (
        "A (your key is [redacted API key])",
        "model-[redacted API key]",
        "[redacted API key]",
    )


# -- issue 32, item 12: a reply nested too deep to parse is an attempt of its own, recorded and retried ----------

DEEP = '{"choices": [' + "[" * 100_000 + "]" * 100_000 + "]}"


def test_a_reply_nested_100k_deep_is_a_recorded_unreadable_attempt_then_retried(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.reply = "A"
    loopback.inject({"body": DEEP})
    judge = make_judge("sq")
    judge_all(ds, judge)
    first, second = LLMAttempt.objects.order_by("attempt")
    assert first.status == "retryable_error" and first.http_status == 200
    assert first.error.startswith("unreadable reply: nested deeper than 64 levels")
    assert second.status == "ok"
    (r,) = readings_of("sq")
    assert r.verdict == "correct" and r.detail["attempts"] == 2


def test_a_server_that_always_replies_nested_too_deep_gives_a_call_failure_not_an_internal_one(
    loopback, make_judge, make_dataset, settings
):
    settings.LLM_RETRY_MAX_ATTEMPTS = "3"
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.fault_for = lambda body, n: {"body": DEEP}
    judge = make_judge("sq")
    judge_all(ds, judge)
    attempts = list(LLMAttempt.objects.order_by("attempt").values_list("status", "error"))
    assert [status for status, _ in attempts] == ["retryable_error"] * 3
    assert all(error.startswith("unreadable reply:") for _, error in attempts)
    (r,) = readings_of("sq")
    assert r.verdict == "error" and r.detail["failed"] == "call" and r.detail["attempts"] == 3
    assert r.judgement.parse_status == "call_failed"


def test_brackets_inside_a_reply_s_strings_and_a_nesting_within_the_bound_are_read(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    content = "[" * 5000 + "{ A"  # brackets in text are no nesting
    nested = '{"a": ' * 40 + "1" + "}" * 40
    body = json.dumps(
        {"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": content}}]}
    )
    loopback.inject({"body": body[:-1] + f', "vendor_extra": {nested}}}'})
    judge = make_judge("sq")
    judge_all(ds, judge)
    (attempt,) = LLMAttempt.objects.all()
    assert attempt.status == "ok"
    (r,) = readings_of("sq")
    assert r.judgement.raw_reply == content


@pytest.mark.parametrize("usage", [[1, 2], "lots", 7], ids=["list", "string", "number"])
def test_a_reply_whose_usage_is_not_an_object_is_read_without_token_counts(loopback, make_judge, make_dataset, usage):
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.reply = "A"
    loopback.inject({"usage": usage})
    judge = make_judge("sq")
    judge_all(ds, judge)
    (attempt,) = LLMAttempt.objects.all()
    assert attempt.status == "ok" and attempt.prompt_tokens is None and attempt.completion_tokens is None
    (r,) = readings_of("sq")
    assert r.verdict == "correct"


def test_an_attempt_whose_client_code_raises_is_still_a_recorded_attempt(
    loopback, make_judge, make_dataset, monkeypatch
):
    from judges import client

    def broken(text: str, **kwargs: object) -> object:
        raise RuntimeError("a reply shape nobody foresaw")

    monkeypatch.setattr(client, "parse_reply", broken)
    ds = make_dataset(n_mc=1, n_math=0)
    judge = make_judge("sq")
    judge_all(ds, judge)
    (attempt,) = LLMAttempt.objects.all()  # fatal: our own code would raise the same way again
    assert attempt.status == "fatal_error"
    assert attempt.error == "internal error in the attempt: RuntimeError: a reply shape nobody foresaw"
    (r,) = readings_of("sq")
    assert r.verdict == "error" and r.detail["failed"] == "call"
