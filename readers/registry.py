"""Registry of named readers. A registry name maps to a Reader class plus a default config,
so that one implementation (e.g. lm-eval's RegexFilter) can be registered several times as
named configs ("gsm8k-strict-match", "mmlu-pro-custom-extract", ...)."""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable

from .base import Reader


@dataclass(frozen=True)
class Entry:
    name: str
    factory: Callable[[], Reader]
    summary: str = ""


_REGISTRY: dict[str, Entry] = {}


def register(name: str, factory: Callable[[], Reader], summary: str = "") -> None:
    if name in _REGISTRY:
        raise ValueError(f"reader {name!r} registered twice")
    _REGISTRY[name] = Entry(name, factory, summary)


_plugins_loaded = False


def _load_builtin() -> None:
    # Import for side effects: each module registers its readers. Kept lazy so that importing
    # `readers.base` stays cheap (math-verify pulls in SymPy, ~0.4 s).
    global _plugins_loaded
    from . import builtin  # noqa: F401

    if not _plugins_loaded:
        _plugins_loaded = True
        # Users' own readers: READER_PLUGINS="mypkg.readers,other.module" is imported in every
        # process that reads (CLI, web, each Celery worker), so a plugin registers everywhere.
        for module in filter(None, (m.strip() for m in os.environ.get("READER_PLUGINS", "").split(","))):
            importlib.import_module(module)


def names() -> list[str]:
    _load_builtin()
    return list(_REGISTRY)


def get(name: str) -> Reader:
    _load_builtin()
    try:
        entry = _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown reader {name!r}; known readers: {known}") from None
    reader = entry.factory()
    # The registry name is the identity users type and that verdicts store.
    if reader.name != name:
        raise RuntimeError(f"registry entry {name!r} built a reader named {reader.name!r}")
    return reader


def describe() -> list[dict[str, Any]]:
    out = []
    for name in names():
        r = get(name)
        out.append({
            "name": r.name, "version": r.version, "kind": r.kind, "config_hash": r.config_hash,
            "contract": sorted(r.contract), "upstream": r.upstream, "summary": _REGISTRY[name].summary,
        })
    return out


def contract_matrix_markdown() -> str:
    """The contract matrix (seed 001 §2.2) as a Markdown table: which answer forms each reader
    claims to handle. Published in docs/contract-matrix.md; the audit scores a reader only on
    forms it claims, and reports the rest apart as out-of-contract."""
    from .base import ANSWER_FORMS

    # Sorted: registration order depends on which reader module a process imported first.
    rows = sorted((r for r in describe() if not r["name"].startswith("test-")), key=lambda r: r["name"])
    head = "| reader | version | kind | " + " | ".join(f.replace("_", " ") for f in ANSWER_FORMS) + " | upstream |"
    lines = [head, "|" + "---|" * (len(ANSWER_FORMS) + 4)]
    for r in rows:
        marks = " | ".join("✔" if f in r["contract"] else "" for f in ANSWER_FORMS)
        lines.append(f"| `{r['name']}` | {r['version']} | {r['kind']} | {marks} | {r['upstream'] or '—'} |")
    return "\n".join(lines) + "\n"
