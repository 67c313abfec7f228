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

# Commands that only make sense as maths: written bare in prose, each starts a formula (a "bare
# run", below). Text-mode commands (\text, \emph, \textbf) never start one: outside maths they are
# prose; inside a run they are kept.
_BARE_WITH_ARGUMENTS = frozenset(
    {
        "boxed", "fbox", "frac", "dfrac", "tfrac", "cfrac", "binom", "dbinom", "tbinom", "sqrt", "overline",
        "underline", "vec", "hat", "bar", "tilde", "dot", "ddot", "widehat", "widetilde", "overrightarrow",
        "overleftarrow", "mathrm", "mathbf", "mathit", "mathbb", "mathcal", "mathsf", "mathtt", "mathfrak",
        "boldsymbol", "bm", "operatorname", "pmod", "norm", "abs", "cancel", "cancelto", "underbrace",
        "overbrace", "xrightarrow", "xleftarrow",
    }
)  # fmt: skip
_BARE_SYMBOLS = frozenset(
    {
        # Greek, lower case with the var- forms, and upper case
        "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota",
        "kappa", "lambda", "mu", "nu", "xi", "pi", "varpi", "rho", "varrho", "sigma", "varsigma", "tau",
        "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi",
        "Sigma", "Upsilon", "Phi", "Psi", "Omega",
        # operators, relations, arrows, symbols
        "infty", "times", "cdot", "div", "pm", "mp", "ast", "star", "leq", "geq", "le", "ge", "leqslant",
        "geqslant", "neq", "ne", "approx", "equiv", "propto", "circ", "degree", "angle", "measuredangle",
        "triangle", "square", "perp", "parallel", "sim", "simeq", "cong", "in", "notin", "ni", "subset",
        "subseteq", "supset", "supseteq", "cup", "cap", "setminus", "emptyset", "varnothing", "forall",
        "exists", "neg", "land", "lor", "wedge", "vee", "oplus", "ominus", "otimes", "rightarrow",
        "leftarrow", "Rightarrow", "Leftarrow", "leftrightarrow", "Leftrightarrow", "longrightarrow",
        "Longrightarrow", "mapsto", "implies", "iff", "to", "uparrow", "downarrow", "ldots", "cdots",
        "dots", "dotsm", "vdots", "ddots", "partial", "nabla", "prime", "hbar", "ell", "surd", "aleph",
        "mid", "nmid", "vert", "Vert", "lvert", "rvert", "lVert", "rVert", "langle", "rangle", "lfloor",
        "rfloor", "lceil", "rceil", "left", "right", "bigl", "bigr", "Bigl", "Bigr",
        # big operators and named functions
        "sum", "prod", "coprod", "int", "iint", "iiint", "oint", "bigcup", "bigcap", "lim", "limsup",
        "liminf", "sup", "inf", "max", "min", "argmax", "argmin", "det", "exp", "log", "ln", "lg", "sin",
        "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "coth",
        "gcd", "lcm", "deg", "dim", "ker", "bmod", "mod",
        # text-mode symbols, typeset through review.js's macros
        "textcent", "textdegree", "textmu", "textpm", "texttimes",
    }
)  # fmt: skip
_COMMAND_NAME = re.compile(r"[A-Za-z]+")
_SHORT_ARGUMENTS = re.compile(r" ?\d{1,2}(?!\d)")
_ENV_NAME = re.compile(r"\\begin\{([A-Za-z]+\*?)\}")
# Environments KaTeX typesets in display mode only: inside a sentence they are still a display.
_DISPLAY_ONLY = frozenset(
    {"align", "align*", "alignat", "alignat*", "gather", "gather*", "equation", "equation*", "multline",
     "multline*", "eqnarray", "eqnarray*", "flalign", "flalign*", "CD", "tabular"}
)  # fmt: skip
# An argument longer than this is not a formula someone wrote bare; it stays text.
_MAX_BARE_ARGUMENT = 2_000
# Characters a bare run goes on through (with commands, brace groups and one-letter variables);
# a word of two letters or more, a newline, `$` or `%` (a comment to TeX) ends it.
_RUN_OPERATORS = frozenset("=+-*/<>^_()[]|!':~")
_RUN_TRAILING = " ,;:.([=^_"
# A symbol glued to the variable after it by a lost space (\DeltaE, \omegax): at most this many letters.
_MAX_GLUED = 2
_WORD_SCRIPT = re.compile(r"([_^])([A-Za-z]{2,})")


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


