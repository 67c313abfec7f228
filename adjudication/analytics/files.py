"""File mode (`--input`): the analytics inputs from JSONL files, without any database.

Pure Python: canonical rows are parsed by services.rows (line-numbered errors), readers run in
the isolation pool (readers.isolation), and nothing here imports a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adjudication.analytics.bias import VERDICTS
from adjudication.analytics.consensus import ConsensusInputs
from adjudication.analytics.format_share import Observation, has_box, item_task_type
from adjudication.errors import ApplicationError
from adjudication.ingest.formats import Row, RowError, iter_json_lines
from adjudication.ingest.harnesses import iter_rows
from readers.base import NOT_APPLICABLE

HUMAN = "human"


class InputError(ApplicationError, ValueError):
    """A problem with the input file as a whole (not one line): the message names the file."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{Path(path).name}: {message}")


BINARY = ("correct", "incorrect")


def _extra(row: Row, key: str) -> Any:
    """A field of the row given either at top level (kept in meta.extra_fields) or in meta."""
    if key in row.meta:
        return row.meta[key]
    return (row.meta.get("extra_fields") or {}).get(key)


def _given_verdict(row: Row, path: Path, reader: str) -> str | None:
    """A verdict the file itself carries: `human_verdict` for "human", else `verdicts[reader]`."""
    if reader == HUMAN:
        value, field = _extra(row, "human_verdict"), "human_verdict"
        allowed: tuple[str | None, ...] = (*BINARY, None)
    else:
        table = _extra(row, "verdicts")
        if table is not None and not isinstance(table, dict):
            raise RowError(path, row.line, "verdicts", "must be an object {reader: verdict}")
        value, field = (table or {}).get(reader), f"verdicts.{reader}"
        allowed = (*VERDICTS, NOT_APPLICABLE, None)
    if value not in allowed:
        raise RowError(
            path, row.line, field, f"must be one of {', '.join(str(a) for a in allowed if a)} (or null), got {value!r}"
        )
    # A reader that does not apply to the item read nothing: as if it had no verdict here.
    return None if value == NOT_APPLICABLE else value


def format_share_observations(
    path: Path, *, reported: str, fixed: str, processes: int = 2, budget_s: float = 5.0
) -> tuple[list[Observation], dict[str, str]]:
    """Observations for format_share.compute from a canonical JSONL file, and where each reader's
    verdicts came from. A registered reader is run on the responses (isolated, under the budget);
    "human" takes each row's `human_verdict`; any other name takes each row's `verdicts[name]`
    (e.g. an LLM judge's verdicts computed elsewhere)."""
    from readers import Item
    from readers import registry as reader_registry

    rows = list(iter_rows(path, fmt=None))  # canonical JSONL, lighteval details or an inspect-ai log
    if not rows:
        raise InputError(path, "no rows")
    for row in rows:
        if not row.checkpoint:
            raise RowError(
                path, row.line, "checkpoint", "missing: a format-share comparison needs base and RL checkpoints"
            )
    known = set(reader_registry.names())
    verdicts: dict[str, list[str | None]] = {}
    sources: dict[str, str] = {}
    pending = [name for name in dict.fromkeys((reported, fixed)) if name in known and name != HUMAN]
    if pending:
        from readers.isolation.pool import IsolatedPool

        items = [Item(response=r.response, gold=r.gold, choices=r.choices, question=r.question) for r in rows]
        with IsolatedPool(processes=processes, budget_s=budget_s) as pool:
            for name in pending:
                verdicts[name] = [reading.verdict for reading, _ms in pool.read_many(name, items)]
                sources[name] = f"reader {name} run on the file's responses"
    for name in dict.fromkeys((reported, fixed)):
        if name in verdicts:
            continue
        given = [_given_verdict(r, path, name) for r in rows]
        if all(v is None for v in given):
            where = "a `human_verdict` field" if name == HUMAN else f"`verdicts.{name}` fields"
            raise InputError(
                path,
                f"{name!r} is not a registered reader and no row carries {where} "
                "(`manage.py readers` lists the readers)",
            )
        verdicts[name] = given
        sources[name] = "human_verdict fields of the file" if name == HUMAN else f"verdicts.{name} fields of the file"
    obs = [
        Observation(
            model=r.model,
            checkpoint=r.checkpoint,
            benchmark=r.benchmark,
            prompt=r.prompt,
            question=r.question_fingerprint,
            reported=rep,
            fixed=fix,
            has_box=has_box(r.response),
            task_type=item_task_type(r.gold, r.choices),
        )
        for r, rep, fix in zip(rows, verdicts[reported], verdicts[fixed], strict=True)
    ]
    return obs, sources


