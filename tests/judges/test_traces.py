"""The LLM traces on the managers' item page and the adjudicator's page: each judge's prompt as sent,
raw reply, every parser's reading and attempts, Answer Regeneration's option scores and method;
none of it anywhere an annotator looks.

The data is made by the real judging path: judgements_create and regenerations_create against the
loopback OpenAI-compatible server (real sockets, the real openai client), with a 500 injected so
one judge's call is retried. What each page must show is read back from what the services stored
and from the request bodies the server received, never written down beside the data."""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from adjudication.browse.selectors import llm_traces
from adjudication.models import QueueItem, Reading, Response, ReviewQueue
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec
from adjudication.text import displayable
from judges.models import Judge, Judgement, LLMAttempt
from judges.services.judging import judgements_create
from judges.services.regeneration import regenerations_create

from ..conftest import mc_row, reading_at
from ..review.conftest import make_user
from .conftest import response_ids

pytestmark = pytest.mark.django_db

JUDGE_CANARY = "judgecanaryqzx"
HOSTILE_JUDGE = "hostilejudgeqzx"
PROMPT_CANARY = "PROMPTCANARYQZX"
REPLY_CANARY = "REPLYCANARYQZX"
# A custom template: the prompt as sent carries a canary an annotator must never see.
TEMPLATE = PROMPT_CANARY + " Grade the response.\nQuestion: {question}\nGold: {target}\nResponse: {response}\nGrade:"
HOSTILE_REPLY = (
    "<script>window.__xss=1</script> nul:\x00 lone:\ud800 "
    + REPLY_CANARY
    + "\n  indented line\n"
    + "x" * 200_000
    + "\nCORRECT"
)
HOSTILE_RESPONSE = "<script>window.__xss=9</script> The answer is B. Then again \\boxed{C}"
LETTER_LOGPROBS = {"A": -3.0, "B": -0.25, "C": -1.5, "D": -6.0}
NO_LABEL = '<span class="muted">none</span>'
# What no annotator-facing page or API may carry: judge names and the trace's own words.
SECRETS = (JUDGE_CANARY, HOSTILE_JUDGE, PROMPT_CANARY, REPLY_CANARY, "regeneration", "LLM traces", "sha256", "logprob")


@dataclass
class World:
    queue: ReviewQueue
    open_queue: ReviewQueue  # the same responses, no label yet: the annotator's
    item: QueueItem  # the first response's item, its labels in conflict
    response: Response
    judges: list[Judge]
    bodies: list[dict]  # every request body the server received
    manager: User
    adjudicator: User
    annotator: User


def _reply(body: dict, path: str) -> str:
    if "messages" not in body:
        return " B"  # a regeneration's completion, if one is asked for
    return HOSTILE_REPLY if "[hostile]" in json.dumps(body) else f"{REPLY_CANARY} Grade: CORRECT"


