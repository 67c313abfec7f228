"""`report_compute`: every report kind's JSON, over a dataset or a file, for every caller (the
commands, the report pages and their API, the stored-report task, bundles and their replay).

The pure modules compute (format_share, agreement, consensus, readers.audit); the selectors read
the database; this module puts their results together into the one JSON a report is, so that the
number a page shows is the number a command prints is the number a bundle replays. A dataset's
report reads one snapshot of the data (analytics.selectors.read_snapshot).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings

import adjudication.analytics.reports.options as opts
from adjudication.analytics.reports.options import ReportError
from adjudication.analytics.stats import jsonable

if TYPE_CHECKING:
    from adjudication.models import AuditRun, Dataset


class AuditProgress(Protocol):
    """How a long audit tells its caller how far it is (the command's progress bar)."""

    def start(self, *, readers: int, golds: int, variants: int, skipped: int) -> None: ...

    def advance(self, reader: str, n: int) -> None: ...

    def close(self) -> None: ...


def _reader_processes() -> int:
    return int(settings.READER_PROCESSES)


def _reader_budget() -> float:
    return float(settings.READER_BUDGET_SECONDS)


@dataclass(frozen=True)
class Machine:
    """What a computation may use of this machine, never a report option: reader processes and the
    budget per reading (this machine's settings unless its user says otherwise), and where an
    audit writes its files (a scratch directory, dropped after, when None)."""

    processes: int = field(default_factory=_reader_processes)
    budget: float = field(default_factory=_reader_budget)
    out_dir: Path | None = None
    progress: AuditProgress | None = None


def report_compute(
    kind: str, *, source: Dataset | Path, options: opts.ReportOptions, machine: Machine | None = None
) -> dict[str, Any]:
    """The report's JSON; ReportError (a sentence for the user) when it cannot be computed on
    this source with these options."""
    compute = _COMPUTE.get(kind)
    if compute is None or options.kind != kind:
        raise ReportError(f"{kind!r} is not a report kind with {type(options).__name__}")
    if isinstance(source, Path):
        return compute(source, options, machine or Machine())
    from adjudication.analytics.selectors import read_snapshot

    with read_snapshot():
        return compute(source, options, machine or Machine())


def _format_share(source: Dataset | Path, o: opts.FormatShareOptions, m: Machine) -> dict[str, Any]:
    o.thresholds_checked()
    overrides = o.task_types()
    sources: dict[str, str]
    if isinstance(source, Path):
        if o.predictor:
            raise ReportError(
                "--predictor: the prediction-powered estimates need the sampling design routing records: use --dataset",
                field="predictor",
            )
        if "consensus" in (o.reported_reader, o.fixed_reader):
            raise ReportError(
                "'consensus' is fitted from a dataset's stored readings: use --dataset (for a file, fit it with "
                "`manage.py consensus --input` and give its verdicts as a reader column)"
            )
        from adjudication.analytics.files import InputError, format_share_observations
        from adjudication.ingest.formats import RowError

        try:
            obs, sources = format_share_observations(
                source, reported=o.reported_reader, fixed=o.fixed_reader, processes=m.processes, budget_s=m.budget
            )
        except (RowError, InputError) as exc:
            raise ReportError(str(exc)) from exc
        origin = {"input": str(source)}
    else:
        from adjudication.analytics.selectors import format_share_observations as db_observations

        try:
            obs = db_observations(dataset=source, reported=o.reported_reader, fixed=o.fixed_reader)
        except LookupError as exc:
            raise ReportError(str(exc.args[0])) from exc
        sources = {
            name: "panel consensus of the stored readings (Dawid-Skene per checkpoint, human labels clamped)"
            if name == "consensus"
            else "stored readings"
            for name in (o.reported_reader, o.fixed_reader)
        }
        if "human" in (o.fixed_reader, o.reported_reader):
            sources["human"] = "final human labels (current per response)"
        origin = {"dataset": source.name}
    result = o.pooled(obs, task_types=overrides)
    if not result["comparisons"]:
        hint = "; ".join(s["reason"] for s in result["skipped"][:3])
        raise ReportError(
            f"no base/RL comparison found (checkpoint {o.base_checkpoint!r} vs others per "
            f"model, benchmark and prompt){': ' + hint if hint else ''}"
        )
    out = {
        **origin,
        "reported_reader": o.reported_reader,
        "fixed_reader": o.fixed_reader,
        "sources": sources,
        **result,
    }
    if o.fixed_reader == "human" and not isinstance(source, Path):
        # The labelled questions alone are a selected subset: beside them, every response (issue 34).
        from adjudication.analytics.report import format_share_estimates_block

        out["estimates"] = format_share_estimates_block(
            dataset=source,
            base=o.base_checkpoint,
            reported=o.reported_reader,
            predictor=o.predictor,
            n_boot=o.bootstrap,
            seed=o.seed,
        )
    return out


def _agreement(source: Dataset | Path, o: opts.AgreementOptions, m: Machine) -> dict[str, Any]:
    from adjudication.analytics import agreement as ag
    from adjudication.analytics.parsing import judge_parsing

    if isinstance(source, Path):
        return jsonable(_agreement_of_file(source, o))
    from adjudication.analytics.selectors import agreement_inputs

    inputs = agreement_inputs(dataset=source)
    if not inputs["counts"]:
        raise ReportError(f"dataset {source.name!r} has no readings yet (run_readers first)")
    result = ag.report_of(inputs, seed=o.seed)
    return jsonable(
        {
            "dataset": source.name,
            **result,
            "judge_templates": inputs["templates"],
            "judge_parsing": judge_parsing(inputs["parsing"]),
        }
    )


def _agreement_of_file(path: Path, o: opts.AgreementOptions) -> dict[str, Any]:
    from adjudication.analytics.agreement import NO_ANSWER, answers_agree
    from adjudication.analytics.bias import bias_by, judge_bias
    from adjudication.analytics.files import InputError, agreement_records
    from adjudication.analytics.stats import proportion
    from adjudication.ingest.formats import RowError

    keys = tuple(k.strip() for k in o.by.split(",") if k.strip())
    bad = [k for k in keys if k not in ("model", "checkpoint", "benchmark")]
    if bad:
        raise ReportError(f"--by: unknown field(s) {', '.join(bad)} (model, checkpoint, benchmark)", field="by")
    try:
        records = agreement_records(path)
    except (RowError, InputError) as exc:
        raise ReportError(str(exc)) from exc
    producers: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        producers.setdefault(r["producer"], []).append(r)
    out: dict[str, Any] = {"input": str(path), "no_answer_counts_as": o.no_answer, "producers": {}}
    for name, rows in sorted(producers.items()):
        stats = judge_bias([(r["verdict"], r["human_verdict"]) for r in rows], no_answer=o.no_answer, seed=o.seed)
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
        out["by"] = {"fields": list(keys), "producers": bias_by(records, keys, no_answer=o.no_answer, seed=o.seed)}
    return out


def _consensus(source: Dataset | Path, o: opts.ConsensusOptions, m: Machine) -> dict[str, Any]:
    from adjudication.analytics.consensus import consensus

    if isinstance(source, Path):
        from adjudication.analytics.files import InputError, consensus_file_inputs
        from adjudication.ingest.formats import RowError

        try:
            inputs = consensus_file_inputs(source)
        except (RowError, InputError) as exc:
            raise ReportError(str(exc)) from exc
        origin = {"input": str(source)}
    else:
        from adjudication.analytics.selectors import consensus_inputs

        inputs = consensus_inputs(dataset=source)
        if not inputs.votes:
            raise ReportError(f"dataset {source.name!r} has no readings yet (run_readers first)")
        origin = {"dataset": source.name}
    try:
        fit = {name: getattr(o, name) for name in ("by", "model", "seed", "group_duplicates", "human_weight")}
        result = consensus(inputs, n_boot=o.bootstrap, **fit)
    except ValueError as exc:  # the fit's own refusal on these votes (too few, one class only)
        raise ReportError(f"{origin.get('input') or origin.get('dataset')}: {exc}") from exc
    return jsonable({**origin, **result.as_dict()})


def _audit(source: Dataset | Path, o: opts.AuditOptions, m: Machine) -> dict[str, Any]:
    from readers import registry
    from readers.audit.contracts import CONTRACT_OVERRIDES, parse_override
    from readers.audit.golds import GoldsError, load_golds_tagged
    from readers.audit.runner import resolve_readers, run_audit
    from readers.audit.synthetic import synthetic_golds
    from readers.audit.transforms import STRATA, build_variants

    try:
        names = registry.require(resolve_readers(list(o.readers) if o.readers is not None else None))
    except registry.UnknownReader as exc:
        raise ReportError(f"{exc}. Reader sets: seed001, ours, all.", field="readers") from None
    overrides: dict[str, dict[str, bool]] = (
        {} if o.no_seed_contracts else {r: dict(v) for r, v in CONTRACT_OVERRIDES.items()}
    )
    for text in o.contract_overrides or ():
        try:
            reader, stratum, inside = parse_override(text)
        except ValueError as exc:
            raise ReportError(str(exc), field="contract_overrides") from exc
        if reader not in names:
            raise ReportError(
                f"contract override {text!r}: reader {reader!r} is not audited", field="contract_overrides"
            )
        if stratum not in STRATA:
            raise ReportError(
                f"contract override {text!r}: unknown stratum {stratum!r} (strata: {', '.join(STRATA)})",
                field="contract_overrides",
            )
        overrides.setdefault(reader, {})[stratum] = inside

    sources: dict[str, str] = {}
    if isinstance(source, Path):
        try:
            tagged = load_golds_tagged(source)
        except GoldsError as exc:
            raise ReportError(str(exc)) from exc
        gold_list = [g for g, _s in tagged]
        sources = dict(tagged)
        skipped = 0
    else:
        from adjudication.audit.selectors import dataset_golds

        gold_list, skipped = dataset_golds(source)
        if not gold_list:
            raise ReportError(f"dataset {source.name!r} has no open-ended golds to audit")
    for gold in synthetic_golds(o.synthetic):
        if gold not in sources:
            gold_list.append(gold)
            sources[gold] = "synthetic"
    progress = m.progress
    if progress is not None:
        progress.start(
            readers=len(names), golds=len(gold_list), variants=len(build_variants(gold_list)), skipped=skipped
        )
    scratch = tempfile.TemporaryDirectory(prefix="report-audit-") if m.out_dir is None else nullcontext(str(m.out_dir))
    with scratch as out:
        try:
            run_audit(
                gold_list,
                names,
                Path(out),
                processes=m.processes,
                budget_s=m.budget,
                progress=progress.advance if progress is not None else None,
                contract_overrides=overrides,
                gold_sources=sources,
            )
        finally:
            if progress is not None:
                progress.close()
        # The summary as summary.json holds it: the file the command leaves is the report's JSON.
        summary: dict[str, Any] = json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))
    return summary


