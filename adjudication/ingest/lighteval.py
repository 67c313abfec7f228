"""lighteval `details` parquet files (`--save-details`), one file per task.

lighteval writes `{output_dir}/details/{model_name}/{date}/details_{task}_{date}.parquet`
(src/lighteval/logging/evaluation_tracker.py, `save_details`): one row per evaluated sample, from
`asdict(Detail)` of src/lighteval/logging/info_loggers.py, columns sorted by name. Two layouts:

* lighteval 0.10 and later ("details-v2"): columns `doc` (the task's `Doc`, src/lighteval/tasks/
  requests.py: query, choices, gold_index, id, original_query, specific, task_name, full_prompt, …),
  `model_response` (`ModelResponse`, src/lighteval/models/model_output.py: input, text,
  text_post_processed, logprobs, …) and `metric` (metric name -> this sample's value);
* earlier releases ("details-v1"): flat columns `example`, `instruction`, `full_prompt`,
  `predictions`, `gold`, `choices`, `gold_index`, `metrics`, `specifics`, …; some releases wrote
  every column through `str()` ("we force cast to str to avoid formatting problems for nested
  objects"), which this module reads back as Python literals.

Mapping: the question is `original_query` when recorded, else `query` (`example`); the response is
the first generation (`text[0]`, `predictions[0]`); with two or more choices and one gold index the
question is multiple choice (the choices are its options, the gold its letter), otherwise the gold is
the gold choice's text (lighteval keeps a generative task's reference in `choices`; gsm8k's worked
solution gives what follows "####", as for lm-eval). The id is `<task>:<doc.id>`, or `<task>:<row>`
(0-based) where the doc has no id (v1 files drop it). Each binary metric of a single-generation
sample (a value of 0 or 1) becomes a reading of `lighteval:<metric>`, its answer the prediction
lighteval's extractive metrics extracted (`specific["extracted_predictions"]`: the parsed form first,
the matched text last). The files do not record lighteval's version: the reading's version is the
layout's.
"""

from __future__ import annotations

import ast
import contextlib
import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from adjudication.ingest.formats import MAX_JSON_DEPTH, Row, identity_problem, json_problem, path_text, too_deep
from adjudication.ingest.records import (
    HarnessReading,
    RecordError,
    binary_verdict,
    harness_reading,
    row_from_fields,
)
from readers.options import LETTERS

UNIT = "row"
BATCH_ROWS = 256
# A str()-cast cell is parsed back with ast.literal_eval; far larger cells are not a detail's.
MAX_LITERAL_CHARS = 10_000_000

_DETAILS_NAME = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.parquet$")
V2_COLUMNS = ("doc", "model_response", "metric")
V1_COLUMNS = ("example", "predictions", "gold", "metrics")
# The v1 columns that hold lists and dicts (str()-cast in some releases).
_V1_STRUCTURED = ("predictions", "gold", "choices", "gold_index", "metrics", "specifics")


def task_from_filename(path: Path) -> str | None:
    m = _DETAILS_NAME.match(path.name)
    return m.group("task") if m else None


def model_from_path(path: Path) -> str | None:
    """The model name from lighteval's own layout, .../details/<model name>/<date>/details_…_<date>.parquet
    (the model name may hold a "/", org/model); None when the file sits elsewhere."""
    m = _DETAILS_NAME.match(path.name)
    if not m or path.parent.name != m.group("date"):
        return None
    parts: list[str] = []
    folder = path.parent.parent
    while folder.name and folder.name != "details":
        parts.append(folder.name)
        folder = folder.parent
    if folder.name != "details" or not parts:
        return None
    return "/".join(reversed(parts))


def _error(path: Path, index: int, field_name: str | None, message: str) -> RecordError:
    return RecordError(path, index, field_name, message, unit=UNIT)


