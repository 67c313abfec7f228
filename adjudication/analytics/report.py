"""The manager page's numbers for one dataset, as flat tables (the CSV / JSON downloads) plus the
nested results the plots are drawn from. Database reads go through analytics.selectors; every
number comes from the pure modules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adjudication.analytics import agreement as ag
from adjudication.analytics import format_share as fs
from adjudication.analytics import ranking
from adjudication.analytics.selectors import (
    agreement_inputs,
    format_share_observations,
    ranking_tables,
    reader_spec_kinds,
)
from adjudication.analytics.stats import jsonable
from adjudication.models import Dataset

RATES = ("accuracy", "extraction_rate", "coverage")
BIAS_RATES = ("accuracy", "judge_correct_rate", "human_correct_rate", "false_accept_rate", "false_reject_rate")
DIMENSIONS = ag.DIMENSIONS


@dataclass
class Params:
    reported: str = "boxed"
    fixed: str = "fixed"
    base: str = "base"
    by: str = "model"
    reference: str = ""
    min_gain: float = 0.0
    min_extraction: float = 0.0
    pool_by: str = ""
    n_boot: int = 1000
    seed: int = 0

    @classmethod
    def from_query(cls, q: Any) -> Params:
        p = cls()
        p.reported = (q.get("reported") or p.reported)[:200]
        p.fixed = (q.get("fixed") or p.fixed)[:200]
        p.base = (q.get("base") or p.base)[:100]
        p.by = q.get("by") if q.get("by") in DIMENSIONS else p.by
        p.reference = (q.get("reference") or "")[:200]
        p.min_gain = _number(q.get("min_gain"), low=0.0, high=100.0)
        p.min_extraction = _number(q.get("min_extraction"), low=0.0, high=1.0)
        p.pool_by = q.get("pool_by") if q.get("pool_by") in fs.POOL_BY else ""
        return p


def _number(value: Any, *, low: float, high: float) -> float:
    """A query-string threshold; anything unreadable or out of range is 0 (which the page warns about)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return 0.0
    return x if low <= x <= high else 0.0


@dataclass
class Report:
    dataset: Dataset
    params: Params
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    agreement: dict[str, Any] = field(default_factory=dict)
    format_share: dict[str, Any] | None = None
    format_share_error: str = ""
    ranking: dict[str, Any] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    readers: list[str] = field(default_factory=list)


def _rate_cols(prefix: str, p: dict[str, Any] | None) -> dict[str, Any]:
    p = p or {}
    ci = p.get("ci") or [None, None]
    return {prefix: p.get("rate"), f"{prefix}_lo": ci[0], f"{prefix}_hi": ci[1]}


def _bias_cols(s: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"n": s["n"], "tp": s["tp"], "fp": s["fp"], "fn": s["fn"], "tn": s["tn"]}
    for name in BIAS_RATES:
        ci = s.get(f"{name}_ci") or [None, None]
        row.update({name: s.get(name), f"{name}_lo": ci[0], f"{name}_hi": ci[1]})
    ci = s.get("bias_ci") or [None, None]
    row.update(
        {
            "cohen_kappa": s.get("cohen_kappa"),
            "bias": s.get("bias"),
            "bias_lo": ci[0],
            "bias_hi": ci[1],
            "bias_p_value": s.get("bias_p_value"),
            "lean": s.get("lean"),
        }
    )
    aa = s.get("answer_agreement")
    row.update(_rate_cols("answer_agreement", aa if isinstance(aa, dict) else None))
    row["answer_agreement_n"] = aa["n"] if isinstance(aa, dict) else None
    row["warnings"] = "; ".join(s.get("warnings") or [])
    return row


