"""Manager pages: /analytics/<dataset_id>/ (headline, tables and inline SVG plots) and its downloads.

Both read the stored report (analytics.services.report_for_view): nothing is computed in the
request, except that the embedded default (eager Celery) computes a missing report inline."""

from __future__ import annotations

import shlex
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe

from adjudication.analytics import svg
from adjudication.analytics.bias_card import MIN_STRATUM as JUDGE_CARD_MIN_STRATUM
from adjudication.analytics.estimate_report import DEFAULT_PREDICTOR
from adjudication.analytics.format_share import POOL_BY
from adjudication.analytics.headline import points_text, rate_text, share_text
from adjudication.analytics.report import HUMAN, TABLES, Params, columns
from adjudication.analytics.reports.render import LEFT_OUT, estimate_cells
from adjudication.analytics.selectors import (
    VOTE,
    StoredReport,
    dataset_checkpoints,
    known_readers,
    report_parts,
    report_parts_json,
    report_readers,
    report_stored,
    resolve_reader,
)
from adjudication.analytics.services import analytics_choice_set, report_for_view
from adjudication.exports import CONTENT_TYPES, attachment, download_name, json_text, table_download
from adjudication.models import AnalyticsReport, Dataset
from adjudication.permissions import role_required

# What the page shows of a stored report (the rest, every flip and τ among them, is downloads).
PAGE_PARTS = (
    "params",
    "kinds",
    "readers",
    "headline",
    "flips_summary",
    "format_share",
    "format_share_error",
    "consensus",
    "consensus_error",
    "estimates",
    "estimates_error",
    "calibration",
    "tables__readers",
    "tables__agreement",
    "tables__agreement-by",
    "tables__population",
    "tables__human-agreement",
    "tables__judge-bias-estimates",
    "judge_cards",
    "agreement__selection",
    "agreement__vs_human",
    "agreement__population",
    "ranking__rankings",
)
REPORT_JSON_PARTS = (
    "params",
    "headline",
    "agreement",
    "format_share",
    "ranking",
    "flips_summary",
    "consensus",
    "estimates",
    "calibration",
    "judge_cards",
)
# Parts that are strings (or null): the errors beside format share, the consensus and the estimates.
REPORT_JSON_ERRORS = ("format_share_error", "consensus_error", "estimates_error")
# The estimates of groups (the page's headline figures); the producers' follow in a table of their own.
GROUP_ESTIMATES = ("accuracy", "gain", "format-share")
# The column each headline choice shows (reports.render.estimate_cells).
HEADLINE_CELL = {"prediction-powered": "ppi", "human only": "human", "machine only": "machine"}
REFRESH_SECONDS = 5  # how often a page waiting for its report reloads itself (a meta refresh)
RETRY_AFTER_SECONDS = 10
CHOSEN = ("reported", "fixed", "base")  # the parameters the page remembers (AnalyticsChoice)
HEADLINE_ROWS = 8  # producers shown in the headline's bias and ranking tables; the rest download
CORRELATED_ROWS = 10  # correlated producer pairs listed in the consensus section; the rest are in report.json


def _f(value, lo=None, hi=None, digits: int = 3, signed: bool = False) -> str:
    """A number with its interval as one string: "0.733 [0.480, 0.891]"; "–" when undefined."""
    if value is None:
        return "–"
    fmt = f"{{:{'+' if signed else ''}.{digits}f}}"
    text = fmt.format(value)
    if lo is not None and hi is not None:
        text += f" [{fmt.format(lo)}, {fmt.format(hi)}]"
    return text


def _ci(value, ci, **kw) -> str:
    return _f(value, *(ci or (None, None)), **kw)


def _rate_cell(stratum: dict[str, Any], name: str, k: str, den: tuple[str, str]) -> str:
    """A card's rate as "0.250 [0.120, 0.450] (5/20)": the interval and what it rests on."""
    n = int(stratum.get(den[0]) or 0) + int(stratum.get(den[1]) or 0)
    return f"{_ci(stratum.get(name), stratum.get(f'{name}_ci'))} ({stratum.get(k, 0)}/{n})"


