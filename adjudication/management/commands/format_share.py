"""`manage.py format_share`: how much of each base→RL gain is format (seed 000)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from adjudication.management.arguments import add_file_or_dataset_arguments, add_isolation_arguments, dataset_named


class Command(BaseCommand):
    help = (
        "Format share of base→RL gains: reported gain under the harness reader, fixed gain under a fixed "
        "reader (any reader, an LLM reader's stored verdicts, or 'human'), per (model, benchmark, prompt); over "
        "the eligible comparisons the pooled share, the mean of shares (our reading of seed 000's other pooling "
        "rule), the summed gain per model pair and the box rate by base / RL role, overall and --by task type or "
        "benchmark. --input FILE needs no database; --dataset NAME reads the database."
    )
    # --input must work with no database server at all: no system checks, no ORM.
    requires_system_checks: list = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_file_or_dataset_arguments(
            parser,
            file_help="canonical JSONL (model, checkpoint, benchmark, prompt per row)",
            dataset_help="a dataset in the database (its stored readings and final labels)",
        )
        parser.add_argument("--reported-reader", default="boxed", help="the harness reader (default: boxed)")
        parser.add_argument(
            "--fixed-reader",
            default="fixed",
            help=(
                "the fixed reader (default: fixed); 'human' = final human labels; 'consensus' = the panel "
                "consensus (one Dawid-Skene fit per checkpoint over every reader's verdicts; --dataset only)"
            ),
        )
        parser.add_argument("--base-checkpoint", default="base", help="the checkpoint every other one is compared with")
        parser.add_argument(
            "--min-reported-gain",
            type=float,
            default=0.0,
            help="eligible only above this reported gain, in points (default 0: any positive gain, "
            "with a warning; seed 000 pools only 'clearly positive' gains)",
        )
        parser.add_argument(
            "--min-extraction-rate",
            type=float,
            default=0.0,
            help="eligible only if the fixed reader extracts at least this share on both checkpoints "
            "(default 0, with a warning; seed 000 asks for 'adequate extraction')",
        )
        parser.add_argument(
            "--require-thresholds",
            action="store_true",
            help="refuse to run with either eligibility threshold left at 0",
        )
        parser.add_argument(
            "--by",
            choices=("task_type", "benchmark"),
            help="also pool per task type (maths, multiple_choice, free_form) or per benchmark",
        )
        parser.add_argument(
            "--task-type",
            action="append",
            default=[],
            metavar="BENCHMARK=TYPE",
            help="set a benchmark's task type instead of reading it from its items (repeatable)",
        )
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
        parser.add_argument("--json", action="store_true", help="print JSON only")
        add_isolation_arguments(parser, help_suffix=" (--input)")

    def handle(
        self,
        *args,
        input: Path | None,
        dataset: str | None,
        reported_reader: str,
        fixed_reader: str,  # noqa: A002
        base_checkpoint: str,
        min_reported_gain: float,
        min_extraction_rate: float,
        require_thresholds: bool,
        by: str | None,
        task_type: list[str],
        bootstrap: int,
        seed: int,
        json: bool,
        budget: float,
        processes: int,
        **options,
    ) -> None:
        from adjudication.analytics import format_share as fs
        from adjudication.analytics.files import InputError
        from adjudication.analytics.stats import jsonable
        from adjudication.ingest.formats import RowError

        if bootstrap < 0:
            raise CommandError("--bootstrap must be 0 or more")
        if not 0 <= min_extraction_rate <= 1:
            raise CommandError("--min-extraction-rate is a share between 0 and 1")
        if require_thresholds and (min_reported_gain <= 0 or min_extraction_rate <= 0):
            zero = [
                flag
                for flag, v in (
                    ("--min-reported-gain", min_reported_gain),
                    ("--min-extraction-rate", min_extraction_rate),
                )
                if v <= 0
            ]
            raise CommandError(
                f"--require-thresholds: {' and '.join(zero)} left at 0 (seed 000 pools only clearly "
                "positive gains with adequate extraction; choose the thresholds)"
            )
        overrides = parse_task_types(task_type)
        if input is not None and "consensus" in (reported_reader, fixed_reader):
            raise CommandError(
                "'consensus' is fitted from a dataset's stored readings: use --dataset (for a file, fit it with "
                "`manage.py consensus --input` and give its verdicts as a reader column)"
            )
        if input is not None:
            from adjudication.analytics.files import format_share_observations

            try:
                obs, sources = format_share_observations(
                    input, reported=reported_reader, fixed=fixed_reader, processes=processes, budget_s=budget
                )
            except (RowError, InputError) as exc:
                raise CommandError(str(exc)) from exc
            source = {"input": str(input)}
        else:
            from adjudication.analytics.selectors import format_share_observations as db_observations

            assert dataset is not None  # add_file_or_dataset_arguments: the file or --dataset, one required
            ds = dataset_named(dataset)
            try:
                obs = db_observations(dataset=ds, reported=reported_reader, fixed=fixed_reader)
            except LookupError as exc:
                raise CommandError(str(exc.args[0])) from exc
            sources = {
                name: "panel consensus of the stored readings (Dawid-Skene per checkpoint, human labels clamped)"
                if name == "consensus"
                else "stored readings"
                for name in (reported_reader, fixed_reader)
            }
            if fixed_reader == "human" or reported_reader == "human":
                sources["human"] = "final human labels (current per response)"
            source = {"dataset": dataset}
        result = fs.compute(
            obs,
            base_checkpoint=base_checkpoint,
            min_reported_gain=min_reported_gain,
            min_extraction_rate=min_extraction_rate,
            by=by,
            task_types=overrides,
            n_boot=bootstrap,
            seed=seed,
        )
        result = fs.strip_private(result)
        if not result["comparisons"]:
            hint = "; ".join(s["reason"] for s in result["skipped"][:3])
            raise CommandError(
                f"no base/RL comparison found (checkpoint {base_checkpoint!r} vs others per "
                f"model, benchmark and prompt){': ' + hint if hint else ''}"
            )
        result = {
            **source,
            "reported_reader": reported_reader,
            "fixed_reader": fixed_reader,
            "sources": sources,
            **result,
        }
        if json:
            # On stderr as well, so that JSON piped elsewhere still shows them on the terminal.
            for w in result["warnings"]:
                self.stderr.write(f"warning: {w}")
            self.stdout.write(_json_dumps(jsonable(result)))
            return
        self.stdout.write(render(result))


def parse_task_types(values: list[str]) -> dict[str, str]:
    """["mmlu=multiple_choice", …] → {"mmlu": "multiple_choice"}; a clear error on a bad value."""
    from adjudication.analytics.format_share import normalise_task_type

    out = {}
    for value in values:
        bench, sep, kind = value.partition("=")
        if not sep or not bench.strip():
            raise CommandError(f"--task-type {value!r}: expected BENCHMARK=TYPE")
        try:
            out[bench.strip()] = normalise_task_type(kind)
        except ValueError as exc:
            raise CommandError(f"--task-type {value!r}: {exc}") from exc
    return out


def _json_dumps(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def _pct(x) -> str:
    return "–" if x is None else f"{x:.1%}"


def _pts(x) -> str:
    return "–" if x is None else f"{x:+.2f}"


def _ci(ci, fmt) -> str:
    return "" if not ci else f" [{fmt(ci[0])}, {fmt(ci[1])}]"


def _pool_lines(g: dict, indent: str = "") -> list[str]:
    p = g["pooled"]
    ms_note = (
        f" (interval withheld: reported gain ≤ 0 in {g['mean_of_shares_ci_undefined']:.1%} of resamples)"
        if g.get("mean_of_shares_ci_reason")
        else ""
    )
    box = g["box_rate"]
    lines = [
        (
            f"{indent}pooled share (ratio of mean gains; the seed's arithmetic): reported {_pts(p['reported_gain'])}"
            f"{_ci(p.get('reported_gain_ci'), _pts)}, fixed {_pts(p['fixed_gain'])}"
            f"{_ci(p.get('fixed_gain_ci'), _pts)}, "
            f"format share {_pct(p['format_share'])}{_ci(p.get('format_share_ci'), _pct)}"
        ),
        (
            f"{indent}mean of per-comparison shares (our reading of the seed's 'other pooling rule', not the seed's "
            f"own definition): {_pct(g['mean_of_shares'])}{_ci(g.get('mean_of_shares_ci'), _pct)}{ms_note}"
        ),
        (
            f"{indent}box rate among answers the fixed reader extracted (eligible comparisons): "
            f"base {_pct(box['base']['rate'])} ({box['base']['k']}/{box['base']['n']}), "
            f"RL {_pct(box['rl']['rate'])} ({box['rl']['k']}/{box['rl']['n']})"
        ),
    ]
    if g["pair_contributions"]:
        lines.append(f"{indent}summed reported gain per model pair (share, cumulative):")
        for c in g["pair_contributions"]:
            lines.append(
                f"{indent}  {c['model']} {c['base_checkpoint']}→{c['rl_checkpoint']}: "
                f"{c['summed_reported_gain']:+.2f} over {c['n_comparisons']} comparison(s), "
                f"{_pct(c['share_of_summed_reported_gain'])} (cumulative {_pct(c['cumulative_share'])})"
            )
    return lines


def render(r: dict) -> str:
    lines = [f"WARNING: {w}" for w in r.get("warnings", [])]
    if lines:
        lines.append("")
    lines += [
        (
            f"reported reader: {r['reported_reader']}   fixed reader: {r['fixed_reader']}   "
            f"base checkpoint: {r['filters']['base_checkpoint']}   eligibility: reported gain > "
            f"{r['filters']['min_reported_gain']:g} points, fixed-reader extraction ≥ "
            f"{r['filters']['min_extraction_rate']:g}"
        ),
        "",
    ]
    head = (
        f"{'model':<24} {'benchmark':<14} {'task type':<15} {'prompt':<10} {'rl':<8} {'n':>5} {'reported':>9} "
        f"{'fixed':>8} {'share':>8}  eligible"
    )
    lines += [head, "-" * len(head)]
    for c in r["comparisons"]:
        share = _pct(c["format_share"]) if c["format_share"] is not None else "error"
        lines.append(
            f"{c['model'][:24]:<24} {c['benchmark'][:14]:<14} {c['task_type'][:15]:<15} {c['prompt'][:10]:<10} "
            f"{c['rl_checkpoint'][:8]:<8} {c['n_questions']:>5} {_pts(c['reported_gain']):>9} "
            f"{_pts(c['fixed_gain']):>8} {share:>8}  "
            f"{'yes' if c['eligible'] else 'no: ' + (c['ineligible_reason'] or '')}"
        )
        if c.get("format_share_error"):
            lines.append(f"    ! {c['format_share_error']}")
    lines += [
        "",
        "task type per benchmark: "
        + ", ".join(f"{b} {t['task_type']} ({t['source']})" for b, t in r["task_types"].items()),
        "",
        f"all eligible comparisons: {r['n_eligible']} of {r['n_comparisons']}",
    ]
    lines += _pool_lines(r, "  ")
    for name, g in (r.get("groups") or {}).items():
        lines += ["", f"{r['by']} {name}: {g['n_eligible']} eligible of {g['n_comparisons']} comparisons"]
        lines += _pool_lines(g, "  ") if g["n_eligible"] else ["  nothing eligible to pool"]
    for s in r["skipped"]:
        lines.append(f"skipped {s['model']}/{s['benchmark']}/{s['prompt']}: {s['reason']}")
    return "\n".join(lines)
