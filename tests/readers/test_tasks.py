"""Task types (issue 36 item 3): which readers apply to which items."""

from __future__ import annotations

import pytest

from readers import registry
from readers.base import Item, Reader
from readers.tasks import ALL_TASK_TYPES, task_type_of, task_types_of_contract


@pytest.mark.parametrize(
    ("gold", "expected"),
    [
        ("18", "maths"),
        ("-3.5", "maths"),
        ("\\frac{1}{2}", "maths"),
        ("x^2+1", "maths"),
        ("(2, 3]", "maths"),
        ("5 cm", "maths"),
        ("sqrt(2)/2", "maths"),
        ("\\text{Tuesday}", "maths"),
        ("Paris", "free_form"),
        ("George Washington", "free_form"),
        ('["Paris", "Paris, France"]', "free_form"),
    ],
)
def test_an_open_ended_gold_written_as_mathematics_is_a_maths_item_and_words_are_free_form(
    gold: str, expected: str
) -> None:
    assert task_type_of(Item(response="", gold=gold)) == expected


def test_options_make_an_item_multiple_choice_whatever_its_gold() -> None:
    assert task_type_of(Item(response="", gold="12", choices=("12", "13"))) == "multiple_choice"


def test_a_declared_task_type_wins_and_an_unknown_one_is_refused() -> None:
    assert task_type_of(Item(response="", gold="1984"), "free_form") == "free_form"
    with pytest.raises(ValueError, match="unknown task type"):
        task_type_of(Item(response="", gold="1984"), "essay")


def test_a_reader_applies_to_the_task_types_of_the_forms_it_claims() -> None:
    assert registry.get("strict-match").applicable_task_types() == {"multiple_choice"}
    assert registry.get("sympy-cascade").applicable_task_types() == {"maths"}
    assert registry.get("qa-contains").applicable_task_types() == {"free_form"}
    assert registry.get("fixed").applicable_task_types() == ALL_TASK_TYPES
    assert registry.get("boxed").applicable_task_types() == {"multiple_choice", "maths"}


def test_a_plugin_reader_that_claims_no_form_applies_everywhere() -> None:
    class Plugin(Reader):
        name = "plugin"
        version = "1"

    assert Plugin().applicable_task_types() == ALL_TASK_TYPES
    assert task_types_of_contract(frozenset()) == ALL_TASK_TYPES
