"""Database: DATABASE_URL (postgres:// or sqlite:///), else the embedded SQLite file."""
import dj_database_url

from .env import BASE_DIR, DATABASE_URL, env_bool

if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    (BASE_DIR / "var").mkdir(exist_ok=True)
    DATABASES = {"default": dj_database_url.parse(f"sqlite:///{BASE_DIR / 'var' / 'embedded.sqlite3'}")}

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Server-side parameters let psycopg prepare a statement after its 5th run on a connection
    # (connections persist, CONN_MAX_AGE): PostgreSQL then skips parsing and planning, which for
    # the review item page's five-way join took 3-4 ms against 0.4 ms to execute it (EXPLAIN
    # ANALYZE on bench/review_bench.py's data). Prepared statements break behind PgBouncer in
    # transaction mode: set DATABASE_SERVER_SIDE_BINDING=0 there.
    if env_bool("DATABASE_SERVER_SIDE_BINDING", default=True):
        # Django turns psycopg's automatic preparation off (prepare_threshold None) unless asked.
        DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=5)

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Persistent connections are pointless for a file, and WAL lets the UI read while an import writes.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = "PRAGMA journal_mode=WAL;"
