"""Settings from the environment, with the embedded default when nothing is set."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.system  # child processes

PROBE = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'engine': s.DATABASES['default']['ENGINE'], 'name': str(s.DATABASES['default']['NAME']), "
    "'eager': s.CELERY_TASK_ALWAYS_EAGER, 'broker': s.CELERY_BROKER_URL, 'debug': s.DEBUG, 'hosts': s.ALLOWED_HOSTS, "
    "'ssl': s.SECURE_SSL_REDIRECT, 'secure_cookie': s.SESSION_COOKIE_SECURE}))"
)
VARS = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "DJANGO_SECRET_KEY",
    "DEBUG",
    "DJANGO_DEBUG",
    "ALLOWED_HOSTS",
    "DJANGO_ALLOWED_HOSTS",
)


def settings_with(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in VARS}
    clean.update(env, DJANGO_SETTINGS_MODULE="config.settings", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=clean, cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_with_nothing_set_the_embedded_default_is_sqlite_and_eager_celery():
    out = json.loads(settings_with().stdout)
    assert out["engine"] == "django.db.backends.sqlite3" and out["name"].endswith("var/embedded.sqlite3")
    assert out["eager"] is True and out["debug"] is False
    assert "localhost" in out["hosts"] and out["ssl"] is False


def test_postgres_url_and_redis_url_configure_real_services_with_strict_defaults():
    out = json.loads(
        settings_with(
            DATABASE_URL="postgres://u:p@db.example:5433/prod", REDIS_URL="redis://r:6379/0", SECRET_KEY="s3cret"
        ).stdout
    )
    assert out["engine"] == "django.db.backends.postgresql" and out["name"] == "prod"
    assert out["eager"] is False and out["broker"] == "redis://r:6379/0"
    assert out["hosts"] == [] and out["ssl"] is True and out["secure_cookie"] is True


def test_sqlite_url_is_accepted():
    out = json.loads(settings_with(DATABASE_URL="sqlite:////tmp/elsewhere.sqlite3").stdout)
    assert out["engine"] == "django.db.backends.sqlite3" and out["name"] == "/tmp/elsewhere.sqlite3"


def test_a_production_database_without_a_secret_key_refuses_to_start():
    proc = settings_with(DATABASE_URL="postgres://u@db/prod")
    assert proc.returncode != 0 and "SECRET_KEY must be set" in proc.stderr


def test_debug_and_allowed_hosts_come_from_the_environment():
    out = json.loads(
        settings_with(DATABASE_URL="postgres://u@db/prod", DEBUG="1", ALLOWED_HOSTS="a.example,b.example").stdout
    )
    assert out["debug"] is True and out["hosts"] == ["a.example", "b.example"] and out["ssl"] is False


def test_postgres_prepares_only_the_hand_written_statements_unless_told_not_to():
    probe = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.DATABASES['default'].get('OPTIONS', {}), s.PREPARED_STATEMENTS]))"
    )

    def options(**env: str) -> list:
        clean = {k: v for k, v in os.environ.items() if k not in VARS and k != "DATABASE_PREPARED_STATEMENTS"}
        clean.update(env, DJANGO_SETTINGS_MODULE="config.settings", PYTHONPATH=str(ROOT))
        proc = subprocess.run(
            [sys.executable, "-c", probe], env=clean, cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        return json.loads(proc.stdout)

    prod = {"DATABASE_URL": "postgres://u@db/prod", "SECRET_KEY": "s"}
    # The ORM binds client-side (no server_side_binding): server-side binding let psycopg wrap
    # out-of-range integers into the column instead of failing.
    assert options(**prod) == [{"prepare_threshold": 10**9}, True]
    # Behind PgBouncer in transaction mode, prepared statements break: one variable turns them off.
    assert options(**prod, DATABASE_PREPARED_STATEMENTS="0") == [{}, False]