def _bare_command_name(src: str, pos: int) -> tuple[str, int] | None:
    """(name, end) of a maths command that may start a bare run at src[pos] == '\\'. A Greek
    letter or a symbol glued to a one- or two-letter variable by a lost space (`\\DeltaE`,
    `\\omegax_max`) counts too; review.js lets KaTeX say whether the glued name is a command of its
    own (`\\top`) and splits it only when it is not."""
    name = _COMMAND_NAME.match(src, pos + 1)
    if name is None:
        return None
    word = name.group()
    if word in _BARE_SYMBOLS or word in _BARE_WITH_ARGUMENTS:
        return word, name.end()
    for cut in range(len(word) - 1, max(1, len(word) - _MAX_GLUED - 1), -1):
        if word[:cut] in _BARE_SYMBOLS:
            return word, name.end()
    return None


def _bare_command_end(env: MutableMapping[str, Any], src: str, pos: int) -> int:
    """End of a bare maths command starting at src[pos] == '\\', or -1 when it is not one."""
    found = _bare_command_name(src, pos)
    if found is None:
        return -1
    word, end = found
    if word not in _BARE_WITH_ARGUMENTS:
        return end
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


def _next_significant(src: str, at: int, stop: int) -> str:
    while at < stop and src[at] in " \t":
        at += 1
    return src[at] if at < stop else ""


def _bare_run_end(env: MutableMapping[str, Any], src: str, pos: int, stop: int) -> int:
    """End of the formula a model wrote bare, from the maths command at src[pos], or -1.

    Models write maths without delimiters: `\\Delta S = \\Delta H / T, where`, `\\left(\\frac{1}{T_2}
    - \\frac{1}{T_1}\\right) = -525 kJ`. The formula goes on past its first command through further
    commands (any, `\\mathrm{~K}` and `\\,` included), brace groups, digits, operators and one-letter
    variables, and ends at prose: a word of two letters or more, a newline, `$`, `%`, or a `.` not
    followed by a digit. `\\left`/`\\right` must pair up inside it, and trailing spaces and
    punctuation stay prose. One pass over the characters it takes."""
    end = _bare_command_end(env, src, pos)
    if end == -1:
        return -1
    stop = min(stop, pos + 2 * _MAX_BARE_ARGUMENT)
    partners = _brace_partners(env, src)
    lefts: list[int] = []  # where each open \left starts
    if src.startswith("\\left", pos):
        lefts.append(pos)
    elif src.startswith("\\right", pos) and not src.startswith("\\rightarrow", pos):
        return -1
    at = command = end
    last = src[end - 1] if src[end - 1] in "}0123456789" else "\\"  # what the command ended with
    while at < stop:
        c = src[at]
        if c == "\\":
            name = _COMMAND_NAME.match(src, at + 1)
            if name is not None:
                word = name.group()
                if word in ("begin", "end"):
                    break  # an environment is a formula of its own
                if word == "left":
                    lefts.append(at)
                elif word == "right":
                    if not lefts:
                        break
                    lefts.pop()
                command, at, last = at, name.end(), "\\"
                continue
            if at + 1 < stop and src[at + 1] in ",;!: {}|":  # a space or a brace of TeX's
                at, last = at + 2, "\\"
                continue
            break
        if c == "{":
            close = partners.get(at, -1)
            if close == -1 or close >= stop:
                if last == "\\":
                    at = command  # a command cut off before its argument (a truncated text) stays prose
                break
            at, last = close + 1, "}"
            continue
        if c.isascii() and c.isalpha():
            word_end = at
            while word_end < stop and src[word_end].isascii() and src[word_end].isalpha():
                word_end += 1
            if word_end - at > 1 and last not in "_^":
                break  # prose
            if word_end - at == 1 and last not in "_^":
                # A lone letter is a variable beside maths ("/ T", "\\rho v L"), an article beside
                # prose ("\\frac{1}{2}, a root").
                after = _next_significant(src, word_end, stop)
                if (
                    last not in _RUN_OPERATORS
                    and last not in "\\})0123456789"
                    and (not after or (after not in _RUN_OPERATORS and after != "\\" and not after.isdigit()))
                ):
                    break
            at, last = word_end, "a"
            continue
        if c.isdigit() or c in _RUN_OPERATORS or c == ",":
            at, last = at + 1, c
            continue
        if c == "." and at + 1 < stop and src[at + 1].isdigit():
            at, last = at + 1, c
            continue
        if c in " \t":
            at += 1
            continue
        break
    if lefts:
        at = lefts[0]  # an unpaired \left: the formula stops before it
        if at == pos:
            return -1
    while at > end and src[at - 1] in _RUN_TRAILING:
        at -= 1
    return max(at, end)


