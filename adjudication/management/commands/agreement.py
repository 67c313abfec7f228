"""`manage.py agreement`: producers (readers, LLM judges) against human verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, dataset_named


class Command(BaseCommand):
    help = (
        "Agreement with human verdicts and judge bias. --input FILE (JSONL lines {id, producer, verdict, "
        "human_verdict}, no database): per producer n, accuracy, Cohen's kappa, judge/human correct rates, bias, "
        "false-accept and false-reject rates with Wilson intervals. --dataset NAME: every reader and judge "
        "against the final human labels, by model, checkpoint and benchmark, human-human agreement and the "
        "selection-bias note."
    )
    # --input must work with no database server at all: no system checks, no ORM.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_help="JSONL: {id, producer, verdict, human_verdict} per line",
            dataset_help="a dataset in the database with final human labels",
        )
        parser.add_argument("--by", default="", help="--input: also break down by these fields, e.g. model,checkpoint")
        parser.add_argument(
            "--no-answer",
            choices=("incorrect", "exclude"),
            default="incorrect",
            help="what a producer's no_answer counts as (default: incorrect, as a harness scores it)",
        )
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (bias interval)")
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(
        self,
        *args,
        input: Path | None,
        dataset: str | None,
        by: str,
        no_answer: str,
        seed: int,  # noqa: A002
        json: bool,
        **options,
    ) -> None:
        from adjudication.analytics.stats import jsonable

        if input is not None:
            result = self._from_file(input, by, no_answer, seed)
        else:
            assert dataset is not None  # add_file_or_dataset_arguments: the file or --dataset, one required
            result = self._from_dataset(dataset, seed)
        if json:
            self.stdout.write(_dumps(jsonable(result)))
        else:
            self.stdout.write(render(jsonable(result)))

    def _from_file(self, path: Path, by: str, no_answer: str, seed: int) -> dict:
        from adjudication.analytics.agreement import NO_ANSWER, answers_agree
        from adjudication.analytics.bias import bias_by, judge_bias
        from adjudication.analytics.files import InputError, agreement_records
        from adjudication.analytics.stats import proportion
        from adjudication.ingest.formats import RowError

        keys = tuple(k.strip() for k in by.split(",") if k.strip())
        bad = [k for k in keys if k not in ("model", "checkpoint", "benchmark")]
        if bad:
            raise CommandError(f"--by: unknown field(s) {', '.join(bad)} (model, checkpoint, benchmark)")
        try:
            records = agreement_records(path)
        except (RowError, InputError) as exc:
            raise CommandError(str(exc)) from exc
        producers: dict[str, list[dict]] = {}
        for r in records:
            producers.setdefault(r["producer"], []).append(r)
        out: dict = {"input": str(path), "no_answer_counts_as": no_answer, "producers": {}}
        for name, rows in sorted(producers.items()):
            stats = judge_bias([(r["verdict"], r["human_verdict"]) for r in rows], no_answer=no_answer, seed=seed)
            with_answers = [
                r for r in rows if r.get("human_answer") is not None and r["verdict"] not in ("error", "timeout")
            ]
            if with_answers:
                agree = sum(
                    answers_agree(
                        r["answer"] if r["verdict"] in ("correct", "incorrect") else None,
                        r["human_answer"] or NO_ANSWER,
                    )
                    for r in with_answers
                )
                stats["answer_agreement"] = proportion(agree, len(with_answers))
            out["producers"][name] = stats
        if keys:
            out["by"] = {"fields": list(keys), "producers": bias_by(records, keys, no_answer=no_answer, seed=seed)}
        return out

    def _from_dataset(self, name: str, seed: int) -> dict:
        from adjudication.analytics import agreement as ag
        from adjudication.analytics.selectors import agreement_inputs

        ds = dataset_named(name)
        inputs = agreement_inputs(dataset=ds)
        if not inputs["counts"]:
            raise CommandError(f"dataset {name!r} has no readings yet (run_readers first)")
        result = ag.report(
            inputs["obs"],
            inputs["human"],
            counts=inputs["counts"],
            annotator_ratings=inputs["annotator_ratings"],
            control_ids=inputs["control_ids"],
            strata=inputs["strata"],
            seed=seed,
        )
        return {"dataset": name, **result, "judge_templates": inputs["templates"]}


def _dumps(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def _r(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def _ci(ci) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def render(result: dict) -> str:
    lines = []
    if "selection" in result:
        lines += [result["selection"]["text"], ""]
    producers = result.get("producers", {})
    if not producers:
        lines.append("no producer has items with a human verdict")
    head = (
        f"{'producer':<28} {'n':>5} {'accuracy':>22} {'kappa':>7} {'judge+':>7} {'human+':>7} {'bias':>7} "
        f"{'false acc.':>22} {'false rej.':>22}"
    )
    if producers:
        lines += [head, "-" * len(head)]
    for name, s in producers.items():
        lines.append(
            f"{name[:28]:<28} {s['n']:>5} {_r(s['accuracy']) + _ci(s['accuracy_ci']):>22} "
            f"{_r(s['cohen_kappa']):>7} {_r(s['judge_correct_rate']):>7} {_r(s['human_correct_rate']):>7} "
            f"{(format(s['bias'], '+.3f') if s['bias'] is not None else '–'):>7} "
            f"{_r(s['false_accept_rate']) + _ci(s['false_accept_rate_ci']):>22} "
            f"{_r(s['false_reject_rate']) + _ci(s['false_reject_rate_ci']):>22}"
        )
        template = result.get("judge_templates", {}).get(name)
        if template:
            # A judge's bias belongs to its prompt as much as to its model: name the prompt beside it.
            lines.append(f"    judge template sha256 {template}")
        for w in s.get("warnings", []):
            lines.append(f"    ! {w}")
    hh = result.get("human_human", {}).get("reviewed")
    if hh and hh["annotators"] >= 2:
        pa = hh["percent_agreement"]
        lines += [
            "",
            (
                f"human–human: {pa['k']}/{pa['n']} items agree ({_r(pa['rate'])}), "
                f"Krippendorff's alpha {_r(hh['krippendorff_alpha'])}"
            ),
        ]
    return "\n".join(lines)
