"""Scoring readers against our labelled set (tests/data/labels) on ../shared/data.

MMLU-Pro (odd rows): a reader agrees when its letter equals the label, or it finds no answer
where the label is null. Qwen2.5-Math (problems 25–99): a reader agrees when it calls the
response correct exactly when the label does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from readers import Item, registry

LABELS = Path(__file__).resolve().parents[1] / "data" / "labels"
ANSWERED = {"correct", "incorrect"}


@dataclass
class Scored:
    reader: str
    mmlu_agree: int
    mmlu_n: int
    math_agree: int
    math_n: int

    @property
    def overall(self) -> float:
        return (self.mmlu_agree + self.math_agree) / (self.mmlu_n + self.math_n)


def mmlu_items(shared: Path) -> tuple[list[Item], list[str | None]]:
    labels = {row["line"]: row for row in map(json.loads, (LABELS / "mmlu_pro_odd.jsonl").open())}
    items, gold_labels = [], []
    with open(shared / "mmlu-pro-model-outputs" / "mmlu_pro_cot_outputs_sample.jsonl", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle):
            if line_no % 2 == 0:
                continue  # even rows are held out
            row = json.loads(line)
            label = labels[line_no]
            assert (label["model"], label["question_id"]) == (row["model"], row["question_id"])
            items.append(
                Item(
                    response=row["model_output"],
                    gold=row["answer"],
                    choices=tuple(row["options"]),
                    question=row["question"],
                )
            )
            gold_labels.append(label["label"])
    return items, gold_labels


def math_items(shared: Path) -> tuple[list[Item], list[bool]]:
    labels = {(row["idx"], row["sample"]): row for row in map(json.loads, (LABELS / "qwen25_math_25_99.jsonl").open())}
    items, correct = [], []
    with open(shared / "qwen25-math-eval" / "math_cot_100.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if not 25 <= row["idx"] <= 99:
                continue
            for sample, response in enumerate(row["response"]):
                items.append(Item(response=response, gold=str(row["gt"]), question=row["question"]))
                correct.append(bool(labels[(row["idx"], sample)]["correct"]))
    return items, correct


def letter(reading) -> str | None:
    if reading.verdict not in ANSWERED:
        return None
    value = (reading.normalized or reading.answer or "").strip().strip("()").strip()
    return value.upper() if len(value) == 1 else value


def score(reader_names: list[str], shared: Path, read_many) -> list[Scored]:
    """read_many(reader_name, items) -> list[Reading] (in-process or isolated)."""
    mmlu, mmlu_labels = mmlu_items(shared)
    math, math_correct = math_items(shared)
    out = []
    for name in reader_names:
        mmlu_readings = read_many(name, mmlu)
        math_readings = read_many(name, math)
        mmlu_agree = sum(letter(r) == lab for r, lab in zip(mmlu_readings, mmlu_labels, strict=True))
        math_agree = sum((r.verdict == "correct") == ok for r, ok in zip(math_readings, math_correct, strict=True))
        out.append(Scored(name, mmlu_agree, len(mmlu), math_agree, len(math)))
    return out


def in_process(name: str, items: list[Item]):
    reader = registry.get(name)
    return [reader.read(item) for item in items]


def markdown(rows: list[Scored]) -> str:
    lines = [
        "| reader | MMLU-Pro odd rows: letter agrees | Qwen2.5-Math 25–99: verdict agrees | overall |",
        "|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: -r.overall):
        lines.append(
            f"| `{r.reader}` | {r.mmlu_agree}/{r.mmlu_n} ({r.mmlu_agree / r.mmlu_n:.1%}) | "
            f"{r.math_agree}/{r.math_n} ({r.math_agree / r.math_n:.1%}) | {r.overall:.1%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # python -m tests.readers.labelled  → the README table
    shared = Path(__file__).resolve().parents[3] / "shared" / "data"
    names = registry.names()
    print(markdown(score(names, shared, in_process)))
