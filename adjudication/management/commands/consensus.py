"""`manage.py consensus`: every producer's error rates and each checkpoint's accuracy from the
panel's verdicts, with few or no human labels (a latent-class model: docs/consensus.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, dataset_named


class Command(BaseCommand):
    help = (
        "Panel consensus (Dawid-Skene by default, or MACE): per producer the estimated sensitivity, "
        "specificity, false-accept and false-reject rates beside the human-measured ones, per checkpoint the "
        "accuracy (mean posterior, bootstrap interval) beside the human-only estimate, and the correlated "
        "producer pairs. --input FILE: the JSONL lines of `agreement --input` (no database); --dataset NAME: "
        "every reading and final human label of a dataset."
    )
    # --input must work with no database server at all: no system checks, no ORM.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_help="JSONL: {id, producer, verdict, human_verdict, model?, checkpoint?, benchmark?} per line",
            dataset_help="a dataset in the database (its readings, and final human labels if any)",
        )
        parser.add_argument(
            "--by",
            choices=("checkpoint", "model", "benchmark"),
            default=None,
            help="fit one model per value of this field (producers' error rates differ by checkpoint)",
        )
        parser.add_argument("--model", choices=("dawid-skene", "mace"), default="dawid-skene")
        parser.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates (each refits; 0 = none)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        parser.add_argument(
            "--group-duplicates",
            type=float,
            default=None,
            metavar="THRESHOLD",
            help="merge producers whose votes agree on at least this share of common items (e.g. 0.98) into one",
        )
        parser.add_argument(
            "--human-weight",
            type=int,
            default=1,
            metavar="W",
            help="Dawid-Skene: each human-labelled item counts W times in the fit (a clamp alone moves a strongly "
            "wrong fit little; docs/consensus.md)",
        )
        parser.add_argument("--items", action="store_true", help="also list every item's posterior (text output)")
        parser.add_argument("--json", action="store_true", help="print JSON only")

    def handle(
        self,
        *args: Any,
        input: Path | None,  # noqa: A002
        dataset: str | None,
        by: str | None,
        model: str,
        bootstrap: int,
        seed: int,
        group_duplicates: float | None,
        human_weight: int,
        items: bool,
        json: bool,
        **options: Any,
    ) -> None:
        from adjudication.analytics.consensus import consensus
        from adjudication.analytics.stats import jsonable

        if bootstrap < 0:
            raise CommandError("--bootstrap must be 0 or more")
        if group_duplicates is not None and not 0.5 < group_duplicates <= 1:
            raise CommandError("--group-duplicates must be in (0.5, 1]")
        if human_weight < 1:
            raise CommandError("--human-weight must be 1 or more")
        if human_weight > 1 and model != "dawid-skene":
            raise CommandError("--human-weight needs --model dawid-skene (MACE takes no known labels)")
        if input is not None:
            inputs, source = self._from_file(input), {"input": str(input)}
        else:
            assert dataset is not None  # add_file_or_dataset_arguments: the file or --dataset, one required
            inputs, source = self._from_dataset(dataset), {"dataset": dataset}
        try:
            result = consensus(
                inputs,
                by=by,
                model=model,
                n_boot=bootstrap,
                seed=seed,
                group_duplicates=group_duplicates,
                human_weight=human_weight,
            )
        except ValueError as exc:
            raise CommandError(f"{source.get('input') or source.get('dataset')}: {exc}") from exc
        out = jsonable({**source, **result.as_dict()})
        self.stdout.write(_dumps(out) if json else render(out, items=items))

    def _from_file(self, path: Path) -> Any:
        from adjudication.analytics.files import InputError, consensus_file_inputs
        from adjudication.ingest.formats import RowError

        try:
            return consensus_file_inputs(path)
        except (RowError, InputError) as exc:
            raise CommandError(str(exc)) from exc

    def _from_dataset(self, name: str) -> Any:
        from adjudication.analytics.selectors import consensus_inputs

        inputs = consensus_inputs(dataset=dataset_named(name))
        if not inputs.votes:
            raise CommandError(f"dataset {name!r} has no readings yet (run_readers first)")
        return inputs


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def _r(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def _measured(p: dict[str, Any]) -> str:
    return "–" if p["rate"] is None else f"{p['rate']:.3f} (n={p['n']})"


def render(result: dict[str, Any], *, items: bool = False) -> str:
    lines = [
        f"model: {result['model']}"
        + (f", one fit per {result['by']}" if result["by"] else "")
        + (f", human labels weighted x{result['human_weight']}" if result.get("human_weight", 1) > 1 else "")
    ]
    for group, members in result["groups"].items():
        lines.append(f"grouped as one voter: {group} = {', '.join(members)}")
    # Names are never cut: two readers may differ only in their tail (mmlu-pro-released, …-first-pattern).
    w = max([len("producer"), *(len(p["producer"]) for p in result["producers"])])
    head = (
        f"{'producer':<{w}} {'stratum':<12} {'votes':>6} {'abst.':>6} {'sens.':>6} {'spec.':>6} {'f.acc':>6} "
        f"{'f.rej':>6}  {'human sens.':>15} {'human spec.':>15}"
    )
    lines += ["", head, "-" * len(head)]
    for p in result["producers"]:
        lines.append(
            f"{p['producer']:<{w}} {p['stratum'][:12]:<12} {p['n_votes']:>6} {sum(p['abstentions'].values()):>6} "
            f"{_r(p['sensitivity']):>6} {_r(p['specificity']):>6} {_r(p['false_accept_rate']):>6} "
            f"{_r(p['false_reject_rate']):>6}  {_measured(p['human_sensitivity']):>15} "
            f"{_measured(p['human_specificity']):>15}"
        )
    label = result["accuracy_by"] or "items"
    head = f"{label:<28} {'items':>6} {'accuracy (consensus)':>26} {'human-only':>30}"
    lines += ["", head, "-" * len(head)]
    for g in result["accuracy"]:
        h = g["human"]
        human = "–" if h["rate"] is None else f"{h['rate']:.3f}{_ci(h['ci'])} (n={h['n']})"
        lines.append(f"{g['group'][:28]:<28} {g['n_items']:>6} {_r(g['accuracy']) + _ci(g['ci']):>26} {human:>30}")
    if result["n_boot"]:
        lines.append(f"(bootstrap: {result['n_boot']} replicates over items, each refitted, seed {result['seed']})")
    if result["correlated"]:
        lines += ["", "correlated producers (within-class phi; the model assumes independence):"]
        for c in result["correlated"]:
            a, b = c["producers"]
            lines.append(f"  {a} ~ {b}: phi {_r(c['phi'])}, agreement {_r(c['agreement'])} on {c['n']} items")
    if items:
        lines += ["", f"{'item':<28} {'stratum':<12} {'P(correct)':>10} {'human':>10}"]
        for i in result["items"]:
            lines.append(
                f"{i['item'][:28]:<28} {i['stratum'][:12]:<12} {_r(i['p_correct']):>10} {i['human'] or '–':>10}"
            )
    for w in result["warnings"]:
        lines.append(f"! {w}")
    return "\n".join(lines)
