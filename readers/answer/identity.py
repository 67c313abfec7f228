"""Randomized identity testing: are two expressions with free symbols the same function?

Symbolic simplification misses identities that need a domain or a rewrite (|x| and sqrt(x^2),
x^log(y) and y^log(x), (n+1)·n! and (n+1)!), and it is the slowest step of a comparison. Two
expressions that agree at several random points of their common domain are, with overwhelming
probability, the same function there (the Schwartz–Zippel idea, extended to analytic functions);
one point where they differ proves they are not.

Rules that keep the test safe, because a false "equal" is the one error a reader must not make:
* Only expressions with free symbols come here: two numbers are compared exactly elsewhere, and
  this route never calls two different numbers equal.
* Decimals written in an expression are the exact rationals they spell (x^0.2 is x^(1/5)).
* A point counts only where both sides are finite and real (the common real domain); complex
  points are tried only when the real domain yields too few, and then both sides must agree there.
* Rational functions are compared exactly at rational points; anything else at 50 significant
  digits, equal only within a relative 1e-35. Expressions whose written constants carry more
  digits than that are not tested (None): the tolerance could hide them.
* Too few valid points is "undecided" (None), never "equal".

Points come from a seeded generator, so a verdict is reproducible. Evaluation is bounded by the
number of points; the isolation pool owns the wall-clock budget, as for every SymPy step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = ["IdentityConfig", "identical"]


@dataclass(frozen=True)
class IdentityConfig:
    points: int = 6  # valid points that must all agree
    max_tries: int = 36  # points drawn before giving up on the domain
    digits: int = 50
    rel_tol_exponent: int = 35  # equal within 10^-35, relative
    max_symbols: int = 6
    max_exact_degree: int = 64  # rational functions of higher degree are evaluated numerically
    seed: int = 20261207


DEFAULT = IdentityConfig()


def identical(a: Any, b: Any, config: IdentityConfig = DEFAULT, *, tolerance: Any = None) -> bool | None:
    """True when the two SymPy expressions agree at `config.points` random points of their common
    domain, False when they differ at one, None when the test cannot decide (no free symbols, too
    few valid points, constants too precise, or SymPy failed). With a declared `tolerance`
    (readers.answer.notation.Tolerance), values at each point compare under it instead."""
    import sympy  # noqa: PLC0415

    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return None
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    if not symbols or len(symbols) > config.max_symbols:
        return None
    try:
        if tolerance is None:
            a, b = exact_decimals(a, config), exact_decimals(b, config)
            if a is None or b is None:
                return None
        rng = random.Random(config.seed)
        exact = (
            tolerance is None
            and _is_rational_function(a, symbols, config)
            and _is_rational_function(b, symbols, config)
        )
        valid: list[dict] = []

        def verdict_after(point: dict) -> bool | None:
            """False at a point where they differ, True once enough points agree, else None."""
            same = _compare_at(a, b, point, exact=exact, config=config, tolerance=tolerance)
            if same:
                valid.append(point)
            return False if same is False else (True if len(valid) >= config.points else None)

        for attempt in range(config.max_tries):
            # Signs cycle through every combination first: many near-identities (|x| against x,
            # sqrt(x^2) against x) differ on one side of zero only.
            point = {s: _real_point(rng, attempt, negative=bool((attempt >> j) & 1)) for j, s in enumerate(symbols)}
            decided = verdict_after(point)
            if decided is not None:
                return decided
        if valid:
            # A narrow domain (log((1+x)/(1-x)) lives on (-1, 1)): more points near those found.
            for _ in range(config.max_tries):
                base = rng.choice(valid)
                decided = verdict_after({s: v + sympy.Rational(rng.randint(-40, 40), 1009) for s, v in base.items()})
                if decided is not None:
                    return decided
            return None  # too thin a domain to call it an identity
        # No real point is in the common domain (sqrt(-1 - x^2)): complex points, both branches
        # principal, must agree everywhere tried.
        agreed = 0
        for _ in range(config.max_tries):
            point = {s: _complex_point(rng) for s in symbols}
            same = _compare_at(a, b, point, exact=False, config=config, real=False, tolerance=tolerance)
            if same is False:
                return False
            if same:
                agreed += 1
                if agreed >= config.points:
                    return True
    except Exception:  # noqa: BLE001 - SymPy raises a zoo of types on odd inputs
        return None
    return None


def exact_decimals(expr: Any, config: IdentityConfig = DEFAULT) -> Any:
    """Written decimals as the rationals they spell; None when one carries more digits than the
    test's tolerance can separate."""
    import sympy  # noqa: PLC0415

    floats = expr.atoms(sympy.Float)
    if not floats:
        return expr
    mapping = {}
    for f in floats:
        # The shortest decimal that round-trips the float: what was written, not its binary value.
        written = sympy.Float(f, 15) if f._prec <= 53 else f
        text = str(written)
        digits = sum(ch.isdigit() for ch in text.split("e")[0])
        if digits > config.rel_tol_exponent - 5:
            return None
        mapping[f] = sympy.Rational(Fraction(repr(float(text))) if f._prec <= 53 else Fraction(text))
    return expr.xreplace(mapping)


