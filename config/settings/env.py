"""Reading the environment: one place for the parsing rules."""

import os
from pathlib import Path
from typing import overload

BASE_DIR = Path(__file__).resolve().parent.parent.parent


@overload
def env_str(*names: str, default: str) -> str: ...
@overload
def env_str(*names: str, default: None = None) -> str | None: ...
def env_str(*names: str, default: str | None = None) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            return value
    return default


def env_bool(*names: str, default: bool = False) -> bool:
    value = env_str(*names)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(*names: str, default: list[str] | None = None) -> list[str]:
    value = env_str(*names)
    if value is None:
        return list(default or [])
    return [part.strip() for part in value.split(",") if part.strip()]


DATABASE_URL = env_str("DATABASE_URL")
BROKER_URL = env_str("CELERY_BROKER_URL", "REDIS_URL")
# Embedded/local: no database URL (SQLite file under ./var, the quickstart) or an explicit SQLite URL.
# SQLite is never a production deployment, so local conveniences (dev secret key, localhost hosts,
# no HTTPS-only cookies) are allowed there and nowhere else unless DEBUG is on.
EMBEDDED = DATABASE_URL is None or DATABASE_URL.startswith("sqlite:")
DEBUG = env_bool("DEBUG", "DJANGO_DEBUG", default=False)
