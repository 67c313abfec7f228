"""The API's JSON renderer: DRF's, except that lone surrogates in model text are written as JSON
escapes (\\udXXX) instead of failing the UTF-8 encoding of the whole response with a 500. Clients
decode them back to the verbatim string; other non-ASCII text stays readable."""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

from adjudication.text import escape_surrogates


class SurrogateEscapingEncoder(JSONEncoder):
    def encode(self, o: Any) -> str:
        return escape_surrogates(super().encode(o))


class VerbatimJSONRenderer(JSONRenderer):
    encoder_class = SurrogateEscapingEncoder