AGREEMENT_REQUIRED = ("id", "producer", "verdict", "human_verdict")
AGREEMENT_OPTIONAL = ("model", "checkpoint", "benchmark", "answer", "human_answer")


def agreement_records(path: Path) -> list[dict[str, Any]]:
    """Lines {"id", "producer", "verdict", "human_verdict"} (+ optional model, checkpoint,
    benchmark, answer, human_answer), validated; errors name the file, the line and the field.
    verdict: correct | incorrect | no_answer | error | timeout; human_verdict: correct |
    incorrect, or null (no usable human verdict: counted as excluded)."""
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for line_no, obj in iter_json_lines(path):
        if not isinstance(obj, dict):
            raise RowError(path, line_no, None, f"expected a JSON object, got {type(obj).__name__}")
        for key in ("id", "producer", "verdict"):
            if key not in obj or obj[key] is None:
                raise RowError(path, line_no, key, "missing required field")
        if "human_verdict" not in obj:
            raise RowError(path, line_no, "human_verdict", "missing required field (null if there is none)")
        if not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool):
            raise RowError(path, line_no, "id", f"must be a string or an integer, got {type(obj['id']).__name__}")
        if not isinstance(obj["producer"], str) or not obj["producer"].strip():
            raise RowError(path, line_no, "producer", "must be a non-empty string")
        if obj["verdict"] not in (*VERDICTS, NOT_APPLICABLE):
            allowed = ", ".join((*VERDICTS, NOT_APPLICABLE))
            raise RowError(path, line_no, "verdict", f"must be one of {allowed}, got {obj['verdict']!r}")
        if obj["human_verdict"] not in (*BINARY, None):
            raise RowError(
                path, line_no, "human_verdict", f"must be correct, incorrect or null, got {obj['human_verdict']!r}"
            )
        for key in AGREEMENT_OPTIONAL:
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise RowError(path, line_no, key, f"must be a string, got {type(obj[key]).__name__}")
        identity = (str(obj["id"]), obj["producer"])
        if identity in seen:
            raise RowError(
                path, line_no, "id", f"duplicate (id, producer) {identity!r} (first seen on line {seen[identity]})"
            )
        seen[identity] = line_no
        if obj["verdict"] == NOT_APPLICABLE:
            continue  # the producer did not read this item: no pair for agreement or bias
        out.append(
            {
                "id": str(obj["id"]),
                "producer": obj["producer"],
                "verdict": obj["verdict"],
                "human_verdict": obj["human_verdict"],
                **{k: obj.get(k) for k in AGREEMENT_OPTIONAL},
                "line": line_no,
            }
        )
    if not out:
        raise InputError(path, "no rows")
    return out


def consensus_file_inputs(path: Path) -> ConsensusInputs:
    """The consensus input from an `agreement_records` file: one vote per line, the item's human
    label from its lines' `human_verdict` (null = none) and its model / checkpoint / benchmark.
    The lines of one item must agree on those; the error names the line that does not."""
    votes: list[tuple[str, str, str]] = []
    human: dict[str, str] = {}
    strata: dict[str, dict[str, str]] = {}
    first: dict[tuple[str, str], int] = {}
    for r in agreement_records(path):
        item = r["id"]
        votes.append((item, r["producer"], r["verdict"]))
        given = {"human_verdict": r["human_verdict"], **{k: r.get(k) for k in ("model", "checkpoint", "benchmark")}}
        for key, value in given.items():
            if value is None:
                continue
            known = human.get(item) if key == "human_verdict" else strata.get(item, {}).get(key)
            if known is not None and known != value:
                raise RowError(
                    path,
                    r["line"],
                    key,
                    f"{value!r} contradicts {known!r} given for item {item!r} on line {first[(item, key)]}",
                )
            first.setdefault((item, key), r["line"])
            if key == "human_verdict":
                human[item] = value
            else:
                strata.setdefault(item, {})[key] = value
    return ConsensusInputs(votes=votes, human=human, strata=strata)
