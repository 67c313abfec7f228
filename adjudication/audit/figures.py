"""Seed 001's three figures, drawn server-side as inline SVG from an audit summary.

Figure 1: self-validation by reader (in-contract), with the ~94 % prior-work line.
Figure 2: error budget — share of in-contract certified failures by stratum, stacked per reader,
          execution failures hatched.
Figure 3: off-by-one acceptance by gold magnitude, one line per reader.
Built on adjudication.analytics.svg's helpers; every data string is escaped there (`_t`) or here.
"""

from __future__ import annotations

from html import escape
from typing import Any

from adjudication.analytics.svg import ACCENT, FIXED, GRID, INK, MUTED, _short, _svg, _t
from readers.audit.contracts import seed_stratum_label
from readers.audit.runner import BUCKETS

PRIOR_WORK = 0.94  # Hugging Face evaluation guidebook, as cited by seed 001 (Figure 1's dashed line)
PALETTE = ("#1f6fb2", "#d9822b", "#3a9e5c", "#a61b1b", "#7b4fa8", "#8c6d31", "#4b8bbe", "#c2549d", "#6b7383", "#2f4858")


def self_validation_figure(summary: dict[str, Any]) -> str:
    readers = summary.get("readers", {})
    label_w, plot_w, row_h, top = 230, 380, 24, 30
    height = top + row_h * max(len(readers), 1) + 30

    def x(v: float) -> float:
        return label_w + max(0.0, min(1.0, v)) * plot_w

    body = []
    for tick in (0, 0.2, 0.4, 0.6, 0.8, 1.0):
        body.append(f'<line x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" y2="{height - 24}" stroke="{GRID}"/>')
        body.append(_t(x(tick), height - 10, f"{tick:.0%}", "middle", MUTED))
    for i, (name, r) in enumerate(readers.items()):
        y = top + row_h * i
        body.append(_t(label_w - 8, y + 15, _short(name), "end"))
        value = r.get("self_validation")
        if value is None:
            body.append(_t(label_w + 4, y + 15, "n/a", fill=MUTED))
            continue
        body.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{x(value) - label_w:.1f}" height="{row_h - 8}" fill="{FIXED}"/>'
        )
        body.append(_t(x(value) + 6, y + 15, f"{value:.1%}", fill=INK))
    body.append(
        f'<line x1="{x(PRIOR_WORK):.1f}" y1="{top - 10}" x2="{x(PRIOR_WORK):.1f}" y2="{height - 24}" '
        f'stroke="{ACCENT}" stroke-dasharray="5,4"/>'
    )
    body.append(_t(x(PRIOR_WORK), top - 14, "prior work (~94%)", "middle", ACCENT))
    return _svg(label_w + plot_w + 90, height, body, "Figure 1: self-validation rate by reader (in-contract)")


