"""How an item is shown to a reviewer: what the item pages show of it (ShownItem: plain, displayable
values), the response's thinking and answer parts, candidate marks, and math-aware Markdown
(adjudication.review.markup). Model text is untrusted: Markdown runs with raw HTML off and
everything else is escaped. The HTML is made when a template asks for it
(adjudication.templatetags.review_markup), never in a selector."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from adjudication.review.markup import MARKDOWN, parse, render
from adjudication.text import displayable
from readers.options import LETTERS

_THINK = re.compile(r"<(think|thinking|reasoning)>|</(think|thinking|reasoning)>", re.IGNORECASE)


@dataclass
class Segment:
    text: str
    mark: int | None = None  # candidate number highlighted here


@dataclass
class Part:
    think: bool
    segments: list[Segment] = field(default_factory=list)
    html: str = ""  # Markdown rendering (safe: html disabled)


def split_think(text: str) -> list[tuple[bool, int, int]]:
    """(is_thinking, start, end) regions. A lone closing tag means everything before it was
    thinking (chat templates put the opening tag in the prompt); an unclosed one runs to the end."""
    regions: list[tuple[bool, int, int]] = []
    pos, inside = 0, False
    tags = list(_THINK.finditer(text))
    if tags and tags[0].group(2) and not any(t.group(1) for t in tags[:1]):
        inside = True
    for tag in tags:
        opening = tag.group(1) is not None
        if opening and not inside:
            regions.append((False, pos, tag.start()))
            pos, inside = tag.end(), True
        elif not opening and inside:
            regions.append((True, pos, tag.start()))
            pos, inside = tag.end(), False
    regions.append((inside, pos, len(text)))
    return [r for r in regions if r[2] > r[1] or r[0]]


def _segments(text: str, start: int, end: int, spans: list[tuple[int, int, int]]) -> list[Segment]:
    # Marks cannot overlap. Shorter spans are kept first, so that an answer nested inside another
    # reader's long match (a boxed "C" inside "B. Then again \\boxed{C") still gets its mark; the
    # long match keeps its first free stretch ("B. Then again \\boxed{"), so that its candidate
    # is marked somewhere too.
    chosen: list[tuple[int, int, int]] = []
    for s, e, number in sorted(spans, key=lambda t: (t[1] - t[0], t[0])):
        s, e = max(s, start), min(e, end)
        for cs, ce, _ in sorted(chosen):
            if cs <= s < ce:
                s = ce
            elif s < cs < e:
                e = cs
        if e > s:
            chosen.append((s, e, number))
    out, pos = [], start
    for s, e, number in sorted(chosen):
        if s > pos:
            out.append(Segment(text[pos:s]))
        out.append(Segment(text[s:e], number))
        pos = e
    if pos < end:
        out.append(Segment(text[pos:end]))
    return out


# markdown-it's time is linear in the characters its inline rules stop at (its text rule's
# terminators): measured 2-25 us each for hostile runs such as "![![![" or "[a](b) [a](b)", so a
# 1 MB response of them took over ten seconds. A response gets this many of them for its Markdown;
# the parts past the budget are shown as source.
_MD_TERMINATORS = "\n!#$%&*+-:<=>@[\\]^_`{}~"


MARKDOWN_BUDGET = 50_000


def _source_html(text: str, why: str) -> str:
    from django.utils.html import format_html

    return format_html('<p class="muted render-note">This part is shown as source: {}.</p><pre>{}</pre>', why, text)


def _markdown_html(text: str, budget: int) -> tuple[str, int]:
    """(HTML of `text`, budget left). Markdown when affordable and lossless, else escaped source."""
    cost = sum(text.count(c) for c in _MD_TERMINATORS)
    if cost > budget:
        return _source_html(text, "too long for the Markdown renderer"), budget
    # A response cut at its token limit inside a formula has it closed where it was cut (typeset,
    # not an opener leaking into the prose as `$$`); a display over several lines is held from the
    # block rules (a `- &x` line inside it is not a list item).
    tokens, env = parse(text)
    # Past maxNesting, markdown-it silently drops the rest of the part (blockquotes or lists nested
    # ~10 deep); a token at the last level it keeps is the sign that this may have happened.
    if any(token.level >= MARKDOWN.options["maxNesting"] - 1 for token in tokens):
        return _source_html(text, "nested too deeply for the Markdown renderer"), budget - cost
    return render(tokens, env), budget - cost


def text_html(text: str) -> str:
    """A question or other dataset text: Markdown with maths, within the same budget as a response."""
    return _markdown_html(text, MARKDOWN_BUDGET)[0]


def response_parts(text: str, spans: list[tuple[int, int, int]]) -> list[Part]:
    parts = []
    budget = MARKDOWN_BUDGET
    for think, start, end in split_think(text):
        html, budget = _markdown_html(text[start:end], budget)
        parts.append(Part(think=think, segments=_segments(text, start, end, spans), html=html))
    return parts


@dataclass(frozen=True)
class ShownCandidate:
    number: int  # 1, 2, …: shuffled per (item, annotator); the mark of its spans in the response
    answer: str


@dataclass(frozen=True)
class ShownItem:
    """What the item pages show of an item, every text made displayable: question, options (letter,
    text), the response with the candidates' spans, candidate answers and (when asked) the gold."""

    question: str
    choices: tuple[tuple[str, str], ...]
    is_mc: bool
    response: str
    spans: tuple[tuple[int, int, int], ...]  # (start, end, candidate number) in the response
    candidates: tuple[ShownCandidate, ...]
    gold: str | None  # None: not shown

    @property
    def candidate_picks(self) -> tuple[tuple[str, ShownCandidate], ...]:
        """(key letter, candidate) for an open-ended item's pick bar: letters pick answers on every
        item page, as on a multiple-choice one, so a numeric answer never sits beside a digit key."""
        return tuple(zip(LETTERS, self.candidates, strict=False))


def shown_item(
    *,
    question: str,
    choices: list,
    gold: str,
    response: str,
    show_gold: bool,
    candidates: tuple[list[dict], list[tuple[int, int, int]]],
) -> ShownItem:
    """What the item pages show of an item: question, options, the response, candidate answers and
    (when asked) the gold, all made displayable."""
    cands, spans = candidates
    return ShownItem(
        question=displayable(question),
        choices=tuple((LETTERS[i], displayable(str(text))) for i, text in enumerate(choices)),
        is_mc=bool(choices),
        response=displayable(response),
        spans=tuple(spans),
        candidates=tuple(ShownCandidate(number=c["number"], answer=displayable(c["answer"])) for c in cands),
        gold=displayable(gold) if show_gold else None,
    )
