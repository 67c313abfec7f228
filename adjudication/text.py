"""Model text on its way to a page: stored verbatim, shown safely.

Responses may hold lone surrogates (stored losslessly by VerbatimTextField). A page is UTF-8 and
cannot carry them: encoding the rendered page fails and the annotator gets a 500 after the claim
already leased the item. Each one is shown as U+FFFD instead, one code point for one, so reader
spans (character offsets) still point at the same text. JSON APIs escape them instead (\\udXXX),
which keeps them verbatim for the client."""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def displayable(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text) if text else text


def escape_surrogates(text: str) -> str:
    """Lone surrogates as visible backslash escapes, for text files that must be valid UTF-8."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if text else text
