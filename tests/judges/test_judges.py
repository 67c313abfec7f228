"""LLM judges against the loopback server: verdicts, raw replies, attempts, retries, limits."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter

import pytest

from adjudication.models import ReaderSpec, Reading
from judges.models import Endpoint, Judge, Judgement, LLMAttempt
from judges.services.judging import judge_spec_for, judgements_create

from ..conftest import FakeClock, mc_row, run_command
from .conftest import response_ids

pytestmark = pytest.mark.django_db


def judge_all(dataset, *judges, retry_errors=False) -> int:
    return judgements_create(judges=list(judges), response_ids=response_ids(dataset), retry_errors=retry_errors)


def readings_of(judge: Judge) -> list[Reading]:
    return list(
        Reading.objects.filter(reader_spec__name=judge.name)
        .select_related("judgement", "response")
        .order_by("response_id")
    )


def test_simpleqa_judge_stores_verdicts_raw_replies_and_attempts(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=3, n_math=0)
    replies = {"mc-0": "A", "mc-1": "B", "mc-2": "C"}
    loopback.reply = lambda body, path: next(v for k, v in replies.items() if f"[{k[3:]}]" in json.dumps(body))
    judge = make_judge("sq", template="simpleqa")
    assert judge_all(ds, judge) == 3

    got = {r.response.external_id: r for r in readings_of(judge)}
    assert {k: r.verdict for k, r in got.items()} == {"mc-0": "correct", "mc-1": "incorrect", "mc-2": "no_answer"}
    j = got["mc-1"].judgement
    assert (j.raw_reply, j.label, j.parse_status, j.parser) == ("B", "incorrect", "parsed", "simpleqa")
    assert len(j.prompt_hash) == 64 and j.judge == judge and j.served_model == "loop-model"
    assert j.reparses == {
        "simpleqa_first_capital": "incorrect",
        "inspect_last_grade": None,
        "xverify_exact_label": None,
    }
    # what the judge saw: the question with its options, the gold as letter and text, the whole response
    body = next(b for b in loopback.stats.bodies if "[1]" in json.dumps(b))
    prompt = body["messages"][0]["content"]
    assert "B. Weber" in prompt and "Gold target: B. Weber" in prompt and "NOT_ATTEMPTED" in prompt
    assert "<think>Weber fits best.</think>\nThe answer is (B). [1]" in prompt
    assert body["model"] == "loop-model" and body["temperature"] == 0
    # one attempt per call, with latency and token counts
    attempts = LLMAttempt.objects.filter(reader_spec__name="sq")
    assert attempts.count() == 3
    assert all(
        a.status == "ok"
        and a.http_status == 200
        and a.attempt == 1
        and a.latency_ms > 0
        and a.prompt_tokens
        and a.completion_tokens == 1
        and a.purpose == "judge"
        for a in attempts
    )
    spec = ReaderSpec.objects.get(name="sq")
    assert spec.kind == "judge" and spec.config["endpoint_model"] == "loop-model"


def test_upstream_first_capital_disagreement_is_recorded(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=2, n_math=0)
    loopback.reply = "CORRECT"  # a judge answering with the word instead of the letter
    judge = make_judge("sq", template="simpleqa")
    judge_all(ds, judge)
    for r in readings_of(judge):
        assert r.verdict == "correct"
        assert r.judgement.label == "correct"
        assert r.judgement.reparses["simpleqa_first_capital"] == "not_attempted"
    # parser-induced disagreement can be counted
    disagree = sum(1 for j in Judgement.objects.all() if j.reparses["simpleqa_first_capital"] != j.label)
    assert disagree == 2
    # and each reading says so itself, naming the upstream parser of its template
    assert {(r.detail["upstream_parser"], r.detail["parser_disagrees"]) for r in readings_of(judge)} == {
        ("simpleqa_first_capital", True)
    }


def test_a_judge_that_answers_the_question_is_unparsed_not_correct(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=2, n_math=0)
    loopback.reply = "The correct answer is (J)."  # SmolLM2-135M with the xverify template (issue 37)
    judge = make_judge("xv", template="xverify")
    judge_all(ds, judge)
    for r in readings_of(judge):
        assert (r.verdict, r.detail["parse_status"], r.judgement.label) == ("error", "unparsed", "")
        # xVerify's own accounting finds no label either: the two parsers agree there is none
        assert r.judgement.reparses["xverify_exact_label"] is None
        assert (r.detail["upstream_parser"], r.detail["parser_disagrees"]) == ("xverify_exact_label", False)
    # verdicts of the strict parsers are a reader version of their own, apart from the lenient ones
    assert ReaderSpec.objects.get(name="xv").version == "2"


def test_an_unparseable_reply_has_its_own_status_never_incorrect(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=2, n_math=0)
    loopback.reply = "I would rather not say."
    judge = make_judge("sq", template="simpleqa")
    judge_all(ds, judge)
    for r in readings_of(judge):
        assert r.verdict == "error" and r.verdict != "incorrect"
        assert r.detail["parse_status"] == "unparsed"
        assert r.judgement.parse_status == "unparsed"
        assert r.judgement.raw_reply == "I would rather not say."
        assert "failed" not in r.detail  # a received reply: --retry-errors does not redo it
    # simple-evals would have called these NOT_ATTEMPTED; we keep the upstream reading next to ours
    assert {j.reparses["simpleqa_first_capital"] for j in Judgement.objects.all()} == {"not_attempted"}
    assert judge_all(ds, judge, retry_errors=True) == 0


def test_xverify_judge_and_its_exact_label_reparse(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=2, n_math=0)
    loopback.reply = lambda body, path: "[Incorrect]" if "[0]" in json.dumps(body) else "Correct"
    judge = make_judge("xv", template="xverify")
    judge_all(ds, judge)
    r0, r1 = readings_of(judge)
    assert (r0.verdict, r0.judgement.reparses["xverify_exact_label"]) == ("incorrect", None)
    assert (r1.verdict, r1.judgement.reparses["xverify_exact_label"]) == ("correct", "correct")
    prompt = loopback.stats.bodies[0]["messages"][0]["content"]
    assert "Output sentence:" in prompt and "Judgement:" in prompt and "NOT_ATTEMPTED" not in prompt


def test_custom_template_with_an_upstream_parser(loopback, make_judge, make_dataset, tmp_path):
    ds = make_dataset(n_mc=0, n_math=2)
    template = "Q: {question}\nGold: {target}\nSubmission: {response}\nLaTeX braces stay: \\frac{1}{2}\nGRADE?"
    loopback.reply = "Reasoning... GRADE: I\nActually it matches.\nGRADE: C"
    judge = make_judge("insp", template="custom", custom_template=template, parser="inspect_last_grade")
    judge_all(ds, judge)
    assert [r.verdict for r in readings_of(judge)] == ["correct", "correct"]
    prompt = loopback.stats.bodies[0]["messages"][0]["content"]
    assert re.match(r"Q: Compute \d \+ 72 - \d\.\nGold: 72\nSubmission: Adding", prompt)
    assert "\\frac{1}{2}" in prompt


def test_faults_are_retried_and_every_attempt_is_recorded(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.reply = "A"
    loopback.inject({"status": 429, "retry_after": 0}, {"status": 500}, {"status": 503}, {"malformed": True})
    judge = make_judge("sq", endpoint=None, max_tokens=5)
    judge.endpoint.max_concurrency = 1
    judge.endpoint.save()
    judge_all(ds, judge)
    # 4 attempts allowed: the 429, 500 and 503 were retried; the malformed reply was the last straw
    (r,) = readings_of(judge)
    assert r.verdict == "error" and r.detail["failed"] == "call" and r.detail["attempts"] == 4
    assert r.judgement.parse_status == "call_failed" and r.judgement.raw_reply is None
    attempts = list(LLMAttempt.objects.filter(response=r.response).order_by("attempt"))
    assert [(a.attempt, a.status, a.http_status) for a in attempts] == [
        (1, "retryable_error", 429),
        (2, "retryable_error", 500),
        (3, "retryable_error", 503),
        (4, "retryable_error", 200),
    ]
    assert "malformed reply" in attempts[3].error

    # nothing is lost: a later run with --retry-errors redoes it in place; still one reading
    judge_all(ds, judge, retry_errors=True)
    (r2,) = readings_of(judge)
    assert r2.pk == r.pk and r2.verdict == "correct" and r2.judgement.parse_status == "parsed"
    assert LLMAttempt.objects.filter(response=r.response).count() == 5
    assert loopback.stats.requests == 5


def test_a_slow_reply_times_out_and_is_retried(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.reply = "A"
    # far longer than any test run: only a client that gave up at its deadline ever gets a reply
    loopback.inject({"sleep": 60.0})
    judge = make_judge("sq")
    Endpoint.objects.filter(pk=judge.endpoint_id).update(timeout_s=0.3)
    judge.refresh_from_db()
    judge_all(ds, judge)
    (r,) = readings_of(judge)
    assert r.verdict == "correct"
    attempts = list(LLMAttempt.objects.order_by("attempt"))
    assert [a.status for a in attempts] == ["timeout", "ok"]
    assert "deadline" in attempts[0].error
    # the retry reached the server while it still sat on the slow request: the first attempt was
    # abandoned at its deadline, not waited out
    assert loopback.stats.max_in_flight == 2


def test_a_request_that_always_times_out_gives_a_timeout_reading(loopback, make_judge, make_dataset, settings):
    settings.LLM_RETRY_MAX_ATTEMPTS = "2"
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.latency_s = 1.0
    judge = make_judge("sq")
    Endpoint.objects.filter(pk=judge.endpoint_id).update(timeout_s=0.2)
    judge.refresh_from_db()
    judge_all(ds, judge)
    (r,) = readings_of(judge)
    assert r.verdict == "timeout" and r.detail["failed"] == "call" and r.detail["attempts"] == 2


def test_400_is_not_retried(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    loopback.inject({"status": 400})
    judge = make_judge("sq")
    judge_all(ds, judge)
    (r,) = readings_of(judge)
    assert r.verdict == "error" and r.detail["http_status"] == 400 and r.detail["attempts"] == 1
    assert list(LLMAttempt.objects.values_list("status", "http_status")) == [("fatal_error", 400)]
    assert loopback.stats.requests == 1
    # a plain re-run does not redo it (it has its reading); --retry-errors does
    assert judge_all(ds, judge) == 0
    assert judge_all(ds, judge, retry_errors=True) == 1
    assert readings_of(judge)[0].verdict == "correct"


def test_a_missing_api_key_variable_is_a_recorded_fatal_error(
    loopback, make_endpoint, make_judge, make_dataset, monkeypatch
):
    monkeypatch.delenv("LOOP_KEY_FOR_TEST", raising=False)
    ds = make_dataset(n_mc=1, n_math=0)
    judge = make_judge("sq", endpoint=make_endpoint(api_key_env="LOOP_KEY_FOR_TEST"))
    judge_all(ds, judge)
    (r,) = readings_of(judge)
    assert r.verdict == "error" and "LOOP_KEY_FOR_TEST is not set" in r.detail["error"]
    assert loopback.stats.requests == 0
    monkeypatch.setenv("LOOP_KEY_FOR_TEST", "sk-test-secret")
    judge_all(ds, judge, retry_errors=True)
    assert readings_of(judge)[0].verdict == "correct"
    # the key went to the server as a bearer token and is stored nowhere
    assert "sk-test-secret" not in json.dumps(list(Endpoint.objects.values()), default=str)


def test_nothing_is_lost_under_random_faults_with_two_judges(
    loopback, make_endpoint, make_judge, make_dataset, settings
):
    settings.LLM_RETRY_MAX_ATTEMPTS = "2"
    ds = make_dataset([mc_row(i) for i in range(40)], n_mc=0)
    kinds = [{"status": 500}, {"status": 429}, {"malformed": True}, {"status": 400}]
    loopback.fault_for = lambda body, n: kinds[(n // 3) % 4] if n % 3 == 0 else None
    ep = make_endpoint(max_concurrency=6)
    sq = make_judge("sq", endpoint=ep, template="simpleqa")
    xv = make_judge("xv", endpoint=ep, template="xverify")
    judge_all(ds, sq, xv)
    for judge in (sq, xv):
        per_response = Counter(
            Reading.objects.filter(reader_spec__name=judge.name).values_list("response_id", flat=True)
        )
        assert sorted(per_response) == response_ids(ds) and set(per_response.values()) == {1}
    # every request the server saw is an attempt, and attempts match the readings' accounts
    assert LLMAttempt.objects.count() == loopback.stats.requests
    total_by_detail = sum(r.detail["attempts"] for r in Reading.objects.all())
    assert total_by_detail == loopback.stats.requests
    verdicts = Counter(Reading.objects.values_list("verdict", flat=True))
    assert set(verdicts) <= {"correct", "error"} and verdicts["correct"] > 0
    # a failed call never reads as a verdict about the answer
    for r in Reading.objects.filter(verdict="error"):
        assert r.detail["failed"] == "call" and r.judgement.parse_status == "call_failed"
    # repeat with --retry-errors until all are judged: still exactly one reading each
    loopback.fault_for = None
    judge_all(ds, sq, xv, retry_errors=True)
    assert Reading.objects.count() == 80 and set(Reading.objects.values_list("verdict", flat=True)) == {"correct"}


def test_concurrency_is_honoured_and_kept_full(loopback, make_endpoint, make_judge, make_dataset):
    # The server holds every request until five are in flight together (a barrier of five): the
    # 30 requests are answered, wave after wave, only by a client that keeps all five of the
    # endpoint's slots busy while work remains. A client that ran fewer at a time would leave a
    # wave waiting in vain; the barrier's timeout is a guard against hanging, not a measurement.
    limit, n = 5, 30
    barrier = threading.Barrier(limit)
    broken: list[dict] = []

    def held_until_the_slots_are_full(body: dict, path: str) -> str:
        try:
            barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            broken.append(body)
        return "A"

    loopback.reply = held_until_the_slots_are_full
    ds = make_dataset([mc_row(i) for i in range(n)], n_mc=0)
    judge = make_judge("sq", endpoint=make_endpoint(max_concurrency=limit, timeout_s=60))
    judge_all(ds, judge)
    assert broken == []
    assert loopback.stats.max_in_flight == limit and loopback.stats.requests == n
    assert Counter(r.verdict for r in readings_of(judge)) == {"correct": n}


def test_the_loopback_counts_a_request_in_flight_only_until_the_client_can_have_its_reply(loopback, monkeypatch):
    """A client that sends its next request as soon as it has read a reply never shows two in
    flight, however late the server's thread runs after writing the reply (here 0.2 s, as on a busy
    machine). Counted until after the write, the two overlapped, and a limit of 3 once read as 4."""
    import time
    import urllib.request

    from judges.testing import loopback as module

    send = module._Handler._send

    def late(self, *args, **kwargs) -> None:
        send(self, *args, **kwargs)
        time.sleep(0.2)  # the reply is out; this thread is slow to go on

    monkeypatch.setattr(module._Handler, "_send", late)
    loopback.reply = "A"
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Q?"}]}).encode()
    for _ in range(3):  # a new connection each: another server thread each
        request = urllib.request.Request(
            loopback.base_url + "/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert json.loads(reply.read())["choices"][0]["message"]["content"] == "A"
    assert loopback.stats.requests == 3 and loopback.stats.max_in_flight == 1


def test_two_judges_on_two_endpoints_each_keep_their_own_concurrency(make_dataset):
    from judges.testing.loopback import LoopbackServer

    ds = make_dataset([mc_row(i) for i in range(24)], n_mc=0)
    with LoopbackServer(latency_s=0.05, reply="A") as a, LoopbackServer(latency_s=0.05, reply="Correct") as b:
        ea = Endpoint.objects.create(name="a", base_url=a.base_url, model="m", max_concurrency=3)
        eb = Endpoint.objects.create(name="b", base_url=b.base_url, model="m", max_concurrency=6)
        ja = Judge.objects.create(name="ja", endpoint=ea, template="simpleqa")
        jb = Judge.objects.create(name="jb", endpoint=eb, template="xverify")
        judge_all(ds, ja, jb)
        assert (a.stats.max_in_flight, b.stats.max_in_flight) == (3, 6)
    assert Counter(Reading.objects.values_list("verdict", flat=True)) == {"correct": 48}


def test_requests_per_minute_is_honoured(loopback, make_endpoint, make_judge, make_dataset):
    # with a broker (make test) the shared limit in Redis does this; without one, the local bucket
    ds = make_dataset([mc_row(i) for i in range(6)], n_mc=0)
    judge = make_judge("sq", endpoint=make_endpoint(max_concurrency=6, requests_per_minute=600))
    judge_all(ds, judge)
    # 600/min = one request per 0.1 s: the six attempts as recorded start at least five intervals
    # apart in all (a lower bound: the limiter must make them wait; how fast they ran is no concern)
    starts = sorted(LLMAttempt.objects.values_list("started_at", flat=True))
    assert len(starts) == 6
    assert (starts[-1] - starts[0]).total_seconds() >= 0.45, starts


def test_the_local_rate_limit_spaces_requests_evenly(monkeypatch):
    from judges import limits

    clock = FakeClock()
    monkeypatch.setattr(limits, "time", clock)
    # 480/min, one every 0.125 s: binary fractions, so that the fake clock's sums are exact
    bucket = limits.TokenBucket(480 / 60.0)
    granted = []
    for _ in range(6):
        bucket.take()
        granted.append(clock.now)
    # one token banked, then one every 0.125 s: the schedule is the rate's, whatever the machine's speed
    assert granted == [0.0, 0.125, 0.25, 0.375, 0.5, 0.625]
    assert clock.sleeps == [0.125] * 5


def test_editing_a_judge_makes_a_new_spec_and_keeps_old_readings(loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=2, n_math=0)
    judge = make_judge("sq")
    judge_all(ds, judge)
    old = judge_spec_for(judge)
    judge.temperature = 0.7
    judge.save()
    assert judge_spec_for(judge) != old
    assert judge_all(ds, judge) == 2
    assert Reading.objects.filter(reader_spec__name="sq").count() == 4


@pytest.mark.django_db(transaction=True)  # autocommit, as in `manage.py`: on_commit fires at once
def test_run_judges_command_and_export_show_the_judge_as_a_reader(
    loopback, make_endpoint, make_dataset, eager, tmp_path
):
    ds = make_dataset(n_mc=3, n_math=2)
    loopback.inject({"status": 500})
    run_command("add_endpoint", "loop", base_url=loopback.base_url, model="loop-model", concurrency=3)
    run_command("add_judge", "sq", endpoint="loop", template="simpleqa")
    out = run_command("run_judges", dataset=ds.name, judges=["sq"])
    assert out.split()[:2] == ["sq", "5"] and "correct=5" in out and "retryable_error=1" in out
    run_command("export_readings", dataset=ds.name, out=tmp_path / "out.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    sq = [r for r in rows if r["reader"] == "sq"]
    assert len(sq) == 5 and {r["verdict"] for r in sq} == {"correct"}
    # a second run finds nothing to do
    out = run_command("run_judges", dataset=ds.name, judges=["sq"])
    assert out.split()[:2] == ["sq", "0"]
    assert Reading.objects.filter(reader_spec__name="sq").count() == 5


def test_add_endpoint_is_idempotent_and_updates_only_what_is_given(loopback):
    run_command(
        "add_endpoint",
        "e",
        base_url="http://127.0.0.1:9/v1/",
        model="m1",
        api_key_env="E_KEY",
        concurrency=3,
        rpm=120,
        timeout=7,
    )
    run_command("add_endpoint", "e", base_url="http://127.0.0.1:9/v1", model="m2")
    e = Endpoint.objects.get(name="e")
    assert (e.base_url, e.model, e.api_key_env, e.max_concurrency, e.requests_per_minute, e.timeout_s) == (
        "http://127.0.0.1:9/v1",
        "m2",
        "E_KEY",
        3,
        120,
        7.0,
    )
    assert Endpoint.objects.count() == 1
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="NAME of an environment variable"):
        run_command("add_endpoint", "e", base_url="http://x/v1", model="m", api_key_env="sk-live-123")
    with pytest.raises(CommandError, match="concurrency"):
        run_command("add_endpoint", "e", base_url="http://x/v1", model="m", concurrency=0)
    # a compose service name is a host; a URL without a scheme is not
    run_command("add_endpoint", "compose", base_url="http://vllm:8000/v1", model="m")
    with pytest.raises(CommandError, match="base_url"):
        run_command("add_endpoint", "bad", base_url="localhost:8001/v1", model="m")


def test_add_judge_templates_and_name_rules(loopback, make_endpoint, tmp_path):
    from django.core.management.base import CommandError

    make_endpoint("loop")
    run_command("add_judge", "xv", endpoint="loop", template="xverify", temperature=0.1)
    assert Judge.objects.get(name="xv").template == "xverify"
    path = tmp_path / "mine.txt"
    path.write_text("Question: {question}\nAnswer: {response}\nReply GRADE: C or GRADE: I")
    run_command("add_judge", "mine", endpoint="loop", template=str(path))
    mine = Judge.objects.get(name="mine")
    assert mine.template == "custom" and "{response}" in mine.custom_template
    bad = tmp_path / "bad.txt"
    bad.write_text("no placeholder")
    with pytest.raises(CommandError, match="response"):
        run_command("add_judge", "bad", endpoint="loop", template=str(bad))
    with pytest.raises(CommandError, match="already the name of a reader"):
        run_command("add_judge", "fixed", endpoint="loop", template="simpleqa")
    with pytest.raises(CommandError, match="no endpoint"):
        run_command("add_judge", "x", endpoint="nope", template="simpleqa")


@pytest.mark.parametrize("name", ["a\rb", "bell\x07", "tab\tname", "del\x7f", " padded"])
def test_endpoint_and_judge_names_are_one_printable_line(loopback, make_endpoint, name):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="name: must"):
        run_command("add_endpoint", name, base_url="http://x/v1", model="m")
    make_endpoint("loop")
    with pytest.raises(CommandError, match="name: must"):
        run_command("add_judge", name, endpoint="loop", template="simpleqa")
    assert not Judge.objects.exists() and Endpoint.objects.count() == 1


def test_run_judges_refuses_unknown_names(make_dataset):
    from django.core.management.base import CommandError

    ds = make_dataset(n_mc=1, n_math=0)
    with pytest.raises(CommandError, match="unknown judge"):
        run_command("run_judges", dataset=ds.name, judges=["nobody"])
    with pytest.raises(CommandError, match="no dataset"):
        run_command("run_judges", dataset="nope", judges=["nobody"])


def test_hostile_response_text_is_sent_and_judged(loopback, make_judge, make_dataset):
    hostile = "NUL \x00 here, a lone surrogate \ud800, LaTeX {response} \\boxed{B}, and <script>x</script>"
    ds = make_dataset([mc_row(0, response=hostile)], n_mc=0)
    loopback.reply = "A"
    judge = make_judge("sq")
    judge_all(ds, judge)
    (r,) = readings_of(judge)
    assert r.verdict == "correct"
    prompt = loopback.stats.bodies[0]["messages"][0]["content"]
    assert "NUL \x00 here, a lone surrogate \ufffd\ufffd\ufffd, LaTeX {response} \\boxed{B}" in prompt


def test_admin_edits_endpoints_and_judges_and_shows_the_evidence(admin_client, loopback, make_judge, make_dataset):
    ds = make_dataset(n_mc=1, n_math=0)
    judge = make_judge("sq")
    judge_all(ds, judge)
    for url in (
        "/admin/judges/endpoint/",
        "/admin/judges/endpoint/add/",
        f"/admin/judges/endpoint/{judge.endpoint_id}/change/",
        "/admin/judges/judge/",
        f"/admin/judges/judge/{judge.pk}/change/",
        "/admin/judges/judgement/",
        "/admin/judges/llmattempt/",
    ):
        assert admin_client.get(url).status_code == 200, url
    assert admin_client.get("/admin/judges/llmattempt/add/").status_code == 403  # evidence is read-only
    resp = admin_client.post(
        f"/admin/judges/endpoint/{judge.endpoint_id}/change/",
        {
            "name": "loop",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "other",
            "api_key_env": "",
            "max_concurrency": 2,
            "requests_per_minute": 0,
            "timeout_s": 5,
            "flavour": "vllm",
            "logprob_method": "completions_echo",
            "top_logprobs": 20,
            "extra_body": "{}",
        },
    )
    assert resp.status_code == 302
    assert Endpoint.objects.get(pk=judge.endpoint_id).model == "other"
