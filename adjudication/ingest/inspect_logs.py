"""inspect-ai eval logs: `.eval` (a zip archive) and `.json`, the two formats `inspect eval` writes.

The schema is inspect-ai's `EvalLog` (inspect_ai/log/_log.py): `eval` (EvalSpec: task, model,
packages, scorers, config.epochs, …) and `samples` (EvalSample: id, epoch, input, choices, target,
output.completion, scores {scorer: Score(value, answer, explanation, reason)}, metadata, error,
attachments). A `.eval` archive (inspect_ai/log/_recorders/eval.py) holds `header.json` (the log
without its samples; `_journal/start.json` while a run is unfinished) and one
`samples/<id>_epoch_<n>.json` per sample, each read on its own; entries are zstd-compressed by
inspect-ai 0.3.1xx and later (deflate before), read through `zipfile-zstd` on Python < 3.14 as
inspect-ai itself does. A `.json` log is one object, streamed with ijson: `eval` comes before
`samples` (EvalLog's field order), so memory holds one sample at a time in both formats.

Mapping: the id is `<task>:<sample id>` (`:epoch<n>` appended when the eval ran several epochs),
the question the input (a string, or the last user message of a chat input), the options the
sample's choices (their gold the target letter), the response `output.completion`, the model
`eval.model`, the benchmark the task. Each score whose value is a verdict (C / I / N, 1 / 0,
true / false, yes / no: inspect-ai's value_to_float, partial credit excepted) becomes a reading of
`inspect:<scorer>`, version inspect-ai's (`eval.packages`), config the scorer's options; its answer
is the score's `answer` ("" from choice() or an unusable response: no_answer).
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from adjudication.archives import BoundedZip
from adjudication.ingest.formats import MAX_JSON_DEPTH, Row, identity_problem, json_problem, path_text, too_deep
from adjudication.ingest.records import (
    HarnessReading,
    RecordError,
    binary_verdict,
    harness_reading,
    row_from_fields,
    text_of,
    zip_log,
)

UNIT = "sample"
_ATTACHMENT = "attachment://"
# inspect-ai's score values (inspect_ai/scorer/_metric.py: CORRECT, INCORRECT, PARTIAL, NOANSWER).
_VALUE_VERDICTS = {"C": "correct", "I": "incorrect", "N": "no_answer"}
_WORD_VERDICTS = {"yes": "correct", "true": "correct", "no": "incorrect", "false": "incorrect"}
# Score reasons that say the scorer found no answer to grade (inspect_ai/scorer/_metric.py ScoreReason).
_NOTHING_FOUND = {"no_response", "invalid_response_format"}


def _error(path: Path, index: int, field_name: str | None, message: str, entry: str | None = None) -> RecordError:
    return RecordError(path, index, field_name, message, unit=UNIT, entry=entry)


def _enable_zstd() -> None:
    # inspect-ai compresses .eval entries with zstd (method 93), which zipfile reads natively only
    # from Python 3.14; before that inspect-ai registers it with zipfile-zstd, and so do we.
    if sys.version_info < (3, 14):
        import zipfile_zstd  # noqa: F401


def iter_records(
    path: Path, *, task: str | None = None, max_lengths: Mapping[str, int] | None = None
) -> Iterator[tuple[Row, tuple[HarnessReading, ...]]]:
    if zip_log(path) or path.suffix == ".eval":
        samples = _bounded(_zip_samples(path), path)
    else:
        samples = _json_samples(path)
    header = next(samples)
    log = _LogInfo(header, path, task=task, max_lengths=max_lengths)
    for index, (entry, sample) in enumerate(samples, start=1):
        yield log.record(sample, index, entry)


def _bounded(entries: Iterator[Any], path: Path) -> Iterator[Any]:
    """The header and samples of an archive, each refused where it nests deeper than a .json log's
    may (json.loads itself stops only at the interpreter's recursion limit)."""
    header = next(entries)
    where = too_deep(header)
    if where is not None:
        raise _error(path, 0, path_text(where), f"is nested more than {MAX_JSON_DEPTH} levels deep", "header.json")
    yield header
    for index, (entry, sample) in enumerate(entries, start=1):
        where = too_deep(sample)
        if where is not None:
            raise _error(path, index, path_text(where), f"is nested more than {MAX_JSON_DEPTH} levels deep", entry)
        yield entry, sample


def zip_sample_count(path: Path) -> int:
    _enable_zstd()
    with zipfile.ZipFile(path) as archive:
        return sum(1 for name in archive.namelist() if _is_sample_entry(name))


def _is_sample_entry(name: str) -> bool:
    return name.startswith("samples/") and name.endswith(".json")


def _zip_samples(path: Path) -> Iterator[Any]:
    """The header (`eval` and the rest), then (entry name, sample) per sample entry."""
    _enable_zstd()
    try:
        archive = BoundedZip(path)
    except OSError as exc:
        raise _error(path, 0, None, f"cannot open: {exc.strerror or exc}") from exc
    except zipfile.BadZipFile as exc:
        raise _error(path, 0, None, f"not a readable .eval archive (zip: {exc})") from exc
    with archive:
        names = archive.namelist()
        header_name = next((n for n in ("header.json", "_journal/start.json") if n in names), None)
        if header_name is None:
            raise _error(path, 0, None, "not an inspect-ai eval log: the archive has no header.json")
        yield _zip_json(archive, header_name, path, 0)
        index = 0
        for name in names:
            if _is_sample_entry(name):
                index += 1
                yield name, _zip_json(archive, name, path, index)


def _zip_json(archive: BoundedZip, name: str, path: Path, index: int) -> Any:
    entry = name if index else None
    try:
        raw = archive.read(name)
    except Exception as exc:  # noqa: BLE001 - zipfile, zlib and zstandard (ZstdError) each raise their own
        raise _error(path, index, None, f"{name} cannot be read ({type(exc).__name__}: {exc})", entry) from exc
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _error(path, index, None, f"{name} is not valid JSON ({exc})", entry) from exc
    except RecursionError as exc:
        raise _error(path, index, None, f"{name} is JSON nested too deeply to read", entry) from exc


def _json_samples(path: Path) -> Iterator[Any]:
    """A .json log, streamed: the header (`eval`), then (None, sample) per sample.

    Values are built from ijson's basic events here, not by ijson.items: items tracks a prefix
    string per open level, which costs memory quadratic in the nesting depth (a 95 KB file of
    nested brackets took 2.2 GB), where this builder refuses a value nested deeper than
    MAX_JSON_DEPTH as soon as it opens the level past it."""
    import ijson

    backend = _json_backend(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed in the finally below, after the samples
    except OSError as exc:
        raise _error(path, 0, None, f"cannot open: {exc.strerror}") from exc
    try:
        header: dict[str, Any] = {}
        try:
            events = backend.basic_parse(handle, use_float=True)
            for key in _top_level(events):
                if key == "samples":
                    _skip(events, key, limit=MAX_JSON_DEPTH + 2)  # read in the second pass below
                    continue
                header[key] = _build(events, limit=MAX_JSON_DEPTH)
                if key == "eval":
                    break  # every key after `eval` but `samples` is a summary this import does not need
        except _TooDeep as exc:
            raise _error(path, 0, exc.field(), f"is nested more than {MAX_JSON_DEPTH} levels deep") from exc
        except ijson.JSONError as exc:
            raise _error(path, 0, None, f"not valid JSON before the samples ({exc})") from exc
        if "eval" not in header:
            raise _error(path, 0, None, "not an inspect-ai eval log: no `eval` object")
        yield header
        handle.seek(0)
        index = 0
        samples = _samples(backend.basic_parse(handle, use_float=True))
        while True:
            try:
                sample = next(samples)
            except StopIteration:
                return
            except _TooDeep as exc:
                raise _error(path, index + 1, exc.field(), f"is nested more than {MAX_JSON_DEPTH} levels deep") from exc
            except ijson.IncompleteJSONError as exc:
                raise _error(path, index + 1, None, f"the log ends inside this sample: truncated? ({exc})") from exc
            except ijson.JSONError as exc:
                raise _error(path, index + 1, None, f"not valid JSON in this sample ({exc})") from exc
            index += 1
            yield None, sample
    finally:
        handle.close()


# A \u escape of a UTF-16 surrogate (half of a pair, or a lone one).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _json_backend(path: Path) -> Any:
    """ijson's C backend, or its pure-Python one for a file holding surrogate escapes: yajl turns a
    lone surrogate into "?" without a word, where the Python backend keeps it as json.loads (and
    so the .eval path) does; response texts keep it verbatim, ids refuse it. A pair decodes alike
    in both; a false alarm (an escaped backslash before "ud8") only costs speed."""
    import ijson

    tail = b""
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                if _SURROGATE_ESCAPE.search(tail + block):
                    return ijson.get_backend("python")
                tail = block[-5:]
    except OSError:
        pass  # the open in _json_samples reports it
    return ijson


class _TooDeep(Exception):
    def __init__(self, path: list[str]) -> None:
        self.path = path

    def field(self) -> str:
        return path_text(self.path)


def _top_level(events: Iterator[tuple[str, Any]]) -> Iterator[str]:
    """The keys of the file's top-level object; the caller consumes each key's value from `events`
    (the same iterator) before asking for the next key."""
    event, _ = next(events)
    if event != "start_map":
        raise ijson_error(f"expected an object at the top, got {event}")
    for event, value in events:
        if event == "map_key":
            yield value
        elif event == "end_map":
            return


def _samples(events: Iterator[tuple[str, Any]]) -> Iterator[Any]:
    """Each item of the top-level `samples` array (nothing if there is none)."""
    keys = _top_level(events)
    for key in keys:
        if key != "samples":
            _skip(events, key, limit=MAX_JSON_DEPTH)
            continue
        event, value = next(events)
        if event != "start_array":
            return  # no samples: the import refuses an empty log
        for event, value in events:
            if event == "end_array":
                return
            # The sample object itself is not a level: its fields are bounded like a .eval entry's.
            yield _build(events, limit=MAX_JSON_DEPTH + 1, first=(event, value))
        return


def _build(events: Iterator[tuple[str, Any]], *, limit: int, first: tuple[str, Any] | None = None) -> Any:
    """The next value of `events`, built; _TooDeep when it opens more than `limit` levels."""
    event, value = first if first is not None else next(events)
    if event == "start_map":
        root: Any = {}
    elif event == "start_array":
        root = []
    else:
        return value
    stack: list[Any] = [root]
    keys: list[Any] = [None]
    for event, value in events:
        if event == "map_key":
            keys[-1] = value
            continue
        if event == "end_map" or event == "end_array":
            stack.pop()
            keys.pop()
            if not stack:
                return root
            continue
        opens = event == "start_map" or event == "start_array"
        item: Any = ({} if event == "start_map" else []) if opens else value
        parent = stack[-1]
        if type(parent) is list:
            parent.append(item)
        else:
            parent[keys[-1]] = item
        if opens:
            if len(stack) >= limit:
                raise _TooDeep([_step(container, key) for container, key in zip(stack, keys, strict=True)])
            stack.append(item)
            keys.append(None)
    raise ijson_error("the JSON ends inside a value")


def _step(container: Any, key: Any) -> str:
    return str(key) if type(container) is dict else f"[{len(container) - 1}]"


def _skip(events: Iterator[tuple[str, Any]], key: str, *, limit: int) -> None:
    """Consume the value of top-level `key` from `events` without building it, bounded like _build."""
    depth = 0
    for event, _ in events:
        if event == "start_map" or event == "start_array":
            depth += 1
            if depth > limit:
                raise _TooDeep([key])
        elif event == "end_map" or event == "end_array":
            depth -= 1
        if depth == 0:
            return


def ijson_error(message: str) -> Exception:
    import ijson

    return ijson.IncompleteJSONError(message)


class _LogInfo:
    """What every sample of one log shares: task, model, version, scorers, epochs."""

    def __init__(self, header: Any, path: Path, *, task: str | None, max_lengths: Mapping[str, int] | None) -> None:
        self.path, self.max_lengths = path, max_lengths
        self._entry: str | None = None
        spec = header.get("eval") if isinstance(header, dict) else None
        if not isinstance(spec, dict):
            raise _error(path, 0, "eval", "missing or not an object (not an inspect-ai eval log?)")
        name = spec.get("task")
        if not isinstance(name, str) or not name.strip():
            raise _error(path, 0, "eval.task", "missing or not a string")
        self.task = task or name
        problem = identity_problem(self.task, (max_lengths or {}).get("benchmark"))
        if problem:
            raise _error(path, 0, "eval.task", f"the task name {self.task!r} {problem}; pass --task")
        model = spec.get("model")
        if not isinstance(model, str):
            raise _error(path, 0, "eval.model", "missing or not a string")
        self.model = model
        packages = spec.get("packages")
        version = packages.get("inspect_ai") if isinstance(packages, dict) else None
        log_version = header.get("version")
        self.version = version if isinstance(version, str) and version else f"log-v{log_version}"
        config = spec.get("config")
        epochs = config.get("epochs") if isinstance(config, dict) else None
        self.epochs = epochs if isinstance(epochs, int) and not isinstance(epochs, bool) else 1
        self.scorer_options: dict[str, Any] = {}
        for scorer in spec.get("scorers") or []:
            if isinstance(scorer, dict) and isinstance(scorer.get("name"), str):
                options = scorer.get("options")
                self.scorer_options[scorer["name"]] = options if isinstance(options, dict) else {}

    def record(self, sample: Any, index: int, entry: str | None) -> tuple[Row, tuple[HarnessReading, ...]]:
        path, self._entry = self.path, entry
        if not isinstance(sample, dict):
            raise self._fail(index, None, f"expected a sample object, got {type(sample).__name__}")
        raw_attachments = sample.get("attachments")
        attachments: dict[str, Any] = raw_attachments if isinstance(raw_attachments, dict) else {}
        sample_id = sample.get("id")
        if not (isinstance(sample_id, (str, int)) and not isinstance(sample_id, bool)):
            raise self._fail(index, "id", f"must be a string or an integer, got {type(sample_id).__name__}")
        epoch = sample.get("epoch", 1)
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
            raise self._fail(index, "epoch", f"must be a positive integer, got {epoch!r}"[:200])
        row_id = f"{self.task}:{sample_id}" + (f":epoch{epoch}" if self.epochs > 1 or epoch > 1 else "")
        question = _question(_resolve(sample.get("input"), attachments))
        if question is None:
            raise self._fail(index, "input", "must be a string or a list of chat messages with a user message")
        choices = sample.get("choices")
        if choices is not None and (not isinstance(choices, list) or not all(isinstance(c, str) for c in choices)):
            raise self._fail(index, "choices", "must be a list of strings")
        target = sample.get("target")
        gold, targets = self._gold(target, bool(choices), index)
        output = sample.get("output")
        completion = output.get("completion") if isinstance(output, dict) else None
        completion = _resolve(completion, attachments)
        if not isinstance(completion, str):
            raise self._fail(index, "output.completion", "missing or not a string (the model's response)")
        scores = sample.get("scores") or {}
        if not isinstance(scores, dict):
            raise self._fail(index, "scores", f"must be an object (scorer -> Score), got {type(scores).__name__}")
        kept_scores = {
            name: self._score_meta(name, score, completion, attachments, index) for name, score in scores.items()
        }
        inspect: dict[str, Any] = {"task": self.task, "sample_id": sample_id, "epoch": epoch, "scores": kept_scores}
        if len(targets) > 1:
            inspect["target"] = targets
        metadata = sample.get("metadata")
        if isinstance(metadata, dict) and metadata:
            problem = json_problem(metadata)
            if problem:
                raise self._fail(index, "metadata", problem)
            inspect["metadata"] = metadata
        error = sample.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            inspect["error"] = error["message"]
        fields = {
            "id": row_id,
            "question": question,
            "gold": gold,
            "response": completion,
            "choices": choices or [],
            "model": self.model,
            "benchmark": self.task,
            "meta": {"inspect": inspect},
        }
        names = {"id": "id", "question": "input", "gold": "target", "response": "output.completion", "meta": "error"}
        row = row_from_fields(fields, path, index, unit=UNIT, names=names, max_lengths=self.max_lengths, entry=entry)
        readings = tuple(
            reading
            for name, score in kept_scores.items()
            if (reading := self._reading(name, score, row, index)) is not None
        )
        return row, readings

    def _fail(self, index: int, field_name: str | None, message: str) -> RecordError:
        return _error(self.path, index, field_name, message, self._entry)

    def _gold(self, target: Any, multiple_choice: bool, index: int) -> tuple[str, list[str]]:
        targets = target if isinstance(target, list) else [target]
        if not targets or not all(isinstance(t, str) for t in targets):
            raise self._fail(index, "target", "must be a string or a list of strings")
        if multiple_choice and len(targets) > 1:
            raise self._fail(
                index,
                "target",
                f"names several correct options ({', '.join(targets)}); a question here has one gold letter",
            )
        return targets[0], targets

    def _score_meta(self, name: Any, score: Any, completion: str, attachments: dict, index: int) -> dict[str, Any]:
        if not isinstance(name, str) or identity_problem(f"inspect:{name}", 200):
            raise self._fail(index, "scores", f"a scorer name {ascii(name)[:60]} cannot name a reader")
        field_name = f"scores.{name}"
        if not isinstance(score, dict) or "value" not in score:
            raise self._fail(index, field_name, "must be a Score object with a value")
        kept: dict[str, Any] = {"value": score["value"]}
        answer = _resolve(score.get("answer"), attachments)
        if answer is not None and not isinstance(answer, str):
            raise self._fail(index, f"{field_name}.answer", f"must be a string, got {type(answer).__name__}")
        kept["answer"] = answer
        explanation = _resolve(score.get("explanation"), attachments)
        if isinstance(explanation, str) and explanation != completion:
            kept["explanation"] = explanation  # choice() and match() explain with the completion itself
        for key in ("reason", "metadata"):
            if score.get(key) is not None:
                kept[key] = score[key]
        problem = json_problem(kept)
        if problem:
            raise self._fail(index, field_name, problem)
        return kept

    def _reading(self, name: str, score: dict[str, Any], row: Row, index: int) -> HarnessReading | None:
        verdict = _verdict(score["value"])
        if verdict is None:
            return None
        answer = score.get("answer")
        return harness_reading(
            reader=f"inspect:{name}",
            version=self.version,
            config={"harness": "inspect", "scorer": name, "options": self.scorer_options.get(name, {})},
            verdict=verdict,
            answer=answer,
            normalized=None,
            detail={"scorer": name, **score},
            row=row,
            found_nothing=answer == "" or score.get("reason") in _NOTHING_FOUND,
        )


def _verdict(value: Any) -> str | None:
    """inspect-ai's own reading of a score value (value_to_float), where it is a verdict."""
    if isinstance(value, str):
        if value in _VALUE_VERDICTS:
            return _VALUE_VERDICTS[value]
        word = _WORD_VERDICTS.get(value.lower())
        if word:
            return word
        try:
            return binary_verdict(float(value))
        except ValueError:
            return None
    return binary_verdict(value)


def _resolve(value: Any, attachments: dict) -> Any:
    """A string stored as an attachment reference (attachment://<hash>, inspect-ai's condensed
    samples) replaced by its content."""
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        found = attachments.get(value[len(_ATTACHMENT) :])
        return found if isinstance(found, str) else value
    if isinstance(value, list):
        return [{**m, "content": _resolve(m.get("content"), attachments)} if isinstance(m, dict) else m for m in value]
    return value


def _question(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        for message in reversed(value):
            if isinstance(message, dict) and message.get("role") == "user":
                return text_of(message.get("content"))
    return None