def _bare_tex(tex: str) -> str:
    """What KaTeX typesets of a bare run: a word subscript or superscript in prose notation
    (`x_max`, `v_rms`) is the whole word, as the writer meant, not its first letter."""
    return _WORD_SCRIPT.sub(r"\1{\2}", tex)


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
    if src[pos + 1] == _HELD_OPEN:
        return _held_display(state, silent)
    span = _delimited_end(state.env, src, pos)
    if span is not None:
        start, stop, end, display = span
        if end > state.posMax:
            return False
        # An environment inside a sentence (a pmatrix in prose) is typeset in the line, as written,
        # unless KaTeX typesets it only as a display (align*, gather, ...).
        environment = _ENV_NAME.match(src, pos)
        display = display and (environment is None or environment.group(1) in _DISPLAY_ONLY)
        tex = src[start:stop]
    else:
        end = _bare_run_end(state.env, src, pos, state.posMax)
        if end == -1 or end > state.posMax:
            return False
        start, stop, display = pos, end, False
        tex = _bare_tex(src[start:stop])
    if not silent:
        token = state.push("math_tex", "span", 0)
        token.content = tex
        token.meta = {"display": display, "source": src[pos:end]}
    state.pos = end
    return True


def _held_display(state: StateInline, silent: bool) -> bool:
    held = _HELD.match(state.src, state.pos)
    displays = state.env.get("held_displays") or []
    if held is None or held.end() > state.posMax or int(held.group(1)) >= len(displays):
        return False
    if not silent:
        tex, source = displays[int(held.group(1))]
        token = state.push("math_tex", "span", 0)
        token.content = tex
        token.meta = {"display": True, "source": source}
    state.pos = held.end()
    return True


# `$ x^2 $`, `$\\displaystyle … $`: a formula with a space just inside its dollars, which Pandoc's
# rule refuses (so that "between $ 3 and $ 4" stays prose). Taken when what it holds is maths by its
# look: a command, a script, a brace, or one letter alone (`$ X $`).
_SPACED_MATHS = re.compile(r"\\[A-Za-z]|[\^_{]|^\s*[A-Za-z]\s*$")


def _spaced_dollar(state: StateInline, silent: bool) -> bool:
    src, pos, stop = state.src, state.pos, state.posMax
    if src[pos] != "$" or src.startswith("$$", pos) or (pos and src[pos - 1] in "\\$0123456789"):
        return False
    close = src.find("$", pos + 1, stop)
    while close != -1 and src[close - 1] == "\\":
        close = src.find("$", close + 1, stop)
    # On its line (each opener scans only to the next dollar: linear however many there are).
    if close == -1 or src.find("\n", pos, close) != -1:
        return False
    if src.startswith("$$", close) or src[close + 1 : close + 2].isdigit():
        return False
    content = src[pos + 1 : close]
    if not content.strip() or not (content[0].isspace() or content[-1].isspace()):
        return False  # no space just inside: Pandoc's rule, dollarmath's
    if not _SPACED_MATHS.search(content):
        return False
    if not silent:
        token = state.push("math_tex", "span", 0)
        token.content = content.strip()
        token.meta = {"display": False, "source": src[pos : close + 1]}
    state.pos = close + 1
    return True


