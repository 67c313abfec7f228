"""Inline SVG plots, drawn server-side from the numbers (no JavaScript, no CDN).

Every function returns a complete <svg> element as a string. All text that comes from data
(reader, model, benchmark names) goes through html.escape, so the result is safe to mark_safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
INK, MUTED, GRID = "#1d2330", "#6b7383", "#d6dae2"
REPORTED, FIXED, ACCENT = "#d9822b", "#1f6fb2", "#a61b1b"
SLOPE_MAX_WIDTH = 1100  # the analytics page's column at a 1366 px window


def _t(x: float, y: float, text: str, anchor: str = "start", fill: str = INK, extra: str = "", title: str = "") -> str:
    tip = f"<title>{escape(title)}</title>" if title else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}" {extra}>{tip}{escape(str(text))}</text>'


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" {FONT}><title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )


def _short(text: str, n: int = 34) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _text_width(text: str) -> float:
    """A safe upper estimate of the width of `text` at 12 px (system-ui averages about 6.5 px a
    character): every chart sizes itself to its longest text, so nothing is clipped at its edge."""
    return 7.0 * len(text) + 4


def interval_chart(rows: Sequence[dict[str, Any]], *, title: str, label_width: int = 230, plot_width: int = 380) -> str:
    """Dots with whiskers on a 0–100 % axis: rows of {"label", "value", "ci": [lo, hi] | None,
    "note"} (values are fractions)."""
    row_h, top = 22, 26
    height = top + row_h * max(len(rows), 1) + 24
    notes = [
        f"{r['value']:.1%}" + (f"  {r['note']}" if r.get("note") else "") for r in rows if r.get("value") is not None
    ]
    width = label_width + plot_width + 10 + max([_text_width(n) for n in notes] + [60])
    x0 = label_width

    def x(v: float) -> float:
        return x0 + max(0.0, min(1.0, v)) * plot_width

    body = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" y2="{height - 22}" stroke="{GRID}"/>')
        body.append(_t(x(tick), height - 8, f"{tick:.0%}", "middle", MUTED))
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        body.append(_t(x0 - 8, y + 4, _short(r["label"]), "end"))
        if r.get("value") is None:
            body.append(_t(x0 + 4, y + 4, "–", fill=MUTED))
            continue
        if r.get("ci"):
            lo, hi = r["ci"]
            body.append(
                f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" stroke="{FIXED}" stroke-width="2"/>'
            )
            for v in (lo, hi):
                body.append(
                    f'<line x1="{x(v):.1f}" y1="{y - 5:.1f}" x2="{x(v):.1f}" y2="{y + 5:.1f}" stroke="{FIXED}"/>'
                )
        body.append(f'<circle cx="{x(r["value"]):.1f}" cy="{y:.1f}" r="4" fill="{INK}"/>')
        body.append(
            _t(
                x0 + plot_width + 10,
                y + 4,
                f"{r['value']:.1%}" + (f"  {r['note']}" if r.get("note") else ""),
                fill=MUTED,
            )
        )
    return _svg(width, height, body, title)


def _gain_note(c: dict[str, Any]) -> str:
    """The text beside a comparison's bars: its share, or why there is none, in full."""
    share = c.get("format_share")
    note = f"n={c.get('n_questions')} · "
    if share is not None:
        note += f"share {share:.1%}"
    else:
        note += "share undefined: reported gain ≤ 0" if (c.get("reported_gain") or 0) <= 0 else "share undefined"
    if not c.get("eligible"):
        # The reasons not said already (a share undefined because the reported gain is ≤ 0).
        reasons = [r for r in (c.get("ineligible_reason") or "").split("; ") if r and r != "reported gain ≤ 0"]
        note += " · not eligible" + (f" ({'; '.join(reasons)})" if reasons else "")
    return note