def build(dataset: Dataset, params: Params) -> Report:
    rep = Report(dataset=dataset, params=params)
    rep.kinds = reader_spec_kinds(dataset=dataset)
    rep.readers = sorted(rep.kinds)
    inputs = agreement_inputs(dataset=dataset)
    result = jsonable(
        ag.report(
            inputs["obs"],
            inputs["human"],
            annotator_ratings=inputs["annotator_ratings"],
            control_ids=inputs["control_ids"],
            strata=inputs["strata"],
            seed=params.seed,
        )
    )
    templates: dict[str, str] = inputs.get("templates", {})
    result["judge_templates"] = templates
    rep.agreement = result
    t = rep.tables

    rows = []
    for reader, groups in result["readers"].items():
        s = groups["all"]
        row = {"reader": reader, "kind": rep.kinds.get(reader, ""), "n": s["n"]}
        for name in RATES:
            row.update(_rate_cols(name, s[name]))
        row.update(
            {f"n_{v}": s["verdicts"].get(v, 0) for v in ("correct", "incorrect", "no_answer", "error", "timeout")}
        )
        rows.append(row)
    t["readers"] = {"title": "Readers: accuracy, extraction rate and coverage (all responses)", "rows": rows}

    rows = []
    for dim in DIMENSIONS:
        for reader, groups in result["readers_by"][dim].items():
            for group, s in groups.items():
                row = {"reader": reader, "dimension": dim, "group": group, "n": s["n"]}
                for name in RATES:
                    row.update(_rate_cols(name, s[name]))
                rows.append(row)
    t["readers-by"] = {"title": "Readers by model, checkpoint and benchmark", "rows": rows}

    rows = []
    for scope, per_reader in result["vs_human"].items():
        for reader, groups in per_reader.items():
            rows.append(
                {
                    "reader": reader,
                    "kind": rep.kinds.get(reader, ""),
                    "scope": scope,
                    **_bias_cols(groups["all"]),
                    "template_hash": templates.get(reader, ""),
                }
            )
    t["agreement"] = {"title": "Agreement with final human labels, and bias", "rows": rows}

    rows = []
    for dim, per_reader in result["vs_human_by"].items():
        for reader, groups in per_reader.items():
            for group, s in groups.items():
                rows.append(
                    {
                        "reader": reader,
                        "dimension": dim,
                        "group": group,
                        "scope": result["selection"]["preferred_scope"],
                        **_bias_cols(s),
                        "template_hash": templates.get(reader, ""),
                    }
                )
    t["agreement-by"] = {"title": "Agreement with humans by model, checkpoint and benchmark", "rows": rows}

    rows = []
    for pop in result["population"]:
        for reader, s in pop["readers"].items():
            row = {
                "policy": pop["policy"],
                "reader": reader,
                "n_disputed": pop["n_disputed"],
                "n_undisputed": pop["n_undisputed"],
                "error": s.get("error", ""),
                "template_hash": templates.get(reader, ""),
            }
            for name in ("accuracy", "judge_correct_rate", "human_correct_rate", "bias"):
                ci = s.get(f"{name}_ci") or [None, None]
                row.update({name: s.get(name), f"{name}_lo": ci[0], f"{name}_hi": ci[1]})
            rows.append(row)
    t["population"] = {"title": "Population estimates (strata weighted by size)", "rows": rows}

    rows = []
    for scope, hh in (result.get("human_human") or {}).items():
        pa = hh["percent_agreement"]
        rows.append(
            {
                "scope": scope,
                "raters": "all",
                "n": pa["n"],
                **_rate_cols("agreement", pa),
                "cohen_kappa": None,
                "krippendorff_alpha": hh["krippendorff_alpha"],
            }
        )
        for pair in hh["pairwise"]:
            rows.append(
                {
                    "scope": scope,
                    "raters": " / ".join(pair["raters"]),
                    "n": pair["n"],
                    **_rate_cols("agreement", pair["agreement"]),
                    "cohen_kappa": pair["cohen_kappa"],
                    "krippendorff_alpha": None,
                }
            )
    t["human-agreement"] = {"title": "Human–human agreement", "rows": rows}

    _format_share(rep)
    _ranking(rep)
    return rep


