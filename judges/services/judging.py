"""LLM judges: one chat call per (response, judge), the reply parsed by the judge's parser and
re-read by every upstream parser; the verdict is a Reading of the judge's ReaderSpec."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from adjudication.models import ReaderSpec, Response
from adjudication.pipeline.readings import reader_spec_get_or_create
from judges import parsers, prompts
from judges.answers import gold_letter
from judges.client import TIMEOUT, EndpointConfig
from judges.confidence import TOP_LOGPROBS, verdict_confidence
from judges.fit import Fit
from judges.models import Judge, Judgement
from judges.services.calls import Caller, Job, call_fitted, fan_out
from judges.services.records import ReadingResult, internal_failure, work_for, write
from readers.base import config_hash

# 2: our parsers read a grade only where the template asks for it (judges.parsers); version 1's
# read any occurrence of a label word, so its verdicts stay apart, under their own spec.
JUDGE_VERSION = "2"
_VERDICT = {parsers.CORRECT: "correct", parsers.INCORRECT: "incorrect", parsers.NOT_ATTEMPTED: "no_answer"}


def template_text(judge: Judge) -> str:
    return judge.custom_template if judge.template in Judge.STORED_TEXT else prompts.builtin(judge.template)


def upstream_of(judge: Judge) -> str | None:
    """The upstream grader whose own text (and str.format rendering) the judge uses, if any."""
    return judge.template if judge.template in prompts.UPSTREAM else None


def judge_config(judge: Judge) -> dict[str, Any]:
    """The identity of a judge's verdicts: edit the model, template, parser or sampling and its
    readings belong to a new spec (the old ones stay, under the old config hash)."""
    config: dict[str, Any] = {
        "endpoint_model": judge.endpoint.model,
        "template": judge.template,
        "template_hash": prompts.template_hash(template_text(judge))[:16],
        "parser": parsers.resolve(judge.parser, judge.template),
        "temperature": judge.temperature,
        "max_tokens": judge.max_tokens,
    }
    if judge.family is not None:
        # Only later versions carry these keys, so a first judge keeps the config hash (and the
        # readings) it had before versions existed. The example ids are part of the identity: the
        # analytics read them from here to keep every example out of what measures the version.
        config.update(
            family=judge.family.name,
            family_version=judge.family_version,
            few_shot=sorted(int(e["response_id"]) for e in judge.few_shot_examples),
            few_shot_hash=prompts.template_hash(judge.few_shot_text)[:16],
            split={"dataset": judge.split_dataset, "seed": judge.split_seed},
        )
    return config


def prompt_template_hash(judge: Judge) -> str:
    """What Judgement.template_hash records: the template's sha256, or for a version with examples
    that of the examples and the template as they are sent together."""
    return prompts.template_hash(judge.few_shot_text + template_text(judge))


def judge_spec_for(judge: Judge) -> ReaderSpec:
    config = judge_config(judge)
    return reader_spec_get_or_create(
        name=judge.name, version=JUDGE_VERSION, config=config, config_hash=config_hash(config), kind="judge"
    )


def _reply_text(body: dict) -> tuple[str | None, str, str]:
    choice = (body.get("choices") or [{}])[0] or {}
    message = choice.get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return (
        (content if isinstance(content, str) else None),
        str(choice.get("finish_reason") or ""),
        str(body.get("model") or ""),
    )


def _logprobs_of(body: dict) -> Any:
    choice = (body.get("choices") or [{}])[0] or {}
    return choice.get("logprobs") if isinstance(choice, dict) else None


def messages_json(messages: list[dict]) -> str:
    """The messages as the text a judgement keeps (Judgement.messages_sent) and hashes (prompt_hash)."""
    return json.dumps(messages, ensure_ascii=False)


def text_hash(text: str) -> str:
    # surrogatepass: a lone surrogate in model text must hash, not fail the job.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def messages_hash(messages: list[dict]) -> str:
    return text_hash(messages_json(messages))


def _with_response(render: Callable[..., str], text: str, prefix: str = "") -> str:
    # The examples go before the filled template, never through it: their texts must not be read
    # as placeholders.
    return prefix + render(response=text)


def _judge(
    caller: Caller,
    *,
    render: Callable[[str], str],
    response_text: str,
    temperature: float,
    max_tokens: int,
    logprobs: bool,
    parser_name: str,
    upstream_parser: str,
    response_id: int,
    spec_id: int,
    replace_id: int | None,
    base: dict,
) -> ReadingResult:
    fit = Fit(response_text)
    sent: list[list[dict]] = []

    def build(text: str) -> tuple[str, dict, int]:
        prompt = render(text)
        sent.append([{"role": "user", "content": prompt}])
        params: dict[str, Any] = {"messages": sent[-1], "temperature": temperature, "max_tokens": max_tokens}
        if logprobs:
            params |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        return "chat", params, len(prompt)

    out = call_fitted(caller, fit, build, purpose="judge", completion_tokens=max_tokens)
    # What was asked is the last request sent: the shortened prompt when the response was cut.
    sent_json = messages_json(sent[-1])
    base = dict(base, prompt_hash=text_hash(sent_json), messages_sent=sent_json)
    truncated = fit.detail()
    detail: dict[str, Any]
    judgement: dict[str, Any]
    if not out.ok:
        detail = {
            "failed": "call",
            "status": out.status,
            "http_status": out.http_status,
            "error": out.error[:1000],
            "attempts": out.attempts,
            "parse_status": Judgement.ParseStatus.CALL_FAILED,
        }
        if truncated:
            detail["truncated"] = truncated
        judgement = dict(base, raw_reply=None, label="", parse_status=Judgement.ParseStatus.CALL_FAILED, reparses={})
        return ReadingResult(
            response_id,
            spec_id,
            "timeout" if out.status == TIMEOUT else "error",
            detail=detail,
            judgement=judgement,
            replace_id=replace_id,
        )
    reply, finish_reason, served = _reply_text(out.body or {})
    return ReadingResult(
        response_id,
        spec_id,
        replace_id=replace_id,
        **reply_reading(
            reply,
            parser_name=parser_name,
            upstream_parser=upstream_parser,
            attempts=out.attempts,
            truncated=truncated,
            judgement=dict(base, served_model=served[:200], finish_reason=finish_reason[:40]),
            token_logprobs=_logprobs_of(out.body or {}),
        ),
    )


def reply_reading(
    reply: str | None,
    *,
    parser_name: str,
    upstream_parser: str,
    attempts: int,
    truncated: dict[str, Any] | None,
    judgement: dict[str, Any],
    token_logprobs: Any = None,
) -> dict[str, Any]:
    """What a received reply becomes: the verdict, the reading's detail and the judgement's fields
    (`judgement` carries the call's own: judge, hashes, parser, served model, finish reason).

    An unparsed reply is an error of its own kind (`detail.parse_status = "unparsed"`), never
    correct or incorrect. The reply is also read by every upstream parser (`reparses`), and the
    detail says whether the upstream parser of the judge's template reads it differently from the
    judge's own parser (`parser_disagrees`): the analytics count both per judge. With the reply's
    log-probabilities (`token_logprobs`, the choice's `logprobs`), the verdict's confidence
    (judges.confidence) goes with it."""
    label = parsers.ALL[parser_name](reply)
    confidence = verdict_confidence(token_logprobs, label=label, parser=parser_name) if label else None
    status = Judgement.ParseStatus.PARSED if label else Judgement.ParseStatus.UNPARSED
    reparses = parsers.reparse(reply)
    detail: dict[str, Any] = {
        "label": label,
        "parse_status": status,
        "attempts": attempts,
        "reparses": reparses,
        "upstream_parser": upstream_parser,
        "parser_disagrees": parsers.disagrees(label, reparses, upstream_parser),
    }
    if truncated:
        detail["truncated"] = truncated
    if confidence:
        detail["confidence"] = confidence.value
    return {
        "verdict": _VERDICT[label] if label else "error",
        "detail": detail,
        "judgement": dict(
            judgement,
            raw_reply=reply,
            label=label or "",
            parse_status=status,
            reparses=reparses,
            confidence=confidence.value if confidence else None,
            verdict_alternatives=confidence.alternatives if confidence else {},
        ),
    }


def judgements_create(
    *, judges: Sequence[Judge], response_ids: Sequence[int], retry_errors: bool = False, tag: str = ""
) -> int:
    """Judge every response in `response_ids` that has no reading by each judge yet (and, with
    `retry_errors`, again every one whose calls failed). All judges' calls run at once, each on
    its endpoint's concurrency. Returns the number of readings written or replaced."""
    plans = []
    needed: set[int] = set()
    for judge in judges:
        spec = judge_spec_for(judge)
        todo = work_for(spec=spec, response_ids=response_ids, retry_errors=retry_errors)
        plans.append((judge, spec, todo))
        needed.update(todo)
    if not needed:
        return 0
    responses = {r.id: r for r in Response.objects.filter(id__in=needed).select_related("question")}
    jobs: list[Job] = []
    for judge, spec, todo in plans:
        cfg = EndpointConfig.from_model(judge.endpoint)
        secrets = cfg.secrets()
        template = template_text(judge)
        t_hash = prompt_template_hash(judge)
        parser_name = parsers.resolve(judge.parser, judge.template)
        upstream = upstream_of(judge)
        prefix = judge.few_shot_text
        for rid, replace_id in todo.items():
            response = responses.get(rid)
            if response is None:  # deleted meanwhile
                continue
            q = response.question
            render = partial(
                prompts.render,
                template,
                question=q.text,
                choices=q.choices,
                gold=q.gold,
                gold_letter=gold_letter(q.gold, q.choices) if q.choices else None,
                upstream=upstream,
            )
            prompt_hash = messages_hash([{"role": "user", "content": _with_response(render, response.text, prefix)}])
            base = {"judge_id": judge.pk, "prompt_hash": prompt_hash, "template_hash": t_hash, "parser": parser_name}
            jobs.append(
                Job(
                    key=(rid, spec.id),
                    endpoint=cfg,
                    run=partial(
                        _judge,
                        render=partial(_with_response, render, prefix=prefix),
                        response_text=response.text,
                        temperature=judge.temperature,
                        max_tokens=judge.max_tokens,
                        logprobs=judge.logprobs,
                        parser_name=parser_name,
                        upstream_parser=parsers.upstream_for(judge.template),
                        response_id=rid,
                        spec_id=spec.id,
                        replace_id=replace_id,
                        base=base,
                    ),
                    failure=internal_failure(rid, spec.id, replace_id, judgement=base, secrets=secrets),
                )
            )
    fan_out(jobs, write=partial(write, tag=tag))
    return len(jobs)
