"""The manager page's numbers for one dataset, as flat tables (the CSV / JSON downloads) plus the
nested results the plots are drawn from. Database reads go through analytics.selectors; every
number comes from the pure modules.

`build` computes a Report; `Report.body()` is what an AnalyticsReport stores (JSON: everything the
page and every download show), so that neither the page nor a download computes anything."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from django.conf import settings

from adjudication.analytics import agreement as ag
from adjudication.analytics import format_share as fs
from adjudication.analytics import parsing, ranking
from adjudication.analytics.bias_card import judge_cards
from adjudication.analytics.calibration import calibration
from adjudication.analytics.consensus import consensus
from adjudication.analytics.estimate_blocks import (
    ESTIMATED_RATES,
    FORMAT_SHARE_SCOPE,
    GAIN_UNIT,
    HEADLINE_RULE,
    JUDGE_BIAS_PREDICTOR,
    format_share_estimates,
    judge_bias_estimates,
)
from adjudication.analytics.estimate_report import EstimateInputs, dataset_estimates, estimate_inputs
from adjudication.analytics.estimate_table import design_summary
from adjudication.analytics.estimates import EstimateError, Frame
from adjudication.analytics.headline import format_share_headline
from adjudication.analytics.reports.options import FormatShareOptions, ReportError
from adjudication.analytics.selectors import (
    HUMAN,
    ReadingSummary,
    ReportReaders,
    agreement_inputs,
    consensus_inputs,
    disputed_by_benchmark,
    estimate_producer_name,
    format_share_observations,
    judge_confidence_points,
    judge_endpoint_models,
    labelled_response_traits,
    ranking_tables,
    read_snapshot,
    reading_summary,
    unparsed_judgements,
)
from adjudication.analytics.stats import jsonable
from adjudication.errors import ApplicationError
from adjudication.fields import json_safe, json_stored
from adjudication.models import Dataset
from adjudication.revisions import dataset_version

RATES = ("accuracy", "extraction_rate", "coverage")
BIAS_RATES = ("accuracy", "judge_correct_rate", "human_correct_rate", "false_accept_rate", "false_reject_rate")
DIMENSIONS = ag.DIMENSIONS


# Fields that change only how the page shows a report, not what it holds: not in the key.
DISPLAY_ONLY = ("by",)
TOP_FLIPS = 10


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
    def from_query(cls, q: Any, *, readers: ReportReaders | None = None) -> Params:
        """The page's parameters from its query string; what it does not name comes from `readers`
        (analytics.selectors.report_readers: the dataset's last choice, else its harness reader)."""
        p = cls() if readers is None else cls(reported=readers.reported, fixed=readers.fixed, base=readers.base)
        # json_safe: a NUL or lone surrogate in a name cannot go into the stored (jsonb) parameters;
        # such a name matches no reader and the page says so.
        p.reported = json_safe((q.get("reported") or p.reported)[:200])
        p.fixed = json_safe((q.get("fixed") or p.fixed)[:200])
        p.base = json_safe((q.get("base") or p.base)[:100])
        p.by = q.get("by") if q.get("by") in DIMENSIONS else p.by
        p.reference = json_safe((q.get("reference") or "")[:200])
        p.min_gain = _number(q.get("min_gain"), low=0.0, high=100.0)
        p.min_extraction = _number(q.get("min_extraction"), low=0.0, high=1.0)
        p.pool_by = q.get("pool_by") if q.get("pool_by") in fs.POOL_BY else ""
        return p

    def canonical(self) -> dict[str, Any]:
        """The parameters that decide a report's content, in one normal form (types included)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in DISPLAY_ONLY:
                continue
            value = getattr(self, f.name)
            out[f.name] = float(value) if f.type == "float" else int(value) if f.type == "int" else str(value)
        return out

    @property
    def key(self) -> str:
        """sha256 of the canonical parameters as JSON: one stored report per key and data version."""
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @classmethod
    def from_stored(cls, stored: dict[str, Any], *, by: str = "model") -> Params:
        """Back from AnalyticsReport.params (what canonical() gave), with a display choice."""
        known = {f.name for f in fields(cls)} - set(DISPLAY_ONLY)
        return cls(**{k: v for k, v in stored.items() if k in known}, by=by if by in DIMENSIONS else "model")


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
    consensus: dict[str, Any] | None = None
    consensus_error: str = ""
    ranking: dict[str, Any] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    readers: list[str] = field(default_factory=list)
    headline: dict[str, Any] = field(default_factory=dict)
    flips_summary: dict[str, Any] = field(default_factory=dict)
    estimates: dict[str, Any] | None = None
    estimates_error: str = ""
    calibration: dict[str, Any] = field(default_factory=dict)
    judge_cards: dict[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        """Everything the page and the downloads show, as JSON (what an AnalyticsReport stores).
        Each table carries its columns: jsonb keeps no key order, and a CSV needs one."""
        tables = {name: {**t, "columns": columns(t["rows"])} for name, t in self.tables.items()}
        return json_stored(
            {
                "dataset": self.dataset.name,
                "params": self.params.canonical(),
                "tables": tables,
                "agreement": self.agreement,
                "format_share": self.format_share,
                "format_share_error": self.format_share_error,
                "consensus": self.consensus,
                "consensus_error": self.consensus_error,
                "ranking": self.ranking,
                "kinds": self.kinds,
                "readers": self.readers,
                "headline": self.headline,
                "flips_summary": self.flips_summary,
                "estimates": self.estimates,
                "estimates_error": self.estimates_error,
                "calibration": self.calibration,
                "judge_cards": self.judge_cards,
            }
        )


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


def _parsing_cols(p: dict[str, Any] | None) -> dict[str, Any]:
    """A judge's parse-failure and parser-disagreement rates over all its replies (analytics.parsing);
    empty for readers that are not LLM judges."""
    p = p or {}
    unparsed, disagreement = p.get("unparsed") or {}, p.get("parser_disagreement") or {}
    return {
        "replies": p.get("replies"),
        "unparsed_k": unparsed.get("k"),
        **_rate_cols("unparsed_rate", unparsed or None),
        "upstream_parser": p.get("upstream_parser", ""),
        "parser_disagreement_k": disagreement.get("k"),
        "parser_disagreement_n": disagreement.get("n"),
        **_rate_cols("parser_disagreement_rate", disagreement or None),
        "parsing_flags": "; ".join(p.get("flags") or []),
    }


def _headline_parsing(p: dict[str, Any] | None) -> dict[str, Any]:
    if not p:
        return {"unparsed": None, "parser_disagreement": None, "upstream_parser": "", "parsing_flags": []}
    return {
        "unparsed": p["unparsed"],
        "parser_disagreement": p["parser_disagreement"],
        "upstream_parser": p["upstream_parser"],
        "parsing_flags": p["flags"],
    }


def build(dataset: Dataset, params: Params) -> Report:
    """The whole report. Reads through the selectors: grouped verdict counts for the readers'
    overview and ranking, readings one by one only for labelled responses, and the two format-share
    readers' verdicts per response."""
    rep = Report(dataset=dataset, params=params)
    summary = reading_summary(dataset=dataset)
    rep.kinds = summary.kinds
    rep.readers = sorted(rep.kinds)
    inputs = agreement_inputs(dataset=dataset, summary=summary)
    result = jsonable(ag.report_of(inputs, seed=params.seed))
    templates: dict[str, str] = inputs.get("templates", {})
    result["judge_templates"] = templates
    judge_parsing = jsonable(parsing.judge_parsing(inputs.get("parsing", [])))
    result["judge_parsing"] = judge_parsing
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
                    **_parsing_cols(judge_parsing.get(reader)),
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

    _calibration(rep, inputs["human"])
    obs = _format_share(rep, summary, inputs["human"])
    _ranking(rep, summary)
    rep.headline = _headline(rep, obs)
    _consensus(rep)
    estimated = _estimates(rep)
    _judge_bias_estimates(rep, estimated)
    _judge_cards(rep, inputs, summary)
    return rep


def report_body(
    *, dataset: Dataset, params: Params, build: Callable[[Dataset, Params], Report] = build
) -> dict[str, Any]:
    """The report's body (Report.body()) built on one snapshot of the data, with the data version
    it saw. `build` is the caller's: the stored-report service passes its own name for it, the
    seam its tests count builds at."""
    with read_snapshot():
        seen = dataset_version(dataset_id=dataset.pk)
        body = build(dataset, params).body()
    body["data_version_seen"] = seen
    return body


def _calibration(rep: Report, human: dict[str, ag.HumanObs]) -> None:
    """Each judge's confidence against the final labels (analytics.calibration), for the judges
    that asked for log-probabilities; a table row per bin for the downloads."""
    rows = []
    for reader, (confidence, agrees) in judge_confidence_points(dataset=rep.dataset, human=human).items():
        result = jsonable(calibration(confidence, agrees, seed=rep.params.seed))
        rep.calibration[reader] = result
        ece_ci = result["ece_ci"] or [None, None]
        for b in result["bins"]:
            agreement = b["agreement"] or {}
            ci = agreement.get("ci") or [None, None]
            rows.append(
                {
                    "reader": reader,
                    "n": result["n"],
                    "ece": result["ece"],
                    "ece_lo": ece_ci[0],
                    "ece_hi": ece_ci[1],
                    "bin_lo": b["lo"],
                    "bin_hi": b["hi"],
                    "bin_n": b["n"],
                    "mean_confidence": b["confidence"],
                    "agreement": agreement.get("rate"),
                    "agreement_lo": ci[0],
                    "agreement_hi": ci[1],
                }
            )
    rep.tables["judge-calibration"] = {
        "title": "Judge calibration: confidence in the verdict vs agreement with the final human label",
        "rows": rows,
    }


def _consensus(rep: Report) -> None:
    """The panel consensus over every producer (docs/consensus.md): the numbers of `manage.py
    consensus --dataset NAME --json --bootstrap N --seed SEED`, without the per-item posteriors
    (one per response: the command lists them) and with only the correlated producer pairs."""
    inputs = consensus_inputs(dataset=rep.dataset)
    if not any(v in ("correct", "incorrect") for _, _, v in inputs.votes):
        rep.consensus_error = "no correct/incorrect readings to fit a consensus from" + (
            " (every reading is an abstention: no answer, timeout or error)" if inputs.votes else ""
        )
        return
    n_items = len(inputs.strata)  # the responses in the fit: read by a producer or labelled
    most = settings.ANALYTICS_CONSENSUS_BOOTSTRAP_MAX
    n_boot = settings.ANALYTICS_CONSENSUS_BOOTSTRAP if n_items <= most else 0
    try:
        result = consensus(inputs, by=None, n_boot=n_boot, seed=rep.params.seed, with_items=False)
    except (ValueError, LookupError) as exc:
        rep.consensus_error = str(exc.args[0]) if exc.args else type(exc).__name__
        return
    # Neither the per-item posteriors nor every pair's correlation is shown: not turned into
    # dictionaries at all (100,000 items were seconds of asdict and jsonable, then dropped).
    out = jsonable(dataclasses.replace(result, items=[], correlations=[]).as_dict())
    del out["items"], out["correlations"]
    out["n_items"] = n_items
    out["bootstrap_max"] = most
    rep.consensus = out


def _estimates(rep: Report) -> EstimateInputs | None:
    """Each headline number machine only, human only and prediction-powered (docs/estimates.md):
    the numbers of `manage.py estimate --dataset NAME --seed SEED` with the page's base checkpoint
    and reported reader, and its fixed reader as the predictor (the vote when it gave no verdicts).
    Returns what it read (the judge-bias table's estimates rest on the same population and labels),
    or None when it could not."""
    p = rep.params
    try:
        inputs = estimate_inputs(dataset=rep.dataset, predictor=None, policy=None, prefer=p.fixed)
        rep.estimates = dataset_estimates(
            dataset=rep.dataset, base=p.base, reported=p.reported, seed=p.seed, prefer=p.fixed, inputs=inputs
        )
    except ApplicationError as exc:  # no population, a design that does not fit it
        rep.estimates_error = exc.message
        return None
    return inputs


# The format share options behind the page's parameters.
PAGE_FORMAT_SHARE = (
    ("reported_reader", "reported"),
    ("fixed_reader", "fixed"),
    ("base_checkpoint", "base"),
    ("min_reported_gain", "min_gain"),
    ("min_extraction_rate", "min_extraction"),
    ("bootstrap", "n_boot"),
    ("seed", "seed"),
)


def _format_share_result(obs: list[fs.Observation], p: Params, by: str | None) -> dict[str, Any]:
    arguments = {option: getattr(p, param) for option, param in PAGE_FORMAT_SHARE}
    return FormatShareOptions.from_arguments({**arguments, "by": by}).pooled(obs)


def _format_share(rep: Report, summary: ReadingSummary, human: dict[str, ag.HumanObs]) -> list[fs.Observation] | None:
    p = rep.params
    try:
        obs = format_share_observations(
            dataset=rep.dataset, reported=p.reported, fixed=p.fixed, labels=summary.labels, human=human
        )
    except LookupError as exc:
        rep.format_share_error = str(exc.args[0])
        rep.tables["format-share"] = {"title": "Format share", "rows": []}
        rep.tables["format-share-pairs"] = {"title": "Format share: summed reported gain per model pair", "rows": []}
        return None
    res = _format_share_result(obs, p, p.pool_by or None)
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
    return obs


def _headline(rep: Report, obs: list[fs.Observation] | None) -> dict[str, Any]:
    """The top of the page: format share per benchmark and overall (the numbers of `format_share
    --dataset NAME --by benchmark --json` with the report's readers, thresholds, resamples and
    seed), each producer's bias against the final labels, and the readers ranked by agreement."""
    p = rep.params
    if obs is None:
        by_benchmark = None
    elif p.pool_by == "benchmark" and rep.format_share is not None:
        by_benchmark = rep.format_share
    else:
        by_benchmark = _format_share_result(obs, p, "benchmark")
    headline = format_share_headline(
        by_benchmark,
        reported=p.reported,
        fixed=p.fixed,
        base=p.base,
        disputed=disputed_by_benchmark(dataset=rep.dataset),
        error=rep.format_share_error if obs is None else "",
    )
    scope = rep.agreement["selection"]["preferred_scope"]
    producers = [(reader, groups["all"]) for reader, groups in rep.agreement["vs_human"].get(scope, {}).items()]
    bias = [
        {
            "reader": reader,
            "kind": rep.kinds.get(reader, ""),
            "scope": scope,
            "n": s["n"],
            "bias": s.get("bias"),
            "bias_ci": s.get("bias_ci"),
            "lean": s.get("lean"),
            "false_accept_rate": s.get("false_accept_rate"),
            "false_accept_rate_ci": s.get("false_accept_rate_ci"),
            "false_reject_rate": s.get("false_reject_rate"),
            "false_reject_rate_ci": s.get("false_reject_rate_ci"),
            "excluded": s.get("excluded") or {},
            # An LLM judge's replies that follow no accepted form are in no bias figure: beside its
            # bias, how many there were and how often its parser and the upstream one differ.
            **_headline_parsing(rep.agreement.get("judge_parsing", {}).get(reader)),
        }
        for reader, s in producers
    ]
    # Judges first; then the largest lean either way (undefined last).
    bias.sort(key=lambda r: (r["kind"] != "judge", r["bias"] is None, -abs(r["bias"] or 0), r["reader"]))
    ranked = ranking.rank_readers(
        [
            {
                "reader": reader,
                "kind": rep.kinds.get(reader, ""),
                "n": s["n"],
                "agreement": s.get("accuracy"),
                "agreement_ci": s.get("accuracy_ci"),
            }
            for reader, s in producers
        ]
    )
    headline["judge_bias"] = bias if any(r["n"] for r in bias) else []
    headline["reader_ranking"] = ranked if any(r["n"] for r in ranked) else []
    headline["reader_ranking_min_n"] = ranking.RANK_MIN_N
    if not headline["reader_ranking"]:
        headline["reader_ranking_note"] = (
            "No final human labels yet: readers are ranked by their verdict agreement with the final labels "
            "once review items are labelled (route disagreements into a review queue)."
        )
    headline["scope"] = scope
    return headline


NO_DESIGN_LABELS = (
    "no final label comes from a probability design (routing records one for disputed items, controls and "
    "randomized information routing): nothing here is a population estimate"
)


JUDGE_BIAS_ESTIMATES_TITLE = (
    "Judge bias over every response: prediction-powered (vote of the other producers as predictor) beside the "
    "labelled subset"
)
# The labelled subset's figure of each rate (analytics.bias), by the estimate's key.
SUBSET_RATE = {"false_accept": "false_accept_rate", "false_reject": "false_reject_rate", "bias": "bias"}


def _judge_bias_estimates(rep: Report, inputs: EstimateInputs | None) -> None:
    """Beside each producer's bias figures on the labelled subset (headline judge_bias), the same
    rates over every response it judged, prediction-powered from the probability design's labels
    (the population and labels the estimates section read: `inputs`) with the vote of the other
    producers as predictor (analytics.estimate_blocks); the sample they rest on in headline
    judge_bias_sample, and one row per producer and rate in the table judge-bias-estimates."""
    rows = rep.headline.get("judge_bias") or []
    sample_note: dict[str, Any] = {
        "predictor": JUDGE_BIAS_PREDICTOR,
        "labelled_subset": (
            f"the figures without an estimate are today's, on the labelled items of scope {rep.headline['scope']!r} "
            "(selected by routing, so they describe those items, not the dataset)"
        ),
        "headline_rule": HEADLINE_RULE,
    }
    rep.headline["judge_bias_sample"] = sample_note
    table: list[dict[str, Any]] = []
    rep.tables["judge-bias-estimates"] = {"title": JUDGE_BIAS_ESTIMATES_TITLE, "rows": table}
    drawn = inputs.sample if inputs is not None else None
    if drawn is None or not drawn.labels or not rows:
        sample_note["error"] = (
            f"no estimates: {rep.estimates_error}"
            if drawn is None
            else NO_DESIGN_LABELS
            if not drawn.labels
            else "no producer to estimate"
        )
        return
    assert inputs is not None  # drawn is its sample
    population = inputs.population
    frame = Frame.build(population, {}, by="checkpoint")
    sample = frame.sample(drawn.labels, drawn.design)
    sample_note["design"] = design_summary(
        policy=drawn.policy,
        design=drawn.design,
        labels=drawn.labels,
        population=drawn.population,
        left_out=drawn.left_out,
    )
    names = [r["reader"] for r in rows if r["reader"] in population.verdicts]
    estimates = judge_bias_estimates(
        frame, sample, producers=names, design=drawn.design.name, n_boot=rep.params.n_boot, seed=rep.params.seed
    )
    subset = rep.agreement["vs_human"].get(rep.headline["scope"], {})
    # Every judge-bias figure names the judge's prompt template, as the agreement table does.
    templates = {r["reader"]: r.get("template_hash", "") for r in rep.tables["agreement"]["rows"]}
    for row in rows:
        entry = estimates.get(row["reader"])
        row["estimates"] = entry
        if entry is None:
            continue
        today = (subset.get(row["reader"]) or {}).get("all") or {}
        for key, kind in ESTIMATED_RATES:
            line = _judge_bias_estimate_row(row, key, kind, entry, today)
            table.append({**line, "template_hash": templates.get(row["reader"], "")})


JUDGE_CARD_TITLE = "Judge-bias cards: false accept, false reject and bias by stratum, with heterogeneity tests"


def _judge_cards(rep: Report, inputs: dict[str, Any], summary: ReadingSummary) -> None:
    """Each producer's judge-bias card on the labelled items of the headline's scope, with the
    prediction-powered overall rates of the judge-bias-estimates table beside them; one row per
    producer, breakdown and stratum in the table judge-card."""
    rep.judge_cards = judge_cards_block(
        dataset=rep.dataset,
        inputs=inputs,
        labels=summary.labels,
        scope=rep.headline["scope"],
        seed=rep.params.seed,
        estimate_rows=rep.tables.get("judge-bias-estimates", {}).get("rows", []),
    )
    rows: list[dict[str, Any]] = []
    for card in rep.judge_cards["cards"]:
        blocks = {"overall": {"strata": [{"stratum": "all", **card["overall"]}]}, **card["breakdowns"]}
        for dimension, block in blocks.items():
            for stratum in block["strata"]:
                rows.append(_judge_card_row(card, dimension, stratum, block.get("tests") or {}))
    rep.tables["judge-card"] = {"title": JUDGE_CARD_TITLE, "rows": rows}


def dataset_judge_cards(*, dataset: Dataset, scope: str = "preferred", seed: int = 0) -> dict[str, Any]:
    """The `judge_card` report: every producer's card on `scope` ("preferred": the analytics page's,
    the labelled controls when there are any, else every reviewed item), without the
    prediction-powered figures (the analytics report's estimates compute those)."""
    summary = reading_summary(dataset=dataset)
    inputs = agreement_inputs(dataset=dataset, summary=summary)
    if scope == "preferred":
        scope = ag.selection_note(inputs["human"], routed_controls=inputs["routed_controls"])["preferred_scope"]
    return judge_cards_block(dataset=dataset, inputs=inputs, labels=summary.labels, scope=scope, seed=seed)


def judge_cards_block(
    *,
    dataset: Dataset,
    inputs: dict[str, Any],
    labels: dict[int, str],
    scope: str,
    seed: int,
    estimate_rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Every producer's judge-bias card (analytics.bias_card) over what agreement_inputs read
    (`inputs`: the readings of labelled responses and the final labels), as JSON. Reads the
    labelled responses' texts only (their length, format and gold type), never every response.
    `estimate_rows`: the judge-bias-estimates table's rows, whose prediction-powered overall rates
    each card carries."""
    cards = judge_cards(
        inputs["obs"],
        inputs["human"],
        labelled_response_traits(dataset=dataset),
        scope=scope,
        judge_models=judge_endpoint_models(dataset=dataset, labels=labels),
        templates=inputs.get("templates", {}),
        unparsed=unparsed_judgements(dataset=dataset, labels=labels),
        seed=seed,
    )
    estimated: dict[str, dict[str, Any]] = {}
    for row in estimate_rows or []:
        estimated.setdefault(row["reader"], {})[row["rate"]] = {
            k: row.get(k)
            for k in ("prediction_powered", "prediction_powered_lo", "prediction_powered_hi", "labels", "headline")
        } | {"withheld": row.get("withheld") or row.get("error") or ""}
    for card in cards["cards"]:
        card["prediction_powered"] = estimated.get(card["producer"])
    return jsonable(cards)


def _judge_card_row(
    card: dict[str, Any], dimension: str, stratum: dict[str, Any], tests: dict[str, Any]
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "reader": card["producer"],
        "kind": card["kind"],
        "template_hash": card["template_hash"],
        "dimension": dimension,
        "stratum": stratum["stratum"],
    }
    for key in ("n", "tp", "fp", "fn", "tn"):
        row[key] = stratum[key]
    for name in ("false_accept_rate", "false_reject_rate", "bias"):
        ci = stratum.get(f"{name}_ci") or [None, None]
        row.update({name: stratum.get(name), f"{name}_lo": ci[0], f"{name}_hi": ci[1]})
    for rate in ("false_accept", "false_reject"):
        test = tests.get(rate) or {}
        row[f"{rate}_test_p"] = test.get("p_value")
        row[f"{rate}_test_df"] = test.get("df")
    row["warnings"] = "; ".join(stratum.get("warnings") or [])
    return row


def _judge_bias_estimate_row(
    row: dict[str, Any], key: str, kind: str, entry: dict[str, Any], today: dict[str, Any]
) -> dict[str, Any]:
    subset_key = SUBSET_RATE.get(key, "accuracy")
    subset_ci = today.get(f"{subset_key}_ci") or [None, None]
    out: dict[str, Any] = {
        "reader": row["reader"],
        "kind": row["kind"],
        "rate": kind,
        "labelled_subset": today.get(subset_key),
        "labelled_subset_lo": subset_ci[0],
        "labelled_subset_hi": subset_ci[1],
        "labelled_subset_n": today.get("n"),
        "labelled_subset_scope": row["scope"],
        "predictor": entry["predictor"],
    }
    e = entry.get(key)
    if e is None:
        return {**out, "error": entry.get("error", "")}
    human = e["human"] or {}
    ppi = e["prediction_powered"] or {}
    return {
        **out,
        "machine": e["machine"],
        "human": human.get("estimate"),
        "human_lo": human.get("low"),
        "human_hi": human.get("high"),
        "prediction_powered": ppi.get("estimate"),
        "prediction_powered_lo": ppi.get("low"),
        "prediction_powered_hi": ppi.get("high"),
        "labels": e["labels"],
        "effective_labels": e["effective_labels"],
        "lambda": e["lambda"],
        "population": e["population"],
        "design": e["design"],
        "headline": e["headline"],
        "headline_value": e["headline_value"],
        "withheld": e["withheld"] or "",
        "error": "",
    }


def format_share_estimates_block(
    *, dataset: Dataset, base: str, reported: str, predictor: str, n_boot: int, seed: int
) -> dict[str, Any]:
    """`format_share --fixed-reader human`'s prediction-powered block (analytics.estimate_blocks):
    the true gain and the format share over every response of each checkpoint against `base`,
    from the probability design's labels and the predictor (estimate_report's: named, else the
    `fixed` reader, else the vote; said why). ReportError (field predictor) for a predictor the
    dataset does not have."""
    block: dict[str, Any] = {"scope": FORMAT_SHARE_SCOPE, "unit": GAIN_UNIT, "headline_rule": HEADLINE_RULE}
    try:
        inputs = estimate_inputs(dataset=dataset, predictor=predictor or None, policy=None)
    except EstimateError as exc:
        raise ReportError(f"--predictor: {exc.message}", field="predictor") from exc
    drawn = inputs.sample
    block["predictor"] = inputs.predictor_name
    block["predictor_why"] = inputs.predictor_why
    block["design"] = design_summary(
        policy=drawn.policy,
        design=drawn.design,
        labels=drawn.labels,
        population=drawn.population,
        left_out=drawn.left_out,
    )
    if not drawn.labels:
        return jsonable({**block, "error": NO_DESIGN_LABELS})
    frame = Frame.build(inputs.population, inputs.predictor, by="checkpoint", name=inputs.predictor_name)
    sample = frame.sample(drawn.labels, drawn.design)
    try:
        reported_name = estimate_producer_name(dataset=dataset, population=inputs.population, name=reported)
        block["checkpoints"] = format_share_estimates(
            frame, sample, base=base, reported=reported_name, design=drawn.design.name, n_boot=n_boot, seed=seed
        )
    except (EstimateError, LookupError) as exc:
        block["error"] = str(exc.args[0]) if isinstance(exc, LookupError) else exc.message
    return jsonable(block)


def _ranking(rep: Report, summary: ReadingSummary) -> None:
    tables = ranking_tables(dataset=rep.dataset, summary=summary)
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
                # The swing, in accuracy points: how far ahead a is under X plus how far behind under Y.
                "size": 100
                * ((f[x][a]["accuracy"] - f[x][b]["accuracy"]) + (f[y][b]["accuracy"] - f[y][a]["accuracy"])),
                "separated": f["separated"],
            }
        )
    rep.tables["flips"] = {"title": "Rank flips between readers", "rows": rows}
    rep.flips_summary = flips_summary(rows)
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


def flips_summary(rows: list[dict[str, Any]], top: int = TOP_FLIPS) -> dict[str, Any]:
    """The flips table in brief: how many, how many per reader pair (most first), the `top`
    largest by size, and how many more the download holds."""
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        entry = pairs.setdefault(
            (r["reader_x"], r["reader_y"]),
            {"reader_x": r["reader_x"], "reader_y": r["reader_y"], "n": 0, "separated": 0},
        )
        entry["n"] += 1
        entry["separated"] += bool(r["separated"])
    largest = sorted(rows, key=lambda r: (-r["size"], r["reader_x"], r["reader_y"], r["ahead_under_x"]))[:top]
    return {
        "n": len(rows),
        "n_separated": sum(bool(r["separated"]) for r in rows),
        "models": sorted({m for r in rows for m in (r["ahead_under_x"], r["ahead_under_y"])}),
        "pairs": sorted(pairs.values(), key=lambda p: (-p["n"], p["reader_x"], p["reader_y"])),
        "top": largest,
        "more": max(len(rows) - top, 0),
    }


TABLES = (
    "readers",
    "readers-by",
    "agreement",
    "agreement-by",
    "population",
    "human-agreement",
    "format-share",
    "format-share-pairs",
    "judge-bias-estimates",
    "judge-calibration",
    "judge-card",
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


__all__ = [
    "HUMAN",
    "TABLES",
    "Params",
    "Report",
    "build",
    "columns",
    "flips_summary",
    "judge_cards_block",
    "report_body",
]
