"""Shared helpers for the bench scripts: a throwaway PostgreSQL database and RESULT lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"


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


def result(name: str, value: float) -> None:
    text = str(value) if isinstance(value, int) else f"{value:.4g}"
    print(f"RESULT {name} {text}", flush=True)
