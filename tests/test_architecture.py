"""docs/architecture.md's import table, enforced on every module of the project."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGES = ("readers", "adjudication", "judges", "config")


def _modules(package: str) -> list[Path]:
    return [p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts]


def _runtime_nodes(node: ast.AST, *, into_functions: bool = True) -> Iterator[ast.AST]:
    """Every node below `node` but those under `if TYPE_CHECKING:`, which never runs; without
    `into_functions`, also none in a function's body (what runs when the module is imported)."""
    for child in ast.iter_child_nodes(node):
        test = child.test if isinstance(child, ast.If) else None
        if isinstance(test, (ast.Name, ast.Attribute)) and getattr(test, "id", getattr(test, "attr", "")) == (
            "TYPE_CHECKING"
        ):
            continue
        if not into_functions and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield child
        yield from _runtime_nodes(child, into_functions=into_functions)


def _imports(path: Path, *, runtime_only: bool = False, load_time_only: bool = False) -> set[str]:
    """Every module this file imports (at any depth: lazy imports count), as dotted names;
    `runtime_only` leaves out what only the type checker imports, `load_time_only` that and the
    lazy imports too (what importing the module imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    if load_time_only:
        nodes: Iterator[ast.AST] = _runtime_nodes(tree, into_functions=False)
    else:
        nodes = _runtime_nodes(tree) if runtime_only else ast.walk(tree)
    for node in nodes:
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
# the JSON depth bound (nesting), the pipeline it feeds (batches, producers, progress, readings,
# services, selectors, subsets), the shared command options and command base, the one application error
# base and the admin site. Never a page, an API or another capability's internals.
JUDGES_MAY_USE = (
    "adjudication.models",
    "adjudication.fields",
    "adjudication.nesting",
    "adjudication.validators",
    "adjudication.revisions",
    "adjudication.admin",
    "adjudication.management.arguments",
    "adjudication.management.base",
    "adjudication.errors",
    "adjudication.pipeline.batches",
    "adjudication.pipeline.producers",
    "adjudication.pipeline.progress",
    "adjudication.pipeline.readings",
    "adjudication.pipeline.services",
    "adjudication.pipeline.selectors",
    "adjudication.pipeline.store",
    "adjudication.pipeline.subsets",
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


def _command_modules() -> list[Path]:
    return [p for pkg in PACKAGES for p in (ROOT / pkg).glob("management/commands/*.py") if p.name != "__init__.py"]


@pytest.mark.parametrize("path", _command_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_maps_application_errors_through_the_one_base(path: Path) -> None:
    """A command's class derives from adjudication.management.base.ApplicationCommand, so that a
    service's ApplicationError reaches the user as one line (CommandError), and no command has a
    translation of its own."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    commands = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Command"]
    assert commands, f"{path.relative_to(ROOT)} defines no Command"
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in commands[0].bases}
    assert bases == {"ApplicationCommand"}, f"{path.relative_to(ROOT)}: Command derives from {sorted(bases)}"
    assert "adjudication.management.base.ApplicationCommand" in _imports(path)


