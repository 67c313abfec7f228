"""Parsing and validating input rows (canonical JSONL, lm-eval samples; lighteval and inspect-ai logs
in harnesses.py) into one shape.

Pure Python (no ORM): the file-only commands (`read`, `format_share --input`) use it too. Whatever a row
holds is checked here against what the database can store, so that a bad file fails with a line and a
field instead of a traceback from the driver: text fields keep any character (they are stored verbatim,
see adjudication/fields.py), names (id, model, checkpoint, benchmark, prompt) hold no NUL or lone
surrogate and fit their column (the importer passes the columns' lengths in), and JSON values (choices,
meta, extra fields) hold nothing PostgreSQL's jsonb refuses.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, TypeGuard

from adjudication.errors import ApplicationError
from adjudication.nesting import nesting_past
from readers.options import LETTERS

# Far below Python's recursion limit, so that hashing, Django and psycopg can walk any value that passed;
# real metadata is a few levels deep.
MAX_JSON_DEPTH = 100
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class RowError(ApplicationError, ValueError):
    """A bad input row. The message names the file, the line and the field (line 0: the file as a whole)."""

    def __init__(self, path: str | Path, line: int, field_name: str | None, message: str) -> None:
        self.path, self.line, self.field_name, self.reason = str(path), line, field_name, message
        where = Path(path).name + (f", line {line}" if line > 0 else "")
        if field_name is not None:
            # Field names come from the file too (unknown keys): show control characters as escapes.
            shown = field_name if field_name.isprintable() else ascii(field_name)[1:-1]
            where += f", field '{shown}'"
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable as it was made: a parsing process hands its error over to the importing one.
        return (type(self), (self.path, self.line, self.field_name, self.reason))


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
    # The rendered prompt the response was generated from (after any chat template), verbatim;
    # None when the file does not carry it. Answer Regeneration continues exactly this text.
    prompt_text: str | None = None

    @cached_property
    def content_hash(self) -> str:
        return sha256(self.response)

    @cached_property
    def question_fingerprint(self) -> str:
        if len(self.question) + len(self.gold) + sum(map(len, self.choices)) <= _FINGERPRINT_CACHED_UP_TO:
            return _question_fingerprint(self.benchmark, self.question, self.choices, self.gold)
        return _question_fingerprint.__wrapped__(self.benchmark, self.question, self.choices, self.gold)

    @cached_property
    def row_hash(self) -> str:
        payload = [
            self.id,
            self.question,
            self.gold,
            self.response,
            list(self.choices),
            self.model,
            self.checkpoint,
            self.benchmark,
            self.prompt,
            self.meta,
        ]
        if self.prompt_text is not None:
            # Appended only when present, so that rows imported before prompts were stored keep their
            # hash (re-importing them stays a no-op) while adding a prompt later is a change.
            payload.append(self.prompt_text)
        return sha256(_SORTED_JSON(payload))


# json.dumps(value, ensure_ascii=True, sort_keys=True), without building an encoder per call.
_SORTED_JSON = json.JSONEncoder(ensure_ascii=True, sort_keys=True).encode
# Rows answering the same question (one per model and checkpoint) share its fingerprint: computed
# once while the question is among the last few thousand met. Only short questions are kept, so
# that the memo stays small whatever the file holds.
_FINGERPRINT_CACHED_UP_TO = 4096


@lru_cache(maxsize=8192)
def _question_fingerprint(benchmark: str, question: str, choices: tuple[str, ...], gold: str) -> str:
    return sha256(json.dumps([benchmark, question, list(choices), gold], ensure_ascii=True))


def sha256(text: str) -> str:
    # surrogatepass: lone surrogates are legal in untrusted model text and must hash, not crash.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


REQUIRED = ("id", "question", "gold", "response")
OPTIONAL_STR = ("model", "checkpoint", "benchmark", "prompt")
KNOWN = set(REQUIRED) | set(OPTIONAL_STR) | {"choices", "meta", "prompt_text"}


def _has_lone_surrogate(value: str) -> bool:
    return not value.isascii() and _LONE_SURROGATE.search(value) is not None


def identity_problem(value: str, max_length: int | None = None) -> str | None:
    """Why `value` cannot be a name (an id, a model, a dataset name …) stored in its column, or None.

    Names are compared, indexed and shown as they are, so unlike response text they are not escaped
    into storable form: NUL (which PostgreSQL text refuses) and lone surrogates (which UTF-8 cannot
    encode) are refused instead."""
    if "\x00" in value:
        return "contains a NUL character, which a name cannot hold"
    if _has_lone_surrogate(value):
        return "contains a lone surrogate (a half of a UTF-16 pair, not a character), which a name cannot hold"
    if max_length is not None and len(value) > max_length:
        return f"is {len(value)} characters long; at most {max_length} characters fit"
    return None


def json_problem(value: Any) -> str | None:
    """Why `value` cannot be stored in a PostgreSQL jsonb column, or None.

    jsonb refuses NUL characters, lone surrogates and the non-standard NaN / Infinity that Python's json
    reads. Iterative, so that depth is something checked rather than something that crashes."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return "contains a NUL character, which JSON columns cannot store"
            if _has_lone_surrogate(item):
                return (
                    "contains a lone surrogate (a half of a UTF-16 pair, not a character), "
                    "which JSON columns cannot store"
                )
        elif isinstance(item, float):
            if math.isnan(item):
                return "contains NaN, which JSON columns cannot store"
            if math.isinf(item):
                return "contains Infinity, which JSON columns cannot store"
        elif isinstance(item, (list, tuple, dict)):
            if depth >= MAX_JSON_DEPTH:
                return f"is nested more than {MAX_JSON_DEPTH} levels deep"
            if isinstance(item, dict):
                stack.extend((key, depth + 1) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def too_deep(value: Any) -> list[str] | None:
    """Where `value`'s fields nest more than MAX_JSON_DEPTH levels (the keys and indices down to the
    first container past the bound), or None. The value itself is not a level: a line's or a
    sample's fields each get the bound json_problem sets for a stored value."""
    return nesting_past(value, MAX_JSON_DEPTH + 1)


def path_text(where: list[str]) -> str:
    """A field's place as `a.b[0].c`, its first few steps only (the path of a deep value is long)."""
    shown = "".join(step if step.startswith("[") else f".{step}" for step in where[:4]).lstrip(".")
    return shown + ("…" if len(where) > 4 else "")


def nesting_error(path: str | Path, line: int, where: list[str]) -> RowError:
    return RowError(path, line, path_text(where), f"is nested more than {MAX_JSON_DEPTH} levels deep")


# Once a line has parsed, only these can have put into its values what the database refuses: \\u escapes
# (NUL and lone surrogates: text decoded from UTF-8 holds no surrogate, and JSON forbids raw control
# characters) and NaN / Infinity (float literals too large for a double are refused by the parser).
# A line without any of them, and with fewer brackets than the depth limit, skips the value walk.
_MAYBE_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])|NaN|Infinity")


