"""Per-process services for a parallel run (pytest-xdist), as Sentry's test plugin keeps them.

pytest-django already gives each xdist worker its own PostgreSQL database (test_<name>_gw<N>).
This plugin gives each its own Redis database (and one BLAS thread, below): the Celery broker, the cache and the cached
sessions all live on CELERY_BROKER_URL, so two workers sharing one would purge each other's queues,
steal each other's tasks and read each other's throttle counters.

Loaded with `-p` (pyproject.toml's addopts), so that it runs before pytest-django imports the
settings; it rewrites the environment, so child processes (manage.py, Celery workers) inherit the
worker's database with it. xdist sets PYTEST_XDIST_WORKER before it builds the worker's config.
"""

from __future__ import annotations

import os
import re

# The Redis URL's database is its path: redis://host:port/DB. Worker gw<N> takes DB - N, so that the
# default /15 gives 15, 14, 13, ... and a run without xdist keeps the URL it was given.
_DB_PATH = re.compile(r"^(?P<head>rediss?://[^/]*)(?:/(?P<db>\d+))?(?P<tail>[?#].*)?$")
REDIS_DATABASES = 16


def worker_index(worker: str | None) -> int | None:
    """gw3 -> 3; None (no xdist, or the controller) -> None."""
    if not worker:
        return None
    match = re.fullmatch(r"gw(\d+)", worker)
    if match is None:
        raise RuntimeError(f"unexpected PYTEST_XDIST_WORKER {worker!r}")
    return int(match.group(1))


def broker_url_for_worker(url: str, index: int) -> str:
    """The Redis URL of xdist worker `index`: its database number lowered by `index`."""
    match = _DB_PATH.match(url)
    if match is None:
        raise RuntimeError(f"CELERY_BROKER_URL {url!r} is not a redis:// URL: cannot give each xdist worker its own")
    base = int(match.group("db") or 0)
    db = base - index
    if db < 0:
        raise RuntimeError(
            f"xdist worker gw{index} would need Redis database {db} under {url!r}: start from a higher "
            f"database (TEST_BROKER_URL=redis://…/{REDIS_DATABASES - 1}) or run fewer workers"
        )
    return f"{match.group('head')}/{db}{match.group('tail') or ''}"


# Parallelism is the workers' own: a BLAS pool per worker (OpenBLAS starts one thread per core and
# spins while it waits) would put several threads of each worker on the same two cores.
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _isolate_worker() -> None:
    index = worker_index(os.environ.get("PYTEST_XDIST_WORKER"))
    if index is None:
        return
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")
    for name in ("CELERY_BROKER_URL", "REDIS_URL"):
        url = os.environ.get(name)
        if url and url.startswith(("redis://", "rediss://")):
            os.environ[name] = broker_url_for_worker(url, index)


_isolate_worker()
