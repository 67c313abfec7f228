"""Import throughput and memory: generated canonical rows (100,000 by default) into PostgreSQL.

Baselines, measured in the same run on the same file, each a single process reading the lines
with json.loads and moving them with PostgreSQL's COPY (psycopg's cursor.copy()), no checks, no
hashing (hash columns get placeholders of the same size):
- COPY into the import's own tables: the file's runs, its distinct questions and every response,
  with the columns the import stores, into adjudication_run / _question / _response, committed
  (their keys, indexes and deferred foreign-key checks included). The floor for storing these rows
  in this schema; the import is measured against it.
- COPY into a bare table: every field of a row as a column of the type it is stored as (text,
  jsonb), no key, no index. Moving the bytes and nothing else; printed for comparison (what the
  schema's keys cost is the difference between the two).
The import is the real command in a child process (start-up and Django set-up included), then the
idempotent re-import. Prints the rates, then last:
  RESULT import_vs_bare_copy_ratio <import rows/s ÷ bare COPY rows/s>
  RESULT import_rows_per_s <value>
  RESULT import_peak_rss_mb <peak RSS of the import: its process or its parser process, the larger>
  RESULT import_vs_copy_ratio <import rows/s ÷ COPY-into-the-import's-tables rows/s>
Run: python bench/import_bench.py   (PostgreSQL on 127.0.0.1:5432; override BENCH_DATABASE_SERVER, BENCH_ROWS;
BENCH_ROWS=1000000 is the million-row case: its peak RSS is the bounded-memory check)
With DATABASE_URL set, the throwaway database is named after it (<name>_bench_import), so engineers
sharing one server do not drop each other's bench database.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, fresh_database, manage, result, service_env, write_mc_rows  # noqa: E402

N = int(os.environ.get("BENCH_ROWS", "100000"))
HASH_PLACEHOLDER = "0" * 64  # the size of a sha256 hex digest


def generate(path: Path, n: int) -> None:
    rnd = random.Random(1234)
    filler = "Let me reason about each option in turn, weighing the evidence carefully. " * 12

    def respond(i: int, gold: str) -> str:
        pick = gold if rnd.random() < 0.7 else rnd.choice("ABCD")
        ending = rnd.choice([f"The answer is ({pick}).", f"\\boxed{{{pick}}}", f"**Answer:** {pick}"])
        return f"<think>{filler}</think>\n{ending}"

    write_mc_rows(path, n, respond)


def _names(row: dict) -> tuple[str, str, str, str]:
    return (row.get("model") or "", row.get("checkpoint") or "", row.get("benchmark") or "", row.get("prompt") or "")


def _question(row: dict) -> tuple[str, str, str, str]:
    return (row.get("benchmark") or "", row["question"], json.dumps(row.get("choices") or []), str(row["gold"]))


def copy_into_bare_table(url: str, path: Path) -> float:
    """Rows per second: every field of every row COPYed into one table without keys."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute(
            "CREATE TABLE bench_copy (external_id text, model text, checkpoint text, benchmark text, prompt text, "
            "question text, choices jsonb, gold text, response text, prompt_text text, meta jsonb)"
        )
        conn.commit()
        started = time.perf_counter()
        with open(path, encoding="utf-8") as handle, conn.cursor() as cur:
            with cur.copy("COPY bench_copy FROM STDIN") as copy:
                for line in handle:
                    row = json.loads(line)
                    copy.write_row(
                        (
                            str(row["id"]),
                            *_names(row),
                            row["question"],
                            json.dumps(row.get("choices") or []),
                            str(row["gold"]),
                            row["response"],
                            row.get("prompt_text"),
                            json.dumps(row.get("meta") or {}),
                        )
                    )
            conn.commit()
        elapsed = time.perf_counter() - started
        conn.execute("DROP TABLE bench_copy")
        conn.commit()
    return N / elapsed


