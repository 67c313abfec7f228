"""`manage.py format_share`: how much of each base→RL gain is format (seed 000)."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = ("Format share of base→RL gains: reported gain under the harness reader, fixed gain under a fixed "
            "reader (any reader, an LLM reader's stored verdicts, or 'human'), per (model, benchmark, prompt), "
            "pooled and as a mean of shares. --input FILE needs no database; --dataset NAME reads the database.")
    # --input must work with no database server at all: no system checks, no ORM.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        src = parser.add_mutually_exclusive_group(required=True)
        src.add_argument("--input", type=Path, help="canonical JSONL (model, checkpoint, benchmark, prompt per row)")
        src.add_argument("--dataset", help="a dataset in the database (its stored readings and final labels)")
        parser.add_argument("--reported-reader", default="boxed", help="the harness reader (default: boxed)")
        parser.add_argument("--fixed-reader", default="fixed",
                            help="the fixed reader (default: fixed); 'human' = final human labels")
        parser.add_argument("--base-checkpoint", default="base", help="the checkpoint every other one is compared with")
        parser.add_argument("--min-reported-gain", type=float, default=0.0,
                            help="eligible only above this reported gain, in points (default 0: positive gains)")
        parser.add_argument("--min-extraction-rate", type=float, default=0.0,
                            help="eligible only if the fixed reader extracts at least this share on both checkpoints")
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        parser.add_argument("--json", action="store_true", help="print JSON only")
        parser.add_argument("--budget", type=float, default=settings.READER_BUDGET_SECONDS,
                            help="--input: hard wall-clock budget per reading, seconds")
        parser.add_argument("--processes", type=int, default=settings.READER_PROCESSES,
                            help="--input: reader processes")

    def handle(self, *args, input: Path | None, dataset: str | None, reported_reader: str, fixed_reader: str,  # noqa: A002
               base_checkpoint: str, min_reported_gain: float, min_extraction_rate: float, bootstrap: int, seed: int,
               json: bool, budget: float, processes: int, **options) -> None:
        from adjudication.analytics import format_share as fs
        from adjudication.analytics.stats import jsonable
        from adjudication.analytics.files import InputError
        from adjudication.services.rows import RowError

        if bootstrap < 0:
            raise CommandError("--bootstrap must be 0 or more")
        if not 0 <= min_extraction_rate <= 1:
            raise CommandError("--min-extraction-rate is a share between 0 and 1")
        if input is not None:
            from adjudication.analytics.files import format_share_observations

            try:
                obs, sources = format_share_observations(input, reported=reported_reader, fixed=fixed_reader,
                                                         processes=processes, budget_s=budget)
            except (RowError, InputError) as exc:
                raise CommandError(str(exc)) from exc
            source = {"input": str(input)}
        else:
            from adjudication.analytics.selectors import format_share_observations as db_observations
            from adjudication.models import Dataset

            try:
                ds = Dataset.objects.get(name=dataset)
            except Dataset.DoesNotExist:
                raise CommandError(f"no dataset named {dataset!r}") from None
            try:
                obs = db_observations(dataset=ds, reported=reported_reader, fixed=fixed_reader)
            except LookupError as exc:
                raise CommandError(str(exc.args[0])) from exc
            sources = {reported_reader: "stored readings", fixed_reader: "stored readings"}
            if fixed_reader == "human" or reported_reader == "human":
                sources["human"] = "final human labels (current per response)"
            source = {"dataset": dataset}
        result = fs.compute(obs, base_checkpoint=base_checkpoint, min_reported_gain=min_reported_gain,
                            min_extraction_rate=min_extraction_rate, n_boot=bootstrap, seed=seed)
        result = fs.strip_private(result)
        if not result["comparisons"]:
            hint = "; ".join(s["reason"] for s in result["skipped"][:3])
            raise CommandError(f"no base/RL comparison found (checkpoint {base_checkpoint!r} vs others per "
                               f"model, benchmark and prompt){': ' + hint if hint else ''}")
        result = {**source, "reported_reader": reported_reader, "fixed_reader": fixed_reader, "sources": sources,
                  **result}
        if json:
            self.stdout.write(_json_dumps(jsonable(result)))
            return
        self.stdout.write(render(result))


def _json_dumps(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def _pct(x) -> str:
    return "–" if x is None else f"{x:.1%}"


def _pts(x) -> str:
    return "–" if x is None else f"{x:+.2f}"


def _ci(ci, fmt) -> str:
    return "" if not ci else f" [{fmt(ci[0])}, {fmt(ci[1])}]"


def render(r: dict) -> str:
    lines = [f"reported reader: {r['reported_reader']}   fixed reader: {r['fixed_reader']}   "
             f"base checkpoint: {r['filters']['base_checkpoint']}", ""]
    head = f"{'model':<24} {'benchmark':<14} {'prompt':<10} {'rl':<8} {'n':>5} {'reported':>9} {'fixed':>8} {'share':>8}  eligible"
    lines += [head, "-" * len(head)]
    for c in r["comparisons"]:
        share = _pct(c["format_share"]) if c["format_share"] is not None else "error"
        lines.append(f"{c['model'][:24]:<24} {c['benchmark'][:14]:<14} {c['prompt'][:10]:<10} {c['rl_checkpoint'][:8]:<8} "
                     f"{c['n_questions']:>5} {_pts(c['reported_gain']):>9} {_pts(c['fixed_gain']):>8} {share:>8}  "
                     f"{'yes' if c['eligible'] else 'no: ' + (c['ineligible_reason'] or '')}")
        if c.get("format_share_error"):
            lines.append(f"    ! {c['format_share_error']}")
    p = r["pooled"]
    lines += ["", f"eligible comparisons: {r['n_eligible']} of {r['n_comparisons']}",
              f"pooled (ratio of mean gains): reported {_pts(p['reported_gain'])}{_ci(p.get('reported_gain_ci'), _pts)}, "
              f"fixed {_pts(p['fixed_gain'])}{_ci(p.get('fixed_gain_ci'), _pts)}, "
              f"format share {_pct(p['format_share'])}{_ci(p.get('format_share_ci'), _pct)}",
              f"mean of per-comparison shares: {_pct(r['mean_of_shares'])}{_ci(r.get('mean_of_shares_ci'), _pct)}"
              + (" (interval withheld: reported gain ≤ 0 in "
                 f"{r['mean_of_shares_ci_undefined']:.1%} of resamples)" if r.get("mean_of_shares_ci_reason") else ""),
              "box rate among answers the fixed reader extracted: " + ", ".join(
                  f"{ck} {_pct(b['rate'])} ({b['k']}/{b['n']})" for ck, b in r["box_rate"].items())]
    for s in r["skipped"]:
        lines.append(f"skipped {s['model']}/{s['benchmark']}/{s['prompt']}: {s['reason']}")
    return "\n".join(lines)
