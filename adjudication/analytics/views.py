"""Manager pages: /analytics/<dataset_id>/ (tables and inline SVG plots) and its downloads."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe

from adjudication.analytics import svg
from adjudication.analytics.format_share import POOL_BY
from adjudication.analytics.report import TABLES, Params, build, columns
from adjudication.exports import CONTENT_TYPES, attachment, download_name, json_text, table_download
from adjudication.models import Dataset
from adjudication.permissions import role_required


def _f(value, lo=None, hi=None, digits: int = 3, signed: bool = False) -> str:
    """A number with its interval as one string: "0.733 [0.480, 0.891]"; "–" when undefined."""
    if value is None:
        return "–"
    fmt = f"{{:{'+' if signed else ''}.{digits}f}}"
    text = fmt.format(value)
    if lo is not None and hi is not None:
        text += f" [{fmt.format(lo)}, {fmt.format(hi)}]"
    return text


def _agreement_display(rows: list[dict], preferred: str) -> list[dict]:
    order = {preferred: 0, "reviewed": 1, "disputed": 2, "controls": 3}
    out = []
    for r in sorted(rows, key=lambda r: (order.get(r.get("scope"), 9), r["reader"])):
        out.append(
            {
                **{k: r.get(k) for k in ("reader", "kind", "scope", "group", "n", "lean", "warnings", "template_hash")},
                "agreement": _f(r["accuracy"], r["accuracy_lo"], r["accuracy_hi"]),
                "answer": (
                    _f(r["answer_agreement"], r["answer_agreement_lo"], r["answer_agreement_hi"])
                    + f" (n={r['answer_agreement_n']})"
                )
                if r.get("answer_agreement") is not None
                else "–",
                "kappa": _f(r["cohen_kappa"]),
                "judge": _f(r["judge_correct_rate"]),
                "human": _f(r["human_correct_rate"]),
                "bias": _f(r["bias"], r["bias_lo"], r["bias_hi"], signed=True),
                "fa": _f(r["false_accept_rate"], r["false_accept_rate_lo"], r["false_accept_rate_hi"]),
                "fr": _f(r["false_reject_rate"], r["false_reject_rate_lo"], r["false_reject_rate_hi"]),
            }
        )
    return out


@role_required("manager")
def analytics_page(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    params = Params.from_query(request.GET)
    rep = build(dataset, params)
    ag = rep.agreement
    plots: dict[str, str] = {}
    # accuracy by reader, with Wilson intervals
    plots["accuracy"] = svg.interval_chart(
        [
            {
                "label": row["reader"],
                "value": row["accuracy"],
                "ci": [row["accuracy_lo"], row["accuracy_hi"]] if row["accuracy"] is not None else None,
                "note": f"n={row['n']}",
            }
            for row in rep.tables["readers"]["rows"]
        ],
        title="Accuracy by reader (Wilson 95 %)",
    )
    scope = ag["selection"]["preferred_scope"]
    vs = ag["vs_human"].get(scope, {})
    if vs:
        plots["agreement"] = svg.interval_chart(
            [
                {
                    "label": reader,
                    "value": groups["all"]["accuracy"],
                    "ci": groups["all"]["accuracy_ci"],
                    "note": f"n={groups['all']['n']}",
                }
                for reader, groups in vs.items()
            ],
            title="Verdict agreement with final human labels (Wilson 95 %)",
        )
    heatmaps = []
    for reader, groups in sorted(vs.items(), key=lambda kv: (rep.kinds.get(kv[0]) != "judge", kv[0])):
        s = groups["all"]
        if s["n"]:
            heatmaps.append(
                {
                    "reader": reader,
                    "kind": rep.kinds.get(reader, ""),
                    "stats": s,
                    "svg": mark_safe(svg.heatmap(s["confusion"]["matrix"], title=f"{reader} vs human")),
                }
            )
    if rep.format_share and rep.format_share["comparisons"]:
        plots["format_share"] = svg.gain_bars(rep.format_share["comparisons"])
    flipped = {m for f in rep.ranking.get("flips", []) for m in f["models"]}
    if rep.ranking.get("rankings"):
        plots["ranking"] = svg.slope_chart(rep.ranking["rankings"], flipped=flipped)
    return render(
        request,
        "analytics/dataset.html",
        {
            "dataset": dataset,
            "params": params,
            "rep": rep,
            "ag": ag,
            "scope": scope,
            "plots": {k: mark_safe(v) for k, v in plots.items()},
            "heatmaps": heatmaps,
            "tables": [(name, rep.tables[name]["title"]) for name in TABLES],
            "dimensions": ["model", "checkpoint", "benchmark"],
            "flipped": sorted(flipped),
            "by_rows": _agreement_display(
                [r for r in rep.tables["agreement-by"]["rows"] if r["dimension"] == params.by], scope
            ),
            "agreement_rows": _agreement_display(rep.tables["agreement"]["rows"], scope),
            "reader_rows": [
                {
                    **r,
                    "acc": _f(r["accuracy"], r["accuracy_lo"], r["accuracy_hi"]),
                    "ext": _f(r["extraction_rate"], r["extraction_rate_lo"], r["extraction_rate_hi"]),
                    "cov": _f(r["coverage"], r["coverage_lo"], r["coverage_hi"]),
                }
                for r in rep.tables["readers"]["rows"]
            ],
            "population_rows": [
                {
                    **r,
                    "acc": _f(r.get("accuracy"), r.get("accuracy_lo"), r.get("accuracy_hi")),
                    "bias_s": _f(r.get("bias"), r.get("bias_lo"), r.get("bias_hi"), signed=True),
                }
                for r in rep.tables["population"]["rows"]
            ],
            "hh_rows": [
                {
                    **r,
                    "agree": _f(r.get("agreement"), r.get("agreement_lo"), r.get("agreement_hi")),
                    "kappa": _f(r.get("cohen_kappa")),
                    "alpha": _f(r.get("krippendorff_alpha")),
                }
                for r in rep.tables["human-agreement"]["rows"]
            ],
            "readers": rep.readers,
            "pool_dimensions": POOL_BY,
            "fs_pools": _format_share_pools(rep.format_share),
        },
    )


def _format_share_pools(res: dict | None) -> list[dict]:
    """The overall pool and each group's, with the top three pairs' cumulative share of the summed gain."""
    if not res or not res["comparisons"]:
        return []
    pools = [{"name": "all eligible", "g": res}]
    pools += [{"name": f"{res['by']}: {name}", "g": g} for name, g in (res.get("groups") or {}).items()]
    for p in pools:
        pairs = p["g"]["pair_contributions"]
        p["top3"] = pairs[min(2, len(pairs) - 1)]["cumulative_share"] if len(pairs) > 1 else None
    return pools


@role_required("manager")
def analytics_export(request: HttpRequest, dataset_id: int, table: str, fmt: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    if fmt not in ("csv", "json") or (table not in TABLES and not (table == "report" and fmt == "json")):
        raise Http404("unknown table or format")
    rep = build(dataset, Params.from_query(request.GET))
    if table == "report":
        body = {
            "dataset": dataset.name,
            "agreement": rep.agreement,
            "format_share": rep.format_share,
            "format_share_error": rep.format_share_error or None,
            "ranking": rep.ranking,
        }
    elif fmt == "json":
        body = {"dataset": dataset.name, "table": table, "rows": rep.tables[table]["rows"]}
    else:
        rows = rep.tables[table]["rows"]
        return table_download(fmt="csv", filename_stem=f"{dataset.name}-{table}", rows=rows, columns=columns(rows))
    response = HttpResponse(json_text(body, indent=2), content_type=CONTENT_TYPES["json"])
    return attachment(response, download_name(f"{dataset.name}-{table}", fmt))