def _test_text(test: dict[str, Any]) -> str:
    if not test:
        return "–"
    if test.get("p_value") is None:
        return f"no test: {test.get('reason', '')}"
    text = f"p = {test['p_value']:.3g} (df {test['df']}, G = {test['statistic']:.2f}; Holm {test.get('p_holm', 1):.3g})"
    return text + ("; Monte Carlo p" if "Monte Carlo" in test.get("method", "") else "")


def _test_notes(test: dict[str, Any]) -> str:
    notes = []
    if test.get("merged"):
        notes.append(f"merged (under {JUDGE_CARD_MIN_STRATUM} items each): {', '.join(test['merged'])}")
    if test.get("left_out"):
        notes.append(f"left out (too few items): {', '.join(test['left_out'])}")
    return "; ".join(notes)


def _judge_cards_display(block: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each stored card as the page shows it: every rate with its interval and the counts it rests
    on, each breakdown's two tests with their df and what was merged or left out."""
    if not block:
        return []
    cards = []
    order = block.get("breakdown_order") or []
    for card in block.get("cards") or []:
        sp = card.get("self_preference") or {}
        parse = card.get("parse_failure_rate") or {}
        breakdowns = []
        # A judge's breakdowns in full; a reader's in the download and the command only: a dataset read
        # by 18 rule readers would otherwise put some 700 table rows on the page.
        shown = card["breakdowns"] if card.get("kind") == "judge" else {}
        for dimension in sorted(shown, key=lambda d: order.index(d) if d in order else len(order)):
            b = shown[dimension]
            tests = b.get("tests") or {}
            breakdowns.append(
                {
                    "dimension": dimension,
                    "title": b["title"],
                    "edges": b.get("edges"),
                    "tests": [
                        {
                            "rate": rate.replace("_", " "),
                            "key": rate,
                            "text": _test_text(tests.get(rate) or {}),
                            "notes": _test_notes(tests.get(rate) or {}),
                            "p": (tests.get(rate) or {}).get("p_value"),
                        }
                        for rate in ("false_accept", "false_reject")
                    ],
                    "rows": [_card_stratum(s) for s in b["strata"]],
                }
            )
        cards.append(
            {
                **card,
                "overall_row": _card_stratum({"stratum": "all", "label": "all", **card["overall"]}),
                "parse_rate": _ci(parse.get("rate"), parse.get("ci")),
                "self_own": _card_stratum({"stratum": "own", **own}) if (own := sp.get("own")) else None,
                "self_other": _card_stratum({"stratum": "other", **other}) if (other := sp.get("other")) else None,
                "breakdown_rows": breakdowns,
                "where_text": [
                    f"{w['rate'].replace('_', ' ')} by {w['dimension'].replace('_', ' ')} "
                    f"(p = {w['p_value']:.3g}, Holm {w['p_holm']:.3g}, df {w['df']})"
                    for w in card.get("where") or []
                ],
                "ppi": [
                    {
                        "rate": rate.replace("_", " "),
                        "text": _f(
                            e.get("prediction_powered"),
                            e.get("prediction_powered_lo"),
                            e.get("prediction_powered_hi"),
                            signed=rate == "bias",
                        ),
                        "labels": e.get("labels"),
                        "withheld": e.get("withheld") or "",
                    }
                    for rate, e in (card.get("prediction_powered") or {}).items()
                    if rate in ("false-accept", "false-reject", "bias")
                ],
            }
        )
    return cards


def _card_stratum(s: dict[str, Any]) -> dict[str, Any]:
    return {
        "stratum": s.get("label") or s["stratum"],
        "n": s["n"],
        "fa": _rate_cell(s, "false_accept_rate", "fp", ("fp", "tn")),
        "fr": _rate_cell(s, "false_reject_rate", "fn", ("fn", "tp")),
        "bias": _ci(s.get("bias"), s.get("bias_ci"), signed=True),
        "warnings": "; ".join(s.get("warnings") or []),
    }


def _bias_estimate_display(rows: list[dict]) -> list[dict]:
    """Each producer's rate over every response, three ways, beside its labelled-subset figure
    (the stored report's judge-bias-estimates table)."""
    signed = {"bias"}
    out = []
    for r in rows:
        sign = r["rate"] in signed
        out.append(
            {
                **r,
                "subset": _f(
                    r.get("labelled_subset"), r.get("labelled_subset_lo"), r.get("labelled_subset_hi"), signed=sign
                ),
                "machine_s": _f(r.get("machine"), signed=sign),
                "human_s": _f(r.get("human"), r.get("human_lo"), r.get("human_hi"), signed=sign),
                "ppi_s": _f(
                    r.get("prediction_powered"),
                    r.get("prediction_powered_lo"),
                    r.get("prediction_powered_hi"),
                    signed=sign,
                ),
                "effective_s": _f(r.get("effective_labels"), digits=0),
            }
        )
    return out


def _agreement_display(rows: list[dict], preferred: str) -> list[dict]:
    order: dict[str | None, int] = {preferred: 0, "reviewed": 1, "disputed": 2, "controls": 3}
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
                "unparsed": _share_of(
                    r.get("unparsed_k"), r.get("replies"), r.get("unparsed_rate_lo"), r.get("unparsed_rate_hi")
                ),
                "disagree": _share_of(
                    r.get("parser_disagreement_k"),
                    r.get("parser_disagreement_n"),
                    r.get("parser_disagreement_rate_lo"),
                    r.get("parser_disagreement_rate_hi"),
                ),
                "upstream_parser": r.get("upstream_parser") or "",
                "parsing_flags": r.get("parsing_flags") or "",
            }
        )
    return out