def audit_run_of(dataset: Dataset, options: opts.AuditRunOptions) -> AuditRun:
    """The dataset's audit run the options name; ReportError when it has none of that id."""
    from adjudication.models import AuditRun

    run = AuditRun.objects.filter(pk=options.run, dataset=dataset).first()
    if run is None:
        raise ReportError(f"dataset {dataset.name!r} has no such audit run", field="run")
    return run


def _audit_run(source: Dataset | Path, o: opts.AuditRunOptions, m: Machine) -> dict[str, Any]:
    from adjudication.audit.compute import audit_summary
    from readers import registry

    if isinstance(source, Path):
        raise ReportError("an audit run belongs to a dataset: give the dataset, not a file")
    run = audit_run_of(source, o)
    # The run's row may come from a bundle: its readers are checked like any option.
    if (
        not isinstance(run.readers, list)
        or not 1 <= len(run.readers) <= 100
        or not all(isinstance(r, str) and len(r) <= opts.NAME_MAX for r in run.readers)
    ):
        raise ReportError("the audit run's readers are not a list of reader names")
    with tempfile.TemporaryDirectory(prefix="report-audit-") as scratch:
        try:
            return audit_summary(run=run, out_dir=Path(scratch))
        except (ValueError, registry.UnknownReader) as exc:  # no golds left, a reader gone from this registry
            raise ReportError(str(exc)) from None


