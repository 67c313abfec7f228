"""The README's first command, end to end on the embedded default: import, read, table, UI."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from .conftest import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.worker
def test_quickstart_prints_the_reader_table_and_serves_the_ui(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    # The embedded default, but in a scratch SQLite file so the developer's var/ is left alone.
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'quick.sqlite3'}", PYTHONPATH=str(ROOT))
    port = free_port()
    with open(tmp_path / "quickstart.log", "w+") as log:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "quickstart", "--addrport", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 600
            body = None
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5) as resp:
                        body = resp.read().decode()
                        break
                except OSError:
                    time.sleep(1)
            log.seek(0)
            output = log.read()
            assert body is not None, f"UI never answered; output:\n{output[-3000:]}"
            assert 'type="password"' in body
            assert "Per-reader summary" in output
            for reader in ("fixed", "boxed", "strict-match", "math-verify-latex", "sympy-cascade"):
                assert f"\n{reader} " in output, f"{reader} missing from the table"
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
