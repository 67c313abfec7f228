"""`manage.py read` runs readers on a file with no database server at all."""

from __future__ import annotations

import json

import pytest

from ..conftest import ROOT, manage, math_row, mc_row

pytestmark = pytest.mark.system  # child processes


def test_read_works_with_no_database_server(write_jsonl, tmp_path):
    rows = [mc_row(0), mc_row(1, response="Therefore \\boxed{C}", checkpoint="rl"), math_row(0)]
    src = write_jsonl(rows)
    out = tmp_path / "out.jsonl"
    # Port 1 on loopback: nothing listens; any ORM access would fail loudly.
    env = {
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
        "SECRET_KEY": "x",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
    }
    proc = manage("read", str(src), "--reader", "boxed", "--reader", "fixed", "--out", str(out), env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 6 and set(lines[0]) == {"id", "reader", "canonical", "answer", "span", "verdict"}
    by = {(x["id"], x["reader"]): x for x in lines}
    assert by[("mc-1", "boxed")]["answer"] == "C" and by[("mc-1", "boxed")]["verdict"] == "incorrect"
    assert by[("mc-0", "boxed")]["verdict"] == "no_answer" and by[("mc-0", "fixed")]["verdict"] == "correct"
    assert by[("math-0", "fixed")]["verdict"] == "correct"
    assert "coverage" in proc.stdout and "boxed" in proc.stdout


def test_read_names_the_bad_line(write_jsonl):
    src = write_jsonl([mc_row(0), {"id": "x", "question": "q"}])
    env = {
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
        "SECRET_KEY": "x",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
    }
    proc = manage("read", str(src), "--reader", "boxed", env=env)
    assert proc.returncode != 0 and "line 2, field 'gold'" in proc.stderr