def _values_need_checking(text: str) -> bool:
    # The same test as the pattern alone, cheaper: plain substring scans are quicker than the
    # pattern's alternation, which then only runs on lines holding a \\u escape.
    maybe = ("\\u" in text and _MAYBE_UNSTORABLE.search(text) is not None) or "NaN" in text or "Infinity" in text
    return maybe or text.count("[") + text.count("{") >= MAX_JSON_DEPTH


@dataclass(frozen=True)
class _LineChecks:
    """What one line's values are checked against. `values=False` when the raw line shows no value can
    hold NUL, a lone surrogate, NaN / Infinity or deep nesting: then only lengths are checked."""

    path: Path
    line: int
    max_lengths: Mapping[str, int]
    values: bool = True

    def identity(self, value: str, key: str, field_name: str | None = None) -> None:
        max_length = self.max_lengths.get(key)
        if not self.values and (max_length is None or len(value) <= max_length):
            return
        problem = identity_problem(value, max_length)
        if problem:
            raise RowError(self.path, self.line, field_name or key, problem)

    def json(self, value: Any, field_name: str) -> None:
        if self.values:
            problem = json_problem(value)
            if problem:
                raise RowError(self.path, self.line, field_name, problem)


def _number_text(value: int | float, key: str, path: Path, line: int) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise RowError(path, line, key, f"must be a finite number or a string, got {value}")
    return str(value)


