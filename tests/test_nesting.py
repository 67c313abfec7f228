"""The one JSON depth bound (adjudication.nesting) that imports, bundles and LLM replies share."""

from __future__ import annotations

import json

import pytest

from adjudication.nesting import nesting_past


def nested(depth: int) -> object:
    return json.loads("[" * depth + "]" * depth)


@pytest.mark.parametrize("value", [None, 1, "[[[", 2.5, True])
def test_a_scalar_nests_nothing(value: object) -> None:
    assert nesting_past(value, 0) is None


def test_the_value_itself_is_the_first_level() -> None:
    assert nesting_past(nested(3), 3) is None
    assert nesting_past(nested(4), 3) == ["[0]", "[0]", "[0]"]
    assert nesting_past({}, 1) is None and nesting_past({}, 0) == []


def test_the_path_names_keys_and_indices_down_to_the_first_container_past_the_bound() -> None:
    value = {"a": [1, {"b": [[]]}], "flat": [1, 2, 3]}
    assert nesting_past(value, 4) == ["a", "[1]", "b", "[0]"]
    assert nesting_past(value, 5) is None


def test_a_depth_that_would_end_a_recursive_walk_is_checked() -> None:
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert nesting_past(deep, 64) == ["[0]"] * 64
