"""Judge versions (docs/judges.md, "Judge versions"): version k+1 of a judge family is version k's
template, parser and sampling plus few-shot examples, the labelled responses of the family's split
pool on which version k disagreed with the human, each shown with the reply the template expects
for the human's verdict. The split itself (which labels may feed examples, which may only measure)
is made on the analytics side (`manage.py judge_versions`) and read here as data: examples are
drawn from its pool and nowhere else.
"""

from __future__ import annotations

import hashlib

from django.db import transaction

from adjudication.models import Dataset, JudgeSplit, Reading, Response
from judges import parsers, prompts
from judges.answers import gold_letter
from judges.models import Judge
from judges.services.judging import judge_spec_for
from judges.services.setup import SetupError, _save_validated

# The reply each parser reads as the human's verdict: what an example shows the judge to say.
# Only verdicts a human gives (correct / incorrect) are needed.
EXPECTED_REPLY: dict[str, dict[str, str]] = {
    "simpleqa": {parsers.CORRECT: "A", parsers.INCORRECT: "B"},
    "simpleqa_first_capital": {parsers.CORRECT: "A", parsers.INCORRECT: "B"},
    "xverify": {parsers.CORRECT: "[Correct]", parsers.INCORRECT: "[Incorrect]"},
    "xverify_exact_label": {parsers.CORRECT: "Correct", parsers.INCORRECT: "Incorrect"},
    "labels": {parsers.CORRECT: "GRADE: C", parsers.INCORRECT: "GRADE: I"},
    "inspect_last_grade": {parsers.CORRECT: "GRADE: C", parsers.INCORRECT: "GRADE: I"},
}
# A judge's reading as a binary verdict, as the bias analytics count it (no_answer is incorrect).
_JUDGED = {"correct": "correct", "incorrect": "incorrect", "no_answer": "incorrect"}
EXAMPLE_MAX_CHARS = 4000


def expected_reply(parser_name: str, verdict: str) -> str:
    """The reply the judge's parser reads as `verdict`; refused when the parser would not read it
    back (a parser whose format changed must not teach the judge a reply it cannot parse)."""
    reply = EXPECTED_REPLY.get(parser_name, {}).get(verdict)
    if reply is None or parsers.ALL[parser_name](reply) != verdict:
        raise SetupError(f"no example reply is known for parser {parser_name!r} and verdict {verdict!r}")
    return reply


def draw_key(*, seed: int, version: int, external_id: str) -> str:
    """The order examples are drawn in: a hash of the seed, the version made and the response's
    external id, so the draw is the same in any database and differs between versions."""
    return hashlib.sha256(f"{seed}\x00{version}\x00{external_id}".encode("utf-8", "surrogatepass")).hexdigest()


def pool_disagreements(*, judge: Judge, split: JudgeSplit) -> dict[int, str]:
    """{response id: human verdict} of the pool responses where the judge's reading differs from
    the human's verdict, or where the judge replied with no grade its parser could read. A reading
    whose calls failed says nothing about the judge and is not a disagreement."""
    pool = {int(k): v for k, v in split.pool.items() if v in ("correct", "incorrect")}
    readings = Reading.objects.filter(reader_spec=judge_spec_for(judge), response_id__in=pool).values_list(
        "response_id", "verdict", "judgement__parse_status"
    )
    out: dict[int, str] = {}
    for rid, verdict, parse_status in readings:
        judged = _JUDGED.get(verdict)
        if judged is None and parse_status != "unparsed":
            continue
        if judged != pool[rid]:
            out[rid] = pool[rid]
    return out


def _example_text(index: int, response: Response, reply: str) -> str:
    q = response.question
    text = response.text
    if len(text) > EXAMPLE_MAX_CHARS:
        text = text[:EXAMPLE_MAX_CHARS] + f" [… {len(text) - EXAMPLE_MAX_CHARS} characters cut]"
    target = prompts.target_text(q.gold, q.choices, gold_letter(q.gold, q.choices) if q.choices else None)
    return (
        f"--- Example {index} ---\n"
        f"Question:\n{prompts.question_block(q.text, q.choices)}\n"
        f"Correct answer: {target}\n"
        f"Response:\n{text}\n"
        f"Expected reply: {reply}\n"
    )


