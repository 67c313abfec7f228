"""Randomized identity testing (readers/answer/identity.py): `identical(a, b)` evaluates two SymPy
expressions at seeded random rational points of their common real domain.

Its one unforgivable error is a false "equal": a reader that calls a wrong answer right. So the
properties here are mostly one-sided. Distinct constants added to the same function are never
equal; two bare numbers are never this route's business (None); and a generated corpus of
near-identities (pairs that agree almost everywhere, or on one side of zero, or up to a small
shift) is never called equal. Each near-identity is first checked in the test itself: a rational
point must exist where both sides are real, defined and different, so the corpus holds no pair that
is secretly an identity. Positive controls with random parameters (identities that need a domain
or a rewrite, where symbolic simplification struggles) show the test is not passing by refusing
everything.

Pure Python + SymPy; each Hypothesis test is capped at about 60 examples so the file stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest
import sympy
from hypothesis import assume, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from readers.answer.identity import IdentityConfig, identical
from readers.answer.model import math_equal
from readers.answer.notation import Tolerance

x, y, n = sympy.symbols("x y n")

EXAMPLES = hsettings(max_examples=60, deadline=None)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


def rationals(bound: int = 6, max_denominator: int = 12) -> st.SearchStrategy[sympy.Rational]:
    return st.fractions(min_value=-bound, max_value=bound, max_denominator=max_denominator).map(
        lambda f: sympy.Rational(f.numerator, f.denominator)
    )


def nonzero_rationals(bound: int = 6, max_denominator: int = 12) -> st.SearchStrategy[sympy.Rational]:
    return rationals(bound, max_denominator).filter(lambda r: r != 0)


@st.composite
def polynomials(draw: st.DrawFn, var: sympy.Symbol = x, max_degree: int = 4) -> sympy.Expr:
    """A polynomial with small integer coefficients that really depends on `var`."""
    degree = draw(st.integers(1, max_degree))
    coefficients = draw(st.lists(st.integers(-9, 9), min_size=degree, max_size=degree))
    lead = draw(st.integers(-9, 9).filter(bool))
    return lead * var**degree + sum(c * var**i for i, c in enumerate(coefficients))


@st.composite
def functions_of_x(draw: st.DrawFn) -> sympy.Expr:
    """A function of x defined on a real interval at least, of moderate size near 0."""
    a = draw(nonzero_rationals(3, 5))
    r = draw(rationals(3, 5))
    family = draw(st.sampled_from(["polynomial", "sin", "exp", "log", "sqrt", "atan", "pole"]))
    if family == "polynomial":
        return draw(polynomials())
    return {
        "sin": lambda: sympy.sin(a * x),
        "exp": lambda: sympy.exp(a * x),
        "log": lambda: sympy.log(x**2 + a**2),
        "sqrt": lambda: sympy.sqrt(x**2 + a**2),
        "atan": lambda: a * sympy.atan(x),
        "pole": lambda: a / (x - r),
    }[family]()


@st.composite
def constants(draw: st.DrawFn) -> sympy.Expr:
    """A rational or irrational constant of the size answers are written with."""
    q = draw(nonzero_rationals(20, 30))
    k = draw(st.sampled_from([2, 3, 5, 6, 7, 10, 11]))
    form = draw(st.sampled_from(["rational", "sqrt", "pi", "e", "log", "shifted_sqrt", "exp"]))
    return {
        "rational": lambda: q,
        "sqrt": lambda: q * sympy.sqrt(k),
        "pi": lambda: q * sympy.pi,
        "e": lambda: q * sympy.E,
        "log": lambda: sympy.log(k),
        "shifted_sqrt": lambda: q + sympy.sqrt(k),
        "exp": lambda: sympy.exp(q),
    }[form]()


def clearly_distinct(a: sympy.Expr, b: sympy.Expr, relative: float = 1e-6) -> bool:
    """Different by far more than any rounding (and than the documented 1e-9 numeric tolerance
    between two irrational values), so a verdict of "equal" could only be an error."""
    gap = abs(sympy.N(a - b, 60))
    scale = max(abs(sympy.N(a, 60)), abs(sympy.N(b, 60)), 1)
    return bool(gap > relative * scale)


def as_written(text: str, value: sympy.Expr) -> sympy.Expr:
    """The number a percent writes (6 for 6\\%), else the value."""
    return value * 100 if text.endswith("\\%") else value


@st.composite
def written_numbers(draw: st.DrawFn) -> tuple[str, sympy.Expr]:
    """(LaTeX as an answer writes it, its exact value)."""
    p = draw(st.integers(-60, 60))
    q = draw(st.integers(2, 12))
    k = draw(st.sampled_from([2, 3, 5, 7]))
    m = draw(st.integers(1, 9))
    forms: dict[str, Callable[[], tuple[str, sympy.Expr]]] = {
        "integer": lambda: (str(p), sympy.Integer(p)),
        "frac": lambda: (f"\\frac{{{p}}}{{{q}}}", sympy.Rational(p, q)),
        "slash": lambda: (f"{p}/{q}", sympy.Rational(p, q)),
        "decimal": lambda: (f"{p / 8:.3f}", sympy.Rational(p, 8)),
        "percent": lambda: (f"{p}\\%", sympy.Rational(p, 100)),
        "surd": lambda: (f"{m}\\sqrt{{{k}}}", m * sympy.sqrt(k)),
        "surd_over": lambda: (f"\\frac{{\\sqrt{{{k}}}}}{{{q}}}", sympy.sqrt(k) / q),
        "pi": lambda: (f"{m}\\pi", m * sympy.pi),
        "pi_over": lambda: (f"\\frac{{\\pi}}{{{q}}}", sympy.pi / q),
        "e_power": lambda: (f"e^{{{m}}}", sympy.exp(m)),
        "ln": lambda: (f"\\ln {k}", sympy.log(k)),
        "cube_root": lambda: (f"\\sqrt[3]{{{k}}}", sympy.cbrt(k)),
    }
    return forms[draw(st.sampled_from(sorted(forms)))]()


# --------------------------------------------------------------------------------------------
# (i) Numbers: never equal when distinct, and never this route's business
# --------------------------------------------------------------------------------------------


@EXAMPLES
@given(f=functions_of_x(), c1=constants(), c2=constants())
def test_the_same_function_plus_two_distinct_constants_is_never_one_function(
    f: sympy.Expr, c1: sympy.Expr, c2: sympy.Expr
) -> None:
    assume(clearly_distinct(c1, c2))
    # False, not merely "not True": the first point of the domain already shows the gap.
    assert identical(f + c1, f + c2) is False, (f, c1, c2)


@EXAMPLES
@given(a=st.integers(-(10**12), 10**12), b=st.integers(-(10**12), 10**12), c1=constants(), c2=constants())
def test_expressions_without_free_symbols_are_left_to_the_exact_number_rules(
    a: int, b: int, c1: sympy.Expr, c2: sympy.Expr
) -> None:
    # Equal or not, two numbers are compared exactly elsewhere: random points have nothing to vary.
    assert identical(sympy.Integer(a), sympy.Integer(b)) is None
    assert identical(c1, c2) is None


@EXAMPLES
@given(a=written_numbers(), b=written_numbers())
def test_two_distinct_numbers_written_differently_are_never_equal(
    a: tuple[str, sympy.Expr], b: tuple[str, sympy.Expr]
) -> None:
    (text_a, value_a), (text_b, value_b) = a, b
    assume(text_a != text_b and clearly_distinct(value_a, value_b))
    if text_a.endswith("\\%") != text_b.endswith("\\%"):
        # A percent sign on one side only also accepts the number as written (docs/readers-fixed.md,
        # "Percent"): 6 and 6\% are one answer by that rule, not by a mistake.
        assume(clearly_distinct(as_written(text_a, value_a), as_written(text_b, value_b)))
    result = math_equal(text_a, text_b)
    assert result.rule != "identity_test", result
    assert not result.equal, result


def test_the_route_declines_what_it_cannot_decide() -> None:
    # More symbols than the test samples well: undecided, never "equal" by default.
    many = sympy.symbols("a b c d e f g")
    assert identical(sum(many), sum(reversed(many))) is None
    # Only SymPy expressions are compared: an equation or a string is not an expression.
    assert identical(sympy.Eq(x, 1), sympy.Eq(x, 1)) is None
    assert identical("x", "x") is None
    # A written constant more precise than the 50-digit comparison can separate is not tested:
    # the tolerance could hide the difference in its last digits.
    precise = sympy.Float("0.1234567890123456789012345678901234567", 45)
    assert identical(x + precise, x + sympy.Rational(1234567890123456789012345678901234567, 10**37)) is None


def test_a_written_decimal_is_the_rational_it_spells() -> None:
    assert identical(x ** sympy.Float(0.2), x ** sympy.Rational(1, 5)) is True
    assert identical(x + sympy.Float(0.1), x + sympy.Rational(1, 10)) is True
    assert identical(x + sympy.Float("1.0000001"), x + 1) is False


def test_a_verdict_is_reproducible() -> None:
    # Seeded points: the same pair gets the same verdict every time, and a different seed agrees.
    pair = (sympy.Abs(x) * x, x**2)
    assert identical(*pair) is identical(*pair) is False
    assert identical(*pair, IdentityConfig(seed=7)) is False
    assert identical(sympy.Abs(x), sympy.sqrt(x**2), IdentityConfig(seed=7)) is True


@pytest.mark.parametrize("root", [sympy.Rational(3, 7), sympy.Rational(-5, 11), sympy.Rational(2, 13)])
def test_a_point_where_both_sides_vanish_is_no_evidence_either_way(root: sympy.Rational) -> None:
    # At x = root both sides are 0, and evalf leaves residues of different sizes (0e-162, 8e-171):
    # comparing those relatively once called |x - 3/7| and sqrt((x - 3/7)^2) different.
    assert identical(sympy.Abs(x - root), sympy.sqrt((x - root) ** 2)) is True
    assert identical(sympy.Abs(x - root), x - root) is False


def test_a_declared_tolerance_applies_at_each_point() -> None:
    written = sympy.Float("0.9092974268256817")  # sin(2) to 16 digits
    assert identical(sympy.sin(2) + x, written + x) is False
    assert identical(sympy.sin(2) + x, written + x, tolerance=Tolerance.parse("absolute:1e-10")) is True
    # A tolerance is a bound, not a licence: four digits are not within 1e-10.
    assert identical(sympy.sin(2) + x, sympy.Float("0.9093") + x, tolerance=Tolerance.parse("absolute:1e-10")) is False


# --------------------------------------------------------------------------------------------
# (ii) Near-identities: never called equal
# --------------------------------------------------------------------------------------------

# A near-identity is a pair of expressions and the symbol they are functions of.
NearIdentity = tuple[sympy.Expr, sympy.Expr, sympy.Symbol]


@st.composite
def abs_times_x(draw: st.DrawFn) -> NearIdentity:
    # (x - r)^2 and |x - r|·(x - r) agree for x > r only.
    c, r = draw(nonzero_rationals()), draw(rationals())
    return c * (x - r) ** 2, c * sympy.Abs(x - r) * (x - r), x


@st.composite
def root_of_square(draw: st.DrawFn) -> NearIdentity:
    # sqrt((x - r)^2) is |x - r|, not x - r.
    c, r = draw(nonzero_rationals()), draw(rationals())
    return c * sympy.sqrt((x - r) ** 2), c * (x - r), x


@st.composite
def factorial_off_by_one(draw: st.DrawFn) -> NearIdentity:
    # (n+k+1)! is (n+k+1)·(n+k)!: neither (n+k)! itself nor (n+k)·(n+k)!.
    k = draw(st.integers(0, 6))
    wrong = draw(st.sampled_from(["unshifted", "wrong_factor"]))
    a = sympy.factorial(n + k) if wrong == "unshifted" else (n + k) * sympy.factorial(n + k)
    return a, sympy.factorial(n + k + 1), n


@st.composite
def polynomial_bump(draw: st.DrawFn) -> NearIdentity:
    # p and p + c·(x - r)^m agree at x = r only.
    p = draw(polynomials())
    c, r, m = draw(nonzero_rationals()), draw(rationals()), draw(st.integers(1, 5))
    b = p + c * (x - r) ** m
    return p, sympy.expand(b) if draw(st.booleans()) else b, x


@st.composite
def nudged_power(draw: st.DrawFn) -> NearIdentity:
    # x^a and x^(a + eps) agree at x = 1 only, however small eps.
    a = draw(rationals(3, 6))
    eps = draw(st.integers(1, 9).map(lambda k: sympy.Rational(1, 10**k)) | nonzero_rationals(1, 12))
    sign = draw(st.sampled_from([1, -1]))
    return x**a, x ** (a + sign * eps), x


@st.composite
def shifted_sine(draw: st.DrawFn) -> NearIdentity:
    # A shift by 2π/k with k ≥ 3 is not a period of sin.
    k = draw(st.integers(3, 10**6))
    w = draw(nonzero_rationals(3, 4))
    return sympy.sin(w * x), sympy.sin(w * x + 2 * sympy.pi / k), x


@st.composite
def truncated_exponential(draw: st.DrawFn) -> NearIdentity:
    # A Taylor polynomial of exp agrees with it at 0 only.
    c, m = draw(nonzero_rationals(2, 5)), draw(st.integers(1, 8))
    return sympy.exp(c * x), sum((c * x) ** j / sympy.factorial(j) for j in range(m + 1)), x


NEAR_IDENTITIES = {
    "abs_times_x": abs_times_x,
    "root_of_square": root_of_square,
    "factorial_off_by_one": factorial_off_by_one,
    "polynomial_bump": polynomial_bump,
    "nudged_power": nudged_power,
    "shifted_sine": shifted_sine,
    "truncated_exponential": truncated_exponential,
}

# Witness candidates: rationals of small height, small ones first, integers and non-integers.
WITNESS_POINTS = sorted(
    {sympy.Rational(p, q) for q in (1, 2, 3, 7) for p in range(-12 * q, 12 * q + 1)},
    key=lambda r: (abs(r), r),
)


def real_value(expr: sympy.Expr, var: sympy.Symbol, point: sympy.Rational) -> sympy.Expr | None:
    """The exact value at a rational point (a Rational when the expression is rational there,
    else SymPy's 60-digit evaluation of the exact value), or None off the real domain."""
    value = expr.xreplace({var: point})
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        return None
    if value.is_Rational:
        return value
    numeric = sympy.N(value, 60)
    if not numeric.is_number or numeric.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        return None
    re_part, im_part = numeric.as_real_imag()
    if im_part != 0 or not re_part.is_finite:
        return None
    return re_part


def witness(a: sympy.Expr, b: sympy.Expr, var: sympy.Symbol) -> sympy.Rational | None:
    """A rational point where both sides are real, defined and different: exactly for rational
    values, else by a gap of at least 1e-25 (relative) in 60-digit arithmetic, far above its error."""
    for point in WITNESS_POINTS:
        va, vb = real_value(a, var, point), real_value(b, var, point)
        if va is None or vb is None:
            continue
        if va.is_Rational and vb.is_Rational:
            if va != vb:
                return point
        elif abs(va - vb) > sympy.Float("1e-25", 60) * max(abs(va), abs(vb), 1):
            return point
    return None


@pytest.mark.parametrize("family", sorted(NEAR_IDENTITIES))
@EXAMPLES
@given(data=st.data())
def test_a_near_identity_is_never_called_an_identity(family: str, data: st.DataObject) -> None:
    a, b, var = data.draw(NEAR_IDENTITIES[family]())
    point = witness(a, b, var)
    # The corpus itself first: a pair with no separating point would test nothing.
    assert point is not None, f"{family}: no rational point separates {a} and {b}"
    assert identical(a, b) is not True, (family, a, b, point)
    assert identical(b, a) is not True, (family, a, b, point)


# --------------------------------------------------------------------------------------------
# Positive controls: identities with random parameters are recognised
# --------------------------------------------------------------------------------------------


@st.composite
def expanded_power(draw: st.DrawFn) -> tuple[sympy.Expr, sympy.Expr]:
    a, m = draw(rationals()), draw(st.integers(2, 6))
    return (x + a) ** m, sympy.expand((x + a) ** m)


@st.composite
def pythagorean(draw: st.DrawFn) -> tuple[sympy.Expr, sympy.Expr]:
    w, d = draw(nonzero_rationals(4, 5)), draw(rationals(4, 5))
    return sympy.sin(w * x + d) ** 2 + sympy.cos(w * x + d) ** 2, sympy.Integer(1)


@st.composite
def abs_is_root_of_square(draw: st.DrawFn) -> tuple[sympy.Expr, sympy.Expr]:
    c, r = draw(nonzero_rationals()), draw(rationals())
    return c * sympy.Abs(x - r), c * sympy.sqrt((x - r) ** 2)


@st.composite
def factorial_shift(draw: st.DrawFn) -> tuple[sympy.Expr, sympy.Expr]:
    k = draw(st.integers(0, 5))
    if draw(st.booleans()):
        return sympy.factorial(n + k + 1), (n + k + 1) * sympy.factorial(n + k)
    # Γ(x + k) = x(x + 1)…(x + k - 1)·Γ(x), the recurrence unrolled.
    product = sympy.Mul(*[x + j for j in range(k)])
    return sympy.gamma(x + k), product * sympy.gamma(x)


@st.composite
def log_of_product(draw: st.DrawFn) -> tuple[sympy.Expr, sympy.Expr]:
    # Equal where both are real: x, y > 0 (log(xy) is also real for x, y < 0, where the sum is not).
    c = draw(st.fractions(min_value=Fraction(1, 10), max_value=20, max_denominator=10))
    c = sympy.Rational(c.numerator, c.denominator)
    return sympy.log(c * x * y), sympy.log(c) + sympy.log(x) + sympy.log(y)


IDENTITIES = {
    "expanded_power": expanded_power,
    "pythagorean": pythagorean,
    "abs_is_root_of_square": abs_is_root_of_square,
    "factorial_shift": factorial_shift,
    "log_of_product": log_of_product,
}


@pytest.mark.parametrize("family", sorted(IDENTITIES))
@EXAMPLES
@given(data=st.data())
def test_an_identity_with_random_parameters_is_recognised(family: str, data: st.DataObject) -> None:
    a, b = data.draw(IDENTITIES[family]())
    assert identical(a, b) is True, (family, a, b)
    assert identical(b, a) is True, (family, a, b)
