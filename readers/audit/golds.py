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
    """Distinct golds in file order.

    JSONL (by extension, or when the first non-blank line is a JSON object): the "gold" field of
    each line (multiple-choice rows, which carry "choices", are skipped: their golds are letters).
    Otherwise one gold per line, surrounding whitespace stripped, blank lines skipped.
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
    golds: list[str] = []
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
                golds.append(gold)
    else:
        for ln in lines:
            gold = ln.strip()
            if gold:
                golds.append(gold)
    if "\x00" in "".join(golds):
        raise GoldsError(path, 0, "contains a NUL character")
    out = list(dict.fromkeys(golds))
    if not out:
        raise GoldsError(path, 0, "no open-ended golds (every row is multiple-choice)")
    return out