def _format_share(rep: Report) -> None:
    p = rep.params
    try:
        obs = format_share_observations(dataset=rep.dataset, reported=p.reported, fixed=p.fixed)
    except LookupError as exc:
        rep.format_share_error = str(exc.args[0])
        rep.tables["format-share"] = {"title": "Format share", "rows": []}
        rep.tables["format-share-pairs"] = {"title": "Format share: summed reported gain per model pair", "rows": []}
        return
    res = jsonable(
        fs.strip_private(
            fs.compute(
                obs,
                base_checkpoint=p.base,
                min_reported_gain=p.min_gain,
                min_extraction_rate=p.min_extraction,
                by=p.pool_by or None,
                n_boot=p.n_boot,
                seed=p.seed,
            )
        )
    )
    rep.format_share = res
    if not res["comparisons"]:
        rep.format_share_error = (
            f"no comparison: the dataset has no {p.base!r} checkpoint next to another checkpoint "
            "of the same model, benchmark and prompt"
        )
    rows = []
    for c in res["comparisons"]:
        rows.append(
            {
                "model": c["model"],
                "benchmark": c["benchmark"],
                "task_type": c["task_type"],
                "prompt": c["prompt"],
                "base_checkpoint": c["base_checkpoint"],
                "rl_checkpoint": c["rl_checkpoint"],
                "n_questions": c["n_questions"],
                "reported_gain": c["reported_gain"],
                "fixed_gain": c["fixed_gain"],
                "format_share": c["format_share"],
                "format_share_error": c.get("format_share_error") or "",
                "eligible": c["eligible"],
                "ineligible_reason": c.get("ineligible_reason") or "",
                "base_box_rate": (c.get("base") or {}).get("box_rate", {}).get("rate"),
                "rl_box_rate": (c.get("rl") or {}).get("box_rate", {}).get("rate"),
            }
        )
    pools = [("all", res)] + [(f"{res['by']} {name}", g) for name, g in (res.get("groups") or {}).items()]
    for scope, g in pools:
        pooled = g["pooled"]
        box = g["box_rate"]
        rows.append(
            {
                "model": f"(pooled over {scope}: ratio of mean gains)",
                "reported_gain": pooled["reported_gain"],
                "fixed_gain": pooled["fixed_gain"],
                "format_share": pooled["format_share"],
                "n_questions": None,
                "eligible": None,
                "base_box_rate": box["base"]["rate"],
                "rl_box_rate": box["rl"]["rate"],
            }
        )
        rows.append(
            {
                "model": f"(mean of per-comparison shares over {scope}: our reading of the seed's pooling rule)",
                "format_share": g["mean_of_shares"],
            }
        )
    rep.tables["format-share"] = {"title": f"Format share ({p.reported} vs {p.fixed})", "rows": rows}
    rep.tables["format-share-pairs"] = {
        "title": "Format share: summed reported gain per model pair (eligible comparisons)",
        "rows": [{"pool": scope, **c} for scope, g in pools for c in g["pair_contributions"]],
    }


def _ranking(rep: Report) -> None:
    tables = ranking_tables(dataset=rep.dataset)
    reference = rep.params.reference if rep.params.reference in tables else None
    res = (
        jsonable(ranking.compare(tables, reference=reference))
        if tables
        else {"rankings": {}, "flips": [], "kendall_tau": []}
    )
    rep.ranking = res
    rows = []
    for reader, ranked in res["rankings"].items():
        for r in ranked:
            ci = r["ci"] or [None, None]
            rows.append(
                {
                    "reader": reader,
                    "model": r["model"],
                    "rank": r["rank"],
                    "k": r["k"],
                    "n": r["n"],
                    "accuracy": r["accuracy"],
                    "accuracy_lo": ci[0],
                    "accuracy_hi": ci[1],
                }
            )
    rep.tables["ranking"] = {"title": "Model ranking per reader", "rows": rows}
    rows = []
    for f in res["flips"]:
        x, y = f["readers"]
        a, b = f["models"]
        rows.append(
            {
                "reader_x": x,
                "reader_y": y,
                "ahead_under_x": a,
                "ahead_under_y": b,
                "x_accuracy_a": f[x][a]["accuracy"],
                "x_accuracy_b": f[x][b]["accuracy"],
                "y_accuracy_a": f[y][a]["accuracy"],
                "y_accuracy_b": f[y][b]["accuracy"],
                "separated": f["separated"],
            }
        )
    rep.tables["flips"] = {"title": "Rank flips between readers", "rows": rows}
    rows = [
        {
            "reader_x": tau["readers"][0],
            "reader_y": tau["readers"][1],
            "n_models": tau["n_models"],
            "kendall_tau": tau["tau"],
            "p_value": tau["p_value"],
            "reason": tau.get("tau_reason", ""),
        }
        for tau in res["kendall_tau"]
    ]
    rep.tables["kendall-tau"] = {"title": "Kendall's τ between readers' rankings", "rows": rows}


TABLES = (
    "readers",
    "readers-by",
    "agreement",
    "agreement-by",
    "population",
    "human-agreement",
    "format-share",
    "format-share-pairs",
    "ranking",
    "flips",
    "kendall-tau",
)


def columns(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


__all__ = ["TABLES", "Params", "Report", "build", "columns"]
