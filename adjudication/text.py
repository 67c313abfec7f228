"""Model text on its way to a page: stored verbatim, shown safely.

Responses may hold lone surrogates (stored losslessly by VerbatimTextField). A page is UTF-8 and
cannot carry them: encoding the rendered page fails and the annotator gets a 500 after the claim
already leased the item. Each one is shown as U+FFFD instead, one code point for one, so reader
spans (character offsets) still point at the same text; so is NUL, which an HTML parser drops
(the page would then silently show a different text than the one stored). JSON APIs escape them instead (\\udXXX),
which keeps them verbatim for the client.

Files that hold plain UTF-8 strings (CSV cells, Parquet string columns) use `escape_text`, which
`unescape_text` undoes exactly: a lone surrogate becomes the six characters `\\udXXX` (lower-case
hex), and so that such text can be told from the same six characters written by the model, a run
of backslashes standing right before a lone surrogate or before a literal `\\ud800`..`\\udfff` is
doubled. Everything else, LaTeX's backslashes and NUL included, is written as it is."""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_UNDISPLAYABLE = re.compile("[\x00\ud800-\udfff]")
# A backslash run, then either a lone surrogate or (the run non-empty) what reads as its escape.
_ESCAPE = re.compile(r"(\\*)([\ud800-\udfff])|(\\+)(?=ud[89a-f][0-9a-f]{2})")
_UNESCAPE = re.compile(r"(\\+)u(d[89a-f][0-9a-f]{2})")


def displayable(text: str) -> str:
    return _UNDISPLAYABLE.sub("\ufffd", text) if text else text


def escape_surrogates(text: str) -> str:
    """Lone surrogates as visible backslash escapes, for JSON text (whose own escaping already
    doubled every backslash of the string, so the escape cannot be mistaken for model text)."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if text else text


def _escape(m: re.Match[str]) -> str:
    if m.group(2) is not None:
        return m.group(1) * 2 + f"\\u{ord(m.group(2)):04x}"
    return m.group(3) * 2


def _unescape(m: re.Match[str]) -> str:
    run = len(m.group(1))
    kept = "\\" * (run // 2)
    return kept + (chr(int(m.group(2), 16)) if run % 2 else "u" + m.group(2))


def escape_text(text: str) -> str:
    """Text as valid UTF-8 for a CSV cell or a Parquet string; `unescape_text` gives it back."""
    return _ESCAPE.sub(_escape, text) if text and ("\\" in text or _LONE_SURROGATE.search(text)) else text


def unescape_text(text: str) -> str:
    """The inverse of `escape_text`: the verbatim model text of an exported CSV cell (less the
    apostrophe that defuses a formula) or Parquet string."""
    return _UNESCAPE.sub(_unescape, text) if text and "\\" in text else text
