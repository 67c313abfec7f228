"""docs/architecture.md's import table, enforced on every module of the project."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGES = ("readers", "adjudication", "judges", "config")


def _modules(package: str) -> list[Path]:
    return [p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts]


def _imports(path: Path) -> set[str]:
    """Every module this file imports (at any depth: lazy imports count), as dotted names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _project(imports: set[str]) -> set[str]:
    return {name for name in imports if name.split(".")[0] in PACKAGES}


@pytest.mark.parametrize("path", _modules("readers"), ids=lambda p: str(p.relative_to(ROOT)))
def test_readers_import_nothing_of_the_project_and_no_django(path: Path) -> None:
    outside = {
        n
        for n in _imports(path)
        if n.split(".")[0] in ("django", "rest_framework", "celery", "adjudication", "judges", "config")
    }
    assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


@pytest.mark.parametrize("path", _modules("adjudication"), ids=lambda p: str(p.relative_to(ROOT)))
def test_adjudication_never_imports_judges(path: Path) -> None:
    judges = {n for n in _project(_imports(path)) if n.split(".")[0] == "judges"}
    assert not judges, f"{path.relative_to(ROOT)} imports {sorted(judges)}"


# What judges may use of adjudication: the data (models, fields, validators, the data-version bump),
# the pipeline it feeds (batches, progress, readings, services, selectors), the shared command
# options and the admin site. Never a page, an API or another capability's internals.
JUDGES_MAY_USE = (
    "adjudication.models",
    "adjudication.fields",
    "adjudication.validators",
    "adjudication.revisions",
    "adjudication.admin",
    "adjudication.management.arguments",
    "adjudication.pipeline.batches",
    "adjudication.pipeline.progress",
    "adjudication.pipeline.readings",
    "adjudication.pipeline.services",
    "adjudication.pipeline.selectors",
)


@pytest.mark.parametrize("path", _modules("judges"), ids=lambda p: str(p.relative_to(ROOT)))
def test_judges_use_only_adjudication_s_data_and_pipeline(path: Path) -> None:
    used = {n for n in _project(_imports(path)) if n.split(".")[0] == "adjudication"}
    outside = {n for n in used if not any(n == m or n.startswith(m + ".") for m in JUDGES_MAY_USE)}
    assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


@pytest.mark.parametrize("path", _modules("config"), ids=lambda p: str(p.relative_to(ROOT)))
def test_config_names_the_apps_but_imports_none_of_them(path: Path) -> None:
    apps = {n for n in _project(_imports(path)) if n.split(".")[0] != "config"}
    assert not apps, f"{path.relative_to(ROOT)} imports {sorted(apps)}"


@pytest.mark.parametrize(
    "path",
    [p for pkg in (*PACKAGES, "tests", "bench", "scripts") for p in _modules(pkg)],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_nothing_imports_a_management_command(path: Path) -> None:
    commands = {n for n in _imports(path) if ".management.commands" in n and n.split(".")[0] in PACKAGES}
    assert not commands, f"{path.relative_to(ROOT)} imports {sorted(commands)}"


def test_no_capability_imports_another_capabilitys_views() -> None:
    offenders = []
    for path in _modules("adjudication") + _modules("judges"):
        own = path.relative_to(ROOT).parts[:2]
        for name in _project(_imports(path)):
            parts = name.split(".")
            if len(parts) >= 3 and parts[0] == "adjudication" and parts[2] == "views" and tuple(parts[:2]) != own:
                offenders.append(f"{path.relative_to(ROOT)} -> {name}")
    assert not offenders
