"""Synthetic golds in standard MATH answer forms (seed 001 §2.5), tagged "synthetic" by the audit.

Why: sets, intervals, tuples and ± answers are rare among corpus golds (seed 001: set and interval
notation in 0.1 % of corpus answers), which leaves those strata underpowered. Deterministic (one
seeded generator, stdlib only): `synthetic_golds(n)` is the same list in every process, and the
first k of `synthetic_golds(n)` are `synthetic_golds(k)`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

SEED = 1


def _frac(r: random.Random) -> str:
    while True:
        a, b = r.randint(1, 40), r.randint(2, 40)
        if math.gcd(a, b) == 1:
            return ("-" if r.random() < 0.2 else "") + f"\\frac{{{a}}}{{{b}}}"


def _integer(r: random.Random) -> str:
    digits = r.randint(1, 7)
    return str(r.randint(10 ** (digits - 1), 10**digits - 1) * (-1 if r.random() < 0.1 else 1))


def _decimal(r: random.Random) -> str:
    return f"{r.randint(0, 99)}.{r.randint(1, 99):02d}".rstrip("0")


def _surd(r: random.Random) -> str:
    radicand = r.choice((2, 3, 5, 6, 7, 10, 11, 13, 15, 17, 19, 21))
    coeff = r.randint(1, 9)
    return f"{coeff}\\sqrt{{{radicand}}}" if coeff > 1 else f"\\sqrt{{{radicand}}}"


def _frac_surd(r: random.Random) -> str:
    return f"\\frac{{{_surd(r)}}}{{{r.randint(2, 9)}}}"


def _plus_minus(r: random.Random) -> str:
    return f"{r.randint(1, 9)}\\pm\\sqrt{{{r.choice((2, 3, 5, 7, 11))}}}"


def _interval(r: random.Random) -> str:
    a = r.randint(-9, 5)
    b = a + r.randint(1, 9)
    left, right = r.choice("[("), r.choice("])")
    if r.random() < 0.25:
        return f"({a},\\infty)" if r.random() < 0.5 else f"(-\\infty,{b}]"
    return f"{left}{a},{b}{right}"


def _set(r: random.Random) -> str:
    items = sorted(r.sample(range(-9, 20), r.randint(2, 4)))
    return "\\{" + ",".join(str(i) for i in items) + "\\}"


def _tuple(r: random.Random) -> str:
    return f"({r.randint(-9, 9)},{r.randint(-9, 9)})"


def _pi(r: random.Random) -> str:
    k = r.randint(2, 24)
    return f"{k}\\pi" if r.random() < 0.5 else f"\\frac{{\\pi}}{{{k}}}"


def _complex(r: random.Random) -> str:
    a, b = r.randint(1, 9), r.randint(1, 9)
    return f"{a}{r.choice('+-')}{b}i"


def _linear(r: random.Random) -> str:
    return f"{r.randint(2, 9)}x{r.choice('+-')}{r.randint(1, 9)}"


def _product(r: random.Random) -> str:
    return f"(x+{r.randint(1, 9)})(x-{r.randint(1, 9)})"


FORMS: tuple[tuple[str, Callable[[random.Random], str]], ...] = (
    ("integer", _integer),
    ("fraction", _frac),
    ("decimal", _decimal),
    ("surd", _surd),
    ("fraction_surd", _frac_surd),
    ("plus_minus", _plus_minus),
    ("interval", _interval),
    ("set", _set),
    ("tuple", _tuple),
    ("pi", _pi),
    ("complex", _complex),
    ("linear", _linear),
    ("product", _product),
)


def synthetic_golds(n: int, *, seed: int = SEED) -> list[str]:
    """n distinct synthetic golds, the forms taken in turn."""
    r = random.Random(seed)
    out: dict[str, None] = {}
    i = 0
    while len(out) < n:
        _name, make = FORMS[i % len(FORMS)]
        out.setdefault(make(r), None)
        i += 1
        if i > 100 * n + 1000:  # pragma: no cover - the forms above have far more than n values
            raise RuntimeError("cannot generate that many distinct synthetic golds")
    return list(out)
