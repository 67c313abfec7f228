"""Re-run the rule readers of a loaded bundle on its stored texts and say, reader by reader, which
verdicts changed: what a library upgrade (math-verify, SymPy, the ANTLR runtime) or an edited
reader does to numbers published with the old ones.

Only rule readers: judges, regenerations and harness scores need a model server or a harness log,
and are listed as not re-read. A rule reader this registry does not have is listed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adjudication.models import Dataset, ReaderSpec, Reading, Response
from adjudication.pipeline.readings import panel_read, stored_item

SHOWN = 50  # changed items listed per reader in the text output (all of them in --json)


@dataclass
class ReaderReread:
    name: str
    stored: dict[str, str]  # version, config_hash of the bundled spec
    here: dict[str, str] | None  # the registry's, None when it has no such reader
    compared: int = 0
    changes: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None

    @property
    def changed(self) -> int:
        return len(self.changes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "reader": self.name,
            "stored": self.stored,
            "here": self.here,
            "compared": self.compared,
            "changed": self.changed,
            "changes": self.changes,
            "skipped": self.skipped,
        }


def reread_rule_readers(*, dataset: Dataset) -> list[ReaderReread]:
    from readers import registry

    known = registry.snapshot()
    specs = list(
        ReaderSpec.objects.filter(readings__response__dataset=dataset).distinct().order_by("kind", "name", "version")
    )
    out: list[ReaderReread] = []
    todo: list[tuple[ReaderReread, list[tuple[int, str, str | None]]]] = []
    for spec in specs:
        stored = {"version": spec.version, "config_hash": spec.config_hash}
        if spec.kind != "rule":
            out.append(ReaderReread(spec.name, stored, None, skipped=f"a {spec.get_kind_display()}: not re-read"))
            continue
        if spec.name not in known:
            out.append(ReaderReread(spec.name, stored, None, skipped="no reader of that name here"))
            continue
        current = registry.get(spec.name)
        entry = ReaderReread(spec.name, stored, {"version": current.version, "config_hash": current.config_hash})
        rows = list(
            Reading.objects.filter(reader_spec=spec, response__dataset=dataset)
            .order_by("response_id")
            .values_list("response_id", "verdict", "answer")
        )
        todo.append((entry, rows))
        out.append(entry)
    if not todo:
        return out
    ids = sorted({rid for _, rows in todo for rid, _, _ in rows})
    items = {}
    externals = {}
    for rid, external_id, text, gold, choices, question, meta in Response.objects.filter(id__in=ids).values_list(
        "id", "external_id", "text", "question__gold", "question__choices", "question__text", "question__meta"
    ):
        externals[rid] = external_id
        items[rid] = stored_item(text=text, gold=gold, choices=list(choices or ()), question=question, meta=meta)
    # One pool run for every reader, as the pipeline reads (same budgets, same isolation).
    results = panel_read([(e.name, [items[rid] for rid, _, _ in rows]) for e, rows in todo])
    for (entry, rows), readings in zip(todo, results, strict=True):
        entry.compared = len(rows)
        for (rid, verdict, answer), (reading, _ms) in zip(rows, readings, strict=True):
            now = str(reading.verdict)
            if now != verdict:
                entry.changes.append(
                    {
                        "response": externals[rid],
                        "stored": {"verdict": verdict, "answer": answer},
                        "now": {"verdict": now, "answer": reading.answer},
                    }
                )
    return out