def error_budget_figure(summary: dict[str, Any]) -> str:
    budget = summary.get("error_budget", {})
    readers = list(summary.get("readers", {}))
    strata: list[str] = []
    for name in readers:
        for s in budget.get(name, {}).get("strata", {}):
            if s not in strata:
                strata.append(s)
    colour = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(strata)}
    label_w, plot_w, row_h, top = 230, 420, 26, 14
    legend_rows = (len(strata) + 2) // 3
    height = top + row_h * max(len(readers), 1) + 30 + 18 * legend_rows + 18
    body = [
        (
            '<defs><pattern id="hatch" patternUnits="userSpaceOnUse" width="6" height="6" '
            'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#fff" stroke-width="2"/>'
            "</pattern></defs>"
        )
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        xt = label_w + tick * plot_w
        body.append(f'<line x1="{xt:.1f}" y1="{top}" x2="{xt:.1f}" y2="{top + row_h * len(readers)}" stroke="{GRID}"/>')
        body.append(_t(xt, top + row_h * len(readers) + 14, f"{tick:.0%}", "middle", MUTED))
    for i, name in enumerate(readers):
        y = top + row_h * i
        body.append(_t(label_w - 8, y + 16, _short(name), "end"))
        eb = budget.get(name, {"failures": 0, "strata": {}})
        if not eb.get("failures"):
            body.append(_t(label_w + 4, y + 16, "no in-contract failures", fill=MUTED))
            continue
        x0 = float(label_w)
        for s, c in eb["strata"].items():
            w = c["share"] * plot_w
            tip = escape(
                f"{s} ({seed_stratum_label(s)}): {c['share']:.1%}, {c['rejected']} rejected, "
                f"{c['not_judged']} not judged"
            )
            body.append(
                f'<rect x="{x0:.1f}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" fill="{colour[s]}">'
                f"<title>{tip}</title></rect>"
            )
            if c["not_judged"]:
                hw = w * c["not_judged"] / c["failures"]
                body.append(
                    f'<rect x="{x0 + w - hw:.1f}" y="{y + 4}" width="{hw:.1f}" height="{row_h - 8}" '
                    'fill="url(#hatch)"/>'
                )
            if c["share"] >= 0.12:
                body.append(_t(x0 + w / 2, y + 16, f"{c['share']:.0%}", "middle", "#fff"))
            x0 += w
    ly = top + row_h * len(readers) + 34
    for j, s in enumerate(strata):
        lx = 20 + (j % 3) * 220
        yy = ly + 18 * (j // 3)
        body.append(f'<rect x="{lx}" y="{yy - 9}" width="10" height="10" fill="{colour[s]}"/>')
        body.append(_t(lx + 14, yy, _short(f"{s} ({seed_stratum_label(s)})", 32), fill=INK))
    body.append(
        _t(20, ly + 18 * legend_rows + 6, "hatched = failure caused by execution error (no verdict)", fill=MUTED)
    )
    return _svg(
        max(label_w + plot_w + 40, 680),
        height,
        body,
        "Figure 2: error budget, share of in-contract certified failures by stratum",
    )


def magnitude_figure(summary: dict[str, Any]) -> str:
    off = summary.get("off_by_one", {})
    readers = list(summary.get("readers", {}))
    left, plot_w, plot_h, top = 60, 420, 200, 20
    step = plot_w / (len(BUCKETS) - 1)

    def px(i: int) -> float:
        return left + i * step

    def py(v: float) -> float:
        return top + (1 - v) * plot_h

    body = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line x1="{left}" y1="{py(tick):.1f}" x2="{left + plot_w}" y2="{py(tick):.1f}" stroke="{GRID}"/>')
        body.append(_t(left - 6, py(tick) + 4, f"{tick:.0%}", "end", MUTED))
    for i, b in enumerate(BUCKETS):
        body.append(_t(px(i), top + plot_h + 16, b, "middle", MUTED))
    # the tolerance threshold |g| = 1 / rel_tol = 10^4
    x4 = px(BUCKETS.index("1e4"))
    body.append(
        f'<line x1="{x4:.1f}" y1="{top}" x2="{x4:.1f}" y2="{top + plot_h}" stroke="{ACCENT}" stroke-dasharray="4,4"/>'
    )
    body.append(_t(x4 - 4, top + 12, "|g| = 1/rel_tol = 10^4", "end", ACCENT))
    for k, name in enumerate(readers):
        colour = PALETTE[k % len(PALETTE)]
        points = [
            (px(i), py(off.get(name, {}).get(b))) for i, b in enumerate(BUCKETS) if off.get(name, {}).get(b) is not None
        ]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y + 2 * k:.1f}" for x, y in points)  # offset so equal lines stay visible
            body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in points:
            body.append(f'<circle cx="{x:.1f}" cy="{y + 2 * k:.1f}" r="3" fill="{colour}"/>')
        body.append(f'<rect x="{left + plot_w + 16}" y="{top + 18 * k}" width="10" height="10" fill="{colour}"/>')
        body.append(_t(left + plot_w + 30, top + 18 * k + 9, _short(name, 30)))
    body.append(_t(left + plot_w / 2, top + plot_h + 34, "gold answer magnitude", "middle", MUTED))
    return _svg(
        left + plot_w + 250, top + plot_h + 44, body, "Figure 3: off-by-one acceptance by gold answer magnitude"
    )


def audit_figures(summary: dict[str, Any]) -> dict[str, str]:
    return {
        "figure_self_validation": self_validation_figure(summary),
        "figure_error_budget": error_budget_figure(summary),
        "figure_magnitude": magnitude_figure(summary),
    }


__all__ = ["audit_figures", "error_budget_figure", "magnitude_figure", "self_validation_figure"]
