from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judges import parsers, prompts
from judges.management.validation import save_validated
from judges.models import Endpoint, Judge
from readers import registry as reader_registry


class Command(BaseCommand):
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
        **options,
    ) -> None:
        if name == "regeneration" or name in reader_registry.names():
            raise CommandError(f"{name!r} is already the name of a reader; choose another judge name")
        ep = Endpoint.objects.filter(name=endpoint).first()
        if ep is None:
            raise CommandError(f"no endpoint named {endpoint!r}; add it with `manage.py add_endpoint`")
        judge = Judge.objects.filter(name=name).first()
        created = judge is None
        if created:
            judge = Judge(name=name)
        judge.endpoint = ep
        upstream = prompts.UPSTREAM.get(template)
        template_file = Path(template_file) if template_file is not None else None  # call_command skips `type`
        if template_file is not None and upstream is None:
            raise CommandError(
                f"--template-file is for the upstream templates the user supplies ({', '.join(prompts.UPSTREAM)})"
            )
        if upstream is not None:
            if template_file is None:
                raise CommandError(f"--template {template} needs --template-file. {upstream.how_to_get}")
            try:
                text = prompts.load_upstream(template, template_file)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            judge.template, judge.custom_template = template, text
        elif template in prompts.BUILTIN:
            judge.template, judge.custom_template = template, ""
        else:
            path = Path(template)
            if not path.is_file():
                raise CommandError(
                    f"--template must be one of {', '.join(sorted({*prompts.BUILTIN, *prompts.UPSTREAM}))} "
                    f"or a file; {template!r} is neither"
                )
            text = path.read_text(encoding="utf-8")
            try:
                prompts.check_custom(text)
            except ValueError as exc:
                raise CommandError(f"{path}: {exc}") from None
            judge.template, judge.custom_template = Judge.Template.CUSTOM, text
        if parser is not None:
            judge.parser = parser
        if temperature is not None:
            judge.temperature = temperature
        if max_tokens is not None:
            if max_tokens < 1:
                raise CommandError("--max-tokens must be at least 1")
            judge.max_tokens = max_tokens
        save_validated(judge)
        from judges.services.judging import template_text

        self.stdout.write(
            f"{'added' if created else 'updated'} judge {judge.name}: template {judge.template} "
            f"(sha256 {prompts.template_hash(template_text(judge))[:16]}), "
            f"parser {parsers.resolve(judge.parser, judge.template)}, endpoint {ep.name} ({ep.model}), "
            f"temperature {judge.temperature:g}"
        )
        if upstream is not None:
            self.stdout.write(prompts.verbatim_note(template, judge.custom_template))
