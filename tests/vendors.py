"""Each database vendor's write paths, for the tests that check one behaviour on both: the readings
store's bulk write (pipeline.store.bulk_write_for) and the import path (ingest.services.copies_on).

On PostgreSQL, `vendor` "sqlite" takes SQLite's paths against PostgreSQL; SQLite's own SQL is checked
by `run_on_sqlite`, the same tests in a child pytest on an SQLite database, where "postgresql" skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

VENDORS = ("postgresql", "sqlite")


@pytest.fixture(params=VENDORS)
def vendor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from django.db import connection

    from adjudication.ingest import services
    from adjudication.pipeline import store

    if request.param != connection.vendor:
        if request.param == "postgresql":
            pytest.skip("PostgreSQL's write paths need PostgreSQL")
        bulk_write = store.bulk_write_for(request.param)
        monkeypatch.setattr(store, "bulk_write_for", lambda _vendor: bulk_write)
        monkeypatch.setattr(services, "copies_on", lambda _vendor: False)
    return request.param


def run_on_sqlite(tmp_path: Path, *test_files: str) -> dict[str, int]:
    """Run `test_files` (paths from the repository's root) in a child pytest on a fresh SQLite
    database; the counts of its junit report (tests, failures, errors, skipped)."""
    root = Path(__file__).resolve().parent.parent
    report = tmp_path / "sqlite-junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'vendors.sqlite3'}", PYTHONPATH=str(root))
    env.setdefault("SECRET_KEY", "test-only")
    options = ["-p", "no:cacheprovider", "-m", "not system", f"--junit-xml={report}"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *test_files],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    suite = ElementTree.parse(report).getroot().find("testsuite")
    assert suite is not None
    return {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
