"""Math-aware Markdown (adjudication.review.markup): what reaches the page for the formulas models
write, on the server side; tests/review/test_maths_corpus.py checks what Chromium then shows."""

from __future__ import annotations

import html
import re

import pytest

from adjudication.review.markup import (
    MARKDOWN,
    answer_html,
    close_cut_formula,
    display_spans,
    inline_html,
    katex_tex,
    parse,
    render,
)

FORMULA = re.compile(r'<span class="math-tex" data-display="([01])" data-source="([^"]*)">([^<]*)</span>')


def page_html(text: str) -> str:
    """The HTML the item page gets for a text (rendering.py's path: parse, then render)."""
    return render(*parse(text))


def formulas(text: str) -> list[tuple[bool, str]]:
    """(display, TeX) of each formula the rendering marks, TeX unescaped."""
    return [(d == "1", html.unescape(tex)) for d, _source, tex in FORMULA.findall(page_html(text))]


def prose(text: str) -> str:
    """The rendering with the formulas taken out: what Markdown made of the rest."""
    return FORMULA.sub("§", page_html(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\[\boxed{\$24,200}\]", [(True, r"\boxed{\$24,200}")]),
        (r"It is $50\%$.", [(False, r"50\%")]),
        (r"$\boxed{50\%}$", [(False, r"\boxed{50\%}")]),
        (r"The answer is \boxed{5\sqrt 2}.", [(False, r"\boxed{5\sqrt 2}")]),
        (r"$\int_0^1 x\,dx$", [(False, r"\int_0^1 x\,dx")]),
        (r"$\{1, 2\}$", [(False, r"\{1, 2\}")]),
        (r"so \(x = 2\) and \(y_1 * y_2\)", [(False, "x = 2"), (False, "y_1 * y_2")]),
        ("$$a_1 * b_2 * c$$", [(True, "a_1 * b_2 * c")]),
        ("$2 + 3 = 5$", [(False, "2 + 3 = 5")]),
    ],
)
def test_markdown_never_touches_what_is_inside_a_formula(text, expected):
    assert formulas(text) == expected


def test_an_aligned_block_keeps_its_line_breaks_and_ampersands():
    text = "Adding:\n\\[\n\\begin{aligned}\na &= b \\\\\n- c &= d\n\\end{aligned}\n\\]\nso done."
    [(display, tex)] = formulas(text)
    assert display and "a &= b \\\\\n- c &= d" in tex  # the "- c" line is not a Markdown list item
    assert "<li>" not in prose(text)


def test_a_bare_environment_on_its_own_lines_is_one_formula_even_across_a_blank_line():
    text = "\\begin{align}\nx &= 1\n\n# y &= 2\n\\end{align}\nafter"
    [(display, tex)] = formulas(text)
    assert display and tex.startswith("\\begin{align}") and tex.endswith("\\end{align}") and "# y" in tex
    assert "<h1>" not in prose(text) and "after" in prose(text)


def test_bare_maths_commands_in_prose_are_formulas_with_their_arguments():
    assert formulas(r"Half is \frac{1}{2}, a root \sqrt[3]{x^2} and \pi; also \frac12 and \dfrac{a}{b}.") == [
        (False, r"\frac{1}{2}"),
        (False, r"\sqrt[3]{x^2}"),
        (False, r"\pi"),
        (False, r"\frac12"),
        (False, r"\dfrac{a}{b}"),
    ]
    # Prose commands are not maths, and a command without its argument is left as written.
    assert formulas(r"\emph{word} and \textbf{bold} and \frac alone") == []


@pytest.mark.parametrize(
    "text",
    [
        "The price rises from $40 to $60 over the year.",
        "It costs $5, and the tip is $1.50 more.",
        "Between $ 3 and $ 4 dollars.",
    ],
)
def test_dollar_amounts_are_prose_not_maths(text):
    assert formulas(text) == []
    assert "<em>" not in prose(text) and "$" in prose(text)


