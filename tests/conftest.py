"""One readable fixture base for the whole suite.

The suite runs against the real PostgreSQL and Redis (`make test` sets DATABASE_URL and
CELERY_BROKER_URL); tests that spawn processes (workers, the quickstart, `read`) get those URLs
from `service_env`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from django.apps import apps
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or a clean skip when that folder is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


def mc_row(i: int = 0, **overrides: Any) -> dict[str, Any]:
    row = {
        "id": f"mc-{i}", "question": f"Which sociologist wrote question {i}?",
        "choices": ["Durkheim", "Weber", "Merton", "Parsons"], "gold": "B",
        "response": f"<think>Weber fits best.</think>\nThe answer is (B). [{i}]",
        "model": "orca-7b", "checkpoint": "base", "benchmark": "mmlu", "prompt": "cot-v1",
    }
    row.update(overrides)
    return row


def math_row(i: int = 0, **overrides: Any) -> dict[str, Any]:
    row = {
        "id": f"math-{i}", "question": f"Compute {i} + 72 - {i}.", "gold": "72",
        "response": "Adding and subtracting cancels, so \\boxed{72}.",
        "model": "orca-7b", "checkpoint": "rl", "benchmark": "math", "prompt": "cot-v1",
    }
    row.update(overrides)
    return row


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[..., Path]:
    """write_jsonl(rows, name="in.jsonl") -> path; a row may be a dict or a raw line string."""

    def write(rows: list[Any], name: str = "in.jsonl") -> Path:
        path = tmp_path / name
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
        return path

    return write


def project_table_counts() -> dict[str, int]:
    """Row counts of every table the project owns: 'the database is unchanged' means these are equal."""
    return {
        m._meta.label: m._default_manager.count()
        for m in apps.get_models()
        if m._meta.app_label in {"adjudication", "judges"} and not m._meta.proxy
    }


def run_command(*args: str, **options: Any) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO(), **options)
    return out.getvalue()


@pytest.fixture
def service_env(tmp_path: Path) -> dict[str, str]:
    """Environment for child processes (manage.py, celery) pointing at this test's database."""
    from django.db import connection

    env = dict(os.environ)
    settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("postgresql"):
        user = settings_dict.get("USER") or ""
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or 5432
        env["DATABASE_URL"] = f"postgres://{user}@{host}:{port}/{settings_dict['NAME']}"
    else:
        env["DATABASE_URL"] = f"sqlite:///{settings_dict['NAME']}"
    env.setdefault("SECRET_KEY", "test-only")
    env["PYTHONPATH"] = str(ROOT)
    return env


def manage(*args: str, env: dict[str, str], timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=check)
