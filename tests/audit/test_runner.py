"""The audit runner: the seed-001 step, the tables and the output files (no database)."""

from __future__ import annotations

import csv
import json
import time

import pytest
from scipy.stats import norm

from readers import registry
from readers.audit.runner import BUCKETS, magnitude_bucket, run_audit
from readers.audit.transforms import BY_NAME
from readers.base import Item, Reader, Reading
from readers.isolation.pool import IsolatedPool
from readers.stats import wilson, wilson_share

from .conftest import OTHERS

# Integer golds on both sides of every bucket edge, the 10^4 step included.
STEP_GOLDS = [
    "0",
    "3",
    "9",
    "-7",
    "10",
    "57",
    "99",
    "100",
    "512",
    "999",
    "1000",
    "7777",
    "9998",
    "9999",
    "10000",
    "10001",
    "12345",
    "-54321",
    "99999",
    "100000",
    "123456",
    "1000000",
    "987654321",
    "65,960",
]


def test_magnitude_buckets():
    assert [magnitude_bucket(v) for v in (0, 9, -9, 10, 99, 100, 999, 1000, 9999, 10000, 99999, 100000, 10**9)] == [
        "<10",
        "<10",
        "<10",
        "1e1",
        "1e1",
        "1e2",
        "1e2",
        "1e3",
        "1e3",
        "1e4",
        "1e4",
        ">=1e5",
        ">=1e5",
    ]


def test_wilson_is_statsmodels_wilson():
    from statsmodels.stats.proportion import proportion_confint

    assert wilson(3, 10) == pytest.approx(proportion_confint(3, 10, method="wilson"))
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0
    assert wilson(0, 0) is None


def test_wilson_share_is_the_same_interval_on_a_share_and_a_fractional_size():
    from statsmodels.stats.proportion import proportion_confint

    assert wilson_share(0.3, 10, 1.959963984540054) == pytest.approx(wilson(3, 10))
    for p, n, alpha in ((0.37, 12.5, 0.05), (0.02, 80.25, 0.1), (0.9, 7.0, 0.01)):
        z = float(norm.isf(alpha / 2))
        assert wilson_share(p, n, z) == pytest.approx(proportion_confint(p * n, n, alpha=alpha, method="wilson"))
    low, high = wilson_share(0.3, 10, 2.5)  # a t quantile: wider than the normal's
    assert low < wilson(3, 10)[0] and high > wilson(3, 10)[1]
    assert wilson_share(0.25, 12.5, 1.96)[1] < wilson_share(0.25, 6.25, 1.96)[1]
    with pytest.raises(ValueError):
        wilson_share(1.2, 10, 1.96)


def test_the_step_at_ten_thousand(pool, tmp_path):
    off = [BY_NAME["off_by_one_plus"], BY_NAME["off_by_one_minus"], BY_NAME["identity"]]
    result = run_audit(STEP_GOLDS, ["sympy-cascade", *OTHERS], tmp_path, pool=pool, transforms=off)
    ob = result.summary["off_by_one"]
    assert ob["sympy-cascade"] == {"<10": 0.0, "1e1": 0.0, "1e2": 0.0, "1e3": 0.0, "1e4": 1.0, ">=1e5": 1.0}
    for name in OTHERS:
        assert ob[name] == dict.fromkeys(BUCKETS, 0.0), name
    # 9999 -> 10000 is rejected and 10000 -> 9999 accepted: the tolerance is relative to the gold
    rec = {(r["reader"], r["gold"], r["variant"]): r["verdict"] for r in result.records()}
    assert rec[("sympy-cascade", "9999", "10000")] == "incorrect"
    assert rec[("sympy-cascade", "10000", "9999")] == "correct"
    assert rec[("sympy-cascade", "10000", "10001")] == "correct"
    assert rec[("sympy-cascade-magnitude-safe", "10000", "10001")] == "incorrect"


def test_null_where_no_verdict_was_returned(pool, tmp_path):
    # no integer gold at or above 10^3: those buckets have no verdicts at all -> null, never 0
    result = run_audit(["3", "42", "512", "\\frac{1}{2}"], ["sympy-cascade", "strip-string"], tmp_path, pool=pool)
    ob = result.summary["off_by_one"]["sympy-cascade"]
    assert ob["<10"] == 0.0 and ob["1e2"] == 0.0
    assert ob["1e3"] is None and ob["1e4"] is None and ob[">=1e5"] is None
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["off_by_one"]["sympy-cascade"]["1e4"] is None


