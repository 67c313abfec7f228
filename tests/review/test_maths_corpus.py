"""What an annotator sees of the maths in responses: rendered by the server (markup) and typeset
by review.js in Chromium, on real model responses from ../shared/data (MATH and multiple choice,
truncated ones and maths written without delimiters included) and on a corpus of our own that holds
every case Markdown used to break. On each: no formula KaTeX could not read (those are shown as
source with a note), no command KaTeX knows left raw in the visible text (the oracle is KaTeX
itself, with the page's macros), no `$$` left in the prose, and no formula wider than its text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from adjudication.review.rendering import response_parts
from adjudication.text import displayable

from ..browser import chromium_browser, require_chromium
from ..conftest import read_jsonl, shared_data
from .test_katex_guard import static_page

RAW_TEX = re.compile(r"\\(?:boxed|frac|begin\{)")
PAGE_SIZE = 20
# In the page: each `\\name` in the visible text outside typeset maths and code that KaTeX knows
# (or that is a command KaTeX knows glued to a one- or two-letter variable, `\\DeltaE`), each `$$`
# left in the prose, and each typeset formula reaching past the right edge of its text.
SHOWN = r"""() => {
  const macros = window.reviewMathMacros;
  const known = (name) => {
    try { katex.renderToString('\\' + name, {throwOnError: true, strict: 'ignore', macros: {...macros}}); return true; }
    catch (e) { return !/Undefined control sequence/.test(e.message); }
  };
  const command = (name) => {
    for (let cut = name.length; cut >= Math.max(2, name.length - 2); cut--) if (known(name.slice(0, cut))) return true;
    return false;
  };
  return [...document.querySelectorAll('.resp')].map(r => {
    const raw = [];
    const walk = document.createTreeWalker(r, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const holder = n.parentElement;
      if (holder.closest('.katex') || (holder.closest('pre, code') && !holder.closest('.math-guarded'))) continue;
      const seen = n.textContent;
      for (const m of seen.matchAll(/\\([A-Za-z]+)|\$\$/g)) {
        if (!m[1] || command(m[1])) raw.push(seen.slice(Math.max(0, m.index - 60), m.index + 60));
      }
    }
    const right = r.getBoundingClientRect().right;
    const wide = [...r.querySelectorAll('.math, .math-display')]
      .filter(m => m.getBoundingClientRect().right > right + 1);
    return {
      text: r.innerText,
      html: r.innerHTML,
      raw,
      wide: wide.map(m => m.textContent.slice(0, 80)),
      typeset: r.querySelectorAll('.math .katex').length,
      errors: r.querySelectorAll('.katex-error').length,
      guarded: [...r.querySelectorAll('.math-guarded')].map(g => g.innerText),
    };
  });
}"""

OWN_CORPUS = [
    "The total is \\[\\boxed{\\$24,200}\\]",
    "About $50\\%$ of them, so $\\boxed{50\\%}$.",
    "So the answer is \\boxed{5\\sqrt 2}",
    "Integrate: $\\int_0^1 x^2\\,dx = \\frac{1}{3}$.",
    "The set is $\\{1, 2\\}$ and also \\(\\{3\\}\\).",
    "We get\n\\[\n\\begin{aligned}\nx + y &= 10 \\\\\nx - y &= 2\n\\end{aligned}\n\\]\nso $x = 6$.",
    "The price rises from $40 to $60, a rise of $\\frac{20}{40} = 50\\%$.",
    "| $n$ | $n^2$ |\n|---|---|\n| 2 | 4 |\n| 3 | 9 |\n\nHence \\boxed{9}.",
    "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix} has determinant $-2$.",
    "<think>Try $x=2$: $2^2 = 4$.</think>Therefore the answer is $\\boxed{\\text{(B)}}$.",
    "Half of it: \\frac{1}{2}, i.e. \\dfrac{3}{6}; with \\pi r^2 for the area.",
    "$$\n\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}\n$$",
    # Issue 36 item 11: a middle dot in text (KaTeX lacks text-mode \\cdotp), a number no line can
    # hold (it scrolls in its own box), a display opened mid-line over list-like lines.
    "about $6.582 \\times 10^{-16} \\, \\text{eV·s}$ and $x·y$",
    "we get $N = \\exp(-2.05*0." + "0" * 400 + "1)$ in all",
    "from $10x$: $$\\begin{array}{r r}\n&10x &=& n \\\\\n- &x &=& 0\n\\end{array}$$ This shows",
]


def _holds_tex(text: str) -> bool:
    return "\\" in text or "$" in text


def real_corpus(limit_per_file: int = 150) -> list[tuple[str, str]]:
    """(where it comes from, text) for real model outputs and dataset texts that hold TeX: every
    MMLU-Pro output and question with a backslash or a dollar (truncated outputs and bare
    `\\Delta S = …` among them), every MATH-500 question and reference solution, the first of
    Qwen2.5-Math's eight samples per MATH problem, and GPQA free-form responses."""
    texts = []
    math = shared_data("qwen25-math-eval", "math_cot_100.jsonl")
    for line in math.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        texts.append((f"qwen25-math idx {row['idx']}", row["code"][0] if row.get("code") else row["response"]))
    mc = read_jsonl(shared_data("mmlu-pro-model-outputs", "mmlu_pro_cot_outputs_sample.jsonl"))
    texts += [
        (f"mmlu-pro output {row['model']} q{row['question_id']}", row["model_output"])
        for row in mc
        if _holds_tex(row["model_output"])
    ]
    questions = {row["question"]: row["question_id"] for row in mc if _holds_tex(row["question"])}
    texts += [(f"mmlu-pro question q{questions[q]}", q) for q in sorted(questions)]
    for number, row in enumerate(read_jsonl(shared_data("math500", "math500.jsonl"))):
        texts += [(f"math500 question #{number}", row["question"]), (f"math500 solution #{number}", row["solution"])]
    science = shared_data("answer-matching-human-annotations", "gpqa_diamond_freeform_annotated.jsonl")
    for line in science.read_text(encoding="utf-8").splitlines()[:limit_per_file]:
        row = json.loads(line)
        texts.append((f"gpqa {row['model']} {row['question_id']}", row["response"]))
    return texts


