"""The panel `manage.py read` and the pipeline run when no reader is named (issue 36 item 3): it
follows the task types of the dataset's items."""

from __future__ import annotations

from adjudication.pipeline.selectors import default_panel

SEED_CONVENTION_VARIANTS = {
    "answer-is-correct-gsm8k",
    "instructed-format-gsm8k",
    "math-verify-latex-seed001",
    "math-verify-expr-seed001",
    "strip-string-deepseek",
    "sympy-cascade-seed001",
}


def test_multiple_choice_gets_the_multiple_choice_readers_plus_fixed_and_no_maths_reader() -> None:
    panel = set(default_panel(task_types={"multiple_choice"}))
    assert {"fixed", "strict-match", "mmlu-pro-released", "multi-choice-regex"} <= panel
    assert not {"sympy-cascade", "math-verify-latex", "gsm8k-strict-match", "qa-contains"} & panel


def test_maths_gets_the_maths_readers_and_no_letter_reader() -> None:
    panel = set(default_panel(task_types={"maths"}))
    assert {"fixed", "math-verify-latex", "sympy-cascade", "gsm8k-flexible-extract", "boxed"} <= panel
    assert not {"strict-match", "mmlu-pro-released", "qa-exact-match"} & panel


def test_free_form_gets_the_short_answer_qa_readers() -> None:
    panel = set(default_panel(task_types={"free_form"}))
    assert {"fixed", "qa-exact-match", "qa-contains", "qa-token-f1"} <= panel
    assert not {"strict-match", "sympy-cascade"} & panel


def test_the_seed_convention_variants_run_only_when_named() -> None:
    assert not SEED_CONVENTION_VARIANTS & set(default_panel())
