"""A text field that stores any Python string losslessly.

Model output is untrusted and arrives verbatim: it can hold NUL characters (which PostgreSQL text
rejects) and lone surrogates (which no UTF-8 database can store). Such values, and values that
start with the sentinel itself, are stored as the sentinel followed by their ASCII JSON escape;
everything else is stored as is, so ordinary text stays readable and searchable in SQL.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.db import models

SENTINEL = "\x01json:"


def is_plain_text(value: str) -> bool:
    """Text any text column can hold as it is: PostgreSQL refuses NUL, and UTF-8 a lone surrogate."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _storable(value: str) -> bool:
    return is_plain_text(value) and not value.startswith(SENTINEL)


def encode_verbatim(value: str) -> str:
    return value if _storable(value) else SENTINEL + json.dumps(value, ensure_ascii=True)


def decode_verbatim(value: str) -> str:
    return json.loads(value[len(SENTINEL) :]) if value.startswith(SENTINEL) else value


class VerbatimTextField(models.TextField):
    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return decode_verbatim(value) if isinstance(value, str) else value

    def to_python(self, value: Any) -> Any:
        return decode_verbatim(value) if isinstance(value, str) else value

    def get_prep_value(self, value: Any) -> Any:
        # Not TextField's: it runs to_python, which would decode a value that merely starts with the
        # sentinel (model text may) as if it came from the database, and so store another text.
        value = models.Field.get_prep_value(self, value)
        if value is not None and not isinstance(value, str):
            value = str(value)
        return encode_verbatim(value) if isinstance(value, str) else value


def json_safe(value: Any) -> Any:
    """Diagnostic JSON (reading details, reports) may be lossy: drop what PostgreSQL jsonb cannot
    hold (NUL, lone surrogates, NaN and infinities, which become null)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {json_safe(_json_key(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return json_safe(str(value))


def _json_key(key: Any) -> str:
    """A dict key as json.dumps writes it (True as "true", 1.5 as "1.5"), so that json_text's fast
    path and json_safe agree; keys json cannot write become their str()."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return json.dumps(key)
    if isinstance(key, (int, float)) and math.isfinite(key):
        return json.dumps(key)
    return str(key)


def json_text(value: Any) -> str:
    """`json.dumps(json_safe(value))`, without walking `value` in Python first when it needs no
    repair: the C encoder refuses NaN and infinities and anything it cannot write, a NUL shows as
    its escape, a lone surrogate fails to encode; each of those takes the slow, repairing path."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(json_safe(value))
    if "\\u0000" in text:
        return json.dumps(json_safe(value))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(json_safe(value))
    return text


def json_stored(value: Any) -> Any:
    """`json_safe(value)` as a jsonb column gives it back (tuples as lists, every key a string):
    one pass of the C encoder and decoder when nothing needs repair, instead of a Python walk over
    every value (a report body's ~130,000 values: 0.2-0.6 s of the report's computation)."""
    return json.loads(json_text(value))