def gain_bars(comparisons: Sequence[dict[str, Any]], *, title: str = "Reported vs fixed gain per comparison") -> str:
    """Per comparison: the reported gain (orange) and the fixed gain (blue), in points, each with
    its value, and the share (or why it is undefined) beside them, never clipped."""
    label_w, plot_w, group_h, top = 250, 360, 34, 34
    comps = list(comparisons)
    values = [v for c in comps for v in (c.get("reported_gain"), c.get("fixed_gain")) if v is not None]
    lo, hi = min([0.0, *values]), max([1.0, *values])
    span = hi - lo or 1.0
    height = top + group_h * max(len(comps), 1) + 26
    notes = [_gain_note(c) for c in comps]
    width = label_w + plot_w + 10 + max([_text_width(n) for n in notes] + [80])

    def x(v: float) -> float:
        return label_w + (v - lo) / span * plot_w

    body = [
        f'<rect x="{label_w}" y="6" width="10" height="10" fill="{REPORTED}"/>',
        _t(label_w + 14, 15, "reported gain"),
        f'<rect x="{label_w + 120}" y="6" width="10" height="10" fill="{FIXED}"/>',
        _t(label_w + 134, 15, "fixed gain"),
        f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{height - 22}" stroke="{MUTED}"/>',
        _t(x(lo), height - 8, f"{lo:+.0f}", "middle", MUTED),
        _t(x(hi), height - 8, f"{hi:+.0f} pts", "middle", MUTED),
    ]
    for i, (c, note) in enumerate(zip(comps, notes, strict=True)):
        y = top + group_h * i
        label = f"{c['model']} · {c['benchmark']} · {c['prompt'] or '-'} · {c['rl_checkpoint']}"
        body.append(_t(label_w - 8, y + 17, _short(label, 34), "end", INK if c.get("eligible") else MUTED, title=label))
        for j, (key, colour) in enumerate((("reported_gain", REPORTED), ("fixed_gain", FIXED))):
            v = c.get(key)
            if v is None:
                continue
            x1, x2 = sorted((x(0), x(v)))
            body.append(
                f'<rect x="{x1:.1f}" y="{y + 4 + 13 * j:.1f}" width="{max(x2 - x1, 1):.1f}" height="11" '
                f'fill="{colour}"><title>{escape(key)}: {v:+.2f} points</title></rect>'
            )
        body.append(_t(label_w + plot_w + 10, y + 19, note, fill=INK if c.get("format_share") is not None else ACCENT))
    return _svg(width, height, body, title)


def _blend(t: float) -> str:
    """White → blue at t ∈ [0, 1]."""
    t = max(0.0, min(1.0, t))
    r, g, b = (int(255 + (c - 255) * t) for c in (0x1F, 0x6F, 0xB2))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(
    matrix: Sequence[Sequence[int]],
    *,
    title: str,
    row_title: str = "producer",
    col_title: str = "human",
    labels: Sequence[str] = ("correct", "incorrect"),
) -> str:
    """A confusion-matrix heat map; each cell shows its count and its share of all items."""
    cell, left, top = 64, 96, 40
    n = sum(sum(r) for r in matrix) or 1
    peak = max(max(r) for r in matrix) or 1
    width, height = left + cell * len(labels) + 16, top + cell * len(labels) + 28
    body = [_t(left + cell * len(labels) / 2, 14, f"{col_title}", "middle", MUTED)]
    for j, lab in enumerate(labels):
        body.append(_t(left + cell * j + cell / 2, top - 8, lab, "middle"))
    for i, lab in enumerate(labels):
        body.append(_t(left - 6, top + cell * i + cell / 2 + 4, lab, "end"))
        for j in range(len(labels)):
            v = matrix[i][j]
            fill = _blend(v / peak)
            ink = "#ffffff" if v / peak > 0.55 else INK
            x, y = left + cell * j, top + cell * i
            name = {(0, 0): "TP", (0, 1): "FP (false accept)", (1, 0): "FN (false reject)", (1, 1): "TN"}.get(
                (i, j), ""
            )
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" stroke="{GRID}">'
                f"<title>{escape(name)}: {v}</title></rect>"
            )
            body.append(_t(x + cell / 2, y + cell / 2, str(v), "middle", ink, 'font-weight="600"'))
            body.append(_t(x + cell / 2, y + cell / 2 + 15, f"{v / n:.0%}", "middle", ink))
    body.append(_t(8, top + cell * len(labels) + 20, f"rows: {row_title}", "start", MUTED))
    return _svg(width, height, body, title)


