"""Stored numbers against recomputed ones: pure, over JSON values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# "within 1e-12 for statistics": relative to the magnitude, so a count of millions and a rate
# of 1e-3 are held to the same number of significant digits.
TOLERANCE = 1e-12


@dataclass(frozen=True)
class Difference:
    path: str  # where in the report, e.g. comparisons[2].fixed_gain
    stored: Any
    recomputed: Any

    def __str__(self) -> str:
        return f"{self.path}: stored {_short(self.stored)}, recomputed {_short(self.recomputed)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def differences(
    stored: Any, recomputed: Any, *, path: str = "", ignore: frozenset[str] = frozenset()
) -> list[Difference]:
    """Every place where the two JSON values differ: exact for strings, booleans, null, counts
    (integers) and structure; floats within TOLERANCE (an int and a float of one value agree:
    JSON does not keep the distinction). Keys named in `ignore` are skipped at any depth."""
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        out: list[Difference] = []
        for key in sorted(set(stored) | set(recomputed), key=str):
            if key in ignore:
                continue
            where = f"{path}.{key}" if path else str(key)
            if key not in recomputed:
                out.append(Difference(where, stored[key], "(missing)"))
            elif key not in stored:
                out.append(Difference(where, "(missing)", recomputed[key]))
            else:
                out += differences(stored[key], recomputed[key], path=where, ignore=ignore)
        return out
    if isinstance(stored, list) and isinstance(recomputed, list):
        if len(stored) != len(recomputed):
            return [Difference(f"{path} (length)", len(stored), len(recomputed))]
        out = []
        for i, (a, b) in enumerate(zip(stored, recomputed, strict=True)):
            out += differences(a, b, path=f"{path}[{i}]", ignore=ignore)
        return out
    if _number(stored) and _number(recomputed):
        if isinstance(stored, int) and isinstance(recomputed, int):
            return [] if stored == recomputed else [Difference(path, stored, recomputed)]
        a, b = float(stored), float(recomputed)
        if math.isnan(a) and math.isnan(b):
            return []
        if a == b or abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b)):
            return []
        return [Difference(path, stored, recomputed)]
    if type(stored) is not type(recomputed) or stored != recomputed:
        return [Difference(path, stored, recomputed)]
    return []


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
