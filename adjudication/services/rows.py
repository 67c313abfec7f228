"""Parsing and validating input rows (canonical JSONL and lm-eval samples) into one shape.

Pure Python (no ORM): the file-only commands (`read`, `format_share --input`) use it too.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class RowError(ValueError):
    """A bad input row. The message names the file, the line and the field."""

    def __init__(self, path: str | Path, line: int, field_name: str | None, message: str) -> None:
        self.path, self.line, self.field_name = str(path), line, field_name
        where = f"{Path(path).name}, line {line}" + (f", field '{field_name}'" if field_name else "")
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Row:
    id: str
    question: str
    gold: str
    response: str
    choices: tuple[str, ...] = ()
    model: str = ""
    checkpoint: str = ""
    benchmark: str = ""
    prompt: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    line: int = 0

    @cached_property
    def content_hash(self) -> str:
        return sha256(self.response)

    @cached_property
    def question_fingerprint(self) -> str:
        return sha256(json.dumps([self.benchmark, self.question, list(self.choices), self.gold], ensure_ascii=True))

    @cached_property
    def row_hash(self) -> str:
        payload = [self.id, self.question, self.gold, self.response, list(self.choices), self.model,
                   self.checkpoint, self.benchmark, self.prompt, self.meta]
        return sha256(json.dumps(payload, ensure_ascii=True, sort_keys=True))

    def to_canonical(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "question": self.question, "gold": self.gold, "response": self.response}
        if self.choices:
            out["choices"] = list(self.choices)
        for key in ("model", "checkpoint", "benchmark", "prompt"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.meta:
            out["meta"] = self.meta
        return out


def sha256(text: str) -> str:
    # surrogatepass: lone surrogates are legal in untrusted model text and must hash, not crash.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


REQUIRED = ("id", "question", "gold", "response")
OPTIONAL_STR = ("model", "checkpoint", "benchmark", "prompt")
KNOWN = set(REQUIRED) | set(OPTIONAL_STR) | {"choices", "meta"}


def _str_field(obj: dict, key: str, path: Path, line: int, *, required: bool, allow_number: bool = False) -> str:
    if key not in obj or obj[key] is None:
        if required:
            raise RowError(path, line, key, "missing required field")
        return ""
    value = obj[key]
    if allow_number and isinstance(value, (int, float)) and not isinstance(value, bool):
        # ids and golds are often numbers in the wild (GSM8K golds); their text form is unambiguous.
        return str(value)
    if not isinstance(value, str):
        raise RowError(path, line, key, f"must be a string, got {type(value).__name__}")
    if required and key != "response" and not value.strip():
        raise RowError(path, line, key, "must not be empty")
    return value


def _contains_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_contains_nul(k) or _contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_contains_nul(v) for v in value)
    return False


def canonical_row(obj: Any, path: Path, line: int) -> Row:
    if not isinstance(obj, dict):
        raise RowError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    row_id = _str_field(obj, "id", path, line, required=True, allow_number=True)
    question = _str_field(obj, "question", path, line, required=True)
    gold = _str_field(obj, "gold", path, line, required=True, allow_number=True)
    response = _str_field(obj, "response", path, line, required=True)
    extras = {k: _str_field(obj, k, path, line, required=False) for k in OPTIONAL_STR}
    choices_raw = obj.get("choices")
    if choices_raw is None:
        choices: tuple[str, ...] = ()
    elif not isinstance(choices_raw, list) or not all(isinstance(c, str) for c in choices_raw):
        raise RowError(path, line, "choices", "must be a list of option texts (strings)")
    elif len(choices_raw) > len(LETTERS):
        raise RowError(path, line, "choices", f"at most {len(LETTERS)} options are supported")
    else:
        choices = tuple(choices_raw)
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise RowError(path, line, "meta", f"must be an object, got {type(meta).__name__}")
    for key, value in (("choices", list(choices)), ("meta", meta)):
        if _contains_nul(value):
            raise RowError(path, line, key, "contains a NUL character, which JSON columns cannot store")
    if choices:
        gold_letter = gold.strip().strip("()").strip()
        if gold_letter.upper() not in LETTERS[: len(choices)] or len(gold_letter) != 1:
            raise RowError(path, line, "gold", f"multiple-choice gold must be a letter A–{LETTERS[len(choices) - 1]}, got {gold!r}")
    unknown = sorted(set(obj) - KNOWN)
    if unknown:
        meta = {**meta, "extra_fields": {k: obj[k] for k in unknown}}
        if _contains_nul(meta):
            raise RowError(path, line, unknown[0], "contains a NUL character, which JSON columns cannot store")
    return Row(id=row_id, question=question, gold=gold, response=response, choices=choices, meta=meta, line=line, **extras)


_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.jsonl$")


def lm_eval_task_from_filename(path: Path) -> str | None:
    m = _SAMPLES_NAME.match(path.name)
    return m.group("task") if m else None


def _first_str(doc: dict, *keys: str) -> str | None:
    for key in keys:
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def lm_eval_row(obj: Any, path: Path, line: int, *, task: str, model: str, checkpoint: str) -> Row:
    """One line of lm-eval's `samples_<task>_<date>.jsonl` (written by --log_samples)."""
    if not isinstance(obj, dict):
        raise RowError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    if "doc_id" not in obj:
        raise RowError(path, line, "doc_id", "missing (not an lm-eval --log_samples line?)")
    doc = obj.get("doc")
    if not isinstance(doc, dict):
        raise RowError(path, line, "doc", "missing or not an object")
    resps = obj.get("resps")
    response: Any = None
    # resps is a list (per request) of lists (per repeat) of generations; generative tasks have one request.
    if isinstance(resps, list) and resps and isinstance(resps[0], list) and resps[0]:
        response = resps[0][0]
    if not isinstance(response, str):
        filtered = obj.get("filtered_resps")
        if isinstance(filtered, list) and filtered and isinstance(filtered[0], str):
            response = filtered[0]
    if not isinstance(response, str):
        raise RowError(path, line, "resps", "no generated text found (resps[0][0] must be a string)")
    question = _first_str(doc, "question", "problem", "query", "input", "prompt", "text")
    if question is None:
        raise RowError(path, line, "doc", "no question text (looked for question, problem, query, input, prompt, text)")
    choices_raw = doc.get("choices") if isinstance(doc.get("choices"), list) else doc.get("options")
    choices: tuple[str, ...] = tuple(str(c) for c in choices_raw) if isinstance(choices_raw, list) else ()
    target = obj.get("target")
    if choices and isinstance(target, int) and not isinstance(target, bool) and 0 <= target < len(choices):
        gold = LETTERS[target]
    elif choices and isinstance(doc.get("answer"), int) and 0 <= doc["answer"] < len(choices):
        gold = LETTERS[doc["answer"]]
    elif isinstance(target, (str, int, float)) and not isinstance(target, bool):
        gold = str(target)
        if choices:
            gold = gold.strip().strip("()").strip() or gold
    else:
        raise RowError(path, line, "target", "missing or not a string/number")
    if "####" in gold and not choices:
        # gsm8k's target is the whole worked solution; the gold is what follows "####".
        gold = gold.split("####")[-1].strip()
    # The rendered prompt itself is in `arguments`; its hash identifies the prompt across runs.
    prompt = str(obj.get("prompt_hash") or "")
    meta = {"lm_eval": {k: obj[k] for k in ("doc_id", "doc_hash", "prompt_hash", "target_hash", "filtered_resps") if k in obj}}
    return Row(
        id=f"{task}:{obj['doc_id']}", question=question, gold=gold, response=response, choices=choices,
        model=model, checkpoint=checkpoint, benchmark=task, prompt=str(prompt), meta=meta, line=line,
    )


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) per non-blank line, streaming; a file that cannot be opened,
    bad UTF-8 or bad JSON raises RowError naming the file and the line."""
    try:
        handle = open(path, encoding="utf-8", newline="")
    except OSError as exc:
        raise RowError(path, 0, None, f"cannot open: {exc.strerror}") from exc
    with handle:
        line_no = 0
        while True:
            try:
                raw = handle.readline()
            except UnicodeDecodeError as exc:
                raise RowError(path, line_no + 1, None, f"not valid UTF-8 ({exc.reason})") from exc
            if not raw:
                return
            line_no += 1
            if not raw.strip():
                continue
            try:
                yield line_no, json.loads(raw)
            except json.JSONDecodeError as exc:
                raise RowError(path, line_no, None, f"not valid JSON ({exc.msg} at column {exc.colno})") from exc


def iter_rows(path: Path, *, fmt: str = "canonical", model: str = "", checkpoint: str = "",
              task: str | None = None) -> Iterator[Row]:
    """Stream validated rows from a file; raises RowError at the first bad line."""
    if fmt not in ("canonical", "lm-eval"):
        raise ValueError(f"unknown format {fmt!r}")
    if fmt == "lm-eval":
        task = task or lm_eval_task_from_filename(path)
        if not task:
            raise RowError(path, 0, None, "cannot tell the task from the file name (expected samples_<task>_<date>.jsonl); pass --task")
    seen: dict[str, int] = {}
    for line_no, obj in iter_json_lines(path):
        if fmt == "canonical":
            row = canonical_row(obj, path, line_no)
        else:
            row = lm_eval_row(obj, path, line_no, task=task or "", model=model, checkpoint=checkpoint)
        if not row.model and model:
            row = _replace(row, model=model)
        if not row.checkpoint and checkpoint:
            row = _replace(row, checkpoint=checkpoint)
        if row.id in seen:
            raise RowError(path, line_no, "id", f"duplicate id {row.id!r} (first seen on line {seen[row.id]})")
        seen[row.id] = line_no
        yield row


def _replace(row: Row, **changes: Any) -> Row:
    from dataclasses import replace

    return replace(row, **changes)


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(buf.count(b"\n") for buf in iter(lambda: handle.read(1 << 20), b""))