@pytest.fixture
def world(loopback, make_endpoint, make_dataset) -> World:
    rows = [mc_row(0, response=HOSTILE_RESPONSE + " [0]"), mc_row(1), mc_row(2)]
    dataset = make_dataset(rows, n_mc=0, n_math=0)
    endpoint = make_endpoint(logprob_method="completions_echo")
    loopback.reply = _reply
    loopback.letter_logprobs = LETTER_LOGPROBS
    retried: set[str] = set()

    def first_call_fails(request: dict, n: int) -> dict | None:
        # The first call of JUDGE_CANARY's judge on response 0 is a 500: one retry, two attempts.
        text = json.dumps(request)
        if "[0]" in text and "[judge]" in text and "judge" not in retried:
            retried.add("judge")
            return {"status": 500, "message": "<b>upstream overloaded</b>"}
        return None

    loopback.fault_for = first_call_fails
    judges = [
        Judge.objects.create(
            name=JUDGE_CANARY, endpoint=endpoint, template="custom", custom_template=TEMPLATE + " [judge]"
        ),
        Judge.objects.create(name="simple-judge", endpoint=endpoint, template="simpleqa"),
        Judge.objects.create(
            name=HOSTILE_JUDGE, endpoint=endpoint, template="custom", custom_template=TEMPLATE + " [hostile]"
        ),
    ]
    ids = response_ids(dataset)
    judgements_create(judges=judges, response_ids=ids)
    regenerations_create(endpoint=endpoint, response_ids=ids)
    # A queue over the rule readers' dispute, and two annotators who disagree on the first item.
    strict, boxed = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="boxed")
    for response in dataset.responses.all():
        text = response.text
        reading_at(response, strict, "B", at=text.index("B"), verdict="correct").save()
        reading_at(response, boxed, "C", at=text.index("B") + 1, verdict="incorrect").save()
    queue = queue_create(
        dataset=dataset, spec=QueueSpec(name="traces-q", overlap=2, routing=PolicySpec(panel=["strict-match", "boxed"]))
    )
    first, second = make_user("ann1", "annotator"), make_user("ann2", "annotator")
    response = dataset.responses.get(external_id="mc-0")
    for user, answer in ((first, "B"), (second, "C")):
        while True:
            lease = lease_claim_next(queue=queue, annotator=user).lease
            assert lease is not None
            label_submit(lease=lease, annotator=user, entry=LabelEntry(kind="option", answer=answer))
            if lease.item.review_item.response_id == response.pk:
                break
    open_queue = queue_create(
        dataset=dataset,
        spec=QueueSpec(name="traces-open", overlap=1, routing=PolicySpec(panel=["strict-match", "boxed"])),
    )
    item = QueueItem.objects.get(queue=queue, review_item__response=response)
    assert item.status == QueueItem.Status.CONFLICT
    return World(
        queue=queue,
        open_queue=open_queue,
        item=item,
        response=response,
        judges=judges,
        bodies=list(loopback.stats.bodies),
        manager=make_user("boss", "manager"),
        adjudicator=make_user("judy", "adjudicator"),
        annotator=make_user("ann3", "annotator"),
    )


def _page(user: User, url: str) -> str:
    client = Client()
    client.force_login(user)
    got = client.get(url)
    assert got.status_code == 200, url
    return got.content.decode()


def _sent_prompt(world: World, judge: Judge) -> str:
    """The user message of the last request the server received for this judge and response."""
    marker = (
        f"[{'hostile' if judge.name == HOSTILE_JUDGE else 'judge'}]" if judge.template == "custom" else "Gold target"
    )
    sent = [
        b["messages"][0]["content"]
        for b in world.bodies
        if "messages" in b and marker in b["messages"][0]["content"] and "[0]" in b["messages"][0]["content"]
    ]
    return sent[-1]


def _assert_full_trace(body: str, world: World) -> None:
    assert 'id="llm-traces"' in body
    for judge in world.judges:
        judgement = Judgement.objects.get(reading__response=world.response, judge=judge)
        # the prompt as sent: the very text the server received, escaped, and its hash checked
        assert escape(displayable(_sent_prompt(world, judge))) in body, judge.name
        assert judgement.prompt_hash in body
        # the raw reply, escaped, its whitespace kept
        assert escape(displayable(judgement.raw_reply)) in body, judge.name
        # every parser's reading: ours (the verdict) and each upstream one
        trace = body[body.index(f'id="trace-{judgement.reading_id}"') :].split('class="llm-trace ', 1)[0]
        for parser, label in [(judgement.parser, judgement.label or None), *judgement.reparses.items()]:
            shown_label = label or NO_LABEL
            assert f"<code>{parser}</code></td><td>{shown_label}</td>" in trace, (judge.name, parser)
    assert body.count("as sent (sha256 matches the prompt hash)") >= len(world.judges)
    # every attempt, with status, HTTP status, latency and tokens
    for attempt in LLMAttempt.objects.filter(response=world.response):
        row = (
            f"<td>{attempt.attempt}</td><td>{attempt.purpose}</td><td>{attempt.status}</td>"
            f"<td>{attempt.http_status or '–'}</td>"
        )
        assert row in body, row
    assert "&lt;b&gt;upstream overloaded&lt;/b&gt;" in body  # the retried 500's error text, escaped
    # Answer Regeneration: each option's log-probability, the method and the choice
    regeneration = Reading.objects.get(response=world.response, reader_spec__kind="regeneration")
    for letter, value in regeneration.detail["scores"].items():
        assert f"{value:.4f}" in body, letter
    assert f"scored by <code>{regeneration.detail['scored_by']}</code>" in body
    assert f"chose <strong>{regeneration.answer}</strong>" in body
    # model text is never markup
    assert "<script>window.__xss" not in body and "\x00" not in body


