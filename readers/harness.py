"""The reported reader of a benchmark: the registered reader that declares its released harness
(Reader.harness_benchmarks), else its task type's default (tasks.TASK_TYPE_HARNESS).

Apart from `tasks` because it asks the registry, whose readers import `tasks` (for their task
types): in `tasks` that import made a cycle.
"""

from __future__ import annotations

from . import registry
from .tasks import TASK_TYPE_HARNESS, TASK_TYPE_LABELS, benchmark_key


def harness_readers(benchmark: str, task_type: str | None) -> list[tuple[str, str]]:
    """[(reader, why)], best first: the registered reader that declares `benchmark`'s released
    harness, then the task type's default (TASK_TYPE_HARNESS; `boxed` when the type is unknown)."""
    out: list[tuple[str, str]] = []
    key = benchmark_key(benchmark)
    for name in registry.names():
        if key in {benchmark_key(b) for b in registry.get(name).harness_benchmarks}:
            out.append((name, f"{name} reproduces the released harness of {benchmark}"))
            break
    default = TASK_TYPE_HARNESS.get(task_type or "", "boxed")
    label = TASK_TYPE_LABELS.get(task_type or "", "an unknown task type")
    if default not in {name for name, _ in out}:
        out.append((default, f"{default} is the default reported reader for {label}"))
    if "boxed" not in {name for name, _ in out}:
        # Last: seed 000's box-only harness reader, for a dataset read without the ones above.
        out.append(("boxed", f"boxed (the box-only harness reader): {out[-1][0]} has not read it"))
    return out


def harness_reader(benchmark: str, task_type: str | None) -> tuple[str, str]:
    """(reader, why): the first of harness_readers."""
    return harness_readers(benchmark, task_type)[0]