def shown(tmp_path: Path, texts: list[str]) -> list[dict]:
    """Each response as the item page's rendered view shows it, once review.js is done."""
    out: list[dict] = []
    with chromium_browser() as browser:
        for start in range(0, len(texts), PAGE_SIZE):
            # Each text in a region of its own, as wide as the item page's response column.
            bodies = "".join(
                f'<div class="resp question" style="width:640px">'
                f"{''.join(p.html for p in response_parts(displayable(t), []))}</div>"
                for t in texts[start : start + PAGE_SIZE]
            )
            page_path = static_page(tmp_path / f"corpus-{start}.html", bodies)
            page = browser.new_page()
            page.goto(page_path.as_uri())
            page.wait_for_function("() => document.body.dataset.math === 'done'", timeout=120_000)
            out += page.evaluate(SHOWN)
            page.close()
    return out


def faults(texts: list[str], pages: list[dict], sources: list[str] | None = None) -> list[str]:
    """One line per fault: where the text comes from, what kind of fault, and a snippet of it."""
    found = []
    for number, (text, page) in enumerate(zip(texts, pages, strict=True)):
        where = sources[number] if sources else f"text {number} {text[:60]!r}"
        # A command KaTeX knows seen anywhere in the visible text (the walk in the page gives each
        # with its context; this catches what the walk might miss).
        raw = page["raw"] or [
            page["text"][max(0, m.start() - 60) : m.end() + 60] for m in RAW_TEX.finditer(page["text"])
        ]
        for kind, shown_there in (
            ("raw TeX in the prose", raw),
            ("shown as source", page["guarded"]),
            ("wider than its text", page["wide"]),
        ):
            found += [f"{where}: {kind}: {snippet[:160]!r}" for snippet in shown_there[:3]]
        if page["errors"]:
            found.append(f"{where}: {page['errors']} KaTeX error(s)")
    return found


@pytest.mark.browser
def test_our_corpus_of_markdown_breakers_is_typeset_whole(tmp_path):
    require_chromium()
    pages = shown(tmp_path, OWN_CORPUS)
    found = faults(OWN_CORPUS, pages)
    assert not found, f"{len(found)} faults:\n" + "\n".join(found)
    by_text = dict(zip(OWN_CORPUS, pages, strict=True))
    assert all(page["typeset"] for page in pages)
    prices = by_text["The price rises from $40 to $60, a rise of $\\frac{20}{40} = 50\\%$."]
    assert "from $40 to $60" in prices["text"] and prices["typeset"] == 1 and "<em>" not in prices["html"]
    assert "50%" in by_text["About $50\\%$ of them, so $\\boxed{50\\%}$."]["text"]
    table = by_text[OWN_CORPUS[7]]
    assert "<table>" in table["html"] and table["typeset"] == 3  # $n$, $n^2$, \\boxed{9}
    assert "{1,2}" in by_text[OWN_CORPUS[4]]["text"].replace(" ", "")


@pytest.mark.browser
def test_real_responses_show_no_katex_error_and_no_raw_tex(tmp_path):
    require_chromium()
    corpus = real_corpus()
    assert len(corpus) >= 300
    sources, texts = [where for where, _ in corpus], [text for _, text in corpus]
    pages = shown(tmp_path, texts)
    found = faults(texts, pages, sources)
    assert not found, f"{len(found)} faults:\n" + "\n".join(found)
    # Most of them hold maths, and it was typeset (not merely left alone).
    assert sum(1 for page in pages if page["typeset"]) >= len(texts) // 3
