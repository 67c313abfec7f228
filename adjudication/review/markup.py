"""Math-aware Markdown for model text.

Markdown and LaTeX fight over the same characters: Markdown's escapes turn `\\[`, `\\{`, `\\%` and
`\\,` into `[`, `{`, `%` and `,`, and its emphasis reads `*` and `_` inside formulas. So maths is
taken out first, as Markdown tokens of its own, and never seen by the Markdown rules:

- `$…$` and `$$…$$` by mdit-py-plugins' dollarmath, with Pandoc's currency rule (no space just
  inside the dollars, no digit right after the closing one): "from $40 to $60" stays text;
- `\\(…\\)`, `\\[…\\]` and `\\begin{env}…\\end{env}`, inline or on lines of their own;
- a bare maths command outside any delimiters (`\\boxed{5\\sqrt 2}`, `\\frac{1}{2}`, `\\pi`), as
  models write them, with its brace arguments.

Each formula becomes `<span class="math-tex">` holding its TeX as escaped text; review.js typesets
it with KaTeX under its guards, and the source view shows the text as written. Model text is
untrusted: raw HTML is off, so everything the model wrote reaches the page escaped.

Every scan here is linear in the text: closing delimiters are found once per text and delimiter
(a cache of the next occurrence), brace pairs once per text (a stack), so a response of ten
thousand unclosed `\\(` or `\\frac{` costs no more than one pass each.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

# Commands that only make sense as maths: written bare in prose, they are typeset with their
# brace arguments. Text-mode commands (\text, \emph) are left alone: outside maths they are prose.
_BARE_WITH_ARGUMENTS = frozenset(
    {"boxed", "fbox", "frac", "dfrac", "tfrac", "cfrac", "binom", "dbinom", "sqrt", "overline", "vec", "hat"}
)
_BARE_SYMBOLS = frozenset(
    {
        "pi", "theta", "alpha", "beta", "gamma", "delta", "lambda", "mu", "sigma", "omega", "phi", "epsilon",
        "infty", "times", "cdot", "div", "pm", "mp", "leq", "geq", "le", "ge", "neq", "ne", "approx", "equiv",
        "circ", "angle", "triangle", "perp", "parallel", "sim", "cong", "in", "notin", "subset", "subseteq",
        "cup", "cap", "emptyset", "forall", "exists", "rightarrow", "Rightarrow", "implies", "iff", "to",
        "ldots", "cdots", "dots", "sum", "prod", "int", "log", "ln", "sin", "cos", "tan",
    }
)  # fmt: skip
_COMMAND_NAME = re.compile(r"[A-Za-z]+")
_SHORT_ARGUMENTS = re.compile(r" ?\d{1,2}(?!\d)")
_ENV_NAME = re.compile(r"\\begin\{([A-Za-z]+\*?)\}")
# An argument longer than this is not a formula someone wrote bare; it stays text.
_MAX_BARE_ARGUMENT = 2_000


def _next_index(env: MutableMapping[str, Any], src: str, needle: str, start: int) -> int:
    """src.find(needle, start), remembered: the first occurrence at or after p is the answer for
    every start from p up to it, so repeated openers without a closer cost one scan in all."""
    cache: dict[tuple[str, str], tuple[int, int]] = env.setdefault("_math_next", {})
    known = cache.get((needle, src))
    if known is not None and known[0] <= start and (known[1] == -1 or start <= known[1]):
        return known[1]
    found = src.find(needle, start)
    cache[(needle, src)] = (start, found)
    return found


def _brace_partners(env: MutableMapping[str, Any], src: str) -> dict[int, int]:
    """Index of each `{` → index of its `}` (escaped `\\{` `\\}` are not braces), computed once per text."""
    cache: dict[str, dict[int, int]] = env.setdefault("_math_braces", {})
    partners = cache.get(src)
    if partners is None:
        partners, stack, i = {}, [], 0
        while i < len(src):
            c = src[i]
            if c == "\\":
                i += 2
                continue
            if c == "{":
                stack.append(i)
            elif c == "}" and stack:
                partners[stack.pop()] = i
            i += 1
        cache[src] = partners
    return partners


def _bare_command_end(env: MutableMapping[str, Any], src: str, pos: int) -> int:
    """End of a bare maths command starting at src[pos] == '\\', or -1 when it is not one."""
    name = _COMMAND_NAME.match(src, pos + 1)
    if name is None:
        return -1
    end = name.end()
    if name.group() in _BARE_SYMBOLS:
        return end
    if name.group() not in _BARE_WITH_ARGUMENTS:
        return -1
    partners = _brace_partners(env, src)
    if src.startswith("[", end):  # \sqrt[3]{x}
        close = src.find("]", end, end + 50)
        if close == -1:
            return -1
        end = close + 1
    arguments = 0
    while True:
        at = end
        while at < len(src) and src[at] == " ":
            at += 1
        close = partners.get(at, -1)
        if close == -1 or close - at > _MAX_BARE_ARGUMENT:
            break
        end, arguments = close + 1, arguments + 1
    # \sqrt 2, \frac12: LaTeX reads one-character arguments without braces. In prose only digits
    # count: "\frac alone" is a word after a stray command, not a/l.
    if arguments == 0:
        short = _SHORT_ARGUMENTS.match(src, end)
        return short.end() if short else -1
    return end


def _delimited_end(env: MutableMapping[str, Any], src: str, pos: int) -> tuple[int, int, int, bool] | None:
    """(content start, content end, span end, display) of a `\\(` `\\[` or `\\begin{}` span at pos."""
    if src.startswith("\\(", pos) or src.startswith("\\[", pos):
        closer = "\\)" if src[pos + 1] == "(" else "\\]"
        close = _next_index(env, src, closer, pos + 2)
        if close == -1 or close == pos + 2:
            return None
        return pos + 2, close, close + 2, closer == "\\]"
    env_name = _ENV_NAME.match(src, pos)
    if env_name is not None:
        closer = f"\\end{{{env_name.group(1)}}}"
        close = _next_index(env, src, closer, env_name.end())
        if close == -1:
            return None
        # KaTeX typesets the environment itself, so the formula is the whole \begin…\end.
        return pos, close + len(closer), close + len(closer), True
    return None


def _latex_inline(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != "\\" or pos + 1 >= state.posMax:
        return False
    span = _delimited_end(state.env, src, pos)
    if span is not None:
        start, stop, end, display = span
        if end > state.posMax:
            return False
        # An environment inside a sentence (a pmatrix in prose) is typeset in the line, as written.
        display = display and not src.startswith("\\begin", pos)
    else:
        end = _bare_command_end(state.env, src, pos)
        if end == -1 or end > state.posMax:
            return False
        start, stop, display = pos, end, False
    if not silent:
        token = state.push("math_tex", "span", 0)
        token.content = src[start:stop]
        token.meta = {"display": display, "source": src[pos:end]}
    state.pos = end
    return True


def _latex_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """`\\[` or `\\begin{env}` at the start of a line: the formula runs to its closer, across blank
    lines and lines that Markdown would otherwise read as lists, headings or code."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    begin = state.bMarks[start_line] + state.tShift[start_line]
    src = state.src
    if not (src.startswith("\\[", begin) or src.startswith("\\begin{", begin)):
        return False
    span = _delimited_end(state.env, src, begin)
    if span is None:
        return False
    start, stop, end, _display = span
    line = start_line
    while line < end_line and end > state.eMarks[line]:
        line += 1
    if line >= end_line or src[end : state.eMarks[line]].strip():
        return False  # unclosed in this block, or prose after the closer: leave it to the paragraph
    if silent:
        return True
    token = state.push("math_tex_block", "div", 0)
    token.block = True
    token.content = src[start:stop]
    token.meta = {"display": True, "source": src[begin:end]}
    token.map = [start_line, line + 1]
    state.line = line + 1
    return True


