"""The corpus of judge replies (tests/judges/data/judge_reply_corpus.jsonl): small-model replies that
answer the question instead of grading it, repeat the prompt, are empty, whitespace, cut off
mid-word, name both labels, negate a label, think first or wear markdown, each with the verdict our
parser of its template must give and the one the template's upstream parser gives. `source` says
whether a reply was constructed or captured from SmolLM2-135M-Instruct (tests/judges/data/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judges import parsers

CORPUS = Path(__file__).parent / "data" / "judge_reply_corpus.jsonl"
ENTRIES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _id(entry: dict) -> str:
    return f"{entry['template']}:{entry['kind']}:{entry['reply'][:40]!r}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[_id(e) for e in ENTRIES])
def test_each_reply_gets_its_verdict_from_our_parser_and_from_upstreams(entry):
    ours = parsers.ALL[parsers.resolve("auto", entry["template"])]
    upstream_name = parsers.upstream_for(entry["template"])
    assert ours(entry["reply"]) == entry["ours"]
    assert parsers.UPSTREAM[upstream_name](entry["reply"]) == entry["upstream"]
    reparses = parsers.reparse(entry["reply"])
    assert parsers.disagrees(entry["ours"], reparses, upstream_name) == (entry["ours"] != entry["upstream"])


def test_the_corpus_covers_every_kind_of_reply_the_issue_names():
    kinds = {e["kind"] for e in ENTRIES}
    assert {
        "answers the question",
        "repeats the prompt",
        "empty",
        "whitespace",
        "truncated mid-word",
        "both labels",
        "negation",
        "thinking block",
        "markdown",
    } <= kinds


def test_no_reply_that_answers_the_question_or_repeats_the_prompt_is_ever_graded_by_ours():
    for e in ENTRIES:
        if e["kind"] in ("answers the question", "repeats the prompt", "empty", "whitespace", "truncated mid-word"):
            assert e["ours"] is None, e