def _share_of(k: int | None, n: int | None, lo: float | None = None, hi: float | None = None) -> str:
    """ "3/30 = 0.100 [0.035, 0.256]"; "–" for a reader that is not an LLM judge (no replies)."""
    if k is None or n is None:
        return "–"
    return f"{k}/{n}" + (f" = {_f(k / n, lo, hi)}" if n else "")


def _proportion_text(p: dict | None) -> str:
    return "–" if not p else _share_of(p["k"], p["n"], *(p.get("ci") or (None, None)))


def _param_errors(dataset: Dataset, params: Params, given: Any) -> list[str]:
    """Parameters the query names (`given`) that name a reader or checkpoint the dataset does not
    have: refused (400) before a report is requested, since every distinct set of parameters is a
    computation of its own. The defaults are not checked: their report says what is missing."""
    errors: list[str] = []
    named = [(f, getattr(params, f)) for f in ("reported", "fixed", "reference") if given.get(f)]
    readers = set(known_readers(dataset=dataset)) | {HUMAN} if named else set()
    for field, name in named:
        if field == "reference" and name == HUMAN:
            errors.append("reference: the ranking reference must be a reader, not the human labels")
        elif name not in readers:
            try:
                # A reader that read the dataset after the newest stored report was computed.
                resolve_reader(dataset=dataset, name=name)
            except LookupError as exc:
                errors.append(f"{field}: {exc.args[0]}")
    checkpoints = dataset_checkpoints(dataset=dataset) if given.get("base") else set()
    if checkpoints and params.base not in checkpoints:
        errors.append(
            f"base: the dataset has no checkpoint {params.base!r} (checkpoints: {', '.join(sorted(checkpoints))})"
        )
    return errors


def _report_meta(stored: StoredReport) -> dict[str, Any]:
    report = stored.report
    waiting = stored.pending or stored.failed
    return {
        "computed_at": report.finished_at.isoformat() if report and report.finished_at else None,
        "data_version": report.data_version if report else None,
        "dataset_data_version": stored.data_version,
        "current": stored.current,
        "elapsed_s": report.elapsed_s if report else None,
        "status": "done" if stored.current else (waiting.status if waiting else "queued"),
        "error": stored.failed.error if stored.failed else None,
    }