def test_no_capability_imports_another_capabilitys_views() -> None:
    offenders = []
    for path in _modules("adjudication") + _modules("judges"):
        own = path.relative_to(ROOT).parts[:2]
        for name in _project(_imports(path)):
            parts = name.split(".")
            if len(parts) >= 3 and parts[0] == "adjudication" and "views" in parts[2:] and tuple(parts[:2]) != own:
                offenders.append(f"{path.relative_to(ROOT)} -> {name}")
    assert not offenders


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_cycles() -> set[frozenset[str]]:
    """The strongly connected components (of more than one module) of the project's runtime import
    graph, by Tarjan's algorithm."""
    paths = {_module_name(p): p for package in PACKAGES for p in _modules(package)}
    graph = {name: (_imports(path, runtime_only=True) & paths.keys()) - {name} for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.add(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def _calls_call_command(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "call_command" for alias in node.names):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "call_command":
            return True
    return False


def test_only_commands_call_commands() -> None:
    """A service, view or task reaches other code by importing it: a `call_command` hides the
    dependency from the import checks above (and parses a command line at run time)."""
    callers = [
        str(p.relative_to(ROOT))
        for package in PACKAGES
        for p in _modules(package)
        if "commands" not in p.parent.parts[-1:] and _calls_call_command(p)
    ]
    assert callers == [], f"call_command outside management/commands/: {callers}"


REPORT_COMMANDS = ("format_share", "agreement", "consensus", "audit_verifiers", "report", "estimate", "judge_card")
REPORT_COMMAND_IMPORTS = (
    "adjudication.analytics.reports",
    "adjudication.management.arguments",
    "adjudication.management.base",  # ApplicationCommand, every command's base
)


@pytest.mark.parametrize("command", REPORT_COMMANDS)
def test_a_report_command_assembles_no_report(command: str) -> None:
    """A report command parses its arguments, builds the kind's options, calls report_compute and
    renders: of the project it imports only analytics.reports and the shared command arguments
    and base, so it cannot put a report together from the pure modules itself."""
    path = ROOT / "adjudication" / "management" / "commands" / f"{command}.py"
    modules = {n for n in _project(_imports(path)) if n.count(".") and (ROOT / (n.replace(".", "/") + ".py")).exists()}
    modules |= {n for n in _project(_imports(path)) if (ROOT / n.replace(".", "/") / "__init__.py").exists()}
    outside = {n for n in modules if not n.startswith(REPORT_COMMAND_IMPORTS)}
    assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


def test_the_import_graph_has_no_cycle() -> None:
    """Lazy (function-level) imports count: hiding an import in a function does not break a cycle."""
    assert [sorted(c) for c in _import_cycles()] == []


# The annotator's room is blinded by its imports (docs/architecture.md, "Blinding"). Its modules, and
# the template filters its pages render with, import none of these (lazily or not), and neither does
# any project module importing them loads: each knows model, checkpoint, run or reader identity, or
# another role's view of an item. Models may be imported (the room reads rows); its page data
# carries none of those fields (the test after this one).
BLINDED = (*(ROOT / "adjudication/review/annotate").glob("*.py"), ROOT / "adjudication/templatetags/review_markup.py")
KNOWS_IDENTITY = (
    "adjudication.review.queues",  # queue names, per-annotator numbers, exports with model and checkpoint
    "adjudication.review.adjudicate",  # the gold and other annotators' labels
    "adjudication.browse",  # run identity, every reading by reader
    "adjudication.routing.services",  # panels of readers by name
    "adjudication.routing.selectors",  # a dataset's readers, previews by reader and checkpoint
    "adjudication.routing.tasks",
    "adjudication.pipeline",
    "adjudication.ingest",
    "adjudication.analytics",
    "adjudication.audit",
    "adjudication.bundles",
    "adjudication.exports",
    "adjudication.admin",
    "adjudication.management",
    "judges",
    "readers.registry",
    "readers.builtin",
)


def _module_path(name: str) -> Path | None:
    for candidate in (ROOT / (name.replace(".", "/") + ".py"), ROOT / name.replace(".", "/") / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _is_models(name: str) -> bool:
    """A models module (adjudication.models or a capability's): rows, which the room may read."""
    return name.split(".")[0] == "adjudication" and "models" in name.split(".")[:3]


def test_the_annotators_room_imports_nothing_that_knows_identity() -> None:
    offenders = []
    for path in BLINDED:
        reached: dict[str, str] = {}  # module -> the module that imports it
        todo = [(name, str(path.relative_to(ROOT))) for name in _project(_imports(path, runtime_only=True))]
        while todo:
            name, importer = todo.pop()
            if name in reached or _is_models(name):
                continue
            reached[name] = importer
            found = _module_path(name)
            if found is not None:
                todo += [(n, name) for n in _project(_imports(found, load_time_only=True)) if n not in reached]
        offenders += [
            f"{path.relative_to(ROOT)} reaches {name} (imported by {importer})"
            for name, importer in reached.items()
            if any(name == bad or name.startswith(bad + ".") for bad in KNOWS_IDENTITY)
        ]
    assert not offenders


IDENTITY_FIELDS = {"model", "checkpoint", "run", "run_id", "prompt", "prompt_text", "benchmark", "reader", "name"}


def test_the_annotators_page_data_holds_plain_values_without_identity() -> None:
    """The item page's data (ItemPage and the dataclasses it holds, and the one-statement row it is
    built from): frozen, no ORM rows, no identity fields."""
    import dataclasses
    import typing

    from django.db.models import Model

    from adjudication.review.annotate.selectors import ItemPage, LeasedItem

    seen: set[type] = set()
    todo: list[type] = [ItemPage, LeasedItem]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        assert cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]
        names = {f.name for f in dataclasses.fields(cls)}
        assert not names & IDENTITY_FIELDS, (cls, names & IDENTITY_FIELDS)
        hints = list(typing.get_type_hints(cls).values())
        while hints:
            hint = hints.pop()
            hints += typing.get_args(hint)
            if isinstance(hint, type):
                assert not issubclass(hint, Model), (cls, hint)
                if dataclasses.is_dataclass(hint):
                    todo.append(hint)
    assert len(seen) >= 5  # ItemPage, LeasedItem, ShownGuidelines, OwnLabel, ShownItem, ShownCandidate


# Layers (docs/architecture.md "Layers"): each rule the doc states about a layer, checked on every
# module of that layer, so that a new module is held to it without being listed anywhere.

ORM_WRITES = {
    "save",
    "delete",
    "create",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
    "select_for_update",
}


def _layer(name: str) -> list[Path]:
    """The modules of a layer: `<name>.py` anywhere in the two apps, or any module of a `<name>/` package."""
    return [p for p in _modules("adjudication") + _modules("judges") if p.stem == name or name in p.parts[:-1]]


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    return (n for n in ast.walk(node) if isinstance(n, ast.Call))


def _method(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def _public_functions(path: Path) -> Iterator[ast.FunctionDef]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node


def test_selectors_only_read() -> None:
    writes = [
        f"{path.relative_to(ROOT)}:{call.lineno} .{_method(call)}()"
        for path in _layer("selectors")
        for call in _calls(ast.parse(path.read_text(encoding="utf-8")))
        if _method(call) in ORM_WRITES
    ]
    assert not writes


def test_a_service_that_opens_a_transaction_takes_keyword_only_arguments() -> None:
    """`<entity>_<action>` services; the judges' flush writer (records.write) keeps the positional
    (attempts, finished) protocol fan_out calls it with."""
    positional = []
    for path in _layer("services"):
        for function in _public_functions(path):
            if "_" not in function.name:
                continue
            opens = any(_method(c) == "atomic" for c in _calls(function)) or any(
                "atomic" in ast.unparse(d) for d in function.decorator_list
            )
            if opens and (function.args.args or function.args.posonlyargs):
                positional.append(f"{path.relative_to(ROOT)}: {function.name}")
    assert not positional


# The pure modules the doc names: plain values in, plain values out, no query (a model's choices
# they may name), so the file-only commands and most tests use them without a database.
PURE_MODULES = (
    "adjudication.nesting",
    "adjudication.routing.rules",
    "adjudication.routing.specs",
    "adjudication.review.labels",
    "adjudication.review.rendering",
    "adjudication.analytics.stats",
    "adjudication.analytics.bias",
    "adjudication.analytics.bias_card",
    "adjudication.analytics.agreement",
    "adjudication.analytics.format_share",
    "adjudication.analytics.ranking",
    "adjudication.analytics.headline",
    "adjudication.analytics.consensus",
    "adjudication.analytics.allocation",
    "adjudication.analytics.estimates",
    "adjudication.analytics.estimate_table",
    "adjudication.analytics.estimate_blocks",
    "adjudication.analytics.parsing",
    "adjudication.bundles.checks",
    "adjudication.bundles.compare",
    "adjudication.pipeline.subsets",
)


@pytest.mark.parametrize("module", PURE_MODULES)
def test_a_pure_module_queries_no_database(module: str) -> None:
    path = ROOT / (module.replace(".", "/") + ".py")
    database = {
        name
        for name in _imports(path, runtime_only=True)
        if name.startswith("django.db")
        or any(part in ("selectors", "services", "tasks", "views", "api") for part in name.split(".")[1:])
    }
    assert not database, f"{module} imports {sorted(database)}"


def test_every_page_says_who_may_see_it() -> None:
    """A view function is behind @role_required, says it is public (@login_not_required), or checks
    the user's role itself before anything else (the landing page sends each role to its work)."""
    unguarded = []
    for path in _layer("views") + [p for p in _modules("adjudication") if p.name.endswith("_pages.py")]:
        for function in _public_functions(path):
            if not function.args.args or function.args.args[0].arg != "request":
                continue
            decorators = " ".join(ast.unparse(d) for d in function.decorator_list)
            first = next((s for s in function.body if not isinstance(s, ast.Expr)), None)
            checks_role = isinstance(first, ast.If) and any(
                isinstance(c.func, ast.Name) and c.func.id in ("is_manager", "has_role") for c in _calls(first.test)
            )
            if not ("role_required" in decorators or "login_not_required" in decorators or checks_role):
                unguarded.append(f"{path.relative_to(ROOT)}: {function.name}")
    assert not unguarded


def test_every_api_view_names_who_may_call_it() -> None:
    unnamed = []
    for path in _layer("api"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ClassDef) or not any("View" in ast.unparse(b) for b in node.bases):
                continue
            assigned = {
                t.id
                for s in node.body
                if isinstance(s, (ast.Assign, ast.AnnAssign))
                for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                if isinstance(t, ast.Name)
            }
            if "permission_classes" not in assigned:
                unnamed.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert not unnamed


def test_an_edge_reads_an_id_through_parse_id_never_isdigit() -> None:
    """str.isdigit() takes "²" and "３", which int() refuses: a 500 where a 400 was due."""
    edges = _layer("views") + _layer("api") + _layer("forms") + _layer("commands")
    offenders = [
        f"{path.relative_to(ROOT)}:{call.lineno}"
        for path in edges
        for call in _calls(ast.parse(path.read_text(encoding="utf-8")))
        if _method(call) == "isdigit"
    ]
    assert not offenders


PLAIN_ANNOTATIONS = {"int", "str", "bool", "float", "None", "list", "tuple"}


def test_a_task_lives_in_tasks_py_and_takes_ids_and_plain_values() -> None:
    """Tasks take ids (a row is loaded again in the worker, where it may have changed), are defined
    in a capability's tasks.py, and adjudication's are named from task_names (queued messages and
    the task routes carry the name, not the module)."""
    problems = []
    for path in _modules("adjudication") + _modules("judges"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            task = next((d for d in function.decorator_list if "shared_task" in ast.unparse(d)), None)
            if task is None:
                continue
            where = f"{path.relative_to(ROOT)}: {function.name}"
            if path.name != "tasks.py":
                problems.append(f"{where} is a task outside a tasks.py")
            if path.parts[len(ROOT.parts)] == "adjudication":
                name = next((k.value for k in getattr(task, "keywords", []) if k.arg == "name"), None)
                if not isinstance(name, ast.Name) or f"adjudication.task_names.{name.id}" not in _imports(path):
                    problems.append(f"{where} is not named from adjudication.task_names")
            for arg in function.args.args[1:] + function.args.kwonlyargs:
                words = set(ast.unparse(arg.annotation).replace("|", " ").replace("[", " ").replace("]", " ").split())
                if arg.annotation is None or not words <= PLAIN_ANNOTATIONS:
                    problems.append(f"{where}: {arg.arg} is not an id or a plain value")
    assert not problems
