"""Diagnostic JSON: json_text (the fast path readings are written with) says what json_safe says."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudication.fields import json_safe, json_text


class _Opaque:
    def __str__(self) -> str:
        return "opaque object"


HOSTILE_DETAILS: list[Any] = [
    {},
    {"pattern": r"answer is \(?([A-J])\)?", "matches": ["B", "C"], "span": (3, 4), "score": 0.5},
    {"nul": "a\x00b"},
    {"surrogate": "x\ud800y"},
    {"nested": {"deeper": ["\udfff", {"nan": math.nan}]}},
    {"inf": math.inf, "ninf": -math.inf},
    {True: 1, False: 2, None: 3, 7: "int key", 1.5: "float key"},
    {math.nan: "nan key", (1, 2): "tuple key"},
    {"object": _Opaque(), "bytes": b"\x00raw"},
    {"literal backslash": "\\u0000 is six characters here"},
    {"unicode": "∑ café 数学 \U0001f600"},
    [1, "two", None, True],
    "bare string \x00",
]


@pytest.mark.parametrize("detail", HOSTILE_DETAILS, ids=range(len(HOSTILE_DETAILS)))
def test_json_text_stores_what_json_safe_would(detail: Any) -> None:
    text = json_text(detail)
    assert json.loads(text) == json.loads(json.dumps(json_safe(detail)))
    # What PostgreSQL jsonb refuses never reaches it.
    assert "\\u0000" not in text.replace("\\\\", "")
    text.encode("utf-8")


def test_non_string_keys_are_written_as_json_writes_them() -> None:
    assert json_safe({True: 1, None: 2, 3: 3, 2.5: 4}) == {"true": 1, "null": 2, "3": 3, "2.5": 4}


@pytest.mark.parametrize("detail", HOSTILE_DETAILS, ids=range(len(HOSTILE_DETAILS)))
def test_json_stored_is_json_safe_as_stored(detail: Any) -> None:
    """issue 36 item 15: the report body goes through json_stored (the C encoder) instead of the
    json_safe walk; what is stored must be what json_safe stored."""
    from adjudication.fields import json_stored

    assert json_stored(detail) == json.loads(json.dumps(json_safe(detail)))


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities included
    | st.text()  # NUL and lone surrogates included
    | st.floats(allow_nan=False, allow_infinity=False).map(np.float64)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text() | st.integers() | st.booleans(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_VALUES)
@settings(max_examples=300, deadline=None)
def test_json_stored_equals_the_json_safe_walk_on_any_value(value: Any) -> None:
    """issue 36 item 15: json_stored is a faster json_safe, never another body."""
    from adjudication.fields import json_stored

    assert json_stored(value) == json.loads(json.dumps(json_safe(value)))
