"""Concurrent imports into one existing dataset, against the real PostgreSQL (issue 12, item 18).

Two imports that share questions and runs race on the same unique rows (question fingerprints, run
identities). Both must succeed, every row of both files must be there, and shared rows exist once.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, connections

from adjudication.models import Dataset, Question, Response, Run

from ..conftest import ROOT, mc_row

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = 2500  # several 1,000-row batches each, so the imports interleave batch by batch


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need a real server; SQLite serialises them anyway")


def rows_for(prefix: str, questions: range, checkpoint: str) -> list[dict]:
    return [
        mc_row(q, id=f"{prefix}-{q}", checkpoint=checkpoint, response=f"{prefix} says (B) to {q}") for q in questions
    ]


def import_in_threads(paths: list[Path], dataset: str) -> list[BaseException | None]:
    """Each import in its own thread (so its own database connection), released together."""
    start = threading.Barrier(len(paths))
    errors: list[BaseException | None] = [None] * len(paths)

    def work(index: int, path: Path) -> None:
        try:
            start.wait()
            call_command("import_responses", str(path), dataset=dataset, no_progress=True, stdout=StringIO())
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever a thread raised
            errors[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i, p)) for i, p in enumerate(paths)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "an import never finished"
    return errors


def seed_existing_dataset(write_jsonl: Callable[..., Path]) -> None:
    call_command(
        "import_responses",
        str(write_jsonl(rows_for("seed", range(10), "base"), name="seed.jsonl")),
        dataset="shared",
        no_progress=True,
        stdout=StringIO(),
    )


def test_two_concurrent_imports_sharing_questions_and_runs_both_succeed(write_jsonl):
    seed_existing_dataset(write_jsonl)
    first = write_jsonl(rows_for("a", range(QUESTIONS), "rl"), name="a.jsonl")
    second = write_jsonl(rows_for("b", range(QUESTIONS), "rl"), name="b.jsonl")

    errors = import_in_threads([first, second], "shared")

    assert errors == [None, None]
    dataset = Dataset.objects.get(name="shared")
    assert Response.objects.filter(dataset=dataset).count() == 10 + 2 * QUESTIONS
    assert Question.objects.filter(dataset=dataset).count() == QUESTIONS
    assert Run.objects.filter(dataset=dataset).count() == 2  # base (seed) and rl, shared by both files


def test_two_concurrent_imports_meeting_the_shared_questions_in_opposite_orders_both_succeed(write_jsonl):
    """Batch by batch, each import holds rows the other wants next: conflict handling alone would deadlock."""
    seed_existing_dataset(write_jsonl)
    forward = write_jsonl(rows_for("a", range(QUESTIONS), "rl"), name="a.jsonl")
    backward = write_jsonl(rows_for("b", range(QUESTIONS - 1, -1, -1), "sft"), name="b.jsonl")

    errors = import_in_threads([forward, backward], "shared")

    assert errors == [None, None]
    assert Response.objects.filter(dataset__name="shared").count() == 10 + 2 * QUESTIONS
    assert Question.objects.filter(dataset__name="shared").count() == QUESTIONS


def test_two_concurrent_import_processes_both_succeed_without_a_traceback(write_jsonl, service_env):
    """The same race through the real command line: two manage.py processes."""
    seed_existing_dataset(write_jsonl)
    paths = [write_jsonl(rows_for(prefix, range(QUESTIONS), "rl"), name=f"{prefix}.jsonl") for prefix in ("a", "b")]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "manage.py"),
                "import_responses",
                str(path),
                "--dataset",
                "shared",
                "--no-progress",
            ],
            env=service_env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in paths
    ]
    outcomes = [proc.communicate(timeout=300) for proc in procs]

    for proc, (_, stderr) in zip(procs, outcomes):
        assert proc.returncode == 0 and "Traceback" not in stderr, stderr
    assert Response.objects.filter(dataset__name="shared").count() == 10 + 2 * QUESTIONS
    assert Question.objects.filter(dataset__name="shared").count() == QUESTIONS
