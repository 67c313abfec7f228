"""Hostile inputs: what an adversarial or broken model output looks like to a reader.

Used by the hostile-input test (a sample) and bench/hostile_bench.py (10,000 inputs). Every
reader must return a verdict class for each of these within its budget, without hanging a worker
or growing memory without bound.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from .base import Item

CHOICES = ("alpha", "beta", "gamma", "delta")


def _families(rnd: random.Random) -> list[tuple[str, str]]:
    depth = rnd.randint(2_000, 10_000)
    return [
        ("power-tower", "The answer is $2^{2^{2^{2^{20}}}}$"),
        ("power-tower-boxed", "\\boxed{9^{9^{9}}}"),
        ("big-power", "So $10^{10^{10}}$."),
        ("factorial", "The final answer is $1000000!$"),
        ("nested-braces", "\\boxed{" + "{" * depth + "1" + "}" * depth + "}"),
        ("unbalanced-braces", "\\boxed{" * depth),
        ("nested-parens", "The answer is " + "(" * depth + "1" + ")" * depth),
        ("nested-frac", "$" + "\\frac{1}{" * 500 + "2" + "}" * 500 + "$"),
        ("one-megabyte", "The answer is (B). " + "x" * 1_000_000),
        ("megabyte-of-answers", "The answer is (A). Answer: B. \\boxed{C} " * 25_000),
        ("nul-bytes", "The answer\x00 is (B)\x00\x00 \\boxed{\x00}"),
        ("lone-surrogates", "The answer is \ud800(B)\udfff \\boxed{\udc00}"),
        ("html-js", "<script>alert(1)</script><img src=x onerror=alert(2)> The answer is <b>(B)</b>"),
        ("javascript-link", "[click](javascript:alert(1)) \\boxed{B}"),
        ("regex-bomb-stars", "**" * 50_000 + "Answer:" + " " * 50_000),
        ("regex-bomb-answer-is", "answer is " * 100_000),
        ("long-number", "The answer is " + "9" * 100_000),
        ("many-dollars", "$" * 200_000),
        ("think-unclosed", "<think>" + "Let me think. " * 50_000),
        ("sum-of-terms", "$" + "+".join(f"x_{{{i}}}" for i in range(20_000)) + "$"),
        ("control-chars", "".join(chr(c) for c in range(32)) * 1000 + " The answer is C"),
        ("rtl-override", "\u202eThe answer is (B)\u202c \\boxed{\u202eC}"),
        ("empty", ""),
        ("whitespace", " \n\t" * 10_000),
    ]


# Families that make SymPy-backed readers run to their budget. In a bulk run they are a small share
# (as in real data), so that 10,000 inputs finish in minutes; `hostile_items(..., weighted=False)`
# cycles through every family evenly (the test's sample).
EXPENSIVE = frozenset(
    {
        "power-tower",
        "power-tower-boxed",
        "big-power",
        "factorial",
        "nested-frac",
        "nested-braces",
        "sum-of-terms",
        "megabyte-of-answers",
        "regex-bomb-answer-is",
        "think-unclosed",
    }
)


def hostile_items(n: int, *, seed: int = 0, weighted: bool = False) -> Iterator[tuple[str, Item]]:
    """n (family, item) pairs; MC and open-ended golds alternate. Unweighted: cycle through the
    families. Weighted: each expensive family about 0.2 % of items, the cheap ones share the rest;
    texts vary a little (a salt) so that no reader can answer from a cache."""
    rnd = random.Random(seed)
    families = _families(rnd)
    weights = [0.002 if name in EXPENSIVE else 1.0 for name, _ in families]
    for i in range(n):
        if weighted:
            family, text = rnd.choices(families, weights=weights)[0]
            text = f"{text} [{i}]"
        else:
            family, text = families[i % len(families)]
        if i % 2:
            yield family, Item(response=text, gold="B", choices=CHOICES, question="Which one?")
        else:
            yield family, Item(response=text, gold="\\frac{1}{2}", question="Compute it.")


FAMILIES = tuple(name for name, _ in _families(random.Random(0)))