def test_a_price_next_to_a_formula_leaves_the_formula_alone():
    assert formulas("It costs $5, and $x^2$ is the area.") == [(False, "x^2")]


def test_markdown_tables_and_emphasis_still_render_around_formulas():
    rendered = MARKDOWN.render("| n | $n^2$ |\n|---|---|\n| 3 | 9 |\n\n**Bold** and *it* with $a*b*c$")
    assert "<table>" in rendered and "<th>" in rendered and "<strong>Bold</strong>" in rendered
    assert "<em>it</em>" in rendered and "a*b*c" in rendered and "<em>b</em>" not in rendered


def test_escaped_delimiters_and_code_are_not_formulas():
    assert formulas(r"A literal \$5 and \\(not maths\\) here.") == []
    assert formulas("`$x$` and\n\n```\n\\[y\\]\n```") == []


def test_model_html_is_escaped_inside_and_outside_formulas():
    rendered = MARKDOWN.render('<script>alert(1)</script> $<img src=x onerror="a()">$ \\(</b>\\)')
    assert "<script" not in rendered and "<img" not in rendered and "</b>" not in rendered
    assert formulas('$<img src=x onerror="a()">$') == [(False, '<img src=x onerror="a()">')]
    assert '"' not in FORMULA.search(MARKDOWN.render('$a"b$')).group(2).replace("&quot;", "")


@pytest.mark.parametrize(
    "hostile",
    [
        "\\(" * 20_000,
        "\\[ a " * 20_000,
        "\\frac{" * 20_000,
        "\\begin{x}" * 20_000,
        "\\sqrt[" * 20_000,
        "$a " * 20_000,
        "\\boxed{" + "{" * 20_000,
    ],
)
def test_unclosed_openers_by_the_thousand_render_as_escaped_text(hostile):
    # One scan per text and delimiter (bench/markup_bench.py times these against ordinary text).
    rendered = MARKDOWN.render(hostile)
    assert "<p>" in rendered and "<script" not in rendered
    assert html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip().replace("\\\\", "\\") != ""


def test_answers_render_as_one_formula_when_they_look_like_tex():
    assert answer_html("10,001") == "10,001"
    assert answer_html("a<b") == "a&lt;b"
    assert FORMULA.fullmatch(answer_html(r"\frac{1}{2}"))
    assert FORMULA.fullmatch(answer_html("x^2"))
    assert "math-tex" in answer_html(r"$\frac{1}{2}$") and "$" not in FORMULA.sub("", answer_html(r"$\frac{1}{2}$"))
    assert inline_html("An *option* with $x$") == (
        'An <em>option</em> with <span class="math-tex" data-display="0" data-source="$x$">x</span>'
    )


def test_bare_maths_runs_on_through_commands_variables_and_operators_until_prose():
    """Issue 36 item 11: maths written without delimiters is one formula, not a raw tail."""
    assert formulas(r"is given by \Delta S = \Delta H / T, where \Delta H is the enthalpy") == [
        (False, r"\Delta S = \Delta H / T"),
        (False, r"\Delta H"),
    ]
    cut = r"(-566 kJ)\left(\frac{1}{375 \mathrm{~K}}-\frac{1}{298 \mathrm{~K}}\right) = -525 kJ mol"
    assert formulas(cut) == [(False, r"\left(\frac{1}{375 \mathrm{~K}}-\frac{1}{298 \mathrm{~K}}\right) = -525")]
    # A subscript written as a word in prose notation is the whole word; a glued name starts a run.
    assert formulas(r"v_rms = (\omegax_max/ \surd2)") == [(False, r"\omegax_{max}/ \surd2)")]
    # An unpaired \left is not a formula; "a" beside prose is an article, not a variable.
    assert formulas(r"\left( alone") == []
    assert formulas(r"Half is \frac{1}{2}, a root") == [(False, r"\frac{1}{2}")]


