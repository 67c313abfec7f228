"""Acceptance on real golds: MATH-500 and GSM8K (../shared/data; skipped cleanly when absent).

The off-by-one step runs on every gold (only the off-by-one and identity transforms, so it stays
fast); the full suite runs on a fixed 1-in-6 sample of the golds. The full-suite numbers over
all golds are in docs/audit.md (one run, reproduced by the command there).
"""

from __future__ import annotations

import pytest

from readers.audit.runner import BUCKETS, OUR_READERS, run_audit
from readers.audit.transforms import BY_NAME, int_value

from .conftest import OTHERS, load_real_golds

pytestmark = pytest.mark.system  # reads ../shared/data


@pytest.fixture(scope="module")
def real_golds() -> list[str]:
    return load_real_golds()


def test_the_step_on_every_real_gold(real_golds, pool, tmp_path):
    assert len(real_golds) > 500
    suite = [BY_NAME["identity"], BY_NAME["off_by_one_plus"], BY_NAME["off_by_one_minus"]]
    result = run_audit(real_golds, ["sympy-cascade", *OTHERS], tmp_path, pool=pool, transforms=suite)
    s = result.summary
    # every bucket holds integer golds of both benchmarks
    per_bucket = {row["bucket"]: row["judged"] for row in result.magnitude_rows if row["reader"] == "sympy-cascade"}
    assert all(per_bucket[b] > 0 for b in BUCKETS), per_bucket
    assert s["off_by_one"]["sympy-cascade"] == {
        "<10": 0.0,
        "1e1": 0.0,
        "1e2": 0.0,
        "1e3": 0.0,
        "1e4": 1.0,
        ">=1e5": 1.0,
    }
    for name in OTHERS:
        assert s["off_by_one"][name] == dict.fromkeys(BUCKETS, 0.0), (name, s["off_by_one"][name])
    n_int = sum(int_value(g) is not None for g in real_golds)
    assert s["off_by_one_total"]["sympy-cascade"]["n"] == 2 * n_int


def test_full_suite_on_a_sample_of_real_golds(real_golds, pool, tmp_path):
    sample = real_golds[::6]
    result = run_audit(sample, list(OUR_READERS), tmp_path, pool=pool)
    r = result.summary["readers"]
    for name in OUR_READERS:
        assert r[name]["n"] > 0 and r[name]["self_validation"] is not None
    # coverage and judged are reported apart: the cascade's misses are execution failures (parse
    # errors on LaTeX), and on what it does judge it is right every time (seed 001 §3.1)
    assert r["sympy-cascade"]["coverage"] < 0.8
    assert r["sympy-cascade"]["judged"] == 1.0
    for name in ("math-verify-latex", "math-verify-expr", "strip-string"):
        assert r[name]["coverage"] == 1.0 and r[name]["judged"] == r[name]["self_validation"] < 1.0
    # as registered (the prediction is read as is, not wrapped in $…$), a trailing period or newline
    # changes no math-verify verdict on these golds
    for name in ("math-verify-latex", "math-verify-expr"):
        for t in ("trailing_period", "trailing_newline"):
            effect = result.summary["punctuation_effect"][name][t]
            assert effect["n"] == len(sample) and effect["lost"] == 0 and effect["gained"] == 0
    # under the seed's convention (inside $…$) the period and the newline do cost math-verify-latex
    # verdicts, while a sentence period after the closing $ costs none
    mvl = result.summary["punctuation_effect"]["math-verify-latex"]
    assert mvl["dollar_period"]["lost"] > 0 and mvl["dollar_newline"]["lost"] > 0
    assert mvl["dollar_then_period"]["lost"] == 0
