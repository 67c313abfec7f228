"""Issue 37's case replayed: SmolLM2-135M-Instruct judging 30 MMLU-Pro responses with the `xverify` and
`simpleqa` templates mostly answered the question ("The correct answer is (B).") instead of grading
it, and a lenient parser read those replies as "correct", which the bias table then reported as the
judge's bias toward correct.

tests/judges/data/smollm2_mmlupro_judge_replies.jsonl holds the judge's real replies (captured at
temperature 0 through run_judges; tests/judges/data/README.md), the template, the human/gold label
of each item and an opaque item id: no question or response text. Here each recorded reply is served
by the loopback OpenAI-compatible server to the judging service, which turns it into a Judgement and
a Reading as a worker does; final labels come from the fixture; the analytics report, its CLI text
and the page then say what the verdicts are worth."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from django.test import Client

from adjudication.models import Dataset, FinalLabel, QueueItem, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec
from judges import parsers
from judges.models import Endpoint, Judge
from judges.services.judging import judgements_create
from judges.testing.loopback import LoopbackServer

from ..conftest import FAST_RETRY, run_command
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).parents[1] / "judges" / "data" / "smollm2_mmlupro_judge_replies.jsonl"
RECORDED = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
JUDGES = {"xverify": "smol-xverify", "simpleqa": "smol-simpleqa"}


def recorded_reply(body: dict, path: str) -> str:
    """The reply the real model gave to this prompt: the item by its id in the placeholder question,
    the template by its own wording."""
    prompt = body["messages"][0]["content"]
    template = "xverify" if "Output sentence:" in prompt else "simpleqa"
    return next(r["reply"] for r in RECORDED if r["template"] == template and f"[{r['item']}]" in prompt)


@pytest.fixture
def replayed(write_jsonl, settings) -> Dataset:
    for name, value in FAST_RETRY.items():
        setattr(settings, name, value)
    human = {r["item"]: r["human"] for r in RECORDED}
    # Placeholder texts of our own: gold B; a response the human accepts says B, one they reject C.
    rows = [
        {
            "id": item,
            "question": f"Placeholder question [{item}]",
            "choices": ["first", "second", "third", "fourth"],
            "gold": "B",
            "response": f"Placeholder reasoning. The answer is ({'B' if verdict == 'correct' else 'C'}).",
            "model": "replayed-model",
            "checkpoint": "released",
            "benchmark": "mmlu-pro",
            "prompt": "cot",
        }
        for item, verdict in sorted(human.items())
    ]
    run_command("import_responses", str(write_jsonl(rows, name="replay.jsonl")), dataset="replay", no_progress=True)
    ds = Dataset.objects.get(name="replay")
    ids = list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    with LoopbackServer(reply=recorded_reply) as server:
        endpoint = Endpoint.objects.create(
            name="smol", base_url=server.base_url, model="smollm2-135m-instruct", max_concurrency=4, timeout_s=5.0
        )
        judges = [Judge.objects.create(name=JUDGES[t], endpoint=endpoint, template=t) for t in JUDGES]
        assert judgements_create(judges=judges, response_ids=ids) == len(RECORDED)
    # Every response in one queue (a panel that agrees throughout, every response a control), each
    # with the fixture's label as its final label.
    readings_create(reader_specs=[reader_spec_by_name(name=n) for n in ("boxed", "strict-match")], response_ids=ids)
    queue = queue_create(
        dataset=ds, spec=QueueSpec(name="rq", routing=PolicySpec(panel=["boxed", "strict-match"], control_fraction=1.0))
    )
    items = QueueItem.objects.filter(queue=queue).select_related("review_item__response")
    for qi in items:
        said = "B" if human[qi.review_item.response.external_id] == "correct" else "C"
        FinalLabel.objects.create(item=qi, kind="option", answer=said, provenance="adjudicated")
    assert items.count() == len(human)
    return ds


def xverify_replies() -> list[dict]:
    return [r for r in RECORDED if r["template"] == "xverify"]


def test_the_fixture_is_the_case_of_the_issue():
    replies = xverify_replies()
    assert len(replies) == 30 and Counter(r["human"] for r in replies) == {"correct": 15, "incorrect": 15}
    answered = [
        r for r in replies if r["reply"].lstrip().lower().startswith(("the correct answer is", "the answer is"))
    ]
    # most replies answer the question; the word "correct" is in most of them, as in the issue
    assert len(answered) >= 25 and sum("correct" in r["reply"].lower() for r in answered) >= 20


def test_replayed_xverify_replies_that_answer_the_question_are_unparsed(replayed):
    readings = {
        r.response.external_id: r
        for r in Reading.objects.filter(reader_spec__name=JUDGES["xverify"]).select_related("judgement", "response")
    }
    assert len(readings) == 30
    for recorded in xverify_replies():
        reading = readings[recorded["item"]]
        assert reading.judgement.raw_reply == recorded["reply"]
        if recorded["reply"].strip().lower() in ("correct", "incorrect"):
            # a reply that follows the template's format is still read
            assert reading.verdict == recorded["reply"].strip().lower()
            continue
        assert (reading.verdict, reading.detail["parse_status"]) == ("error", "unparsed"), recorded
        assert reading.verdict not in ("correct", "incorrect")


def test_the_bias_card_shows_the_parse_failure_rate_and_reports_no_bias_from_unparsed_verdicts(replayed, computed):
    replies = xverify_replies()
    unparsed = sum(parsers.xverify(r["reply"]) is None for r in replies)
    parsed = len(replies) - unparsed
    assert unparsed >= 25

    body = computed(replayed).body
    row = next(r for r in body["headline"]["judge_bias"] if r["reader"] == JUDGES["xverify"])
    # the unparsed verdicts are in no cell of the bias figures: n holds the parsed replies only
    assert row["n"] == parsed and row["excluded"] == {"producer_error": unparsed}
    assert row["lean"] == "none detected"
    assert (row["unparsed"]["k"], row["unparsed"]["n"]) == (unparsed, 30)
    assert row["unparsed"]["ci"][0] > 0.5  # the interval says so too
    assert any("unparsed" in flag and f"{unparsed} of 30" in flag for flag in row["parsing_flags"])
    # the full table's CSV/JSON row carries the same rate
    table = next(
        r
        for r in body["tables"]["agreement"]["rows"]
        if r["reader"] == JUDGES["xverify"] and r["scope"] == row["scope"]
    )
    assert (table["unparsed_k"], table["replies"]) == (unparsed, 30)
    assert table["unparsed_rate"] == pytest.approx(unparsed / 30)


def test_the_simpleqa_judge_lean_is_its_own_and_its_parser_disagreement_is_counted(replayed, computed):
    replies = [r for r in RECORDED if r["template"] == "simpleqa"]
    disagreeing = sum(parsers.simpleqa(r["reply"]) != parsers.simpleqa_first_capital(r["reply"]) for r in replies)
    body = computed(replayed).body
    row = next(r for r in body["headline"]["judge_bias"] if r["reader"] == JUDGES["simpleqa"])
    assert row["upstream_parser"] == "simpleqa_first_capital"
    assert (row["parser_disagreement"]["k"], row["parser_disagreement"]["n"]) == (disagreeing, 30)
    # The small model replied "A" (correct) to everything: that is the judge's own lean, read the same
    # way by upstream's parser, so it is reported, with every human-rejected answer accepted.
    if all(parsers.simpleqa(r["reply"]) == "correct" for r in replies):
        assert row["lean"] == "toward correct" and row["false_accept_rate"] == 1.0


def test_the_page_and_the_cli_show_the_parse_failure_rate(replayed, computed):
    unparsed = sum(parsers.xverify(r["reply"]) is None for r in xverify_replies())
    computed(replayed)
    client = Client()
    client.force_login(make_user("boss", "manager"))
    page = client.get(f"/analytics/{replayed.pk}/").content.decode()
    row = page.split(f'<tr data-reader="{JUDGES["xverify"]}">', 1)[1].split("</tr>", 1)[0]
    assert f'<td data-key="unparsed">{unparsed}/30 = ' in row
    assert '<td data-key="lean">none detected</td>' in row
    assert f"{JUDGES['xverify']}: {unparsed} of 30 replies" in page  # the flag under the table

    text = run_command("agreement", dataset=replayed.name)
    assert f"{JUDGES['xverify']}: 30 replies (0 calls failed), unparsed {unparsed}/30" in text
