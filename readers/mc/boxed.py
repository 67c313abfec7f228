r"""`boxed`: seed 000's box-only harness reader. Only the last `\boxed` / `\fbox` counts
(the later of the two in the text, Hendrycks' `last_boxed_only_string` style: if that last
box's braces never close, the reading is `no_answer`, there is no fallback to an earlier
box). Brace counting ignores `\{` escapes, as upstream's does. The content is unwrapped
(`\text{}`, `\textbf{}`, `$`, `(C)`, trailing period) and compared as a letter for MC items
— option *text* in the box is deliberately not mapped to its letter (the harness reads
letters only) — or, for open-ended items, compared with the gold after the same light
normalisation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..base import Item, Reader, Reading
from ..options import as_text, choices_of, letter_span, letters_for
from .lm_eval import gold_error, gold_letter, strip_span

# ---------------------------------------------------------------------------------------------
# boxed: seed 000's box-only harness reader
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoxedConfig:
    commands: tuple[str, ...] = ("\\boxed", "\\fbox")
    unwrap: tuple[str, ...] = ("\\text", "\\textbf")
    letters_without_choices: str = "ABCD"


_BRACE = re.compile(r"[{}]")


def _close_brace(text: str, open_at: int) -> int | None:
    """Index of the brace closing text[open_at] == "{" (escapes are not special, as upstream)."""
    depth = 0
    for m in _BRACE.finditer(text, open_at):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    return None


def last_box(
    text: str, commands: Sequence[str] = ("\\boxed", "\\fbox")
) -> tuple[str, tuple[int, int], str] | Literal[False] | None:
    """(content, content span, form) of the last box; None if there is no box, False if the
    last box is malformed (unbalanced, or a command with no argument)."""
    best = -1
    best_cmd = ""
    for cmd in commands:
        i = text.rfind(cmd)
        if i > best:
            best, best_cmd = i, cmd
    if best < 0:
        return None
    pos = best + len(best_cmd)
    n = len(text)
    skip = pos
    while skip < n and text[skip] in " \t":
        skip += 1
    if skip < n and text[skip] == "{":
        close = _close_brace(text, skip)
        if close is None:
            return False
        return text[skip + 1 : close], (skip + 1, close), "braces"
    if skip > pos and skip < n:
        # `\boxed C`: the token after the space, up to whitespace or a `$` (Hendrycks stops at `$`).
        end = skip
        while end < n and not text[end].isspace() and text[end] != "$":
            end += 1
        if end > skip:
            return text[skip:end], (skip, end), "space"
    return False


def _unwrap_command(s: str, commands: Iterable[str]) -> str | None:
    for cmd in commands:
        head = cmd + "{"
        if s.startswith(head) and s.endswith("}") and _close_brace(s, len(cmd)) == len(s) - 1:
            return s[len(head) : -1]
    return None


def light_normalize(s: str, unwrap: Sequence[str] = ("\\text", "\\textbf"), parens: bool = False) -> str:
    """Harness-grade clean-up: strip, drop `\\$` and `$`, unwrap `\\text{…}`-style wrappers, drop one
    trailing period; with `parens`, unwrap `(C)`. Not an equivalence check."""
    s = s.replace("\\$", "").replace("$", "").strip()
    for _ in range(8):  # bounded: each pass removes at least one wrapper or stops
        before = s
        inner = _unwrap_command(s, unwrap)
        if inner is not None:
            s = inner.strip()
        if s.endswith("."):
            s = s[:-1].rstrip()
        if parens and len(s) >= 2 and s[0] == "(" and s[-1] == ")":
            s = s[1:-1].strip()
        if s == before:
            break
    return s


class BoxedReader(Reader):
    name = "boxed"
    version = "1.0"
    contract = frozenset({"boxed", "option_letter"})
    # MATH-style maths: Hendrycks' harness scores the last box.
    harness_benchmarks = frozenset(
        {"math", "math-500", "math500", "hendrycks-math", "competition-math", "minerva-math"}
    )
    upstream = "seed 000 box-only harness reader (last \\boxed{}/\\fbox{}, Hendrycks last_boxed_only_string style)"
    Config = BoxedConfig

    def read(self, item: Item) -> Reading:
        cfg: BoxedConfig = self.config
        text = as_text(item.response)
        choices = choices_of(item)
        box = last_box(text, cfg.commands)
        if box is None:
            return Reading("no_answer", detail={"reason": "no box"})
        if box is False:
            return Reading("no_answer", detail={"reason": "last box malformed or unbalanced"})
        content, span, form = box
        detail: dict[str, Any] = {"box": content, "form": form}
        if choices:
            gold = gold_letter(item.gold, choices)
            if gold is None:
                return gold_error(item.gold)
            letters = letters_for(choices)
            cleaned = light_normalize(content, cfg.unwrap, parens=True)
            if not cleaned:
                return Reading("no_answer", span=span, detail={**detail, "reason": "empty box"})
            detail.update(gold_letter=gold, letters=letters)
            if len(cleaned) == 1 and "A" <= cleaned <= "Z":
                return Reading(
                    "correct" if cleaned == gold else "incorrect",
                    answer=cleaned,
                    normalized=cleaned,
                    span=letter_span(text, span, cleaned),
                    detail={**detail, "letter_in_range": cleaned in letters},
                )
            # Option text in the box is not mapped back to its letter: the harness reads letters.
            return Reading(
                "incorrect", answer=content.strip(), normalized=cleaned, span=span, detail={**detail, "letter": None}
            )
        cleaned = light_normalize(content, cfg.unwrap)
        if not cleaned:
            return Reading("no_answer", span=span, detail={**detail, "reason": "empty box"})
        gold_n = light_normalize(as_text(item.gold), cfg.unwrap)
        stripped, sspan = strip_span(content, span[0])
        return Reading(
            "correct" if cleaned == gold_n else "incorrect",
            answer=stripped,
            normalized=cleaned,
            span=sspan,
            detail={**detail, "gold_normalized": gold_n},
        )
