"""JSON within a depth bound, for every reader of untrusted JSON (imported files and harness logs,
bundles, LLM replies): Python's parser recurses once per level, and so does whatever walks a value
next (json_safe, the jsonb adapter, a comparison). Pure: plain values in, no Django."""

from __future__ import annotations

from typing import Any

# How a container was reached: (how its parent was reached, the key or index), None for the value.
_Trail = tuple["_Trail", str | int] | None


def nesting_past(value: Any, limit: int) -> list[str] | None:
    """Where `value` nests arrays and objects (the lists and dicts json.loads makes) more than `limit`
    levels deep, the value itself being the first level: the keys and indices ("[3]") down to the
    first container past the bound, or None. Iterative, visiting containers only, so that depth is
    something checked rather than something that crashes; the path is spelled out only for the one
    container it names."""
    if not isinstance(value, (dict, list)):
        return None
    stack: list[tuple[Any, int, _Trail]] = [(value, 1, None)]
    while stack:
        item, level, trail = stack.pop()
        if level > limit:
            return _path(trail)
        if isinstance(item, dict):
            stack.extend(
                (child, level + 1, (trail, str(key))) for key, child in item.items() if isinstance(child, (dict, list))
            )
        else:
            stack.extend(
                (child, level + 1, (trail, i)) for i, child in enumerate(item) if isinstance(child, (dict, list))
            )
    return None


def _path(trail: _Trail) -> list[str]:
    steps: list[str] = []
    while trail is not None:
        trail, step = trail
        steps.append(f"[{step}]" if isinstance(step, int) else step)
    return steps[::-1]
