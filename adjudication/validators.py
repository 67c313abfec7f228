"""Bounds and rules for what users type: the same checks for the API, the forms and the commands.

Integer bounds are the columns' own: a value that does not fit must be refused with a message,
never stored as something else. Names appear in URLs, download headers, logs and tables, so they
are one printable line."""

from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError

SMALLINT_MAX = 32_767
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
ID_MAX = 2**63 - 1  # every table's primary key is a BigAutoField


def is_plain_integer(text: str) -> bool:
    """ASCII digits only. str.isdigit() also takes "²" (which int() refuses: a 500 where it was the
    only check) and "٣" or "３" (which int() reads as 3)."""
    return text.isascii() and text.isdigit()


def parse_id(value: object, *, name: str = "id") -> int:
    """A primary key as a query string, a form or a URL gives it: plain ASCII digits (no sign, space,
    full-width or superscript digit) naming a value the column holds (1 to ID_MAX). ValidationError
    otherwise, naming `name`: the one id parser of every page and form."""
    # The length bound first: int() of thousands of digits is slow, and refused past 4,300.
    if isinstance(value, str) and len(value) <= 25 and is_plain_integer(value) and 1 <= int(value) <= ID_MAX:
        return int(value)
    raise ValidationError(f"{name}: must be an id (a whole number from 1 to {ID_MAX})", code="invalid_id")


def unprintable(value: str) -> str | None:
    """The first character of `value` that has no place in a one-line name, described; None if all fit.
    Control and format characters (NUL, newline, tab, bidi overrides), lone surrogates, unassigned."""
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            return f"U+{ord(ch):04X}"
    return None


def name_problem(value: str) -> str | None:
    """Why `value` cannot name something a user names (a dataset, a queue, a policy, an endpoint, a
    judge), or None: the one rule for them all, for the commands as for the forms and the API."""
    if not value.strip():
        return "must not be blank"
    if value != value.strip():
        return "must not start or end with spaces"
    bad = unprintable(value)
    if bad:
        return f"must be one line of printable text (found {bad})"
    return None


def validate_name(value: str) -> None:
    problem = name_problem(value)
    if problem:
        raise ValidationError(problem)


def free_text_problem(value: str) -> str | None:
    """Why human free text (notes, reasons, answers) cannot be stored, or None. Newlines are fine
    there; NUL and lone surrogates have no meaning in anything a person types."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text (found a lone surrogate)"
    return None


def validate_free_text(value: str) -> None:
    problem = free_text_problem(value)
    if problem:
        raise ValidationError(problem)
