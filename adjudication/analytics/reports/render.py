"""Each report kind's text: what its command prints without --json and what its page shows, from
the report's JSON (report_compute) and nothing else."""

from __future__ import annotations

import json
from typing import Any


def report_json(result: dict[str, Any]) -> str:
    """The report's JSON as the commands print it (--json) and the pages download it."""
    return json.dumps(result, indent=2, ensure_ascii=False)


def _r(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


# format_share


def _pct(x) -> str:
    return "–" if x is None else f"{x:.1%}"


def _pts(x) -> str:
    return "–" if x is None else f"{x:+.2f}"


def _fs_ci(ci, fmt) -> str:
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
            f"{_fs_ci(p.get('reported_gain_ci'), _pts)}, fixed {_pts(p['fixed_gain'])}"
            f"{_fs_ci(p.get('fixed_gain_ci'), _pts)}, "
            f"format share {_pct(p['format_share'])}{_fs_ci(p.get('format_share_ci'), _pct)}"
        ),
        (
            f"{indent}mean of per-comparison shares (our reading of the seed's 'other pooling rule', not the seed's "
            f"own definition): {_pct(g['mean_of_shares'])}{_fs_ci(g.get('mean_of_shares_ci'), _pct)}{ms_note}"
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


def format_share_text(r: dict) -> str:
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
    if r.get("estimates"):
        from adjudication.analytics.estimate_blocks import format_share_block_text

        lines += format_share_block_text(r["estimates"])
    return "\n".join(lines)


# agreement


def agreement_text(result: dict) -> str:
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
    if result.get("judge_parsing"):
        from adjudication.analytics.parsing import parsing_text

        # Unparsed replies are in no figure above: how many, and whether the verdicts depend on the parser.
        lines += ["", "LLM judges' replies (all responses): unparsed, and read differently by the upstream parser"]
        lines += parsing_text(result["judge_parsing"])
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


# consensus


def _measured(p: dict[str, Any]) -> str:
    return "–" if p["rate"] is None else f"{p['rate']:.3f} (n={p['n']})"


def consensus_text(result: dict[str, Any], *, items: bool = False) -> str:
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


# audit, audit_run


def audit_text(summary: dict[str, Any]) -> str:
    from readers.audit.runner import render_table

    return render_table(summary)


# judge-bias cards


def _rate_text(s: dict[str, Any], name: str, k: str, den: tuple[str, str], signed: bool = False) -> str:
    value = s.get(name)
    if value is None:
        return "–"
    ci = s.get(f"{name}_ci")
    fmt = "{:+.3f}" if signed else "{:.3f}"
    text = fmt.format(value) + ("" if not ci else f" [{fmt.format(ci[0])}, {fmt.format(ci[1])}]")
    if k:
        text += f" ({s.get(k, 0)}/{int(s.get(den[0]) or 0) + int(s.get(den[1]) or 0)})"
    return text


def _card_rates(s: dict[str, Any]) -> str:
    return (
        f"false accept {_rate_text(s, 'false_accept_rate', 'fp', ('fp', 'tn'))}, "
        f"false reject {_rate_text(s, 'false_reject_rate', 'fn', ('fn', 'tp'))}, "
        f"bias {_rate_text(s, 'bias', '', ('', ''), signed=True)}"
    )


def _card_test_text(rate: str, t: dict[str, Any]) -> str:
    head = f"  {rate.replace('_', ' ')}: "
    if t.get("p_value") is None:
        text = head + f"no test ({t.get('reason', '')})"
    else:
        text = head + (
            f"p = {t['p_value']:.3g}, df {t['df']}, G = {t['statistic']:.2f}, Holm p = {t.get('p_holm', 1.0):.3g} "
            f"({t['method']})"
        )
    if t.get("merged"):
        text += f"; merged into 'other': {', '.join(t['merged'])}"
    if t.get("left_out"):
        text += f"; left out (too few items): {', '.join(t['left_out'])}"
    return text


def judge_cards_text(block: dict[str, Any]) -> str:
    """The judge-bias cards (analytics.bias_card) as `manage.py judge_card` prints them: per card
    the overall rates, where the bias lives, the self-preference flag, then each breakdown (those
    the command's --by put in `print_breakdowns`, all when none) with its strata and its two
    heterogeneity tests."""
    dimensions = tuple(block.get("print_breakdowns") or ())
    lines = [
        (
            f"Judge-bias cards on the labelled {block['scope']!r} items ({block['n_responses']} responses). "
            "false accept = said correct of the human-rejected items, false reject = said incorrect of the "
            "human-accepted ones (Wilson 95 %, k/n); bias = judge correct rate - human correct rate "
            "(bootstrap 95 %). Tests: likelihood ratio of the stratum as a factor (docs/analytics.md, "
            "'The judge-bias card')."
        )
    ]
    if not block["cards"]:
        lines.append("No producer has read a labelled item.")
    for card in block["cards"]:
        o = card["overall"]
        lines += [
            "",
            f"== {card['producer']} ({card['kind']}"
            + (f", template {card['template_hash']}" if card.get("template_hash") else "")
            + f"): n = {card['n']}",
            _card_rates(o),
        ]
        if card.get("parse_failures") or card["kind"] == "judge":
            rate = card.get("parse_failure_rate") or {}
            lines.append(
                f"unparsed replies: {card['parse_failures']} of {card['judged']}"
                + ("" if rate.get("rate") is None else f", {_r(rate['rate'])}{_ci(rate.get('ci'))}")
                + " (left out of every rate)"
            )
        lines += [f"warning: {w}" for w in o.get("warnings") or []]
        where = card.get("where") or []
        lines.append(
            "where the bias lives: "
            + (
                "; ".join(
                    f"{w['rate'].replace('_', ' ')} by {w['dimension']} (p = {w['p_value']:.3g}, "
                    f"Holm {w['p_holm']:.3g}, df {w['df']})"
                    for w in where
                )
                if where
                else f"no breakdown differs at 5 % (Holm over {card['tests_run']} tests)"
            )
        )
        sp = card.get("self_preference")
        if sp:
            flag = (
                f"FLAGGED: {sp['n_own']} labelled item(s) from its own family {sp['family']!r}"
                if sp["flagged"]
                else f"no labelled item from its own family {sp['family'] or '(none)'!r}"
            )
            lines.append(f"self-preference (judge model {sp['judge_model']!r}): {flag}")
        order = block.get("breakdown_order") or []
        for dimension in sorted(card["breakdowns"], key=lambda d: order.index(d) if d in order else len(order)):
            b = card["breakdowns"][dimension]
            if dimensions and dimension not in dimensions:
                continue
            lines.append(f"-- by {b['title']}" + (f"; edges {b['edges']}" if b.get("edges") else ""))
            for s in b["strata"]:
                lines.append(f"  {s['label']}: n = {s['n']}, {_card_rates(s)}")
            for rate in ("false_accept", "false_reject"):
                lines.append(_card_test_text(rate, b["tests"].get(rate) or {}))
    return "\n".join(lines) + "\n"


# analytics


def analytics_text(body: dict[str, Any]) -> str:
    """The page's report in brief: its parameters, the format share per benchmark, the producers'
    bias and ranking against the final labels and the consensus (every table is in the JSON)."""
    from adjudication.analytics.headline import points_text, rate_text, share_text

    params = body.get("params") or {}
    headline = body.get("headline") or {}
    lines = ["parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(params.items()))]
    rows = list(headline.get("by_benchmark") or [])
    if headline.get("overall"):
        rows.append({**headline["overall"], "benchmark": "all benchmarks"})
    if rows:
        lines += ["", f"format share ({params.get('reported')} vs {params.get('fixed')}):"]
        for row in rows:
            lines.append(
                f"  {str(row.get('benchmark', ''))[:24]:<24} "
                f"reported {points_text(row['reported_gain'], row['reported_gain_ci'])}"
                f", fixed {points_text(row['fixed_gain'], row['fixed_gain_ci'])}"
                f", share {share_text(row['format_share'], row['format_share_ci'])}"
                f", box {rate_text(row['box_rate_base'])} -> {rate_text(row['box_rate_rl'])}"
            )
    if body.get("format_share_error"):
        lines.append(f"format share: {body['format_share_error']}")
    bias = headline.get("judge_bias") or []
    if bias:
        lines += ["", "bias against the final labels (producer, n, bias [95% CI]):"]
        from adjudication.analytics.estimate_blocks import design_text, judge_bias_text

        sample = headline.get("judge_bias_sample") or {}
        for r in bias:
            lines.append(f"  {r['reader']:<28} {r['n']:>5} {_signed(r['bias'])}{_ci(r.get('bias_ci'))}")
            lines += _parsing_lines(r)
            lines += judge_bias_text(r)
        if sample.get("design"):
            lines.append(f"  (every response: {design_text(sample['design'])}; predictor {sample['predictor']})")
    ranking = headline.get("reader_ranking") or []
    if ranking:
        least = headline.get("reader_ranking_min_n")
        lines += [
            "",
            "readers ranked by agreement with the final labels (by the 95% interval's lower bound"
            + (f"; no rank below n = {least}" if least else "")
            + "):",
        ]
        for i, r in enumerate(ranking, 1):
            position = r.get("rank", i)
            place = f"{position:>2}." if position is not None else " –."
            lines.append(f"  {place} {r['reader']:<28} {_r(r['agreement'])}{_ci(r.get('agreement_ci'))} (n={r['n']})")
    elif headline.get("reader_ranking_note"):
        lines += ["", headline["reader_ranking_note"]]
    if body.get("consensus"):
        lines += ["", consensus_text(body["consensus"])]
    elif body.get("consensus_error"):
        lines += ["", f"consensus: {body['consensus_error']}"]
    return "\n".join(lines)


def _parsing_lines(row: dict[str, Any]) -> list[str]:
    """A judge's unparsed replies and parser disagreement beside its bias (headline judge_bias rows)."""
    u, d = row.get("unparsed"), row.get("parser_disagreement")
    if not u or not d:
        return []
    upstream = row.get("upstream_parser") or "the upstream parser"
    unparsed = f"    unparsed replies {u['k']}/{u['n']}{_ci(u.get('ci'))} (in no bias figure)"
    lines = [f"{unparsed}; read differently by {upstream} {d['k']}/{d['n']}{_ci(d.get('ci'))}"]
    return lines + [f"    ! {flag}" for flag in row.get("parsing_flags") or []]


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.3f}"


# estimates

# Kinds whose value is a difference (signed); format shares are a share of a gain (a percentage).
SIGNED = ("gain", "bias")


def _estimate_number(kind: str, x: float | None) -> str:
    if x is None:
        return "–"
    if kind == "format-share":
        return f"{x:.1%}"
    return f"{x:+.3f}" if kind in SIGNED else f"{x:.3f}"


def estimate_cells(row: dict[str, Any]) -> dict[str, str]:
    """One estimate's cells as the command prints them and the analytics page shows them: the
    machine figure, the human-only and prediction-powered figures with their intervals, the labels,
    the effective labels and the headline figure (which of the three, said)."""
    kind = row["kind"]

    def figure(interval: dict[str, Any] | None) -> str:
        if interval is None or not row["labels"]:
            return "–"
        text = _estimate_number(kind, interval["estimate"])
        if interval["low"] is None or interval["high"] is None:
            return text + " (no interval)"
        return f"{text} [{_estimate_number(kind, interval['low'])}, {_estimate_number(kind, interval['high'])}]"

    effective = row["effective_labels"]
    return {
        "machine": _estimate_number(kind, row["machine"]),
        "human": figure(row["human"]),
        "ppi": figure(row["prediction_powered"]),
        "labels": str(row["labels"]),
        "effective": "–" if effective is None else f"{effective:.1f}",
        "headline": f"{_estimate_number(kind, row['headline_value'])} ({row['headline']})",
    }


def _probability(cell: dict[str, Any]) -> str:
    low, high = cell["probability_min"], cell["probability_max"]
    if low is None:
        return "no label"
    return f"inclusion probability {low:.3g}" + (f" to {high:.3g}" if high != low else "")


# Why a label is left out of the sample (analytics.design's reasons), in words.
LEFT_OUT = {
    "no_verdict": "labelled, but neither correct nor incorrect (ambiguous, unresolved)",
    "outside_design": "routed with no known probability (greedy information routing): unfit for estimates",
    "other_policy": "in another policy's design (name it with --policy)",
}


def design_lines(design: dict[str, Any]) -> list[str]:
    """The design the labels rest on, in words: policy, cells, what was left out and the minimums."""
    if design["cells"]:
        lines = [
            (
                f"design: policy {design['policy']!r}, {design['labels']} labels over {design['population']} "
                f"responses, {len(design['cells'])} cell(s):"
            )
        ]
        for cell in design["cells"]:
            size = f"{cell['labels']} labels of {cell['responses']} responses"
            lines.append(f"  {cell['cell']}: {size} ({_probability(cell)})")
    else:
        lines = [
            (
                f"design: no labels from a probability design ({design['name'] or 'none'}): route with controls "
                "and label some items (docs/estimates.md); only the machine column has figures"
            )
        ]
    for reason, n in sorted(design["left_out"].items()):
        lines.append(f"  left out: {n} label(s), {LEFT_OUT.get(reason, reason)}")
    if design["cells"]:
        lines.append(
            f"  an interval needs {design['min_cell_labels']} labels in every cell and {design['min_labels']} in "
            f"the target's domain; the headline takes the prediction-powered figure from "
            f"{design['headline_min_labels']} labels"
        )
    return lines


def estimates_text(result: dict[str, Any]) -> str:
    """Per target the three columns (machine only, human only, prediction-powered with its labels
    and effective labels) and the headline figure; why an interval is withheld; the design."""
    predictor = result["predictor"]["name"]
    lines = [f"predictor: {predictor} ({result['predictor']['why']})", *design_lines(result["design"]), ""]
    rows = result["estimates"]
    w = max([len("target"), *(len(r["target"]) for r in rows)])
    head = (
        f"{'target':<{w}}  {'machine only*':>13}  {'human only [95 %]':>26}  {'prediction-powered [95 %]':>26}  "
        f"{'labels':>6}  {'effective':>9}  headline"
    )
    lines += [head, "-" * len(head)]
    for r in rows:
        c = estimate_cells(r)
        lines.append(
            f"{r['target']:<{w}}  {c['machine']:>13}  {c['human']:>26}  {c['ppi']:>26}  {c['labels']:>6}  "
            f"{c['effective']:>9}  {c['headline']}"
        )
        if r["withheld"]:
            lines.append(f"{'':<{w}}  interval withheld: {r['withheld']}")
        if r.get("note"):
            lines.append(f"{'':<{w}}  note: {r['note']}")
    if not rows:
        lines.append("(no estimate)")
    lines += [
        "",
        f"* machine only: {predictor}'s figure on every response, no interval: it inherits {predictor}'s errors.",
        (
            "  human only: the labels alone, weighted by the design. prediction-powered: the machine figure "
            "corrected on the labels;"
        ),
        "  effective labels = labels x human-only variance / prediction-powered variance (docs/estimates.md).",
    ]
    for e in result["errors"]:
        lines.append(f"not estimated: {e['target']}: {e['error']}")
    for note in result["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)


TEXT = {
    "format_share": format_share_text,
    "agreement": agreement_text,
    "consensus": consensus_text,
    "audit": audit_text,
    "audit_run": audit_text,
    "judge_card": judge_cards_text,
    "analytics": analytics_text,
    "estimates": estimates_text,
}


def report_text(kind: str, result: dict[str, Any]) -> str:
    """The kind's text of a report's JSON."""
    return TEXT[kind](result)
