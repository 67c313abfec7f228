"""The Hendrycks MATH `strip_string` / `is_equiv` normaliser (the original, and lm-eval's port) as a
reader of the last boxed answer: `strip-string` and `strip-string-lm-eval`.

Also the box extraction the cascade shares (`last_boxed_only_string`, `extract_boxed`).
See docs/readers-math.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..base import Item, Reader, Reading
from .common import cap

# Port of hendrycks/math modeling/math_equivalence.py @ 08e65fc4 (the original). The lm-eval
# port (lm_eval/tasks/hendrycks_math/utils.py) differs in two places, both selectable:
#   percent: lm-eval deletes "\%" twice and keeps a bare "%" (its second replace is the literal
#            "\%", the same two characters), so "50%" != "50" there.
#   slash:   lm-eval's fix_a_slash_b catches only AssertionError, so "x/2" (int("x") raises
#            ValueError) aborts strip_string and is_equiv falls back to raw str1 == str2.

PercentMode = Literal["hendrycks", "lm-eval"]
SlashMode = Literal["hendrycks", "lm-eval"]


def _fix_fracs(string: str) -> str:
    substrs = string.split("\\frac")
    new_str = substrs[0]
    if len(substrs) > 1:
        substrs = substrs[1:]
        for substr in substrs:
            new_str += "\\frac"
            # Upstream indexes substr[0] outside its try: "\frac" at the very end raises
            # IndexError, which is_equiv turns into raw equality. Kept on purpose.
            if substr[0] == "{":
                new_str += substr
            else:
                if len(substr) < 2:
                    return string
                a = substr[0]
                b = substr[1]
                if b != "{":
                    if len(substr) > 2:
                        post_substr = substr[2:]
                        new_str += "{" + a + "}{" + b + "}" + post_substr
                    else:
                        new_str += "{" + a + "}{" + b + "}"
                else:
                    if len(substr) > 2:
                        post_substr = substr[2:]
                        new_str += "{" + a + "}" + b + post_substr
                    else:
                        new_str += "{" + a + "}" + b
    return new_str


def _fix_a_slash_b(string: str, slash: SlashMode) -> str:
    if len(string.split("/")) != 2:
        return string
    a_str, b_str = string.split("/")
    try:
        a = int(a_str)
        b = int(b_str)
    except ValueError:
        if slash == "lm-eval":
            raise  # lm-eval: escapes to is_equiv -> raw equality
        return string
    if string != f"{a}/{b}":
        return string
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


class _UnitsSplitError(ValueError):
    """Upstream `assert len(splits) == 2` in _remove_right_units."""


def _remove_right_units(string: str) -> str:
    # "\\text{ " only ever occurs (at least in the val set) when describing units
    if "\\text{ " in string:
        splits = string.split("\\text{ ")
        if len(splits) != 2:
            raise _UnitsSplitError("more than one '\\text{ ' in the string")
        return splits[0]
    return string


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    splits = string.split("\\sqrt")
    new_string = splits[0]
    for split in splits[1:]:
        # split[0] raises IndexError on a trailing "\sqrt" exactly like upstream.
        if split[0] != "{":
            a = split[0]
            new_substr = "\\sqrt{" + a + "}" + split[1:]
        else:
            new_substr = "\\sqrt" + split
        new_string += new_substr
    return new_string


def strip_string(string: str, *, percent: PercentMode = "hendrycks", slash: SlashMode = "hendrycks") -> str:
    """Hendrycks `_strip_string`. May raise, exactly where upstream raises; use `is_equiv`."""
    string = string.replace("\n", "")
    string = string.replace("\\!", "")
    string = string.replace("\\\\", "\\")
    string = string.replace("tfrac", "frac")
    string = string.replace("dfrac", "frac")
    string = string.replace("\\left", "")
    string = string.replace("\\right", "")
    string = string.replace("^{\\circ}", "")
    string = string.replace("^\\circ", "")
    string = string.replace("\\$", "")
    string = _remove_right_units(string)
    string = string.replace("\\%", "")
    if percent == "hendrycks":
        string = string.replace("%", "")
    # percent == "lm-eval": upstream's second replace is "\%" again, i.e. a no-op.
    string = string.replace(" .", " 0.")
    string = string.replace("{.", "{0.")
    if len(string) == 0:
        return string
    if string[0] == ".":
        string = "0" + string
    if len(string.split("=")) == 2 and len(string.split("=")[0]) <= 2:
        string = string.split("=")[1]
    string = _fix_sqrt(string)
    string = string.replace(" ", "")
    string = _fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    string = _fix_a_slash_b(string, slash)
    return string


def is_equiv(
    str1: str | None, str2: str | None, *, percent: PercentMode = "hendrycks", slash: SlashMode = "hendrycks"
) -> bool:
    """Hendrycks `is_equiv` (no print on double None)."""
    if str1 is None and str2 is None:
        return True
    if str1 is None or str2 is None:
        return False
    try:
        return strip_string(str1, percent=percent, slash=slash) == strip_string(str2, percent=percent, slash=slash)
    except Exception:  # noqa: BLE001 - upstream: bare except -> raw equality
        return str1 == str2


def last_boxed_only_string(string: str) -> tuple[str, int] | None:
    """lm-eval `last_boxed_only_string`, also returning where the returned string starts.

    Upstream quirk kept: if "\\boxed " (with a space) occurs anywhere, the text after its LAST
    occurrence up to the next "$" wins, even when a later "\\boxed{...}" exists.
    """
    if "\\boxed " in string:
        start = string.rfind("\\boxed ")
        return "\\boxed " + string[start + len("\\boxed ") :].split("$")[0], start
    idx = string.rfind("\\boxed")
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    i = idx
    depth = 0
    while i < len(string):
        ch = string[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return string[idx : i + 1], idx
        i += 1
    return None


def _unbox(s: str) -> tuple[str, int]:
    """(content, prefix length) of a string returned by last_boxed_only_string."""
    if s.startswith("\\boxed "):
        return s[len("\\boxed ") :], len("\\boxed ")
    for left in ("\\boxed{", "\\fbox{"):
        if s.startswith(left) and s.endswith("}"):
            return s[len(left) : -1], len(left)
    raise ValueError(f"not a box: {s[:40]!r}")


def remove_boxed(s: str) -> str:
    """lm-eval `remove_boxed`, extended to "\\fbox{…}".

    Upstream asserts the "\\boxed{" prefix, so a response whose last box is "\\fbox{…}" crashes
    lm-eval's process_results; we unwrap it instead (documented departure).
    """
    return _unbox(s)[0]


def extract_boxed(response: str) -> tuple[str, tuple[int, int]] | None:
    """Content of the last balanced box and its [start, end) span in `response`, or None."""
    found = last_boxed_only_string(response)
    if found is None:
        return None
    boxed, start = found
    try:
        content, prefix = _unbox(boxed)
    except ValueError:
        return None
    return content, (start + prefix, start + prefix + len(content))


@dataclass(frozen=True)
class StripStringConfig:
    """percent/slash: which port's behaviour to reproduce (see module comments)."""

    percent: PercentMode = "hendrycks"
    slash: SlashMode = "hendrycks"


