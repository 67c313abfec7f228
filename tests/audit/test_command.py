"""`manage.py audit_verifiers`: --golds without any database, --dataset on a stored dataset."""

from __future__ import annotations

import json
import os

import pytest
from django.core.management.base import CommandError

from ..conftest import ROOT, manage, math_row, mc_row, run_command

DEAD_DB = "postgres://nobody@127.0.0.1:1/none"


@pytest.mark.system  # a child process
def test_cli_runs_with_a_dead_database(tmp_path):
    golds = tmp_path / "golds.txt"
    golds.write_text("\n".join(["3", "42", "9999", "10000", "123456", "\\frac{1}{2}", "3\\sqrt{2}"]) + "\n")
    env = dict(os.environ, DATABASE_URL=DEAD_DB, SECRET_KEY="t", PYTHONPATH=str(ROOT))
    env.pop("CELERY_BROKER_URL", None)
    out = tmp_path / "audit"
    proc = manage(
        "audit_verifiers",
        "--golds",
        str(golds),
        "--reader",
        "sympy-cascade",
        "--reader",
        "math-verify-latex",
        "--out",
        str(out),
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in ("verdicts.jsonl", "strata.csv", "disagreement.csv", "magnitude.csv", "summary.json"):
        assert (out / name).stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["off_by_one"]["sympy-cascade"]["1e4"] == 1.0
    assert summary["off_by_one"]["sympy-cascade"]["1e3"] == 0.0
    assert "sympy-cascade" in proc.stdout and "verdicts/s" in proc.stdout
    assert "verdict" in proc.stderr  # the progress bar


def test_golds_path_never_touches_the_orm(tmp_path):
    """No django_db mark: any query here would raise 'Database access not allowed'."""
    golds = tmp_path / "golds.jsonl"
    golds.write_text(
        "\n".join(json.dumps(r) for r in [math_row(1, gold="72"), math_row(2, gold="\\frac{1}{2}"), mc_row(3)]) + "\n"
    )
    output = run_command(
        "audit_verifiers", golds=str(golds), readers=["strip-string"], out=str(tmp_path / "o"), no_progress=True
    )
    assert "strip-string" in output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["golds"] == 2  # the multiple-choice row is skipped


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"gold": "1"}\n{"gold": \n', "golds.jsonl, line 2: not valid JSON"),
        ('{"gold": "1"}\n{"id": "x"}\n', "golds.jsonl, line 2: field 'gold': missing"),
    ],
)
def test_bad_golds_name_the_file_and_line(tmp_path, content, message):
    golds = tmp_path / "golds.jsonl"
    golds.write_text(content)
    with pytest.raises(CommandError, match=message):
        run_command("audit_verifiers", golds=str(golds), out=str(tmp_path / "o"), no_progress=True)


def test_unknown_reader_and_missing_source(tmp_path):
    golds = tmp_path / "golds.txt"
    golds.write_text("1\n")
    with pytest.raises(CommandError, match="unknown reader"):
        run_command("audit_verifiers", golds=str(golds), readers=["nope"], out=str(tmp_path / "o"), no_progress=True)
    with pytest.raises(CommandError):
        run_command("audit_verifiers", "--out", str(tmp_path / "o"))


@pytest.mark.django_db
def test_dataset_golds(tmp_path, write_jsonl):
    rows = [math_row(i, gold=g, response=f"\\boxed{{{g}}}") for i, g in enumerate(["72", "10000", "72", "0.5"])]
    rows.append(mc_row(9))
    run_command("import_responses", str(write_jsonl(rows)), dataset="bench", no_progress=True)
    out = tmp_path / "ds"
    output = run_command(
        "audit_verifiers", dataset="bench", readers=["sympy-cascade", "strip-string"], out=str(out), no_progress=True
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["golds"] == 3  # distinct open-ended golds
    assert summary["off_by_one"]["sympy-cascade"]["1e4"] == 1.0
    assert "strip-string" in output
    with pytest.raises(CommandError, match="no dataset named"):
        run_command("audit_verifiers", dataset="missing", out=str(out), no_progress=True)


def test_default_readers_are_seed_001s_and_overrides_and_synthetic_golds_apply(tmp_path):
    golds = tmp_path / "golds.txt"
    golds.write_text("42\n\\frac{3}{4}\n")
    out = tmp_path / "seed"

    def audit(*args: str) -> None:
        run_command("audit_verifiers", *args, golds=str(golds), out=str(out), no_progress=True)

    audit("--contract-override", "strip-string-deepseek:whitespace_punct:out", "--synthetic", "5")
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["readers"]) == [
        "math-verify-latex-seed001",
        "math-verify-expr-seed001",
        "strip-string-deepseek",
        "sympy-cascade-seed001",
    ]
    assert summary["gold_sources"] == {"corpus": 2, "synthetic": 5}
    cells = {(o["reader"], o["stratum"]): o["in_contract"] for o in summary["contract_overrides"]}
    assert cells[("strip-string-deepseek", "whitespace_punct")] is False
    assert cells[("strip-string-deepseek", "unreduced")] is False  # the seed's own assignment stays
    with pytest.raises(CommandError, match="expected READER:STRATUM:in"):
        audit("--contract-override", "strip-string-deepseek:sets")
    with pytest.raises(CommandError, match="unknown stratum 'nope'"):
        audit("--contract-override", "strip-string-deepseek:nope:in")
