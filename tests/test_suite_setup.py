"""The suite's own machinery (docs/architecture.md, "Testing"): each xdist worker's Redis database,
and a module's shared fixture built once when the suite runs in parallel."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import ROOT
from .xdist_services import broker_url_for_worker, worker_index


def test_each_xdist_worker_takes_its_own_redis_database_below_the_given_one():
    assert worker_index(None) is None and worker_index("gw2") == 2
    assert broker_url_for_worker("redis://127.0.0.1:6379/15", 0) == "redis://127.0.0.1:6379/15"
    assert broker_url_for_worker("redis://127.0.0.1:6379/15", 2) == "redis://127.0.0.1:6379/13"
    assert broker_url_for_worker("rediss://:pw@host:6380/4?ssl_cert_reqs=none", 1) == (
        "rediss://:pw@host:6380/3?ssl_cert_reqs=none"
    )
    assert broker_url_for_worker("redis://host", 0) == "redis://host/0"
    with pytest.raises(RuntimeError, match="would need Redis database -1"):
        broker_url_for_worker("redis://host/1", 2)
    with pytest.raises(RuntimeError, match="not a redis:// URL"):
        broker_url_for_worker("amqp://guest@host//", 1)
    with pytest.raises(RuntimeError, match="unexpected PYTEST_XDIST_WORKER"):
        worker_index("master")


MINI_SUITE = """
import ast
import os
import pytest


@pytest.fixture(scope="module")
def world():
    with open(os.environ["BUILDS"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")
    return "built"


@pytest.mark.parametrize("i", range(12))
def test_reads_the_world(world, i):
    assert world == "built"


@pytest.mark.parametrize("i", range(12))
def test_without_it(i):
    pass
"""


@pytest.mark.system  # a child pytest
def test_a_modules_shared_fixture_is_built_once_when_the_suite_runs_in_parallel(tmp_path: Path):
    """The suite's grouping (tests/conftest.py) under `--dist loadgroup`: the tests that share a
    module-scoped fixture go to one worker. (pytest 9.2 made xdist ignore the groups silently.)"""
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    (tmp_path / "test_world.py").write_text(textwrap.dedent(MINI_SUITE))
    builds = tmp_path / "builds.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BUILDS": str(builds)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "3", "--dist", "loadgroup", "-p", "no:django", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "24 passed" in done.stdout
    assert len(builds.read_text().splitlines()) == 1, builds.read_text()


def test_the_pure_reader_tests_import_neither_django_nor_the_app():
    """`make test-fast` runs tests/readers with pytest-django off: a test there that needs Django
    fails only in that tier. Checked statically so that `make test` catches it."""
    offenders = []
    for path in sorted((ROOT / "tests" / "readers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {name}"
                for name in names
                if name.split(".")[0] in ("django", "rest_framework", "celery", "adjudication", "config")
            ]
    assert offenders == []