def math_html(tex: str, *, display: bool, source: str) -> str:
    return (
        f'<span class="math-tex" data-display="{int(display)}" data-source="{escapeHtml(source)}">'
        f"{escapeHtml(tex)}</span>"
    )


def _render_tex(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    html = math_html(token.content, display=bool(token.meta["display"]), source=str(token.meta["source"]))
    return f"<div>{html}</div>\n" if token.block else html


def _render_dollar(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    display = token.type != "math_inline"
    html = math_html(token.content.strip(), display=display, source=f"{token.markup}{token.content}{token.markup}")
    return f"<div>{html}</div>\n" if token.block else html


def _markdown() -> MarkdownIt:
    # html=False: raw HTML in model text is shown as text, never rendered; markdown-it also refuses
    # javascript:/vbscript:/data: link targets.
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # Pandoc's rule for $: no space just inside, no digit after the closing one, so prices stay prose.
    dollarmath_plugin(md, allow_space=False, allow_digits=False, double_inline=True, allow_labels=False)
    md.inline.ruler.before("escape", "latex_math", _latex_inline)
    md.block.ruler.before("fence", "latex_math_block", _latex_block, {"alt": ["paragraph"]})
    for rule in ("math_inline", "math_inline_double", "math_block"):
        md.add_render_rule(rule, _render_dollar)
    md.add_render_rule("math_tex", _render_tex)
    md.add_render_rule("math_tex_block", _render_tex)
    return md


MARKDOWN = _markdown()


def inline_html(text: str) -> str:
    """One line of model or dataset text (an option): maths typeset, no block Markdown."""
    return MARKDOWN.renderInline(text, {})


_DELIMITED = re.compile(r"\$|\\[(\[]|\\begin\{")
_TEX_LIKE = re.compile(r"[\\^_{}]")


def answer_html(answer: str) -> str:
    """An extracted or reference answer (`\\frac{1}{2}`, `x^2`, `10,001`): readers and datasets
    write answers as TeX without delimiters, so a TeX-looking answer is one formula; one with
    delimiters is read as a line of text; anything else is plain text."""
    if _DELIMITED.search(answer):
        return inline_html(answer)
    if _TEX_LIKE.search(answer):
        return math_html(answer, display=False, source=answer)
    return escapeHtml(answer)
