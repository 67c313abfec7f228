"""Database: DATABASE_URL (postgres:// or sqlite:///), else the embedded SQLite file."""

import dj_database_url

from .env import BASE_DIR, DATABASE_URL, env_bool

if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    (BASE_DIR / "var").mkdir(exist_ok=True)
    DATABASES = {"default": dj_database_url.parse(f"sqlite:///{BASE_DIR / 'var' / 'embedded.sqlite3'}")}

# The review loop's few hand-written statements (adjudication/rawsql.py) are prepared on PostgreSQL,
# through a server-binding cursor of their own, so PostgreSQL stops re-planning them. The ORM keeps
# Django's default client-side binding: with server-side binding ORM-wide, psycopg's binary integer
# dumpers wrapped out-of-range values (an overlap of 65538 was stored as 2) instead of failing.
# Prepared statements break behind PgBouncer in transaction mode (before 1.21): set
# DATABASE_PREPARED_STATEMENTS=0 there.
PREPARED_STATEMENTS = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool(
    "DATABASE_PREPARED_STATEMENTS", default=True
)
if PREPARED_STATEMENTS:
    # psycopg refuses an explicit prepare while prepare_threshold is None (Django's default); a
    # threshold out of reach keeps it from preparing anything on its own. Client-side cursors (the
    # ORM's) never prepare whatever the threshold.
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 10**9

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Persistent connections are pointless for a file, and WAL lets the UI read while an import writes.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = "PRAGMA journal_mode=WAL;"