def slope_chart(rankings: dict[str, list[dict[str, Any]]], *, flipped: set[str], title: str = "Rank per reader") -> str:
    """Models' ranks across readers (columns); models in a rank flip are drawn in the accent colour."""
    readers = list(rankings)
    models = sorted({r["model"] for rows in rankings.values() for r in rows})
    if not readers or not models:
        return _svg(300, 40, [_t(8, 24, "no rankings", fill=MUTED)], title)
    left, right, row_h = 210, 210, 26
    # Columns share at most MAX_WIDTH, so that 26 readers fit a laptop screen as well as 3 do;
    # when they get narrow the reader names turn (at 50 degrees) rather than overlap.
    col_w = max(20.0, min(130.0, (SLOPE_MAX_WIDTH - left - right) / max(len(readers) - 1, 1)))
    turned = col_w < 100
    top = 44 if not turned else 30 + 0.77 * max(_text_width(_short(r, 22)) for r in readers)
    width = left + col_w * (len(readers) - 1) + right
    height = top + row_h * len(models) + 10
    rank_of = {reader: {r["model"]: r["rank"] for r in rows} for reader, rows in rankings.items()}
    # Rows are drawn at each model's position in the reader's order, so tied models do not overlap
    # (the labels give the competition rank). Ties keep the previous column's order, so a tie never
    # draws a crossing that looks like a flip.
    slot: dict[str, dict[str, int]] = {}
    previous: dict[str, int] = {}
    for reader in readers:
        ordered = sorted(rankings[reader], key=lambda r: (r["rank"], previous.get(r["model"], 10**6), r["model"]))
        slot[reader] = previous = {r["model"]: k + 1 for k, r in enumerate(ordered)}

    def pos(i: int, model: str) -> tuple[float, float]:
        return left + col_w * i, top + row_h * (slot[readers[i]][model] - 1)

    body = []
    for i, reader in enumerate(readers):
        x = left + col_w * i
        body.append(f'<line x1="{x:.1f}" y1="{top - 10:.1f}" x2="{x:.1f}" y2="{height - 10:.1f}" stroke="{GRID}"/>')
        if turned:
            y = top - 16
            body.append(_t(x, y, _short(reader, 22), "start", extra=f'transform="rotate(-50 {x:.1f} {y:.1f})"'))
        else:
            body.append(_t(x, 16 + (i % 2) * 13, _short(reader, 22), "middle"))
    for model in models:
        pts = [pos(i, model) for i, r in enumerate(readers) if model in rank_of[r]]
        hot = model in flipped
        colour, w = (ACCENT, 2.5) if hot else (MUTED, 1.2)
        body.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="{w}" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            + f'"><title>{escape(model)}</title></polyline>'
        )
        for x, y in pts:
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>')
        first = next((i for i, r in enumerate(readers) if model in rank_of[r]), None)
        last = next((i for i in reversed(range(len(readers))) if model in rank_of[readers[i]]), None)
        if first is not None:
            x, y = pos(first, model)
            body.append(_t(x - 8, y + 4, f"{_short(model, 28)} ({rank_of[readers[first]][model]})", "end", colour))
        if last is not None and last != first:
            x, y = pos(last, model)
            body.append(_t(x + 8, y + 4, f"({rank_of[readers[last]][model]}) {_short(model, 28)}", "start", colour))
    return _svg(width, height, body, title)


def reliability_diagram(bins: Sequence[dict[str, Any]], *, title: str, size: int = 260) -> str:
    """A judge's reliability curve: each non-empty bin's mean confidence (x) against its
    agreement rate with the humans (y), a whisker for the agreement's Wilson interval, the bin's
    item count beside it; the diagonal is perfect calibration. bins: analytics.calibration's."""
    left, top, bottom, right = 44, 14, 40, 16
    width, height = left + size + right, top + size + bottom

    def x(v: float) -> float:
        return left + max(0.0, min(1.0, v)) * size

    def y(v: float) -> float:
        return top + (1 - max(0.0, min(1.0, v))) * size

    body = [f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="{GRID}"/>']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" y2="{top + size}" stroke="{GRID}"/>')
        body.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + size}" y2="{y(tick):.1f}" stroke="{GRID}"/>')
        body.append(_t(x(tick), top + size + 14, f"{tick:.0%}", "middle", MUTED))
        body.append(_t(left - 4, y(tick) + 4, f"{tick:.0%}", "end", MUTED))
    body.append(
        f'<line x1="{x(0):.1f}" y1="{y(0):.1f}" x2="{x(1):.1f}" y2="{y(1):.1f}" '
        f'stroke="{MUTED}" stroke-dasharray="4 3"/>'
    )
    body.append(_t(left + size / 2, height - 6, "judge's confidence in its verdict", "middle", MUTED))
    body.append(
        _t(
            12,
            top + size / 2,
            "agrees with humans",
            "middle",
            MUTED,
            extra=f'transform="rotate(-90 12 {top + size / 2})"',
        )
    )
    shown = [
        b
        for b in bins
        if b.get("n") and b.get("confidence") is not None and (b.get("agreement") or {}).get("rate") is not None
    ]
    if len(shown) > 1:
        line = " ".join(f"{x(b['confidence']):.1f},{y(b['agreement']['rate']):.1f}" for b in shown)
        body.append(f'<polyline points="{line}" fill="none" stroke="{FIXED}"/>')
    for b in shown:
        agreement = b["agreement"]
        cx, cy = x(b["confidence"]), y(agreement["rate"])
        ci = agreement.get("ci")
        if ci:
            body.append(f'<line x1="{cx:.1f}" y1="{y(ci[0]):.1f}" x2="{cx:.1f}" y2="{y(ci[1]):.1f}" stroke="{FIXED}"/>')
        tip = (
            f"confidence {b['lo']:.0%}–{b['hi']:.0%}: n={b['n']}, mean confidence {b['confidence']:.3f}, "
            f"agreement {agreement['rate']:.3f}"
        )
        body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{FIXED}"><title>{escape(tip)}</title></circle>')
        body.append(_t(cx + 5, cy - 5, f"n={b['n']}", fill=MUTED, extra='font-size="10"'))
    return _svg(width, height, body, title)