def _headline_context(headline: dict[str, Any]) -> dict[str, Any]:
    fs_rows = []
    pools = [(row["benchmark"], row) for row in headline.get("by_benchmark") or []]
    if headline.get("overall"):
        pools.append(("all benchmarks", headline["overall"]))
    for name, row in pools:
        fs_rows.append(
            {
                "name": name,
                "task_type": row.get("task_type") or "",
                "reported": points_text(row["reported_gain"], row["reported_gain_ci"]),
                "fixed": points_text(row["fixed_gain"], row["fixed_gain_ci"]),
                "share": share_text(row["format_share"], row["format_share_ci"]),
                "n": f"{row['n_eligible']} of {row['n_comparisons']}",
                "box": f"{rate_text(row['box_rate_base'])} → {rate_text(row['box_rate_rl'])}",
                "benchmark": row.get("benchmark", "(all)"),
                "values": {k: row.get(k) for k in ("reported_gain", "fixed_gain", "format_share")},
                "disputed": row.get("disputed"),
                "error": row.get("error") or "",
                "overall": name == "all benchmarks",
            }
        )
    bias = headline.get("judge_bias") or []
    ranking = headline.get("reader_ranking") or []
    per_benchmark = [r["disputed"] for r in fs_rows if not r["overall"] and r["disputed"] is not None]
    for r in fs_rows:
        if r["overall"] and per_benchmark:
            r["disputed"] = sum(per_benchmark)
    return {
        "fs_rows": fs_rows,
        "fs_reasons": any(r["error"] for r in fs_rows),
        "bias_rows": [
            {
                **r,
                "bias_s": _ci(r["bias"], r["bias_ci"], signed=True),
                "fa": _ci(r["false_accept_rate"], r.get("false_accept_rate_ci")),
                "fr": _ci(r["false_reject_rate"], r.get("false_reject_rate_ci")),
                "unparsed_s": _proportion_text(r.get("unparsed")),
                "disagree_s": _proportion_text(r.get("parser_disagreement")),
            }
            for r in bias[:HEADLINE_ROWS]
        ],
        "bias_more": max(len(bias) - HEADLINE_ROWS, 0),
        "ranking_rows": [
            {
                **r,
                "position": r["rank"] if "rank" in r else i + 1,
                "agree": _ci(r["agreement"], r["agreement_ci"]),
                "lower_s": _f(r.get("lower")),
            }
            for i, r in enumerate(ranking[:HEADLINE_ROWS])
        ],
        "ranking_more": max(len(ranking) - HEADLINE_ROWS, 0),
    }


