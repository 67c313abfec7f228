"""Database: DATABASE_URL (postgres:// or sqlite:///), else the embedded SQLite file."""
import dj_database_url

from .env import BASE_DIR, DATABASE_URL

if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    (BASE_DIR / "var").mkdir(exist_ok=True)
    DATABASES = {"default": dj_database_url.parse(f"sqlite:///{BASE_DIR / 'var' / 'embedded.sqlite3'}")}

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Persistent connections are pointless for a file, and WAL lets the UI read while an import writes.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = "PRAGMA journal_mode=WAL;"
