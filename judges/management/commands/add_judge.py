from __future__ import annotations

from argparse import BooleanOptionalAction
from pathlib import Path

from django.core.management.base import CommandParser

from adjudication.management.base import ApplicationCommand
from judges import parsers, prompts
from judges.services.judging import template_text
from judges.services.setup import judge_upsert


class Command(ApplicationCommand):
    help = (
        "Add an LLM judge (endpoint + prompt template + parser), or update the one with this name. "
        "--template is simpleqa or xverify (our paraphrases); simpleqa-upstream or xverify-upstream with "
        "--template-file (the upstream grader's own text, which you supply: simple-evals' SimpleQA grader as "
        "text or as its simpleqa_eval.py, xVerify's prompt as text); or the path of a template file with "
        "{question} {choices} {target} {response} placeholders."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--endpoint", required=True)
        parser.add_argument(
            "--template", required=True, help="simpleqa | xverify | simpleqa-upstream | xverify-upstream | PATH"
        )
        parser.add_argument(
            "--template-file",
            type=Path,
            default=None,
            help="with --template simpleqa-upstream or xverify-upstream: the upstream prompt "
            "text, unchanged (for simpleqa-upstream, upstream's simpleqa_eval.py also works)",
        )
        parser.add_argument(
            "--parser",
            default=None,
            choices=["auto", *parsers.ALL],
            help="how the reply is read (default auto: ours for the template)",
        )
        parser.add_argument("--temperature", type=float, default=None, help="default 0")
        parser.add_argument("--max-tokens", type=int, default=None, help="default 256")
        parser.add_argument(
            "--logprobs",
            action=BooleanOptionalAction,
            default=None,
            help="ask for the reply's log-probabilities and store the verdict's confidence, for "
            "calibration (default off: some servers refuse the parameter)",
        )

    def handle(
        self,
        *args,
        name: str,
        endpoint: str,
        template: str,
        template_file: Path | None,
        parser: str | None,
        temperature: float | None,
        max_tokens: int | None,
        logprobs: bool | None,
        **options,
    ) -> None:
        template_file = Path(template_file) if template_file is not None else None  # call_command skips `type`
        judge, created = judge_upsert(
            name=name,
            endpoint_name=endpoint,
            template=template,
            template_file=template_file,
            parser=parser,
            temperature=temperature,
            max_tokens=max_tokens,
            logprobs=logprobs,
        )
        ep = judge.endpoint
        upstream = prompts.UPSTREAM.get(judge.template)
        self.stdout.write(
            f"{'added' if created else 'updated'} judge {judge.name}: template {judge.template} "
            f"(sha256 {prompts.template_hash(template_text(judge))[:16]}), "
            f"parser {parsers.resolve(judge.parser, judge.template)}, endpoint {ep.name} ({ep.model}), "
            f"temperature {judge.temperature:g}" + (", log-probabilities on (calibration)" if judge.logprobs else "")
        )
        if upstream is not None:
            self.stdout.write(prompts.verbatim_note(template, judge.custom_template))
