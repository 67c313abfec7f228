"""`not_applicable` (issue 36 item 3): a reader outside an item's task type records a verdict class
of its own, without running, and no count treats it as a failure or as a wrong answer."""

from __future__ import annotations

from readers import registry
from readers.base import NOT_APPLICABLE, VERDICTS, Item
from readers.isolation.pool import read_isolated
from readers.summary import render, summarise
from readers.tasks import not_applicable

# Ten options, gold J: MMLU-Pro's shape, the letter a four-option reader never sees.
OPTIONS = tuple(f"option {n}" for n in range(10))
MC = Item(
    response="Step by step: nine is out, so the answer is (J).",
    gold="J",
    choices=OPTIONS,
    question="Which one?",
    task_type="multiple_choice",
)
MATHS_ONLY = ("sympy-cascade", "math-verify-expr", "gsm8k-strict-match", "gsm8k-flexible-extract", "strip-string")
LETTER_READERS = ("strict-match", "mmlu-pro-released", "multi-choice-regex", "fixed")


def test_not_applicable_is_a_verdict_class_of_its_own() -> None:
    assert NOT_APPLICABLE in VERDICTS
    assert NOT_APPLICABLE not in ("error", "timeout", "incorrect", "no_answer")


def test_a_maths_reader_on_a_declared_multiple_choice_item_is_not_applicable_and_says_why() -> None:
    reading = not_applicable(registry.get("sympy-cascade"), MC)
    assert reading is not None and reading.verdict == NOT_APPLICABLE and reading.answer is None
    assert reading.detail["task_type"] == "multiple_choice"
    assert reading.detail["reader_task_types"] == ["maths"]
    assert not_applicable(registry.get("strict-match"), MC) is None
    assert not_applicable(registry.get("fixed"), MC) is None


def test_an_item_without_a_declared_task_type_is_read_by_every_reader() -> None:
    # The audits hand readers items of their own choosing: nothing is skipped for them.
    undeclared = Item(response=MC.response, gold=MC.gold, choices=MC.choices)
    assert not_applicable(registry.get("sympy-cascade"), undeclared) is None


def test_the_isolation_pool_records_not_applicable_without_running_the_reader_and_never_error() -> None:
    items = [MC, Item(response="So \\boxed{42}.", gold="42", task_type="maths")]
    for name in MATHS_ONLY:
        readings = [reading for reading, _ms in read_isolated(name, items, processes=1)]
        assert readings[0].verdict == NOT_APPLICABLE, name
        assert readings[1].verdict != NOT_APPLICABLE, name
    for name in LETTER_READERS:
        (reading, _ms), _ = read_isolated(name, items, processes=1)
        assert reading.verdict == "correct", name  # option J, the tenth
    (boxed, _ms), _ = read_isolated("boxed", items, processes=1)
    assert boxed.verdict == "no_answer"  # it applies (a boxed letter), and found no box


def test_the_reader_summary_leaves_not_applicable_out_of_every_share() -> None:
    records = [("fixed", "base", "correct"), ("fixed", "base", "incorrect")]
    records += [("sympy-cascade", "base", NOT_APPLICABLE)] * 2 + [("fixed", "base", NOT_APPLICABLE)]
    rows = {row.reader: row for row in summarise(records)}
    fixed, sympy = rows["fixed"], rows["sympy-cascade"]
    assert (fixed.n, fixed.not_applicable) == (2, 1)
    assert (fixed.coverage, fixed.accuracy, fixed.extraction_rate) == (1.0, 0.5, 1.0)
    assert (sympy.n, sympy.not_applicable, sympy.coverage, sympy.accuracy) == (0, 2, 0.0, 0.0)
    table = render(list(rows.values()))
    sympy_line = next(line for line in table.splitlines() if line.startswith("sympy-cascade"))
    # No shares for a reader that read nothing: dashes, not "0.0 %" (which reads as a failure).
    assert "%" not in sympy_line and sympy_line.split()[-1] == "2"