def few_shot_block(examples: list[tuple[Response, str]]) -> str:
    """The examples as sent before the filled template."""
    head = (
        "Here are graded examples of this task, each graded by a human reviewer, with the reply "
        "expected for it. Grade the case after them the same way.\n\n"
    )
    body = "\n".join(_example_text(i, r, reply) for i, (r, reply) in enumerate(examples, 1))
    return prompts.sendable(head + body + "\n--- End of examples ---\n\n")


def judge_version_create(
    *, parent: Judge, dataset: Dataset, few_shot: int, seed: int = 0, name: str | None = None
) -> Judge:
    """Version k+1 of `parent`'s family: `parent` (version k) with `few_shot` examples drawn
    (seeded) from its disagreements with the humans on the family's split pool of `dataset`."""
    if few_shot < 1:
        raise SetupError("--few-shot must be at least 1")
    root = parent.family or parent
    split = JudgeSplit.objects.filter(dataset=dataset, family=root.name, seed=seed).first()
    if split is None:
        raise SetupError(
            f"no split of {root.name}'s labels on dataset {dataset.name} with seed {seed}: make it with "
            f"`manage.py judge_versions --dataset {dataset.name} --judge {root.name} --seed {seed}`"
        )
    family_versions = Judge.objects.filter(family=root, split_dataset=dataset.name)
    other_seeds = list(family_versions.exclude(split_seed=seed).values_list("split_seed", flat=True))
    if other_seeds:
        # Another seed's pool holds labels this seed holds out: examples drawn from both would leak.
        raise SetupError(
            f"{root.name}'s versions on dataset {dataset.name} use seed {other_seeds[0]}; "
            "every version of a family must draw from one split"
        )
    disagreements = pool_disagreements(judge=parent, split=split)
    if not disagreements:
        raise SetupError(
            f"{parent.name} disagrees with no human label of the pool ({len(split.pool)} labels); "
            f"run it on the labelled responses first (`manage.py run_judges --dataset {dataset.name} "
            f"--judge {parent.name}`), or there is nothing to learn from"
        )
    responses = {r.id: r for r in Response.objects.filter(id__in=disagreements).select_related("question")}
    version = (
        max(Judge.objects.filter(family=root).values_list("family_version", flat=True), default=root.family_version) + 1
    )
    drawn = sorted(responses.values(), key=lambda r: draw_key(seed=seed, version=version, external_id=r.external_id))
    drawn = drawn[:few_shot]
    pool_ids = {int(k) for k in split.pool}
    held_out = set(split.held_out)
    assert all(r.id in pool_ids and r.id not in held_out for r in drawn), "a few-shot example outside the pool"
    parser_name = parsers.resolve(parent.parser, parent.template)
    examples = [(r, expected_reply(parser_name, disagreements[r.id])) for r in drawn]
    judge = Judge(
        name=name or f"{root.name}-v{version}",
        endpoint=parent.endpoint,
        template=parent.template,
        custom_template=parent.custom_template,
        parser=parent.parser,
        temperature=parent.temperature,
        max_tokens=parent.max_tokens,
        family=root,
        family_version=version,
        few_shot_examples=[
            {"response_id": r.id, "external_id": r.external_id, "human": disagreements[r.id], "reply": reply}
            for r, reply in examples
        ],
        few_shot_text=few_shot_block(examples),
        split_dataset=dataset.name,
        split_seed=seed,
    )
    if Judge.objects.filter(name=judge.name).exists():
        raise SetupError(f"a judge named {judge.name!r} exists already; choose another name with NAME")
    with transaction.atomic():
        _save_validated(judge)
        judge_spec_for(judge)  # listed by judge_versions before it has judged anything
    return judge
