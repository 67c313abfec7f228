from __future__ import annotations

from argparse import BooleanOptionalAction
from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from adjudication.management.arguments import dataset_named
from adjudication.management.base import ApplicationCommand
from judges import parsers, prompts
from judges.models import Judge
from judges.services.judging import prompt_template_hash, template_text
from judges.services.setup import judge_upsert
from judges.services.versions import judge_version_create


class Command(ApplicationCommand):
    help = (
        "Add an LLM judge (endpoint + prompt template + parser), or update the one with this name. "
        "--template is simpleqa or xverify (our paraphrases); simpleqa-upstream or xverify-upstream with "
        "--template-file (the upstream grader's own text, which you supply: simple-evals' SimpleQA grader as "
        "text or as its simpleqa_eval.py, xVerify's prompt as text); or the path of a template file with "
        "{question} {choices} {target} {response} placeholders. "
        "With --from J --dataset D --few-shot K: the next version of J's family, J's template with K examples of "
        "J's disagreements with the human labels of the family's split pool (make the split with judge_versions)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--endpoint", default=None, help="required unless --from")
        parser.add_argument(
            "--template",
            default=None,
            help="simpleqa | xverify | simpleqa-upstream | xverify-upstream | PATH (required unless --from)",
        )
        parser.add_argument(
            "--from",
            dest="from_judge",
            default=None,
            metavar="J",
            help="make NAME the next version of J's family (with --dataset and --few-shot; see judge_versions)",
        )
        parser.add_argument("--dataset", default=None, help="with --from: the dataset whose labels are split")
        parser.add_argument("--few-shot", type=int, default=None, help="with --from: examples to draw (K)")
        parser.add_argument(
            "--seed", type=int, default=0, help="with --from: the split's seed, and the examples' draw (default 0)"
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
        endpoint: str | None,
        template: str | None,
        from_judge: str | None,
        dataset: str | None,
        few_shot: int | None,
        seed: int,
        template_file: Path | None,
        parser: str | None,
        temperature: float | None,
        max_tokens: int | None,
        logprobs: bool | None,
        **options,
    ) -> None:
        if from_judge is not None:
            self._version(name, from_judge=from_judge, dataset=dataset, few_shot=few_shot, seed=seed)
            return
        if endpoint is None or template is None:
            raise CommandError("--endpoint and --template are required (unless --from)")
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

    def _version(self, name: str, *, from_judge: str, dataset: str | None, few_shot: int | None, seed: int) -> None:
        if dataset is None or few_shot is None:
            raise CommandError("--from needs --dataset and --few-shot")
        parent = Judge.objects.filter(name=from_judge).select_related("endpoint", "family").first()
        if parent is None:
            raise CommandError(f"no judge named {from_judge!r}")
        judge = judge_version_create(
            parent=parent, dataset=dataset_named(dataset), few_shot=few_shot, seed=seed, name=name
        )
        root = judge.family or judge
        self.stdout.write(
            f"added judge {judge.name}: version {judge.family_version} of {root.name}, "
            f"{len(judge.few_shot_examples)} few-shot example(s) from {parent.name}'s disagreements on the pool "
            f"(seed {seed}), prompt sha256 {prompt_template_hash(judge)[:16]}. Run it on the held-out labels: "
            f"manage.py run_judges --dataset {dataset} --judge {judge.name}; compare: "
            f"manage.py judge_versions --dataset {dataset} --judge {root.name}"
        )
