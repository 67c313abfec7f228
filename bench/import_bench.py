"""Import throughput and memory: 100,000 generated canonical rows into PostgreSQL.

Baseline, measured in the same run: PostgreSQL's COPY of the same rows' response texts into a bare
table (the floor any importer pays to move the bytes). Prints, last:
  RESULT import_vs_copy_ratio <import rows/s ÷ COPY rows/s>
  RESULT import_rows_per_s <value>
  RESULT import_peak_rss_mb <peak RSS of the import process>
Run: python bench/import_bench.py   (PostgreSQL on 127.0.0.1:5432; override BENCH_DATABASE_SERVER, BENCH_ROWS)
With DATABASE_URL set, the throwaway database is named after it (<name>_bench_import), so engineers
sharing one server do not drop each other's bench database.
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_database, manage, result, service_env, write_mc_rows  # noqa: E402

N = int(os.environ.get("BENCH_ROWS", "100000"))


def generate(path: Path, n: int) -> None:
    rnd = random.Random(1234)
    filler = "Let me reason about each option in turn, weighing the evidence carefully. " * 12

    def respond(i: int, gold: str) -> str:
        pick = gold if rnd.random() < 0.7 else rnd.choice("ABCD")
        ending = rnd.choice([f"The answer is ({pick}).", f"\\boxed{{{pick}}}", f"**Answer:** {pick}"])
        return f"<think>{filler}</think>\n{ending}"

    write_mc_rows(path, n, respond)


def copy_baseline(url: str, path: Path) -> float:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_copy (external_id text, response text)")
        started = time.perf_counter()
        with (
            open(path, encoding="utf-8") as handle,
            conn.cursor() as cur,
            cur.copy("COPY bench_copy (external_id, response) FROM STDIN") as copy,
        ):
            for line in handle:
                row = json.loads(line)
                copy.write_row((row["id"], row["response"]))
        elapsed = time.perf_counter() - started
        conn.execute("DROP TABLE bench_copy")
    return N / elapsed


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
        copy_rate = copy_baseline(url, path)
        started = time.perf_counter()
        manage("import_responses", str(path), "--dataset", "bench", "--no-progress", env=env)
        elapsed = time.perf_counter() - started
        # The import ran in a child: its peak RSS is the children's maximum (kilobytes on Linux).
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        started = time.perf_counter()
        manage("import_responses", str(path), "--dataset", "bench", "--no-progress", env=env)
        reimport = time.perf_counter() - started
    rate = N / elapsed
    print(
        f"import {elapsed:.1f}s ({rate:.0f} rows/s, process start and Django setup included); "
        f"idempotent re-import {reimport:.1f}s; COPY baseline {copy_rate:.0f} rows/s",
        flush=True,
    )
    result("import_vs_copy_ratio", rate / copy_rate)
    result("import_rows_per_s", rate)
    result("import_peak_rss_mb", peak_mb)


if __name__ == "__main__":
    main()
