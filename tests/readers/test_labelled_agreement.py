"""`fixed` against our independent labelled set (odd MMLU-Pro rows, Qwen2.5-Math problems 25–99):
≥ 99 % agreement on each slice, and better than each seed-002 rule and the box-only reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from .labelled import in_process, score

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
RULES = ["strict-match", "flexible-extract", "instructed-format", "answer-is-correct", "last-extract", "boxed"]


@pytest.fixture(scope="module")
def scored():
    if not (SHARED / "mmlu-pro-model-outputs").exists() or not (SHARED / "qwen25-math-eval").exists():
        pytest.skip("shared data not available")
    return {s.reader: s for s in score(["fixed", *RULES], SHARED, in_process)}


def test_fixed_agrees_with_the_labels_on_at_least_99_percent_of_each_slice(scored):
    fixed = scored["fixed"]
    assert fixed.mmlu_agree / fixed.mmlu_n >= 0.99
    assert fixed.math_agree / fixed.math_n >= 0.99
    assert fixed.overall >= 0.99


@pytest.mark.parametrize("rule", RULES)
def test_fixed_beats_each_seed_002_rule_and_the_box_only_reader(scored, rule):
    fixed, other = scored["fixed"], scored[rule]
    assert fixed.overall > other.overall
    assert fixed.mmlu_agree >= other.mmlu_agree and fixed.math_agree >= other.math_agree