def test_outputs_and_summary_schema(pool, tmp_path):
    golds = ["42", "10000", "\\frac{1}{2}", "3\\sqrt{2}", "0.15", "(2,4)", "\\{1,2\\}", "p - q"]
    readers = ["sympy-cascade", "math-verify-latex", "math-verify-expr", "strip-string"]
    result = run_audit(golds, readers, tmp_path, pool=pool)
    for name in ("verdicts.jsonl", "strata.csv", "disagreement.csv", "magnitude.csv", "summary.json"):
        assert (tmp_path / name).stat().st_size > 0, name

    summary = json.loads((tmp_path / "summary.json").read_text())
    # the file holds the summary the run returned
    assert summary == json.loads(json.dumps(result.summary))
    assert set(summary["readers"]) == set(readers) == set(summary["off_by_one"])
    for name, r in summary["readers"].items():
        assert {"self_validation", "coverage", "judged"} <= set(r)
        assert 0 <= r["self_validation"] <= r["judged"] <= 1 and 0 < r["coverage"] <= 1
        # self-validation over all inputs = judged-rate x coverage
        assert r["self_validation"] == pytest.approx(r["judged"] * r["coverage"])
        assert r["n"] == r["n_judged"] + r["not_judged"] and r["n_judged"] == r["accepted"] + r["rejected"]
        assert set(summary["off_by_one"][name]) == set(BUCKETS)
    # the cascade cannot parse LaTeX golds: its misses are execution failures, not rejections
    sc = summary["readers"]["sympy-cascade"]
    assert sc["coverage"] < 1 and sc["not_judged"] > 0
    assert summary["error_budget"]["sympy-cascade"]["failures"] == sc["n"] - sc["accepted"]
    shares = [s["share"] for s in summary["error_budget"]["math-verify-latex"]["strata"].values()]
    assert sum(shares) == pytest.approx(1.0)
    assert summary["suite"]["transforms"] >= 40 and summary["suite"]["strata"] >= 12
    assert summary["verdicts"] == summary["variants"] * len(readers) == summary["throughput"]["verdicts"]
    assert summary["throughput"]["verdicts_per_s"] > 0

    records = [json.loads(line) for line in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    assert len(records) == summary["verdicts"]
    assert records == [json.loads(json.dumps(r)) for r in result.records()]
    assert {"gold", "transform", "stratum", "class", "reader", "verdict", "in_contract"} <= set(records[0])
    assert {r["class"] for r in records} == {"CERTIFIED-EQUIV", "CONTRACT-DEP", "ADVERSARIAL"}
    # in-contract comes from the reader's contract: math-verify-expr claims plain numbers only
    expr = [r for r in records if r["reader"] == "math-verify-expr"]
    assert all(r["in_contract"] == (set(r["forms"]) <= {"plain_number"}) for r in expr)
    assert any(not r["in_contract"] for r in expr) and any(r["in_contract"] for r in expr)

    with open(tmp_path / "strata.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    columns = {"reader", "stratum", "class", "scope", "n", "judged", "coverage", "rate", "ci_low", "ci_high"}
    assert columns <= set(rows[0])
    assert {r["scope"] for r in rows} == {"in-contract", "out-of-contract"}
    for r in rows:
        if int(r["judged"]) == 0:
            assert r["rate"] == "" and r["ci_low"] == ""  # N/A, never 0
        else:
            assert float(r["ci_low"]) <= float(r["rate"]) <= float(r["ci_high"])

    with open(tmp_path / "disagreement.csv", newline="") as fh:
        dis = {(r["reader_a"], r["reader_b"]): r for r in csv.DictReader(fh)}
    assert len(dis) == len(readers) ** 2
    for a in readers:
        for b in readers:
            assert dis[(a, b)]["support"] == dis[(b, a)]["support"]
        assert float(dis[(a, a)]["rate"]) == 0
    # pair support counts pairs both readers judged: lower for pairs with the cascade
    support = {pair: int(row["support"]) for pair, row in dis.items()}
    assert support[("sympy-cascade", "strip-string")] < support[("strip-string", "math-verify-latex")]

    with open(tmp_path / "magnitude.csv", newline="") as fh:
        mag = list(csv.DictReader(fh))
    assert len(mag) == len(readers) * len(BUCKETS)
    assert summary["contract_dependent"]["math-verify-latex"]["boxing"]["n"] == 3 * len(golds)
    assert "punctuation_effect" in summary and "trailing_period" in summary["punctuation_effect"]["strip-string"]


def test_one_read_many_call_per_reader(tmp_path):
    calls = []

    class CountingPool(IsolatedPool):
        def read_many(self, reader_name, items):
            calls.append((reader_name, len(items)))
            return super().read_many(reader_name, items)

    with CountingPool(processes=2, budget_s=5.0) as p:
        result = run_audit(["1", "2", "\\frac{1}{2}"], ["strip-string", "sympy-cascade"], None, pool=p)
    assert [c[0] for c in calls] == ["strip-string", "sympy-cascade"]
    assert calls[0][1] <= result.summary["variants"]


class _FlakyReader(Reader):
    """Hangs on a trailing period, raises on a trailing newline, else compares stripped strings."""

    name = "test-audit-flaky"
    version = "1"
    contract = frozenset({"plain_number"})

    def read(self, item: Item) -> Reading:
        if item.response.endswith("."):
            time.sleep(30)
        if item.response.endswith("\n"):
            raise RuntimeError("boom")
        return Reading("correct" if item.response.strip() == item.gold else "incorrect")


def test_timeouts_and_errors_are_not_judged(tmp_path):
    """Execution failures lower coverage; they are never counted as rejections (or acceptances)."""
    suite = [BY_NAME[n] for n in ("identity", "trailing_period", "trailing_newline", "pad_spaces", "off_by_one_plus")]
    # in scope before the pool forks: the workers inherit it
    with registry.scoped({"test-audit-flaky": _FlakyReader}), IsolatedPool(processes=2, budget_s=0.5) as p:
        result = run_audit(["42", "10000"], ["test-audit-flaky"], tmp_path, pool=p, transforms=suite)
    r = result.summary["readers"]["test-audit-flaky"]
    # 2 golds x (identity, period, newline, spaces) certified, in contract
    assert (r["n"], r["n_judged"], r["not_judged"], r["accepted"]) == (8, 4, 4, 4)
    assert r["coverage"] == 0.5 and r["judged"] == 1.0 and r["self_validation"] == 0.5
    verdicts = {rec["transform"]: rec["verdict"] for rec in result.records() if rec["gold"] == "42"}
    assert verdicts["trailing_period"] == "timeout" and verdicts["trailing_newline"] == "error"
    budget = result.summary["error_budget"]["test-audit-flaky"]["strata"]["whitespace_punct"]
    assert (budget["rejected"], budget["not_judged"]) == (0, 4)
    assert result.summary["throughput"]["per_reader"]["test-audit-flaky"]["timeouts"] == 2