def _plots(body: dict[str, Any], scope: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    tables, ag, kinds = body["tables"], body["agreement"], body["kinds"]
    plots: dict[str, str] = {}
    plots["accuracy"] = svg.interval_chart(
        [
            {
                "label": row["reader"],
                "value": row["accuracy"],
                "ci": [row["accuracy_lo"], row["accuracy_hi"]] if row["accuracy"] is not None else None,
                "note": f"n={row['n']}",
            }
            for row in tables["readers"]["rows"]
        ],
        title="Accuracy by reader (Wilson 95 %)",
    )
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
    for reader, groups in sorted(vs.items(), key=lambda kv: (kinds.get(kv[0]) != "judge", kv[0])):
        s = groups["all"]
        if s["n"]:
            heatmaps.append(
                {
                    "reader": reader,
                    "kind": kinds.get(reader, ""),
                    "stats": s,
                    "svg": mark_safe(svg.heatmap(s["confusion"]["matrix"], title=f"{reader} vs human")),
                }
            )
    fs = body["format_share"]
    if fs and fs["comparisons"]:
        plots["format_share"] = svg.gain_bars(fs["comparisons"])
    ranking = body["ranking"]
    if ranking.get("rankings"):
        flipped = set(body["flips_summary"].get("models") or [])
        plots["ranking"] = svg.slope_chart(ranking["rankings"], flipped=flipped)
    return {k: mark_safe(v) for k, v in plots.items()}, heatmaps


def _measured(p: dict[str, Any] | None) -> str:
    """A human-measured rate as `manage.py consensus` prints it: "0.750 (n=4)"; "–" when none."""
    if not p or p.get("rate") is None:
        return "–"
    return f"{_f(p['rate'])} (n={p['n']})"


def _consensus_context(res: dict[str, Any] | None) -> dict[str, Any]:
    """The consensus section's rows, every number formatted as the consensus command prints it."""
    if not res:
        return {"consensus_rows": [], "consensus_accuracy": [], "consensus_correlated": [], "consensus_more": 0}
    producers = [
        {
            "producer": p["producer"],
            "stratum": p["stratum"],
            "votes": p["n_votes"],
            "abstentions": sum(p["abstentions"].values()),
            "abstained": ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in p["abstentions"].items()),
            "sens": _f(p["sensitivity"]),
            "spec": _f(p["specificity"]),
            "fa": _f(p["false_accept_rate"]),
            "fr": _f(p["false_reject_rate"]),
            "h_sens": _measured(p["human_sensitivity"]),
            "h_spec": _measured(p["human_specificity"]),
            "degenerate": p["degenerate"],
        }
        for p in res["producers"]
    ]
    accuracy = [
        {
            "group": g["group"],
            "n_items": g["n_items"],
            "consensus": _ci(g["accuracy"], g["ci"]),
            "human": _ci(g["human"]["rate"], g["human"]["ci"]),
            "human_n": g["human"]["n"],
        }
        for g in res["accuracy"]
    ]
    correlated = [
        {
            "a": c["producers"][0],
            "b": c["producers"][1],
            "phi": _f(c["phi"]),
            "agreement": _f(c["agreement"]),
            "n": c["n"],
        }
        for c in res["correlated"][:CORRELATED_ROWS]
    ]
    return {
        "consensus_rows": producers,
        "consensus_accuracy": accuracy,
        "consensus_correlated": correlated,
        "consensus_more": max(len(res["correlated"]) - CORRELATED_ROWS, 0),
    }


def _headline_reason(row: dict[str, Any], predictor: str, least: int) -> str:
    """Why the headline figure is the column it is, in a few words."""
    if row["headline"] == "prediction-powered":
        return f"{row['labels']} labels"
    if row["withheld"]:
        why = f"interval withheld: {row['withheld']}"
    else:
        why = f"{row['labels']} labels: the prediction-powered figure needs {least}"
    return why + (f"; inherits {predictor}'s errors" if row["headline"] == "machine only" else "")


def _estimate_command(dataset: Dataset, stored: dict[str, Any], predictor: str) -> str:
    """The command that prints the stored report's estimates (its defaults left out)."""
    words = ["manage.py", "estimate", "--dataset", dataset.name]
    if predictor != DEFAULT_PREDICTOR and not (predictor == VOTE and stored.get("fixed") == DEFAULT_PREDICTOR):
        words += ["--predictor", predictor]
    for param, default in (("base", "base"), ("reported", "boxed"), ("seed", 0)):
        if stored.get(param, default) != default:
            words += [f"--{param}", str(stored[param])]
    return shlex.join(words)


def _estimates_context(res: dict[str, Any] | None) -> dict[str, Any]:
    """The estimates section: every estimate's three columns, as `manage.py estimate` prints them
    (reports.render.estimate_cells), with the numbers themselves beside them (data-value)."""
    if not res:
        return {"estimate_groups": [], "estimate_tables": []}
    predictor = res["predictor"]["name"]
    least = res["design"]["headline_min_labels"]
    rows = []
    for r in res["estimates"]:
        human, ppi = r["human"] or {}, r["prediction_powered"] or {}
        cells = estimate_cells(r)
        rows.append(
            {
                "target": r["target"],
                "kind": r["kind"],
                "cells": cells,
                "values": {
                    "machine": r["machine"],
                    "human": human.get("estimate"),
                    "human_low": human.get("low"),
                    "human_high": human.get("high"),
                    "ppi": ppi.get("estimate"),
                    "ppi_low": ppi.get("low"),
                    "ppi_high": ppi.get("high"),
                    "labels": r["labels"],
                    "effective_labels": r["effective_labels"],
                    "headline_value": r["headline_value"],
                },
                "headline": r["headline"],
                "headline_cell": cells[HEADLINE_CELL[r["headline"]]],
                "headline_reason": _headline_reason(r, predictor, least),
                "withheld": r["withheld"] or "",
                "note": r.get("note") or "",
            }
        )
    left_out = [(LEFT_OUT.get(reason, reason), n) for reason, n in sorted(res["design"]["left_out"].items())]
    groups = [r for r in rows if r["kind"] in GROUP_ESTIMATES]
    producers = [r for r in rows if r["kind"] not in GROUP_ESTIMATES]
    return {
        "estimate_groups": groups,
        "estimate_left_out": left_out,
        "estimate_tables": [
            {"id": "estimates-groups", "title": "Accuracy, gains and format shares", "rows": groups},
            {"id": "estimates-producers", "title": "Readers and judges against the truth", "rows": producers},
        ],
    }