def copy_into_import_tables(url: str, path: Path) -> float:
    """Rows per second: the file's runs, distinct questions and responses COPYed into the tables the
    import writes (committed, so the deferred foreign-key checks are in), then emptied again."""
    import psycopg

    # What the import works out (which runs and questions there are) is given to the baseline.
    runs: dict[tuple[str, str, str, str], int] = {}
    questions: dict[tuple[str, str, str, str], int] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            runs.setdefault(_names(row), len(runs) + 1)
            questions.setdefault(_question(row), len(questions) + 1)
    with psycopg.connect(url) as conn:
        (dataset_id,) = conn.execute(
            "INSERT INTO adjudication_dataset (name, description, created_at) VALUES ('copy', '', now()) RETURNING id"
        ).fetchone()
        conn.commit()
        now = conn.execute("SELECT now()").fetchone()[0]
        started = time.perf_counter()
        with conn.cursor() as cur:
            with cur.copy(
                "COPY adjudication_run (id, dataset_id, model, checkpoint, benchmark, prompt, family, "
                "generation_params, created_at) FROM STDIN"
            ) as copy:
                for names, run_id in runs.items():
                    copy.write_row((run_id, dataset_id, *names, "", "{}", now))
            with cur.copy(
                "COPY adjudication_question (id, dataset_id, benchmark, text, choices, gold, meta, fingerprint) "
                "FROM STDIN"
            ) as copy:
                for (benchmark, text, choices, gold), qid in questions.items():
                    copy.write_row((qid, dataset_id, benchmark, text, choices, gold, "{}", f"{qid:064}"))
            with (
                open(path, encoding="utf-8") as handle,
                cur.copy(
                    "COPY adjudication_response (dataset_id, run_id, question_id, external_id, text, prompt_text, "
                    "content_hash, row_hash, meta, created_at, updated_at) FROM STDIN"
                ) as copy,
            ):
                for line in handle:
                    row = json.loads(line)
                    copy.write_row(
                        (
                            dataset_id,
                            runs[_names(row)],
                            questions[_question(row)],
                            str(row["id"]),
                            row["response"],
                            row.get("prompt_text"),
                            HASH_PLACEHOLDER,
                            HASH_PLACEHOLDER,
                            json.dumps(row.get("meta") or {}),
                            now,
                            now,
                        )
                    )
            conn.commit()
        elapsed = time.perf_counter() - started
        conn.execute(
            "TRUNCATE adjudication_response, adjudication_question, adjudication_run, adjudication_dataset "
            "RESTART IDENTITY CASCADE"
        )
        conn.commit()
    return N / elapsed


def import_measured(path: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of one `import_responses` of `path` into dataset "bench": the largest
    of the command's process and its parser's (wait4 reports the child with its waited-for children)."""
    started = time.perf_counter()
    command = ["import_responses", str(path), "--dataset", "bench", "--no-progress"]
    proc = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), *command], env=env, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"import_responses exited with {proc.returncode}")
    return elapsed, usage.ru_maxrss / 1024  # kilobytes on Linux


def bench_database_name() -> str:
    own = urlparse(os.environ.get("DATABASE_URL", "")).path.lstrip("/")
    return f"{own}_bench_import" if own else "adjudication_bench_import"


def main() -> None:
    url = fresh_database(bench_database_name())
    env = service_env(url)
    manage("migrate", "-v0", env=env)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        generate(path, N)
        print(f"generated {N} rows ({path.stat().st_size / 1e6:.0f} MB)", flush=True)
        bare_rate = copy_into_bare_table(url, path)
        copy_rate = copy_into_import_tables(url, path)
        one = Path(tmp) / "one.jsonl"
        with open(path, encoding="utf-8") as handle:
            one.write_text(handle.readline(), encoding="utf-8")
        started = time.perf_counter()
        manage("import_responses", str(one), "--dataset", "one", "--no-progress", env=env, stdout=subprocess.DEVNULL)
        fixed = time.perf_counter() - started
        elapsed, peak_mb = import_measured(path, env)
        reimport, _ = import_measured(path, env)
    rate = N / elapsed
    print(
        f"import {elapsed:.1f}s ({rate:.0f} rows/s; of which process start, Django set-up and a one-row "
        f"import take {fixed:.1f}s); idempotent re-import {reimport:.1f}s ({N / reimport:.0f} rows/s)\n"
        f"COPY into the import's tables {copy_rate:.0f} rows/s ({N / copy_rate:.1f}s); "
        f"COPY into a bare table {bare_rate:.0f} rows/s ({N / bare_rate:.1f}s)",
        flush=True,
    )
    result("import_vs_bare_copy_ratio", rate / bare_rate)
    result("import_rows_per_s", rate)
    result("import_peak_rss_mb", peak_mb)
    result("import_vs_copy_ratio", rate / copy_rate)


if __name__ == "__main__":
    main()