def _str_field(obj: dict, key: str, path: Path, line: int, *, required: bool, allow_number: bool = False) -> str:
    if key not in obj or obj[key] is None:
        if required:
            raise RowError(path, line, key, "missing required field")
        return ""
    value = obj[key]
    if allow_number and isinstance(value, (int, float)) and not isinstance(value, bool):
        # ids and golds are often numbers in the wild (GSM8K golds); their text form is unambiguous.
        return _number_text(value, key, path, line)
    if not isinstance(value, str):
        raise RowError(path, line, key, f"must be a string, got {type(value).__name__}")
    if required and key != "response" and not value.strip():
        raise RowError(path, line, key, "must not be empty")
    return value


def _prompt_text(value: Any, path: Path, line: int, field_name: str) -> str | None:
    """A rendered prompt: text like the question and the response (any characters, any length,
    stored verbatim), so only its type and emptiness are checked. None (or JSON null) means "not
    recorded"; an empty string is refused because it would silently mean "the model saw nothing"."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise RowError(path, line, field_name, f"must be a string (the rendered prompt), got {type(value).__name__}")
    if not value.strip():
        raise RowError(path, line, field_name, "must not be empty (leave the field out when the prompt is unknown)")
    return value


# The length of Run.prompt, for the file-only commands that pass no column lengths.
PROMPT_ID_MAX = 200


def _prompt_id(
    obj: dict, path: Path, line: int, prompt_text: str | None, max_length: int | None
) -> tuple[str, str | None]:
    """(prompt id, rendered prompt) of a canonical line. Harnesses and home-made exporters often
    write the rendered prompt itself under `prompt`: a value with a line break or longer than a
    prompt id's column is taken as the rendered prompt (`prompt_text`, the id left empty), when the
    line has no other `prompt_text`. Beside a different `prompt_text`, a value that fits the column
    stays the id; one that does not is an error naming the field to use."""
    value = obj.get("prompt")
    if value is not None and not isinstance(value, str):
        raise RowError(
            path,
            line,
            "prompt",
            f"must be a string (a prompt id), got {type(value).__name__}; the rendered prompt goes in "
            "'prompt_text', as one string",
        )
    if not value:
        return "", prompt_text
    limit = max_length or PROMPT_ID_MAX
    if "\n" not in value and "\r" not in value and len(value) <= limit:
        return value, prompt_text
    if prompt_text is None or prompt_text == value:
        return "", _prompt_text(value, path, line, "prompt")
    if len(value) <= limit:
        return value, prompt_text  # beside its own prompt_text, a short value is the id it says it is
    raise RowError(
        path,
        line,
        "prompt",
        f"is a prompt id (one line, at most {limit} characters), but holds {len(value)} characters; "
        "the rendered prompt goes in 'prompt_text', which this line already has with another text",
    )


def canonical_row(
    obj: Any, path: Path, line: int, *, max_lengths: Mapping[str, int] | None = None, check_values: bool = True
) -> Row:
    """One canonical line; `max_lengths` bounds the identity fields (the importer passes its columns')."""
    if not isinstance(obj, dict):
        raise RowError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    check = _LineChecks(path, line, max_lengths or {}, check_values)
    row_id = _str_field(obj, "id", path, line, required=True, allow_number=True)
    check.identity(row_id, "id")
    question = _str_field(obj, "question", path, line, required=True)
    gold = _str_field(obj, "gold", path, line, required=True, allow_number=True)
    response = _str_field(obj, "response", path, line, required=True)
    prompt_text = _prompt_text(obj.get("prompt_text"), path, line, "prompt_text")
    extras = {k: _str_field(obj, k, path, line, required=False) for k in OPTIONAL_STR if k != "prompt"}
    extras["prompt"], prompt_text = _prompt_id(obj, path, line, prompt_text, (max_lengths or {}).get("prompt"))
    for key, value in extras.items():
        check.identity(value, key)
    choices_raw = obj.get("choices")
    if choices_raw is None:
        choices: tuple[str, ...] = ()
    elif not isinstance(choices_raw, list) or not all(isinstance(c, str) for c in choices_raw):
        raise RowError(path, line, "choices", "must be a list of option texts (strings)")
    elif len(choices_raw) > len(LETTERS):
        raise RowError(path, line, "choices", f"at most {len(LETTERS)} options are supported")
    else:
        choices = tuple(choices_raw)
    check.json(choices, "choices")
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise RowError(path, line, "meta", f"must be an object, got {type(meta).__name__}")
    check.json(meta, "meta")
    if choices:
        gold_letter = gold.strip().strip("()").strip()
        if gold_letter.upper() not in LETTERS[: len(choices)] or len(gold_letter) != 1:
            raise RowError(
                path, line, "gold", f"multiple-choice gold must be a letter A–{LETTERS[len(choices) - 1]}, got {gold!r}"
            )
    unknown = sorted(set(obj) - KNOWN)
    if unknown:
        for key in unknown:
            check.json({key: obj[key]}, key)
        meta = {**meta, "extra_fields": {k: obj[k] for k in unknown}}
    return Row(
        id=row_id,
        question=question,
        gold=gold,
        response=response,
        choices=choices,
        meta=meta,
        line=line,
        prompt_text=prompt_text,
        **extras,
    )


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


def _lm_eval_choices(doc: dict, path: Path, line: int, check: _LineChecks) -> tuple[str, ...]:
    key = "choices" if isinstance(doc.get("choices"), list) else "options"
    raw = doc.get(key)
    if not isinstance(raw, list):
        return ()
    field_name = f"doc.{key}"
    if not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in raw):
        raise RowError(path, line, field_name, "must be a list of option texts (strings or numbers)")
    if len(raw) > len(LETTERS):
        raise RowError(path, line, field_name, f"at most {len(LETTERS)} options are supported, got {len(raw)}")
    choices = tuple(c if isinstance(c, str) else _number_text(c, field_name, path, line) for c in raw)
    check.json(choices, field_name)
    return choices


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _lm_eval_prompt(obj: dict, path: Path, line: int) -> str | None:
    """The rendered prompt of an lm-eval sample, from its `arguments`; None when it has none.

    lm-eval's samples files hold each request's arguments as {"gen_args_0": {"arg_0": context,
    "arg_1": …}, …}; older writers dumped the raw list [[context, …], …]. The context (arg_0 of the
    first request) is the prompt exactly as the model received it, few-shot examples and chat template included; every
    request of a multiple-choice (loglikelihood) doc shares it. Chat-API runs
    (local-chat-completions) log a JSON list of messages instead of a string: there is no rendered
    prompt to keep (regeneration then falls back, and says so). A structure that is neither is a
    bad line."""
    if obj.get("arguments") is None:
        return None
    arguments = obj["arguments"]
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        if not isinstance(first, dict):
            raise RowError(
                path,
                line,
                "arguments.gen_args_0",
                'missing or not an object (expected lm-eval\'s {"gen_args_0": {"arg_0": prompt, …}})',
            )
        if "arg_0" not in first:
            raise RowError(path, line, "arguments.gen_args_0.arg_0", "missing (the rendered prompt)")
        context, field_name = first["arg_0"], "arguments.gen_args_0.arg_0"
    elif isinstance(arguments, list):
        if not arguments or not isinstance(arguments[0], list) or not arguments[0]:
            raise RowError(path, line, "arguments[0]", "missing or not a list (expected [[prompt, …], …])")
        context, field_name = arguments[0][0], "arguments[0][0]"
    else:
        raise RowError(path, line, "arguments", f"must be an object or a list, got {type(arguments).__name__}")
    if isinstance(context, list) and len(context) == 1 and isinstance(context[0], str):
        return None  # chat messages serialised by a chat-API run: no rendered prompt exists
    if isinstance(context, str) and not context.strip():
        return None  # a zero-shot task with an empty context: the model saw no prompt worth replaying
    return _prompt_text(context, path, line, field_name)