def _flip_matrix(summary: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """Flips per reader pair as a symmetric matrix over the readers in any flip (one row each:
    26 readers make 26 short rows, where a list of their pairs would run to hundreds of lines)."""
    counts: dict[frozenset[str], int] = {}
    for p in summary.get("pairs") or []:
        counts[frozenset((p["reader_x"], p["reader_y"]))] = p["n"]
    involved = {r for pair in counts for r in pair}
    readers = [r for r in order if r in involved] + sorted(involved - set(order))
    rows = [
        {
            "reader": r,
            "total": sum(n for pair, n in counts.items() if r in pair),
            "cells": [counts.get(frozenset((r, c)), "") if c != r else "·" for c in readers],
        }
        for r in readers
    ]
    return {"readers": readers, "rows": rows}


def _format_share_pools(res: dict | None) -> list[dict]:
    """The overall pool and each group's, with the top three pairs' cumulative share of the summed gain."""
    if not res or not res["comparisons"]:
        return []
    pools: list[dict[str, Any]] = [{"name": "all eligible", "g": res}]
    pools += [{"name": f"{res['by']}: {name}", "g": g} for name, g in (res.get("groups") or {}).items()]
    for p in pools:
        pairs = p["g"]["pair_contributions"]
        p["top3"] = pairs[min(2, len(pairs) - 1)]["cumulative_share"] if len(pairs) > 1 else None
    return pools


def _page_body(report: AnalyticsReport) -> dict[str, Any]:
    """The parts of the stored body the page shows, nested as in the body."""
    body: dict[str, Any] = {"tables": {}, "agreement": {}, "ranking": {}}
    for path, value in report_parts(report=report, parts=PAGE_PARTS).items():
        head, _, rest = path.partition("__")
        if rest:
            body[head][rest] = value
        else:
            body[head] = value
    return body


def _report_context(body: dict[str, Any], params: Params) -> dict[str, Any]:
    ag = body["agreement"]
    tables = body["tables"]
    scope = ag["selection"]["preferred_scope"]
    plots, heatmaps = _plots(body, scope)
    flipped = body["flips_summary"].get("models") or []
    return {
        "body": body,
        "ag": ag,
        "scope": scope,
        "plots": plots,
        "heatmaps": heatmaps,
        "flipped": flipped,
        "flips": body["flips_summary"],
        "flip_matrix": _flip_matrix(body["flips_summary"], body["readers"]),
        "headline": body["headline"],
        **_headline_context(body["headline"]),
        "by_rows": _agreement_display(
            [r for r in tables["agreement-by"]["rows"] if r["dimension"] == params.by], scope
        ),
        "agreement_rows": _agreement_display(tables["agreement"]["rows"], scope),
        "bias_estimate_rows": _bias_estimate_display((tables.get("judge-bias-estimates") or {}).get("rows") or []),
        "bias_estimate_sample": body["headline"].get("judge_bias_sample") or {},
        "judge_cards": _judge_cards_display(body.get("judge_cards")),
        "judge_cards_meta": body.get("judge_cards") or {},
        "reader_rows": [
            {
                **r,
                "acc": _f(r["accuracy"], r["accuracy_lo"], r["accuracy_hi"]),
                "ext": _f(r["extraction_rate"], r["extraction_rate_lo"], r["extraction_rate_hi"]),
                "cov": _f(r["coverage"], r["coverage_lo"], r["coverage_hi"]),
            }
            for r in tables["readers"]["rows"]
        ],
        "population_rows": [
            {
                **r,
                "acc": _f(r.get("accuracy"), r.get("accuracy_lo"), r.get("accuracy_hi")),
                "bias_s": _f(r.get("bias"), r.get("bias_lo"), r.get("bias_hi"), signed=True),
            }
            for r in tables["population"]["rows"]
        ],
        "hh_rows": [
            {
                **r,
                "agree": _f(r.get("agreement"), r.get("agreement_lo"), r.get("agreement_hi")),
                "kappa": _f(r.get("cohen_kappa")),
                "alpha": _f(r.get("krippendorff_alpha")),
            }
            for r in tables["human-agreement"]["rows"]
        ],
        "readers": body["readers"],
        "fs_pools": _format_share_pools(body["format_share"]),
        **_consensus_context(body.get("consensus")),
        **_estimates_context(body.get("estimates")),
        "calibration": _calibration_display(body.get("calibration") or {}),
    }


def _calibration_display(calibration: dict[str, Any]) -> list[dict[str, Any]]:
    """Each judge's calibration (analytics.calibration) with its reliability diagram and its
    bins' figures formatted; body["calibration"] is absent from reports stored before it."""
    out = []
    for reader, c in calibration.items():
        ci = c.get("ece_ci") or [None, None]
        out.append(
            {
                "reader": reader,
                "n": c["n"],
                "ece": _f(c.get("ece"), ci[0], ci[1]),
                "agreement": _f(*_rate_ci(c.get("agreement"))),
                "mean_confidence": _f(c.get("mean_confidence")),
                "note": c.get("note", ""),
                "svg": mark_safe(svg.reliability_diagram(c["bins"], title=f"{reader}: reliability")),
                "bins": [
                    {
                        "range": f"{b['lo']:.1f}–{b['hi']:.1f}",
                        "n": b["n"],
                        "confidence": _f(b["confidence"]),
                        "agreement": _f(*_rate_ci(b["agreement"])),
                    }
                    for b in c["bins"]
                    if b["n"]
                ],
            }
        )
    return out


def _rate_ci(p: dict[str, Any] | None) -> tuple[float | None, float | None, float | None]:
    if not p:
        return None, None, None
    ci = p.get("ci") or [None, None]
    return p.get("rate"), ci[0], ci[1]


@role_required("manager")
def analytics_page(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    readers = report_readers(dataset=dataset)
    params = Params.from_query(request.GET, readers=readers)
    context: dict[str, Any] = {
        "report_readers": readers,
        "dataset": dataset,
        "params": params,
        "dimensions": ["model", "checkpoint", "benchmark"],
        "pool_dimensions": POOL_BY,
        "tables": TABLES,
    }
    errors = _param_errors(dataset, params, request.GET)
    if errors:
        context.update(param_errors=errors, readers=known_readers(dataset=dataset))
        return render(request, "analytics/dataset.html", context, status=400)
    if any(request.GET.get(f) for f in CHOSEN) and (params.reported, params.fixed, params.base) != (
        readers.reported,
        readers.fixed,
        readers.base,
    ):
        # The landing card and the page without parameters follow the page's last setting.
        analytics_choice_set(dataset=dataset, reported=params.reported, fixed=params.fixed, base=params.base)
    stored = report_for_view(dataset=dataset, params=params)
    body = None
    if stored.report is not None:
        try:
            body = _page_body(stored.report)
        except AnalyticsReport.DoesNotExist:
            # Replaced by a newer report between the two reads: show that one.
            stored = report_stored(dataset=dataset, params=params)
            body = _page_body(stored.report) if stored.report is not None else None
    context.update(stored=stored, meta=_report_meta(stored))
    if not stored.current:
        # Reload until the current version's report is there (no script: a meta refresh).
        context["refresh"] = REFRESH_SECONDS if stored.failed is None else None
    if body is not None:
        context.update(_report_context(body, params))
        if body.get("estimates"):
            predictor = body["estimates"]["predictor"]["name"]
            context["estimate_command"] = _estimate_command(dataset, body["params"] or {}, predictor)
    else:
        context["readers"] = known_readers(dataset=dataset)
    return render(request, "analytics/dataset.html", context)


def _waiting(stored: StoredReport) -> HttpResponse:
    """503 with Retry-After: no report for these parameters has been computed yet."""
    if stored.failed is not None:
        text = (
            f"The analytics report for these parameters could not be computed: {stored.failed.error}\n"
            f"(attempt {stored.failed.attempts}; the page retries it until it has had its attempts).\n"
        )
    else:
        text = (
            f"The analytics report for these parameters (data version {stored.data_version}) is being "
            f"computed; try again in {RETRY_AFTER_SECONDS} seconds.\n"
        )
    response = HttpResponse(text, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


@role_required("manager")
def analytics_export(request: HttpRequest, dataset_id: int, table: str, fmt: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    if fmt not in ("csv", "json") or (table not in TABLES and not (table == "report" and fmt == "json")):
        raise Http404("unknown table or format")
    params = Params.from_query(request.GET, readers=report_readers(dataset=dataset))
    errors = _param_errors(dataset, params, request.GET)
    if errors:
        return HttpResponse("\n".join(errors) + "\n", status=400, content_type="text/plain; charset=utf-8")
    stored = report_for_view(dataset=dataset, params=params)
    try:
        return _download(dataset, table, fmt, stored)
    except AnalyticsReport.DoesNotExist:
        # Replaced by a newer report between the two reads: serve that one.
        return _download(dataset, table, fmt, report_stored(dataset=dataset, params=params))


def _download(dataset: Dataset, table: str, fmt: str, stored: StoredReport) -> HttpResponse:
    report: AnalyticsReport | None = stored.report
    if report is None:
        return _waiting(stored)
    meta = _report_meta(stored)
    stamp = {k: meta[k] for k in ("computed_at", "data_version", "dataset_data_version", "current")}
    if table == "report":
        # Assembled from the stored parts as JSON text: a report runs to megabytes, and parsing it
        # only to write it out again would cost most of the request.
        texts = report_parts_json(report=report, parts=REPORT_JSON_PARTS)
        errors = report_parts(report=report, parts=REPORT_JSON_ERRORS)
        fields = [(k, json_text(v)) for k, v in {"dataset": dataset.name, **stamp}.items()]
        fields += [(k, texts[k]) for k in REPORT_JSON_PARTS]
        fields += [(k, json_text(errors[k] or None)) for k in REPORT_JSON_ERRORS]
        response = HttpResponse(
            "{" + ", ".join(f"{json_text(k)}: {v}" for k, v in fields) + "}\n", content_type=CONTENT_TYPES["json"]
        )
        return attachment(response, download_name(f"{dataset.name}-{table}", fmt))
    stored_table = report_parts(report=report, parts=[f"tables__{table}"])[f"tables__{table}"] or {}
    cols = stored_table.get("columns") or columns(stored_table.get("rows") or [])
    rows = [{c: r.get(c) for c in cols} for r in stored_table.get("rows") or []]
    if fmt == "csv":
        response = table_download(fmt="csv", filename_stem=f"{dataset.name}-{table}", rows=rows, columns=cols)
        response["X-Report-Computed-At"] = stamp["computed_at"] or ""
        response["X-Report-Data-Version"] = str(stamp["data_version"])
        response["X-Report-Current"] = "true" if stamp["current"] else "false"
        return response
    out = {"dataset": dataset.name, "table": table, **stamp, "rows": rows}
    response = HttpResponse(json_text(out, indent=2), content_type=CONTENT_TYPES["json"])
    return attachment(response, download_name(f"{dataset.name}-{table}", fmt))
