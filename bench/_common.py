"""Shared helpers for the bench scripts: a throwaway PostgreSQL database, generated MC rows, child
processes in their own process group, and RESULT lines.

Importing it puts the project root first on sys.path, so that a script run as
`python bench/<name>.py` imports `readers`, `adjudication` and `tests` from this checkout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"
OPTIONS = ["Durkheim", "Weber", "Merton", "Parsons"]


def fresh_database(name: str) -> str:
    """Drop and create database `name` on the server of BENCH_DATABASE_SERVER; return its URL."""
    import psycopg

    server = os.environ.get("BENCH_DATABASE_SERVER", DEFAULT_SERVER)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlparse(server)
    return urlunparse(parts._replace(path=f"/{name}"))


def manage(*args: str, env: dict[str, str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], env=env, cwd=ROOT, check=check, text=True, **kw
    )


def service_env(database_url: str, broker_url: str | None = None) -> dict[str, str]:
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        SECRET_KEY=os.environ.get("SECRET_KEY", "bench-only"),
        PYTHONPATH=str(ROOT),
    )
    env.pop("CELERY_BROKER_URL", None)
    env.pop("REDIS_URL", None)
    if broker_url:
        env["CELERY_BROKER_URL"] = broker_url
    return env


def write_mc_rows(path: Path, n: int, respond: Callable[[int, str], str]) -> None:
    """n canonical multiple-choice rows (JSONL): 5,000 distinct questions, gold A-D in turn, each
    answered by n / 5,000 responses of 4 models x 2 checkpoints; `respond(i, gold)` writes row i's text."""
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            q = i % 5000
            gold = "ABCD"[q % 4]
            handle.write(
                json.dumps(
                    {
                        "id": f"row-{i}",
                        "question": f"Question {q}: which sociologist fits description {q}?",
                        "choices": OPTIONS,
                        "gold": gold,
                        "response": respond(i, gold),
                        "model": f"model-{i % 4}",
                        "checkpoint": "rl" if (i // 4) % 2 else "base",
                        "benchmark": "mmlu",
                        "prompt": "p1",
                    }
                )
                + "\n"
            )


def spawn(argv: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """argv in the project root, in its own process group (so that `stop` ends it whole), output to log_path."""
    # The child holds its own copy of the descriptor: ours can be closed once it has started.
    with open(log_path, "w") as log:
        return subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM to the process group of a `spawn`ed child; SIGKILL if it has not ended within timeout."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def import_timed(path: Path, *, rows: int, env: dict[str, str], dataset: str = "bench") -> None:
    """import_responses of a generated file into `dataset`, timed (the benches' setup, not measured)."""
    started = time.perf_counter()
    manage("import_responses", str(path), "--dataset", dataset, "--no-progress", env=env, stdout=subprocess.DEVNULL)
    print(f"imported {rows} responses in {time.perf_counter() - started:.0f}s", flush=True)


def result(name: str, value: float) -> None:
    text = str(value) if isinstance(value, int) else f"{value:.4g}"
    print(f"RESULT {name} {text}", flush=True)
