"""Math-aware Markdown on hostile text: the maths rules must add no more than a constant factor.

adjudication.review.markup finds formulas before Markdown runs (a cut formula closed, displays
over several lines held, dollarmath and spaced dollars, \\( \\[ \\begin, bare commands, text
commands); the page's path (parse, then render) is what is timed. Each of its scans is meant to be
linear: closers are looked up once per text and delimiter, brace pairs once per text. Here each
hostile text (thousands of unclosed openers of every kind, plus ordinary maths-heavy prose of the
same length) is rendered by the math-aware renderer and, as the baseline in the same run, by plain
markdown-it (commonmark, tables) on the same text, best of ROUNDS. A rule gone quadratic shows as a
ratio growing with SIZE.
Prints, last:
  RESULT markup_worst_ratio <max over texts of math-aware time / plain markdown-it time>
  RESULT markup_ordinary_chars_per_s <math-aware renderer, ordinary maths prose>
Run: python bench/markup_bench.py   (BENCH_MARKUP_SIZE: openers per hostile text, default 20000)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import result  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

from adjudication.review.markup import parse, render  # noqa: E402

SIZE = int(os.environ.get("BENCH_MARKUP_SIZE", "20000"))
ROUNDS = 3
ORDINARY = (
    "We have $x^2 + y^2 = 25$ and \\(x = 3\\), so\n\\[\n\\begin{aligned} y^2 &= 16 \\\\ y &= 4 \\end{aligned}\n\\]\n"
    "The total is \\boxed{\\frac{7}{2}}, about $3.50 per item. **Check**: $\\sqrt{16} = 4$.\n\n"
)
HOSTILE = {
    "unclosed \\(": "\\(",
    "unclosed \\[": "\\[ a ",
    "unclosed \\frac{": "\\frac{",
    "unclosed \\begin": "\\begin{x}",
    "unclosed \\sqrt[": "\\sqrt[",
    "lone dollars": "$a ",
    "double dollars": "$$ a",
    "bare symbols": "\\pi ",
    "escaped dollars": "\\$",
    "spaced dollars": "$ \\pi ",
    "unclosed \\text{": "\\text{",
    "held displays": "x $$a\n- b$$ ",
}


def page_html(text: str) -> str:
    """What the item page runs on a text: cut formulas closed, displays held, then Markdown."""
    return render(*parse(text))


def best(renderer, text: str) -> float:
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        renderer(text)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    plain = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    worst = 0.0
    texts = {label: unit * SIZE for label, unit in HOSTILE.items()}
    texts["ordinary maths prose"] = ORDINARY * (SIZE * 4 // len(ORDINARY) + 1)
    for label, text in texts.items():
        math_s, plain_s = best(page_html, text), best(plain.render, text)
        ratio = max(math_s, 1e-3) / max(plain_s, 1e-3)
        worst = max(worst, ratio)
        print(
            f"{label:22s} {len(text):8d} chars  math-aware {math_s * 1000:8.1f} ms"
            f"  plain {plain_s * 1000:8.1f} ms  x{ratio:.2f}"
        )
    ordinary = texts["ordinary maths prose"]
    result("markup_worst_ratio", worst)
    result("markup_ordinary_chars_per_s", len(ordinary) / best(page_html, ordinary))


if __name__ == "__main__":
    main()