def _analytics(source: Dataset | Path, o: opts.AnalyticsOptions, m: Machine) -> dict[str, Any]:
    from adjudication.analytics.report import Params, report_body

    if isinstance(source, Path):
        raise ReportError("the analytics report reads a dataset, not a file")
    return report_body(dataset=source, params=Params.from_stored(o.canonical()))


def _estimates(source: Dataset | Path, o: opts.EstimatesOptions, m: Machine) -> dict[str, Any]:
    from adjudication.analytics.estimate_report import dataset_estimates
    from adjudication.errors import ApplicationError

    if isinstance(source, Path):
        raise ReportError("the estimates read a dataset (its readings and its labels' design), not a file")
    try:
        return dataset_estimates(
            dataset=source,
            target=o.target or None,
            predictor=o.predictor or None,
            policy=o.policy or None,
            by=o.by,
            base=o.base,
            reported=o.reported,
            seed=o.seed,
        )
    except ApplicationError as exc:  # a target, predictor or policy these data do not have
        named = exc.field in ("target", "predictor", "policy") and not exc.message.startswith(str(exc.field))
        raise ReportError(f"{exc.field}: {exc.message}" if named else exc.message, field=exc.field) from None


def _judge_card(source: Dataset | Path, o: opts.JudgeCardOptions, m: Machine) -> dict[str, Any]:
    from adjudication.analytics.report import dataset_judge_cards

    if isinstance(source, Path):
        raise ReportError("the judge-bias card reads a dataset (the labelled responses' texts and golds), not a file")
    return dataset_judge_cards(dataset=source, scope=o.scope, seed=o.seed)


_COMPUTE: dict[str, Callable[[Any, Any, Machine], dict[str, Any]]] = {
    "format_share": _format_share,
    "agreement": _agreement,
    "consensus": _consensus,
    "audit": _audit,
    "audit_run": _audit_run,
    "analytics": _analytics,
    "estimates": _estimates,
    "judge_card": _judge_card,
}
