"""Database: DATABASE_URL (postgres:// or sqlite:///), else the embedded SQLite file."""
import dj_database_url

from .env import BASE_DIR, DATABASE_URL, env_bool

if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    (BASE_DIR / "var").mkdir(exist_ok=True)
    DATABASES = {"default": dj_database_url.parse(f"sqlite:///{BASE_DIR / 'var' / 'embedded.sqlite3'}")}

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Server-side parameters let the review loop's hand-written statements be prepared
    # (adjudication/rawsql.py): PostgreSQL then stops re-planning them. Django's own queries are
    # not, see rawsql.execute for why: psycopg would prepare any statement after
    # `prepare_threshold` runs, and None (Django's default) refuses even an explicit prepare, so
    # the threshold is set out of reach. Prepared statements break behind PgBouncer in
    # transaction mode: set DATABASE_SERVER_SIDE_BINDING=0 there.
    if env_bool("DATABASE_SERVER_SIDE_BINDING", default=True):
        DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=10**9)

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Persistent connections are pointless for a file, and WAL lets the UI read while an import writes.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = "PRAGMA journal_mode=WAL;"