def test_an_environment_katex_shows_only_as_a_display_is_a_display_inside_a_sentence():
    """Issue 36 item 11: `\\begin{align*}` after "Therefore," was typeset inline, which KaTeX refuses."""
    assert formulas("Therefore, \\begin{align*} a &= b \\end{align*} and \\begin{pmatrix} 1 \\end{pmatrix}") == [
        (True, "\\begin{align*} a &= b \\end{align*}"),
        (False, "\\begin{pmatrix} 1 \\end{pmatrix}"),
    ]


def test_a_formula_cut_at_the_end_of_the_text_is_closed_there():
    """Issue 36 item 11: a response truncated inside `$$` showed the `$$` and raw TeX in the prose."""
    truncated = "The entropy is then:\n$$H(X) = -\\left(\\frac{1}{2} \\log_2 \\frac{1}{2"
    assert close_cut_formula(truncated) == "The entropy is then:\n$$H(X) = -\\left(\\frac{1}{2} \\log_2\\right.$$"
    assert formulas(close_cut_formula(truncated)) == [(True, "H(X) = -\\left(\\frac{1}{2} \\log_2\\right.")]
    assert close_cut_formula("We get \\[ \\begin{aligned} x &= 1 \\\\ y &= \\sqrt{") == (
        "We get \\[ \\begin{aligned} x &= 1 \\\\ y &=\\end{aligned}\\]"
    )
    cut_inline = "so $\\Delta T = 7 \\mathrm{~J} / (82.5 \\mathrm"
    assert close_cut_formula(cut_inline) == "so $\\Delta T = 7 \\mathrm{~J} / (82.5$"
    # Prices and prose are not formulas: left as they are.
    for text in ("It costs $5", "From $40 to $60 and $$5 more.", "a $ 3 tip"):
        assert close_cut_formula(text) == text
    # A formula holding only a dollar sign is that sign (the currency rule left `$$1500` in the prose).
    assert close_cut_formula("costs $\\$$1500") == "costs \\$1500"


def test_environments_and_column_specs_katex_lacks_are_rewritten_for_it():
    """Issue 36 item 11: MATH's tabular, eqnarray, `@{}` columns and `\\cline` were shown as source."""
    assert katex_tex(r"\begin{array}{@{}c@{\;}c} a & b \\ \cline{1-2} c & d \end{array}") == (
        r"\begin{array}{cc} a & b \\ \hline c & d \end{array}"
    )
    assert katex_tex(r"\begin{eqnarray} a &=& b \end{eqnarray}") == r"\begin{array}{rcl} a &=& b \end{array}"
    assert katex_tex(r"\begin{tabular}{|l|c|}\hline Grade & $9^{th}$\\ \multicolumn{2}{c}{All} \end{tabular}") == (
        r"\begin{array}{|l|c|}\hline \text{Grade} & \text{$9^{th}$} \\ \text{All}\end{array}"
    )
    # What was written stays the formula's source.
    html = MARKDOWN.render(r"$\begin{eqnarray} a \end{eqnarray}$")
    assert FORMULA.search(html).group(2) == r"$\begin{eqnarray} a \end{eqnarray}$"


def test_a_display_opened_mid_line_keeps_lines_markdown_would_read_as_lists():
    """Issue 36 item 11: `$$\\begin{array}` after "from $10x$:" with a line `- &x &=& 0`, and `\\[`
    after "We have" with a line `+ & & 1`, were cut into a list by Markdown and left raw."""
    dollars = "from $10x$: $$\\begin{array}{r r}\n&10x &=& n \\\\\n- &x &=& 0 \\\\\n\\end{array}$$ This shows"
    assert formulas(dollars) == [
        (False, "10x"),
        (True, "\\begin{array}{r r}\n&10x &=& n \\\\\n- &x &=& 0 \\\\\n\\end{array}"),
    ]
    assert "<li>" not in prose(dollars) and "This shows" in prose(dollars)
    bracket = "We have \\[\n\\begin{array}{cc}\n& 1 \\\\\n+ & 2\n\\\\ \\cline{1-2}\n\\end{array}\n\\]Since $9$ is"
    [(display, tex), (_, nine)] = formulas(bracket)
    assert display and tex.startswith("\n\\begin{array}") and "+ & 2" in tex and nine == "9"
    assert "<li>" not in prose(bracket) and "Since" in prose(bracket)
    # In a code span the display stays code, as written; a display on lines of its own is a block.
    code = "See `$$a\n- b$$` here"
    assert formulas(code) == [] and "<code>$$a\n- b$$</code>" in page_html(code) and "\ue000" not in page_html(code)
    assert formulas("$$\na\n- b\n$$") == [(True, "a\n- b")]
    # Text already holding the marks' characters is rendered as it is, escaped.
    assert "\ue000" in page_html("x \\\ue0000\ue001 $$a\n- b$$ <i>")
    assert "<i>" not in page_html("x \\\ue0000\ue001 $$a\n- b$$ <i>")