def _is_rational_function(expr: Any, symbols: list[Any], config: IdentityConfig) -> bool:
    import sympy  # noqa: PLC0415

    if not expr.is_rational_function(*symbols):
        return False
    for power in expr.atoms(sympy.Pow):
        exponent = power.exp
        if exponent.is_Integer and abs(int(exponent)) > config.max_exact_degree:
            return False
    return True


_DENOMINATORS = (7, 11, 13, 17, 19, 23, 29, 31)


def _real_point(rng: random.Random, attempt: int = 0, *, negative: bool) -> Any:
    """A rational off the integers and away from 0 (where log, 1/x and factorials have their
    singularities), in turn below 1, below 3 and below 30 in size, so narrow domains, ordinary
    arguments and large ones are all tried."""
    import sympy  # noqa: PLC0415

    q = rng.choice(_DENOMINATORS)
    scale = (1, 3, 30)[attempt % 3]
    p = rng.randint(1, scale * q - 1)
    if p % q == 0:
        p += 1
    return sympy.Rational(-p if negative else p, q)


def _complex_point(rng: random.Random) -> Any:
    import sympy  # noqa: PLC0415

    re_part = _real_point(rng, rng.randrange(3), negative=rng.random() < 0.5)
    return re_part + sympy.I * _real_point(rng, rng.randrange(3), negative=rng.random() < 0.5)


def _compare_at(
    a: Any, b: Any, point: dict, *, exact: bool, config: IdentityConfig, real: bool = True, tolerance: Any = None
) -> bool | None:
    """True/False where both sides are defined at the point, None where either is not."""
    import sympy  # noqa: PLC0415

    if exact:
        va, vb = a.xreplace(point), b.xreplace(point)
        if va.is_Rational and vb.is_Rational:
            return bool(va == vb)
        if va.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) or vb.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            return None
    na = _value(a, point, config.digits)
    nb = _value(b, point, config.digits)
    if na is None or nb is None:
        return None
    if real and (not _is_real(na, config) or not _is_real(nb, config)):
        return None
    if tolerance is not None and real:
        return bool(tolerance.close(Fraction(str(sympy.re(na))), Fraction(str(sympy.re(nb)))))
    scale = max(abs(na), abs(nb))
    if scale == 0:
        return True
    if scale < sympy.Float(10, config.digits) ** (10 - config.digits):
        # Both sides vanish to working precision: evalf's residue at a root (|x - 3/7| and
        # sqrt((x - 3/7)^2) at x = 3/7 give 0e-162 and 8e-171) is noise, not a value to compare.
        # The point tells nothing; others decide.
        return None
    return bool(abs(na - nb) <= scale * sympy.Float(10, config.digits) ** (-config.rel_tol_exponent))


def _value(expr: Any, point: dict, digits: int) -> Any:
    import sympy  # noqa: PLC0415

    value = expr.evalf(digits, subs=point)
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) or value.free_symbols:
        return None
    value = complex_value = sympy.N(value, digits)
    if not complex_value.is_number:
        return None
    re_part, im_part = complex_value.as_real_imag()
    if not (re_part.is_finite and im_part.is_finite):
        return None
    return value


def _is_real(value: Any, config: IdentityConfig) -> bool:
    import sympy  # noqa: PLC0415

    re_part, im_part = value.as_real_imag()
    if im_part == 0:
        return True
    tiny = sympy.Float(10, config.digits) ** (-config.rel_tol_exponent)
    return bool(abs(im_part) <= tiny * max(abs(re_part), 1))