def _lm_eval_choice_gold(target: Any, answer: Any, choices: tuple[str, ...], path: Path, line: int) -> str:
    """The gold letter of a multiple-choice sample. An index out of range, or a string naming no
    option, would store a gold no reading can ever match: refused rather than imported."""
    last = LETTERS[len(choices) - 1]
    if _is_index(target):
        if not 0 <= target < len(choices):
            raise RowError(path, line, "target", f"index {target} is out of range for {len(choices)} choices")
        return LETTERS[target]
    if _is_index(answer) and 0 <= answer < len(choices):
        return LETTERS[answer]
    if isinstance(target, str):
        if target in choices:
            return LETTERS[choices.index(target)]  # lm-eval's own reading of a text target
        letter = target.strip().strip("()").strip()
        if len(letter) == 1 and letter.upper() in LETTERS[: len(choices)]:
            return letter
    elif target is None or isinstance(target, bool) or not isinstance(target, (int, float)):
        raise RowError(path, line, "target", "missing or not a string/number")
    message = f"multiple-choice gold must be a letter A–{last} or one of the choices, got {target!r}"
    raise RowError(path, line, "target", message[:300])


def lm_eval_row(
    obj: Any,
    path: Path,
    line: int,
    *,
    task: str,
    model: str,
    checkpoint: str,
    max_lengths: Mapping[str, int] | None = None,
    check_values: bool = True,
) -> Row:
    """One line of lm-eval's `samples_<task>_<date>.jsonl` (written by --log_samples)."""
    if not isinstance(obj, dict):
        raise RowError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    check = _LineChecks(path, line, max_lengths or {}, check_values)
    if "doc_id" not in obj:
        raise RowError(path, line, "doc_id", "missing (not an lm-eval --log_samples line?)")
    doc_id = obj["doc_id"]
    if not (_is_index(doc_id) or isinstance(doc_id, str)):
        raise RowError(path, line, "doc_id", f"must be an integer or a string, got {type(doc_id).__name__}")
    row_id = f"{task}:{doc_id}"
    check.identity(row_id, "id", field_name="doc_id")
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
    choices = _lm_eval_choices(doc, path, line, check)
    target = obj.get("target")
    if choices:
        gold = _lm_eval_choice_gold(target, doc.get("answer"), choices, path, line)
    elif isinstance(target, str) or (isinstance(target, (int, float)) and not isinstance(target, bool)):
        gold = target if isinstance(target, str) else _number_text(target, "target", path, line)
    else:
        raise RowError(path, line, "target", "missing or not a string/number")
    if "####" in gold and not choices:
        # gsm8k's target is the whole worked solution; the gold is what follows "####".
        gold = gold.split("####")[-1].strip()
    # The rendered prompt itself is in `arguments`; its hash identifies the prompt across runs.
    prompt_hash = obj.get("prompt_hash") or ""
    if not (isinstance(prompt_hash, str) or _is_index(prompt_hash)):
        raise RowError(path, line, "prompt_hash", f"must be a string, got {type(prompt_hash).__name__}")
    prompt = str(prompt_hash)
    check.identity(prompt, "prompt", field_name="prompt_hash")
    lm_eval = {k: obj[k] for k in ("doc_id", "doc_hash", "prompt_hash", "target_hash", "filtered_resps") if k in obj}
    for key, value in lm_eval.items():
        check.json(value, key)
    return Row(
        id=row_id,
        question=question,
        gold=gold,
        response=response,
        choices=choices,
        model=model,
        checkpoint=checkpoint,
        benchmark=task,
        prompt=prompt,
        meta={"lm_eval": lm_eval},
        line=line,
        prompt_text=_lm_eval_prompt(obj, path, line),
    )


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) per non-blank line, streaming; a file that cannot be opened,
    bad UTF-8 or JSON that cannot be read raises RowError naming the file and the line."""
    for line_no, _text, obj in _iter_json_lines(path):
        yield line_no, obj


def _iter_json_lines(path: Path) -> Iterator[tuple[int, str, Any]]:
    """(line number, line text, parsed JSON) per non-blank line."""
    try:
        # Binary, decoded line by line: a text stream decodes 8 KiB ahead, so its UnicodeDecodeError
        # would name whatever line the buffer started on rather than the line holding the bad byte.
        handle = open(path, "rb")  # noqa: SIM115 - entered just below; opened apart to report the failure
    except OSError as exc:
        raise RowError(path, 0, None, f"cannot open: {exc.strerror}") from exc
    with handle:
        line_no = 0
        while True:
            try:
                raw = handle.readline()
            except OSError as exc:
                raise RowError(path, line_no + 1, None, f"cannot read: {exc.strerror}") from exc
            if not raw:
                return
            line_no += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RowError(
                    path, line_no, None, f"not valid UTF-8 ({exc.reason} at byte {exc.start + 1} of the line)"
                ) from exc
            if not text.strip():
                continue
            obj = _parse_json(text, path, line_no)
            # Fewer brackets than the bound: nothing in the line can nest that deep.
            if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
                where = too_deep(obj)
                if where is not None:
                    raise nesting_error(path, line_no, where)
            yield line_no, text, obj


class _FloatOverflow(ValueError):
    pass


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _FloatOverflow(literal)
    return value


# Called for float literals only: integers and everything else keep the C scanner's fast path.
_DECODER = json.JSONDecoder(parse_float=_finite_float)


def _parse_json(text: str, path: Path, line_no: int) -> Any:
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise RowError(path, line_no, None, f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    except RecursionError as exc:
        raise RowError(path, line_no, None, f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from exc
    except _FloatOverflow as exc:
        literal = str(exc)
        shown = literal if len(literal) <= 24 else literal[:20] + "…"
        raise RowError(
            path, line_no, None, f"the number {shown} is too large for a double (it would read as infinity)"
        ) from exc
    except ValueError as exc:
        # Python refuses to convert integers of more than sys.get_int_max_str_digits() digits.
        raise RowError(
            path, line_no, None, f"a number has more than {sys.get_int_max_str_digits()} digits, too many to read"
        ) from exc


def iter_rows(
    path: Path,
    *,
    fmt: str = "canonical",
    model: str = "",
    checkpoint: str = "",
    task: str | None = None,
    max_lengths: Mapping[str, int] | None = None,
    duplicates: bool = True,
    pairs: Mapping[str, str] | None = None,
) -> Iterator[Row]:
    """Stream validated rows from a file; raises RowError at the first bad line.

    `max_lengths` ({"id": 500, "model": 200, …}) bounds the identity fields to what the caller's columns
    hold; without it only their characters are checked. `model`, `checkpoint` and `task` come from the
    caller (a command line), which checks them itself. `duplicates=False` leaves repeated ids to the
    caller (the PostgreSQL import finds them in the database, so that its memory does not grow with
    the file's ids). `pairs` ({model: checkpoint}, from --pair) gives a paired model's rows their
    checkpoint. Harness logs, and a format told from the file, are read by
    adjudication.ingest.harnesses.iter_rows, which calls this for JSON lines."""
    if fmt not in ("canonical", "lm-eval"):
        raise ValueError(f"unknown format {fmt!r}")
    if fmt == "lm-eval":
        task = task or lm_eval_task_from_filename(path)
        if not task:
            raise RowError(
                path,
                0,
                None,
                "cannot tell the task from the file name (expected samples_<task>_<date>.jsonl); pass --task",
            )
        problem = identity_problem(task, (max_lengths or {}).get("benchmark"))
        if problem:
            raise RowError(path, 0, None, f"the task name {task!r} {problem}; pass --task")
    seen: dict[str, int] = {}
    for line_no, text, obj in _iter_json_lines(path):
        check_values = _values_need_checking(text)
        if fmt == "canonical":
            row = canonical_row(obj, path, line_no, max_lengths=max_lengths, check_values=check_values)
        else:
            row = lm_eval_row(
                obj,
                path,
                line_no,
                task=task or "",
                model=model,
                checkpoint=checkpoint,
                max_lengths=max_lengths,
                check_values=check_values,
            )
        if not row.model and model:
            row = _replace(row, model=model)
        if pairs:
            row = paired_checkpoint(row, pairs, path)
        if not row.checkpoint and checkpoint:
            row = _replace(row, checkpoint=checkpoint)
        if duplicates:
            if row.id in seen:
                raise RowError(path, line_no, "id", duplicate_id(row.id, seen[row.id]))
            seen[row.id] = line_no
        yield row


@dataclass(frozen=True)
class Pairing:
    """Runs of different model names compared as one family's checkpoints: `--pair base=Yi-6B,rl=Yi-6B-Chat`
    (the family is named after its first model). `checkpoints`: (checkpoint, model) in the order given."""

    family: str
    checkpoints: tuple[tuple[str, str], ...]

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(model for _, model in self.checkpoints)


class PairingError(ApplicationError, ValueError):
    """A --pair declaration that cannot be read; the message names it and says why."""


def parse_pairing(text: str, *, max_length: int = 200) -> Pairing:
    """`CHECKPOINT=MODEL,CHECKPOINT=MODEL[,…]`; PairingError with the reason otherwise."""
    try:
        return _parse_pairing(text, max_length)
    except ValueError as exc:
        raise PairingError(f"--pair {text!r}: {exc}", field="pair") from None


def _parse_pairing(text: str, max_length: int) -> Pairing:
    entries: list[tuple[str, str]] = []
    for part in text.split(","):
        checkpoint, sep, model = (p.strip() for p in part.partition("="))
        if not sep or not checkpoint or not model:
            raise ValueError(f"{part.strip()!r} is not CHECKPOINT=MODEL (e.g. base=Yi-6B,rl=Yi-6B-Chat)")
        for what, value in (("checkpoint", checkpoint), ("model", model)):
            problem = identity_problem(value, max_length)
            if problem:
                raise ValueError(f"the {what} {value[:40]!r} {problem}")
        entries.append((checkpoint, model))
    if len(entries) < 2:
        raise ValueError("a pair names at least two checkpoints (e.g. base=Yi-6B,rl=Yi-6B-Chat)")
    for index, what in ((0, "checkpoint"), (1, "model")):
        values = [entry[index] for entry in entries]
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"the {what} {repeated[0]!r} is named twice")
    return Pairing(family=entries[0][1], checkpoints=tuple(entries))


def paired_checkpoint(row: Row, pairs: Mapping[str, str], path: Path) -> Row:
    """The row with the checkpoint a pairing declares for its model ({model: checkpoint}); a row that
    names another checkpoint for that model is an error."""
    declared = pairs.get(row.model)
    if declared is None or row.checkpoint == declared:
        return row
    if row.checkpoint:
        raise RowError(
            path,
            row.line,
            "checkpoint",
            f"--pair declares model {row.model!r} as checkpoint {declared!r}, but the row says {row.checkpoint!r}",
        )
    return _replace(row, checkpoint=declared)


def duplicate_id(row_id: str, first_line: int) -> str:
    """The message for an id met again (the error names the line it is met on)."""
    return f"duplicate id {row_id!r} (first seen on line {first_line})"


def _replace(row: Row, **changes: Any) -> Row:
    from dataclasses import replace

    return replace(row, **changes)


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(buf.count(b"\n") for buf in iter(lambda: handle.read(1 << 20), b""))