# Text-mode commands written in prose (`<answer>261 \\, \\text{GeV}</answer>`, `\\textbf{Step 1}`):
# shown as the text they format, not as the command.
_TEXT_COMMANDS = {
    "text": "", "textrm": "", "textnormal": "", "textup": "", "textsf": "", "mbox": "",
    "textbf": "strong", "emph": "em", "textit": "em", "textsl": "em", "texttt": "code",
}  # fmt: skip
_TEX_SPACES = {",": "\u202f", ";": " "}


def _text_command(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != "\\":
        return False
    space = _TEX_SPACES.get(src[pos + 1 : pos + 2])
    if space is not None:  # `261 \\, \\text{GeV}`: TeX's space, not Markdown's escaped comma
        if not silent:
            state.push("text", "", 0).content = space
        state.pos = pos + 2
        return True
    name = _COMMAND_NAME.match(src, pos + 1)
    if name is None or name.group() not in _TEXT_COMMANDS:
        return False
    close = _brace_partners(state.env, src).get(name.end(), -1)
    if close == -1 or close >= state.posMax or close - name.end() > _MAX_BARE_ARGUMENT:
        return False
    if silent:
        state.pos = close + 1
        return True
    tag = _TEXT_COMMANDS[name.group()]
    if tag:
        state.push(f"tex_{tag}_open", tag, 1)
    old_max = state.posMax
    state.pos, state.posMax = name.end() + 1, close
    state.md.inline.tokenize(state)
    state.pos, state.posMax = close + 1, old_max
    if tag:
        state.push(f"tex_{tag}_close", tag, -1)
    return True


def _inside_open_display(src: str, at: int) -> bool:
    """Whether a `\\[` or `$$` opened within the last formula's length before `at` is still open."""
    since = max(0, at - _MAX_CUT_FORMULA)
    bracket = src.rfind("\\[", since, at)
    if bracket != -1 and src.find("\\]", bracket, at) == -1:
        return True
    return len(_DOLLARS.findall(src, since, at)) % 2 == 1


def _latex_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """`\\[` or `\\begin{env}` at the start of a line: the formula runs to its closer, across blank
    lines and lines that Markdown would otherwise read as lists, headings or code."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    begin = state.bMarks[start_line] + state.tShift[start_line]
    src = state.src
    if not (src.startswith("\\[", begin) or src.startswith("\\begin{", begin)):
        return False
    if _inside_open_display(src, begin):
        return False  # `\[ f(x) = \left\{` on the line before: this environment is inside that formula
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


# What KaTeX cannot read but a LaTeX user writes, rewritten in the TeX it typesets (the source view
# keeps what was written). Commands go through KaTeX's `macros` (review.js); environments and column
# specifications cannot, so they are rewritten here.
_COLUMN_SPEC = re.compile(r"(\\begin\{(?:array|tabular)\*?\})\{((?:[^{}]|\{[^{}]*\})*)\}")
_SPEC_EXTRA = re.compile(r"[@!]\{[^{}]*\}|[pmb]\{[^{}]*\}|\*\{\d+\}\{[^{}]*\}")
_RENAMED_ENVIRONMENTS = {"eqnarray": ("array", "{rcl}"), "multline": ("gather", ""), "tabular": ("array", "")}
_ENVIRONMENT_TAG = re.compile(r"\\(begin|end)\{(eqnarray|multline|tabular)\*?\}")
_TABULAR = re.compile(
    r"\\begin\{tabular\*?\}(?:\[[a-z]\])?(\{(?:[^{}]|\{[^{}]*\})*\})?(.*?)\\end\{tabular\*?\}", re.DOTALL
)
_ROW_RULES = re.compile(r"^(\s*(?:\\hline|\\cline\{[^{}]*\})\s*)+")
_MULTICOLUMN = re.compile(r"\\multicolumn\{\d+\}\{[^{}]*\}\{((?:[^{}]|\{[^{}]*\})*)\}")
_CELL_SPLIT = re.compile(r"(?<!\\)&")
_ROW_SPLIT = re.compile(r"\\\\")
_LABEL = re.compile(r"\\label\{[^{}]*\}")


def _column_spec(match: re.Match[str]) -> str:
    # KaTeX reads l, c, r and rules; @{} and !{} (material between columns), p{} widths and *{n}{}
    # repeats it refuses. A spec with no column left is one centred column.
    spec = _SPEC_EXTRA.sub(lambda m: "l" if m.group()[0] in "pmb" else "", match.group(2))
    return f"{match.group(1)}{{{spec or 'c'}}}"


def _tabular_cell(cell: str) -> str:
    # A tabular cell is text, its `$…$` maths: KaTeX's \\text reads both.
    cell = _MULTICOLUMN.sub(r"\1", cell.strip())
    return f"\\text{{{cell}}}" if cell else ""


def _tabular(match: re.Match[str]) -> str:
    rows = []
    for row in _ROW_SPLIT.split(match.group(2)):
        rules = _ROW_RULES.match(row)
        lead = "\\hline " * (rules.group().count("\\") if rules else 0)
        cells = _CELL_SPLIT.split(row[rules.end() :] if rules else row)
        rows.append(lead + " & ".join(_tabular_cell(cell) for cell in cells))
    return f"\\begin{{array}}{match.group(1) or '{c}'}" + " \\\\ ".join(rows) + "\\end{array}"


def katex_tex(tex: str) -> str:
    """The formula as KaTeX is given it: environments and column specifications it lacks
    rewritten to ones it has (tabular's text cells as `\\text`), `\\cline` as a full rule, labels
    dropped."""
    if "\\" not in tex:
        return tex
    tex = _TABULAR.sub(_tabular, tex)
    tex = _ENVIRONMENT_TAG.sub(
        lambda m: (
            f"\\{m.group(1)}{{{_RENAMED_ENVIRONMENTS[m.group(2)][0]}}}"
            + (_RENAMED_ENVIRONMENTS[m.group(2)][1] if m.group(1) == "begin" else "")
        ),
        tex,
    )
    tex = _COLUMN_SPEC.sub(_column_spec, tex)
    tex = re.sub(r"\\cline\{[^{}]*\}", r"\\hline", tex)
    return _LABEL.sub("", tex)


_TEX_LIKE = re.compile(r"[\\^_{}]")
_COMMAND = re.compile(r"\\[A-Za-z]")
_CUT_TOKENS = re.compile(
    r"\\(?:begin|end)\{([A-Za-z]+\*?)\}|\\left(?![A-Za-z])|\\right(?![A-Za-z])|\\.|[{}]", re.DOTALL
)
_DOLLARS = re.compile(r"(?<!\\)\$\$")
# A formula cut by the end of the text is closed only when it is short and holds no blank line:
# past that, an unclosed opener is more likely a stray one in prose.
_MAX_CUT_FORMULA = 4_000


def _open_groups(tex: str) -> tuple[list[str], int]:
    """(closers of the `\\left`s and environments left open, innermost last; where the outermost
    brace group left open begins, with the command or script that owns it, or -1)."""
    stack: list[tuple[str, int]] = []
    opened: dict[int, int] = {}  # closing brace -> its opening brace
    for token in _CUT_TOKENS.finditer(tex):
        text, at = token.group(), token.start()
        if text == "{":
            stack.append(("}", at))
        elif text.startswith("\\begin"):
            stack.append((f"\\end{{{token.group(1)}}}", at))
        elif text == "\\left":
            stack.append(("\\right.", at))
        else:
            wanted = {"}": "}", "\\right": "\\right."}.get(text, text)
            closing = text in ("}", "\\right") or text.startswith("\\end")
            if closing and stack and stack[-1][0] == wanted:
                closer, start = stack.pop()
                if closer == "}":
                    opened[at] = start
    braces = [start for closer, start in stack if closer == "}"]
    if not braces:
        return [closer for closer, _ in stack], -1
    owner = braces[0]
    # The group belongs to what stands before it: earlier arguments (`\\frac{1}{2`), then a
    # command or a script (`\\sqrt{`, `x^{`).
    while True:
        before = owner
        while before > 0 and tex[before - 1] == " ":
            before -= 1
        if before > 0 and tex[before - 1] == "}" and before - 1 in opened:
            owner = opened[before - 1]
            continue
        break
    command = re.search(r"(\\[A-Za-z]+|[\^_])\s*$", tex[:owner])
    return [], command.start() if command else owner


# A text command whose argument runs, plain text, to where the formula was cut.
_CUT_TEXT = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mbox|operatorname)\s*\{[^{}\\]*$")


def _cut_closed(formula: str) -> str:
    """A formula cut short, made whole: text cut in a text command's argument (`\\text{Interest`)
    is closed there; any other command or group cut in its arguments is dropped (half a `\\frac`
    cannot be typeset); then open `\\left`s and environments are closed."""
    # The text may end in a command's name or right after it, before its arguments: dropped.
    formula = re.sub(r"\\[A-Za-z]*$", "", formula).rstrip().rstrip("\\^_&")
    closers, cut = _open_groups(formula)
    if cut != -1 and _CUT_TEXT.match(formula, cut):
        closers, cut = _open_groups(formula + "}")
        formula += "}"
    if cut != -1:
        formula = formula[:cut].rstrip().rstrip("\\^_&")
        closers, _ = _open_groups(formula)
    return formula + "".join(reversed(closers))


_SINGLE_DOLLAR = re.compile(r"(?<![\\$])\$(?!\$)")
# `$\$$1500`, `$\$ $1.20`: a formula holding only a dollar sign, which the currency rule (no digit
# after a closing `$`) would leave as `$$` in the prose. It is that sign.
_DOLLAR_FORMULA = re.compile(r"\$\\\$\s*\$")


_DELIMITER_TOKENS = re.compile(r"\\[\[\]]|\\.|\$\$|\$|\n", re.DOTALL)


def display_spans(text: str) -> tuple[list[tuple[int, int, int]], int]:
    """([(start, end, delimiter width)] of the `$$…$$` and `\\[…\\]` displays in text, where the
    display left open at the end starts, or -1), in one pass. `$$` glued between an inline
    formula's text and the next formula's (`$x,$$y,$`) is two dollars, not a display's; a `\\[`
    with no `\\]` anywhere after it opens nothing but a formula cut at the end."""
    spans: list[tuple[int, int, int]] = []
    last_bracket_close = text.rfind("\\]")
    opened, mode, singles, unclosed_bracket = -1, "", 0, -1
    for token in _DELIMITER_TOKENS.finditer(text):
        found, at = token.group(), token.start()
        if found == "\n":
            singles = 0
        elif found == "\\[":
            if not mode:
                if at > last_bracket_close:
                    unclosed_bracket = at if unclosed_bracket == -1 else unclosed_bracket
                else:
                    opened, mode = at, "\\]"
        elif found == "\\]":
            if mode == "\\]":
                spans.append((opened, token.end(), 2))
                mode = ""
        elif found == "$$":
            if mode == "$$":
                spans.append((opened, token.end(), 2))
                mode = ""
            elif not mode and not (singles % 2 and at and not text[at - 1].isspace()):
                opened, mode = at, "$$"
        elif found == "$" and not mode:
            singles += 1
    open_at = [at for at in (opened if mode else -1, unclosed_bracket) if at != -1]
    return spans, min(open_at, default=-1)


def close_cut_formula(text: str) -> str:
    """A text as Markdown is given it: if it ends inside a formula (a response cut at its token
    limit: `$$H(X) = -\\left(\\frac{1}{2}`), that formula is closed where the text ends (a command
    cut in its arguments dropped, open `\\left`s and environments closed, then its delimiter);
    and a formula holding only a dollar sign is that sign."""
    text = _DOLLAR_FORMULA.sub(r"\\$", text)
    openers = []
    _, display = display_spans(text)
    if display != -1:
        openers.append((display, 2, "$$" if text.startswith("$$", display) else "\\]"))
    tail = max(0, len(text) - _MAX_CUT_FORMULA)
    singles = [m.start() for m in _SINGLE_DOLLAR.finditer(text)]
    # A cut inline formula: on the last line, and opened as Pandoc opens one (not `$ x`); a digit
    # after the opener is a price (`$20`) unless a command follows (`$2.89 \\times 10^{-9} \\mathrm`).
    if len(singles) % 2 and singles[-1] >= tail and "\n" not in text[singles[-1] :]:
        after = text[singles[-1] + 1 : singles[-1] + 2]
        if after and not after.isspace() and (not after.isdigit() or _COMMAND.search(text, singles[-1])):
            openers.append((singles[-1], 1, "$"))
    if not openers:
        environment = _ENV_NAME.search(text, tail)
        if environment is not None and _open_groups(text[environment.start() :]) != ([], -1):
            openers.append((environment.start(), 0, ""))
    if not openers:
        return text
    start, width, closer = min(openers)
    formula = text[start + width :].rstrip()
    if len(formula) > _MAX_CUT_FORMULA or "\n\n" in formula.strip("\n") or not _TEX_LIKE.search(formula):
        return text
    closed = _cut_closed(formula)
    if not closed.strip():
        return text  # nothing of the formula was written but its opener (`and $\\`): no formula
    return f"{text[: start + width]}{closed}{closer}"


# A display held out of Markdown's reach: `\` (so that the inline rules stop at it), then its number
# between two private-use characters. A text already holding those characters is not held.
_HELD_OPEN, _HELD_CLOSE = "\ue000", "\ue001"
_HELD = re.compile("\\\\\ue000(\\d+)\ue001")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_QUOTED_LINE = re.compile(r"\n[ \t]*>")


def hold_displays(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(text, held): each display formula over several lines that Markdown's block rules would
    break up, replaced by a mark, with its (TeX, source) in `held`. A display that opens mid-line
    (`subtract it from $10x$: $$\\begin{array}…`, `We have \\[`) is read by the inline rules, but
    only after the block rules have cut its lines into paragraphs: a line `- &x &=& 0` or `+ & & 1`
    starts a list, `# y` a heading. A display on lines of its own is the block rules' already; one
    inside a block quote keeps its `>` markers for Markdown to remove, and one across a blank line
    is more likely two stray delimiters than a formula."""
    if _HELD_OPEN in text or _HELD_CLOSE in text:
        return text, []
    spans, _ = display_spans(text)
    held: list[tuple[str, str]] = []
    pieces, done = [], 0
    for start, end, width in spans:
        source = text[start:end]
        if "\n" not in source or _BLANK_LINE.search(source) or _QUOTED_LINE.search(source):
            continue
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        own_lines = not text[line_start:start].strip() and not text[end : line_end if line_end != -1 else None].strip()
        if own_lines:
            continue
        pieces += [text[done:start], f"\\{_HELD_OPEN}{len(held)}{_HELD_CLOSE}"]
        held.append((source[width:-width], source))
        done = end
    if not held:
        return text, []
    return "".join(pieces) + text[done:], held


def parse(text: str) -> tuple[list[Token], dict[str, Any]]:
    """Markdown tokens of a model's or a dataset's text, and the env to render them with: a
    formula cut at the text's end closed, displays over several lines held from the block rules."""
    held_text, held = hold_displays(close_cut_formula(text))
    env: dict[str, Any] = {"held_displays": held}
    return MARKDOWN.parse(held_text, env), env


def render(tokens: Sequence[Token], env: dict[str, Any]) -> str:
    """HTML of parse()'s tokens. A held display the inline rules never saw (in a code span or
    block) is shown there as its source, escaped."""
    html = MARKDOWN.renderer.render(tokens, MARKDOWN.options, env)
    held = env.get("held_displays") or []
    if not held:
        return html
    return _HELD.sub(lambda m: escapeHtml(held[int(m.group(1))][1]), html)


def math_html(tex: str, *, display: bool, source: str) -> str:
    return (
        f'<span class="math-tex" data-display="{int(display)}" data-source="{escapeHtml(source)}">'
        f"{escapeHtml(katex_tex(tex))}</span>"
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
    md.inline.ruler.before("escape", "tex_text_command", _text_command)
    md.inline.ruler.before("math_inline", "spaced_dollar_math", _spaced_dollar)
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


def answer_html(answer: str) -> str:
    """An extracted or reference answer (`\\frac{1}{2}`, `x^2`, `10,001`): readers and datasets
    write answers as TeX without delimiters, so a TeX-looking answer is one formula; one with
    delimiters is read as a line of text; anything else is plain text."""
    if _DELIMITED.search(answer):
        return inline_html(answer)
    if _TEX_LIKE.search(answer):
        return math_html(answer, display=False, source=answer)
    return escapeHtml(answer)
