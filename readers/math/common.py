"""What the maths readers share: the versions of the libraries they cite, and the cap on stored strings."""

from __future__ import annotations

from importlib import metadata

import sympy


def dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:  # pragma: no cover - broken install
        return "unknown"


MATH_VERIFY_VERSION = dist_version("math-verify")
LATEX2SYMPY_VERSION = dist_version("latex2sympy2_extended")
ANTLR_VERSION = dist_version("antlr4-python3-runtime")
SYMPY_VERSION = sympy.__version__

# Strings we store in verdict rows are capped: a hostile 1 MB response must not become a 1 MB
# `normalized` column, and str() of a giant SymPy object is itself slow.
MAX_FIELD_CHARS = 4000


def cap(s: str | None) -> str | None:
    if s is None or len(s) <= MAX_FIELD_CHARS:
        return s
    return s[:MAX_FIELD_CHARS] + f"…[+{len(s) - MAX_FIELD_CHARS} chars]"