def _open(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except OSError as exc:
        raise _error(path, 0, None, f"cannot open: {exc}") from exc
    except pa.ArrowException as exc:
        raise _error(path, 0, None, f"not a readable parquet file ({exc})") from exc


def _layout(path: Path, parquet: Any) -> tuple[str, bool]:
    """("v2" | "v1", whether the v1 columns were written through str())."""
    import pyarrow as pa

    names = set(parquet.schema_arrow.names)
    if all(c in names for c in V2_COLUMNS):
        return "v2", False
    if all(c in names for c in V1_COLUMNS):
        metrics_type = parquet.schema_arrow.field("metrics").type
        return "v1", pa.types.is_string(metrics_type) or pa.types.is_large_string(metrics_type)
    missing_v2 = [c for c in V2_COLUMNS if c not in names]
    missing_v1 = [c for c in V1_COLUMNS if c not in names]
    raise _error(
        path,
        0,
        None,
        "not a lighteval details file: missing column(s) "
        f"{', '.join(missing_v2)} (lighteval 0.10 and later) or {', '.join(missing_v1)} (earlier releases); "
        f"found {', '.join(sorted(names)) or 'none'}",
    )


def iter_records(
    path: Path, *, model: str = "", task: str | None = None, max_lengths: Mapping[str, int] | None = None
) -> Iterator[tuple[Row, tuple[HarnessReading, ...]]]:
    import pyarrow as pa

    task = task or task_from_filename(path)
    if not task:
        expected = "details_<task>_<date>.parquet"
        raise _error(path, 0, None, f"cannot tell the task from the file name (expected {expected}); pass --task")
    problem = identity_problem(task, (max_lengths or {}).get("benchmark"))
    if problem:
        raise _error(path, 0, None, f"the task name {task!r} {problem}; pass --task")
    model = model or model_from_path(path) or ""
    parquet = _open(path)
    layout, stringified = _layout(path, parquet)
    columns = list(V2_COLUMNS) if layout == "v2" else [c for c in parquet.schema_arrow.names if c != "id"]
    index = 0
    batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (OSError, pa.ArrowException) as exc:
            raise _error(path, index + 1, None, f"cannot read the file from here on ({exc})") from exc
        for record in batch.to_pylist():
            index += 1
            if layout == "v2":
                fields = _v2_fields(_bounded(record, path, index), path, index)
            else:
                fields = _v1_fields(record, path, index, stringified)
            yield _record(fields, path, index, task=task, model=model, layout=layout, max_lengths=max_lengths)


def _expect(value: Any, kind: type | tuple[type, ...], path: Path, index: int, field_name: str, what: str) -> Any:
    if not isinstance(value, kind):
        raise _error(path, index, field_name, f"must be {what}, got {type(value).__name__}")
    return value


def _bounded(record: dict[str, Any], path: Path, index: int) -> dict[str, Any]:
    """The record, unless a cell nests deeper than any JSON the importers read (a parquet column's
    nesting is its schema's, and a str() cell's is ast's: neither is bounded by the platform)."""
    where = too_deep(record)
    if where is not None:
        raise _error(path, index, path_text(where), f"is nested more than {MAX_JSON_DEPTH} levels deep")
    return record


def _v2_fields(record: dict[str, Any], path: Path, index: int) -> dict[str, Any]:
    doc = _expect(record.get("doc"), dict, path, index, "doc", "an object (lighteval's Doc)")
    response = _expect(
        record.get("model_response"), dict, path, index, "model_response", "an object (lighteval's ModelResponse)"
    )
    metric = record.get("metric")
    metric = {} if metric is None else _expect(metric, dict, path, index, "metric", "an object (metric -> value)")
    query = _expect(doc.get("query"), str, path, index, "doc.query", "a string")
    original = doc.get("original_query")
    doc_id = doc.get("id")
    if doc_id is not None and not isinstance(doc_id, (str, int)):
        raise _error(path, index, "doc.id", f"must be a string, got {type(doc_id).__name__}")
    prompt = response.get("input")
    if not isinstance(prompt, str):
        prompt = doc.get("full_prompt")
    return {
        "question": original if isinstance(original, str) and original.strip() else query,
        "question_field": "doc.original_query" if isinstance(original, str) and original.strip() else "doc.query",
        "doc_id": doc_id,
        "choices": doc.get("choices"),
        "choices_field": "doc.choices",
        "gold_index": doc.get("gold_index"),
        "gold_index_field": "doc.gold_index",
        "golds": None,
        "texts": response.get("text"),
        "texts_field": "model_response.text",
        "prompt": prompt if isinstance(prompt, str) else None,
        "metric": metric,
        "metric_field": "metric",
        "specific": doc.get("specific"),
        "specific_field": "doc.specific",
    }


def _literal(value: Any, path: Path, index: int, field_name: str) -> Any:
    """A cell lighteval wrote through str(): the Python literal it was (lists, dicts, numbers, text)."""
    if not isinstance(value, str):
        return value
    if len(value) > MAX_LITERAL_CHARS:
        raise _error(path, index, field_name, f"is {len(value)} characters long; at most {MAX_LITERAL_CHARS} are read")
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise _error(
            path, index, field_name, f"holds text that is not the str() of a list or dict ({type(exc).__name__})"
        ) from exc


def _v1_fields(record: dict[str, Any], path: Path, index: int, stringified: bool) -> dict[str, Any]:
    if stringified:
        record = {k: _literal(v, path, index, k) if k in _V1_STRUCTURED else v for k, v in record.items()}
    record = _bounded(record, path, index)
    query = _expect(record.get("example"), str, path, index, "example", "a string")
    prompt = record.get("full_prompt")
    if stringified and isinstance(prompt, str) and prompt.startswith("[{"):
        # str() of a list of chat messages: there is no rendered text prompt to keep.
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            prompt = None if isinstance(ast.literal_eval(prompt), list) else prompt
    return {
        "question": query,
        "question_field": "example",
        "doc_id": None,
        "choices": record.get("choices") or [],
        "choices_field": "choices",
        "gold_index": record.get("gold_index"),
        "gold_index_field": "gold_index",
        "golds": record.get("gold"),
        "texts": record.get("predictions"),
        "texts_field": "predictions",
        "prompt": prompt if isinstance(prompt, str) else None,
        "metric": record.get("metrics") or {},
        "metric_field": "metrics",
        "specific": record.get("specifics"),
        "specific_field": "specifics",
    }


def _indices(value: Any, path: Path, index: int, field_name: str, count: int) -> list[int]:
    indices = value if isinstance(value, list) else [value]
    if not indices or not all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
        raise _error(path, index, field_name, f"must be an index or a list of indices, got {value!r}"[:300])
    bad = [i for i in indices if not 0 <= i < count]
    if bad:
        raise _error(path, index, field_name, f"index {bad[0]} is out of range for {count} choices")
    return indices


def _gold_and_choices(f: dict[str, Any], path: Path, index: int) -> tuple[str, tuple[str, ...], list[str]]:
    """(gold, options, every gold text). Multiple choice when there are two or more choices and one
    gold index; otherwise the gold is the text of the (first) gold choice."""
    choices = f["choices"]
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise _error(path, index, f["choices_field"], "must be a list of strings")
    if choices and f["gold_index"] is not None:
        indices = _indices(f["gold_index"], path, index, f["gold_index_field"], len(choices))
        golds = [choices[i] for i in indices]
        if len(choices) >= 2 and len(indices) == 1:
            if len(choices) > len(LETTERS):
                raise _error(
                    path, index, f["choices_field"], f"at most {len(LETTERS)} options are supported, got {len(choices)}"
                )
            return LETTERS[indices[0]], tuple(choices), golds
    else:
        golds = f["golds"] if isinstance(f["golds"], list) else []
        if not golds or not all(isinstance(g, str) for g in golds):
            field_name = "gold" if f["golds"] is not None else f["gold_index_field"]
            raise _error(path, index, field_name, "no gold: expected gold choices (choices + gold_index) or golds")
    gold = golds[0]
    if "####" in gold:
        gold = gold.split("####")[-1]  # gsm8k's reference is the worked solution; its answer follows ####
    return gold.strip(), (), golds


def _storable_metric(metric: dict[str, Any]) -> dict[str, Any]:
    # A metric lighteval could not compute is NaN; JSON columns cannot hold NaN, and it is no verdict.
    return {
        str(k): (None if isinstance(v, float) and not math.isfinite(v) else v)
        for k, v in metric.items()
        if v is not None
    }


def _extracted(specific: Any, path: Path, index: int, field_name: str) -> list[str] | None:
    if not isinstance(specific, dict) or specific.get("extracted_predictions") is None:
        return None
    preds = specific["extracted_predictions"]
    if not isinstance(preds, list) or not all(isinstance(p, str) for p in preds):
        raise _error(path, index, f"{field_name}.extracted_predictions", "must be a list of strings")
    return preds


def _record(
    f: dict[str, Any],
    path: Path,
    index: int,
    *,
    task: str,
    model: str,
    layout: str,
    max_lengths: Mapping[str, int] | None,
) -> tuple[Row, tuple[HarnessReading, ...]]:
    texts = f["texts"]
    if not isinstance(texts, list) or not texts:
        raise _error(
            path,
            index,
            f["texts_field"],
            "no generated text (empty or missing: a log-likelihood task scores options, there is no response to read)",
        )
    if not isinstance(texts[0], str):
        raise _error(
            path,
            index,
            f["texts_field"],
            f"must be a list of generated texts, got a list of {type(texts[0]).__name__} "
            "(log-probabilities: a log-likelihood task has no response to read)",
        )
    gold, choices, golds = _gold_and_choices(f, path, index)
    doc_id = f["doc_id"]
    row_id = f"{task}:{doc_id}" if doc_id not in (None, "") else f"{task}:{index - 1}"
    metric = _storable_metric(f["metric"])
    extracted = _extracted(f["specific"], path, index, f["specific_field"])
    lighteval: dict[str, Any] = {"task": task, "row": index - 1, "metric": metric}
    if doc_id not in (None, ""):
        lighteval["doc_id"] = doc_id
    if len(golds) > 1:
        lighteval["golds"] = golds
    if len(texts) > 1:
        lighteval["generations"] = len(texts)
    if extracted is not None:
        lighteval["extracted_predictions"] = extracted
        golds_extracted = f["specific"].get("extracted_golds")
        if isinstance(golds_extracted, list) and all(isinstance(g, str) for g in golds_extracted):
            lighteval["extracted_golds"] = golds_extracted
    for value, field_name in ((metric, f["metric_field"]), (extracted, f["specific_field"])):
        problem = json_problem(value)
        if problem:
            raise _error(path, index, field_name, problem)
    prompt = f["prompt"] if isinstance(f["prompt"], str) and f["prompt"].strip() else None
    fields = {
        "id": row_id,
        "question": f["question"],
        "gold": gold,
        "response": texts[0],
        "choices": list(choices),
        "model": model,
        "benchmark": task,
        "meta": {"lighteval": lighteval},
        "prompt_text": prompt,
    }
    names = {
        "id": "doc.id" if doc_id not in (None, "") else "id",
        "question": f["question_field"],
        "gold": f["gold_index_field"],
        "response": f["texts_field"],
        "choices": f["choices_field"],
        # What meta holds besides the metric and the extractions checked above: the gold texts.
        "meta": f["choices_field"] if f["golds"] is None else "gold",
        "prompt_text": "model_response.input" if layout == "v2" else "full_prompt",
    }
    row = row_from_fields(fields, path, index, unit=UNIT, names=names, max_lengths=max_lengths)
    return row, _readings(row, metric, extracted, texts, task=task, layout=layout, path=path, index=index)


def _readings(
    row: Row,
    metric: dict[str, Any],
    extracted: list[str] | None,
    texts: list[Any],
    *,
    task: str,
    layout: str,
    path: Path,
    index: int,
) -> tuple[HarnessReading, ...]:
    if len(texts) != 1:
        # pass@k, maj@k and the like score several generations at once: no verdict on the first alone.
        return ()
    readings = []
    for name, value in metric.items():
        verdict = binary_verdict(value)
        if verdict is None:
            continue
        reader = f"lighteval:{name}"
        problem = identity_problem(reader, 200)
        if problem:
            field_name = f"metric.{name}" if name.isprintable() else "metric"
            raise _error(path, index, field_name, f"the metric name {problem}")
        detail: dict[str, Any] = {"metric": name, "score": value, "task": task}
        if extracted is not None:
            detail["extracted_predictions"] = extracted
        readings.append(
            harness_reading(
                reader=reader,
                version=f"details-{layout}",
                config={"harness": "lighteval", "metric": name},
                verdict=verdict,
                answer=extracted[-1] if extracted else None,
                normalized=extracted[0] if extracted else None,
                detail=detail,
                row=row,
                found_nothing=extracted == [],
            )
        )
    return tuple(readings)