def test_two_inline_formulas_glued_by_their_dollars_are_not_a_display():
    """Issue 36 item 11: `$x,$$y,$` was read as a `$$` left open, closed at the text's end."""
    text = "Since $x,$$y,$ and $z$ are positive, $xyz = 288.$  Then\n\\begin{align*}\nx &= 4\n\\end{align*}Hence $22.$"
    assert close_cut_formula(text) == text
    assert display_spans(text) == ([], -1)
    assert [tex for _, tex in formulas(text)][:3] == ["x,", "y,", "z"] and "$" not in prose(text)


def test_a_formula_with_a_space_inside_its_dollars_is_maths_when_it_looks_like_maths():
    """Issue 36 item 11: `$\\displaystyle … $` (MATH-500) and `$ a^\\dagger a $` (GPQA) were refused
    by the currency rule and left raw."""
    assert formulas("value of $\\displaystyle\\left(a+\\frac{1}{b}\\right) $?") == [
        (False, "\\displaystyle\\left(a+\\frac{1}{b}\\right)")
    ]
    assert formulas("operator $ a^\\dagger a $ and $ X $, about $ 6.5 \\times 10^{-16} \\, \\text{eV·s} $.") == [
        (False, "a^\\dagger a"),
        (False, "X"),
        (False, "6.5 \\times 10^{-16} \\, \\text{eV·s}"),
    ]
    for text in ("Between $ 3 and $ 4 dollars.", "a $ 5 tip and $ 6 more", "pay $ x and y $5"):
        assert formulas(text) == [], text


def test_text_commands_in_prose_show_their_text_escaped():
    """Issue 36 item 11: `<answer>261 \\, \\text{GeV}</answer>` showed `\\text{GeV}` raw."""
    assert prose("<answer>261 \\, \\text{GeV}</answer>") == "<p>&lt;answer&gt;261 \u202f GeV&lt;/answer&gt;</p>\n"
    assert prose("\\textbf{Step *1*}: \\emph{so} $x$") == "<p><strong>Step <em>1</em></strong>: <em>so</em> §</p>\n"
    hostile = prose("\\text{<script>alert(1)</script>} \\texttt{<b>}")
    assert "<script" not in hostile and "&lt;script&gt;" in hostile and "<code>&lt;b&gt;</code>" in hostile


def test_a_cut_formula_is_closed_only_when_something_of_it_was_written():
    """Issue 36 item 11: a response cut right after its opener (`and $\\`) showed `$$`; one cut in
    `\\text{Interest` or after a number (`$2.89 \\times 10^{-9} \\mathrm`) showed raw TeX."""
    assert close_cut_formula("and $\\lambda$ is, and $\\") == "and $\\lambda$ is, and $\\"
    assert close_cut_formula("approximately $2.89 \\times 10^{-9} \\mathrm") == "approximately $2.89 \\times 10^{-9}$"
    assert close_cut_formula("plug in:\n\n\\[ \\text{Interest") == "plug in:\n\n\\[ \\text{Interest}\\]"
    assert close_cut_formula("It costs $20 in all") == "It costs $20 in all"