def test_the_judging_path_keeps_the_prompt_as_sent_and_its_hash(world):
    for judgement in Judgement.objects.filter(reading__response=world.response):
        messages = json.loads(judgement.messages_sent)
        judge = judgement.judge
        assert messages == [{"role": "user", "content": _sent_prompt(world, judge)}]


def test_the_managers_item_page_shows_every_llm_readings_trace(world):
    body = _page(world.manager, f"/items/{world.response.pk}/")
    _assert_full_trace(body, world)
    # the retried judge shows both attempts: the 500, then the reply
    retried = LLMAttempt.objects.filter(response=world.response, reader_spec__name=JUDGE_CANARY)
    assert sorted(retried.values_list("attempt", "http_status")) == [(1, 500), (2, 200)]


def test_the_adjudicators_page_shows_the_same_traces(world):
    body = _page(world.adjudicator, f"/adjudicate/{world.item.pk}/")
    _assert_full_trace(body, world)


def test_no_annotator_facing_page_or_api_carries_any_of_the_trace(world):
    client = Client()
    client.force_login(world.annotator)
    queue = world.open_queue
    pages = [("landing", client.get("/review/")), ("API queues", client.get("/api/queues/"))]
    claim = client.post(f"/api/queues/{queue.pk}/claim/")
    pages += [("API claim", claim), ("API lease", client.get(f"/api/leases/{claim.json()['lease']}/"))]
    seen_items = 0
    for _ in range(4):
        page = client.get(f"/review/?queue={queue.pk}", follow=True)
        pages.append(("item", page))
        if not page.redirect_chain:
            break
        seen_items += 1
        lease = int(page.redirect_chain[-1][0].rstrip("/").split("/")[-1])
        pages.append(("submit", client.post(f"/review/item/{lease}/", {"kind": "option", "answer": "B"}, follow=True)))
    assert seen_items >= 1  # the annotator did see items whose traces exist
    replies = [j.raw_reply for j in Judgement.objects.all()]
    for where, response in pages:
        body = response.content.decode()
        for secret in SECRETS:
            assert secret.lower() not in body.lower(), f"{secret!r} on {where}"
        for reply in replies:
            assert escape(displayable(reply[:60])) not in body, where


def test_hostile_model_text_is_escaped_and_the_page_renders(world):
    body = _page(world.manager, f"/items/{world.response.pk}/")
    judgement = Judgement.objects.get(reading__response=world.response, judge__name=HOSTILE_JUDGE)
    assert judgement.raw_reply == HOSTILE_REPLY  # stored verbatim: NUL and the lone surrogate kept
    shown = escape(displayable(HOSTILE_REPLY))
    assert shown in body  # the whole 200 KB reply, escaped, NUL and surrogate as U+FFFD
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in body
    assert "&lt;script&gt;window.__xss=9&lt;/script&gt;" in body  # the response inside the prompt sent
    assert "<script>window.__xss" not in body
    # a long reply is collapsed behind its length; whitespace is kept in a <pre>
    assert f"({len(HOSTILE_REPLY)} characters)</summary><pre" in body
    assert "\n  indented line\n" in unescape(body)


def test_a_prompt_not_kept_or_not_matching_its_hash_is_never_shown(world):
    judge = world.judges[0]
    judgement = Judgement.objects.get(reading__response=world.response, judge=judge)
    sent = escape(displayable(_sent_prompt(world, judge)))
    # a judgement made before prompts were kept
    Judgement.objects.filter(pk=judgement.pk).update(messages_sent=None)
    body = _page(world.manager, f"/items/{world.response.pk}/")
    assert sent not in body and "not kept: judged before prompts were kept" in body
    # a kept text that is not what the hash says was sent
    tampered = json.dumps([{"role": "user", "content": "TAMPEREDQZX"}])
    Judgement.objects.filter(pk=judgement.pk).update(messages_sent=tampered)
    body = _page(world.manager, f"/items/{world.response.pk}/")
    assert "TAMPEREDQZX" not in body and "not the prompt hash recorded" in body