class StripStringReader(Reader):
    """Hendrycks MATH `is_equiv` on the last boxed answer (or the whole stripped response)."""

    name = "strip-string"
    version = "1.0"
    kind = "rule"
    # Seed 001 scores strip-string on plain numbers and LaTeX strings (sets and unreduced
    # fractions are out of its contract). We add "boxed" because this reader, unlike the bare
    # normaliser the audit ran, extracts the last \boxed{} itself, and "percent" because the
    # original deletes every % sign (so "50\%" == "50" by design).
    contract = frozenset({"boxed", "plain_number", "latex", "percent"})
    upstream = (
        "hendrycks/math modeling/math_equivalence.py @ 08e65fc48dee2821625f466674f6abffc754e334 "
        "(_strip_string + is_equiv, bare % deleted); prediction = lm-eval "
        "last_boxed_only_string/remove_boxed, else the whole response stripped"
    )
    Config = StripStringConfig

    def _normalize(self, s: str) -> str | None:
        try:
            return strip_string(s, percent=self.config.percent, slash=self.config.slash)
        except Exception:  # noqa: BLE001 - upstream falls back to raw equality
            return None

    def read(self, item: Item) -> Reading:
        cfg: StripStringConfig = self.config
        detail: dict[str, Any] = {}
        boxed = extract_boxed(item.response)
        if boxed is not None:
            answer, span = boxed
            detail["extraction"] = "last_boxed"
        else:
            # No box: the seed-001 audit feeds bare answer strings to is_equiv; we do the same with
            # the whole response (stripped). On a chain of thought this is almost always wrong,
            # which is what the upstream normaliser would say too.
            stripped = item.response.strip()
            lead = len(item.response) - len(item.response.lstrip())
            answer, span = stripped, (lead, lead + len(stripped))
            detail["extraction"] = "whole_response"
        if item.is_multiple_choice:
            detail["out_of_contract"] = "multiple-choice item: strip-string compares strings only"
        if not answer.strip():
            return Reading("no_answer", detail=detail)

        gold = item.gold
        gold_box = extract_boxed(gold) if ("\\boxed" in gold or "\\fbox" in gold) else None
        if gold_box is not None:
            gold = gold_box[0]
        normalized = self._normalize(answer)
        gold_norm = self._normalize(gold)
        if normalized is None or gold_norm is None:
            detail["fallback"] = "strip_string raised; raw string equality (upstream behaviour)"
        detail["gold_normalized"] = cap(gold_norm)
        ok = is_equiv(answer, gold, percent=cfg.percent, slash=cfg.slash)
        return Reading(
            "correct" if ok else "incorrect", answer=cap(answer), normalized=cap(normalized), span=span, detail=detail
        )


# ---------------------------------------------------------------------------------------------
# named configs
# ---------------------------------------------------------------------------------------------


def original() -> StripStringReader:
    return StripStringReader(StripStringConfig(), name="strip-string")


def lm_eval_port() -> StripStringReader:
    return StripStringReader(
        StripStringConfig(percent="lm-eval", slash="lm-eval"),
        name="strip-string-lm-eval",
        contract=frozenset({"boxed", "plain_number", "latex"}),
        upstream=(
            "EleutherAI/lm-evaluation-harness lm_eval/tasks/hendrycks_math/utils.py (4e7e0d47) "
            "strip_string/is_equiv: bare % kept, non-integer a/b falls back to raw equality; "
            "prediction = last_boxed_only_string/remove_boxed, else the whole response stripped"
        ),
    )
