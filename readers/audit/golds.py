"""Golds for the audit: one per line, or JSONL (the canonical format's "gold" field), auto-detected."""

from __future__ import annotations

import json
from pathlib import Path


class GoldsError(ValueError):
    """A bad golds file. The message names the file and the line."""

    def __init__(self, path: str | Path, line: int, message: str) -> None:
        self.path, self.line = str(path), line
        where = f"{path}" + (f", line {line}" if line else "")
        super().__init__(f"{where}: {message}")


SOURCES = ("corpus", "synthetic")


def _source_of(obj: dict, path: Path, line: int) -> str:
    value = obj.get("source", "corpus")
    if value is None:
        return "corpus"
    if value not in SOURCES:
        raise GoldsError(path, line, f"field 'source': must be one of {', '.join(SOURCES)}, got {value!r}")
    return value


def _gold_of(obj: object, path: Path, line: int) -> str | None:
    if not isinstance(obj, dict):
        raise GoldsError(path, line, f"expected a JSON object with a 'gold' field, got {type(obj).__name__}")
    if obj.get("choices"):
        return None  # a multiple-choice row: its gold is an option letter, not a maths answer
    if "gold" not in obj or obj["gold"] is None:
        raise GoldsError(path, line, "field 'gold': missing")
    value = obj["gold"]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise GoldsError(path, line, f"field 'gold': must be a string or a number, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise GoldsError(path, line, "field 'gold': must not be empty")
    return text


def _looks_like_jsonl(path: Path, first: str) -> bool:
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return True
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def load_golds(path: str | Path) -> list[str]:
    """Distinct golds in file order (see load_golds_tagged)."""
    return [gold for gold, _source in load_golds_tagged(path)]


def load_golds_tagged(path: str | Path) -> list[tuple[str, str]]:
    """Distinct (gold, source) pairs in file order; source is "corpus" or "synthetic".

    JSONL (by extension, or when the first non-blank line is a JSON object): the "gold" field of
    each line (multiple-choice rows, which carry "choices", are skipped: their golds are letters),
    and an optional "source" field ("corpus" when absent; seed 001 §2.5 tags synthetic golds).
    Otherwise one gold per line, surrounding whitespace stripped, blank lines skipped: all corpus.
    A gold given twice keeps its first source.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise GoldsError(path, 0, f"cannot open: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise GoldsError(path, line, f"not valid UTF-8 ({exc.reason})") from exc
    lines = text.split("\n")
    first = next((ln for ln in lines if ln.strip()), None)
    if first is None:
        raise GoldsError(path, 0, "no golds (the file is empty)")
    golds: list[tuple[str, str]] = []
    if _looks_like_jsonl(path, first):
        for number, ln in enumerate(lines, 1):
            if not ln.strip():
                continue
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError as exc:
                raise GoldsError(path, number, f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
            gold = _gold_of(obj, path, number)
            if gold is not None:
                golds.append((gold, _source_of(obj, path, number)))
    else:
        for ln in lines:
            gold = ln.strip()
            if gold:
                golds.append((gold, "corpus"))
    if "\x00" in "".join(g for g, _s in golds):
        raise GoldsError(path, 0, "contains a NUL character")
    first_source: dict[str, str] = {}
    for gold, source in golds:
        first_source.setdefault(gold, source)
    out = list(first_source.items())
    if not out:
        raise GoldsError(path, 0, "no open-ended golds (every row is multiple-choice)")
    return out