def test_traces_cost_two_statements_however_many_judges_and_attempts(world):
    with CaptureQueriesContext(connection) as many:
        traces = llm_traces(response_id=world.response.pk)
    assert len(traces) == 4 and sum(len(t.attempts) for t in traces) >= 5
    assert len(many) == 2
    # the whole page costs the same for an item with one LLM reading as for one with four
    other = Response.objects.get(external_id="mc-1")
    Reading.objects.filter(response=other, reader_spec__kind="judge").exclude(reader_spec__name="simple-judge").delete()
    client = Client()
    client.force_login(world.manager)
    client.get(f"/items/{other.pk}/")  # the session and permissions warmed
    counts = []
    for response in (world.response, other):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/items/{response.pk}/").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]


@pytest.fixture
def judged(loopback, make_judge, make_dataset) -> Judgement:
    dataset = make_dataset([mc_row(0)], n_mc=0, n_math=0)
    loopback.reply = "A"
    judgements_create(judges=[make_judge("sq", template="simpleqa")], response_ids=response_ids(dataset))
    return Judgement.objects.get()


def test_a_no_text_bundle_keeps_only_the_hash_of_the_prompt_sent(judged):
    from adjudication.bundles import contents

    table = contents.TABLE_BY_KEY["judges.Judgement"]
    dataset = judged.reading.response.dataset
    (with_text,) = contents.export_rows(table, dataset, text=True)
    (without,) = contents.export_rows(table, dataset, text=False)
    assert with_text["messages_sent"] == judged.messages_sent and "Which sociologist" in judged.messages_sent
    assert without["messages_sent"] == contents.text_hash(judged.messages_sent) == "sha256:" + judged.prompt_hash
    # replayed, the page says the prompt was left out, rather than that it does not match
    Judgement.objects.filter(pk=judged.pk).update(messages_sent=without["messages_sent"])
    (trace,) = llm_traces(response_id=judged.reading.response_id)
    assert trace.judge is not None and trace.judge.messages is None
    assert trace.judge.prompt_state.startswith("left out: loaded from a bundle written without texts")


def test_a_bundle_written_before_prompts_were_kept_loads_them_as_not_kept(judged):
    from adjudication.bundles import contents

    table = contents.TABLE_BY_KEY["judges.Judgement"]
    (exported,) = contents.export_rows(table, judged.reading.response.dataset, text=True)
    row = json.loads(json.dumps(exported, cls=DjangoJSONEncoder))  # as a bundle member's line holds it
    del row["messages_sent"]
    loaded = contents.build_instance(table, row, where="old.zip: judges.Judgement.jsonl line 1")
    assert loaded.messages_sent is None and loaded.prompt_hash == judged.prompt_hash
    del row["prompt_hash"]  # any other column is still required
    with pytest.raises(ValueError, match="field 'prompt_hash' is missing"):
        contents.build_instance(table, row, where="old.zip: judges.Judgement.jsonl line 1")


def test_a_judges_trace_shows_its_confidence_and_whether_its_templates_upstream_parser_reads_it_differently(
    loopback, make_judge, make_dataset, django_user_model
):
    """issue 37 items 1 and 5 on the trace: a judge with log-probabilities shows the verdict's
    confidence and the label masses as the server sent them; an xVerify reply our parser reads and
    the exact-label upstream parser does not ("[Correct]") is marked as read differently."""
    import math

    ds = make_dataset(rows=[mc_row(0)], n_math=0)
    # With log-probabilities the loopback server replies with the first alternative, as one token.
    loopback.chat_top = [("[Correct]", math.log(0.6)), ("[Incorrect]", math.log(0.2))]
    judge = make_judge("xvconf", template="xverify", logprobs=True)
    judgements_create(judges=[judge], response_ids=response_ids(ds))
    j = Judgement.objects.get(judge=judge)
    assert j.raw_reply == "[Correct]" and j.label == "correct"
    assert j.confidence == pytest.approx(0.75)
    assert j.reading.detail["parser_disagrees"] is True  # xverify_exact_label reads "[Correct]" as nothing
    body = _page(make_user("boss-conf", "manager"), f"/items/{j.reading.response_id}/")
    assert "Confidence in the verdict <strong>0.750</strong>" in body
    assert "correct 0.600, incorrect 0.200" in body
    assert "reads it differently" in body
