"""Fixture base for the audit tests: the reader pool, the readers beside the cascade, the real golds."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from readers.isolation.pool import IsolatedPool

from ..conftest import shared_data

# The readers set beside sympy-cascade in the off-by-one tests: none of them has its 10^4 step.
OTHERS = (
    "math-verify-latex",
    "math-verify-expr",
    "strip-string",
    "strip-string-lm-eval",
    "sympy-cascade-magnitude-safe",
    "fixed",
)


def load_real_golds() -> list[str]:
    """The MATH-500 and GSM8K golds (../shared/data), stripped, first occurrence kept; a clean skip when absent."""
    math500 = shared_data("math500", "math500.jsonl")
    gsm8k = shared_data("gsm8k", "test.jsonl")
    golds = [json.loads(line)["answer"][0] for line in math500.read_text(encoding="utf-8").splitlines() if line]
    golds += [
        json.loads(line)["answer"].split("####")[-1].strip()
        for line in gsm8k.read_text(encoding="utf-8").splitlines()
        if line
    ]
    return list(dict.fromkeys(g.strip() for g in golds))


@pytest.fixture(scope="module")
def pool() -> Iterator[IsolatedPool]:
    with IsolatedPool(processes=2, budget_s=5.0) as p:
        yield p
