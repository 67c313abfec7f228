"""End-to-end reading throughput vs a bare in-process loop over the same readers and responses.

End to end: responses in PostgreSQL → `run_readers` enqueues batches on Redis → a Celery worker
with 2 processes (each running its readers in one killable isolation process) → readings written to
PostgreSQL. Baseline, same run: one plain Python loop calling each reader's `read` on the same items.
Prints, last:  RESULT pipeline_ratio <end-to-end verdicts/s ÷ bare verdicts/s>   (target ≥ 0.8)
Run: python bench/pipeline_bench.py   (PostgreSQL 127.0.0.1:5432 and Redis 127.0.0.1:6379; BENCH_COPIES scales)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, fresh_database, manage, result, service_env, spawn, stop  # noqa: E402

from config.celery import worker_argv  # noqa: E402

COPIES = int(os.environ.get("BENCH_COPIES", "5"))
BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
SAMPLE = ROOT / "adjudication" / "sample_data" / "quickstart.jsonl"


def make_input(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    # Each copy's text differs by a lowercase prefix so that no reader (nor math-verify's parse
    # cache) answers a copy from memory, in the bare loop or in the workers.
    salts = ["note " + "".join("abcdefghij"[int(d)] for d in str(c)) + ".\n" for c in range(COPIES)]
    out = [dict(r, id=f"{r['id']}#{c}", response=salts[c] + r["response"]) for c in range(COPIES) for r in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    return out


def bare_rate(rows: list[dict], panel: list[str]) -> tuple[float, int]:
    from readers import Item, registry

    items = [
        Item(response=r["response"], gold=r["gold"], choices=tuple(r.get("choices") or ()), question=r["question"])
        for r in rows
    ]
    readers = [registry.get(name) for name in panel]
    for reader in readers:  # warm-up: first calls compile grammars and regexes
        reader.read(items[0])
    started = time.perf_counter()
    n = 0
    for reader in readers:
        for item in items:
            try:  # noqa: SIM105 - in the timed loop a bare try is free; contextlib.suppress costs ~0.3 us/item
                reader.read(item)
            except Exception:  # noqa: BLE001 - the isolation layer would record `error`; count it too
                pass
            n += 1
    return n / (time.perf_counter() - started), n


def count_readings(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM adjudication_reading").fetchone()[0]


def main() -> None:
    url = fresh_database("adjudication_bench_pipeline")
    env = service_env(url, BROKER)
    # Each worker process runs its readers in READER_PROCESSES isolation processes: 2 worker
    # processes × 1 = the machine's 2 cores (the README's advice when concurrency = cores).
    env["READER_PROCESSES"] = os.environ.get("READER_PROCESSES", "1")
    manage("migrate", "-v0", env=env)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.jsonl"
        rows = make_input(src)
        manage("import_responses", str(src), "--dataset", "bench", "--no-progress", env=env, stdout=subprocess.DEVNULL)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        from readers import registry

        # The default panel of `run_readers`: every registered rule reader.
        panel = [n for n in registry.names() if registry.get(n).kind == "rule"]
        rate_bare, n_bare = bare_rate(rows, panel)
        print(f"bare loop: {n_bare} verdicts, {rate_bare:.0f}/s (1 process, {len(panel)} readers)", flush=True)

        manage("shell", "-c", "from config.celery import app; app.control.purge()", env=env, stdout=subprocess.DEVNULL)
        log_path = Path(tmp) / "worker.log"
        worker = spawn(worker_argv(queues="readers,default", concurrency=2), env, log_path)
        try:
            time.sleep(6)  # worker start-up (imports SymPy and math-verify) is not part of the throughput
            expected = len(rows) * len(panel)
            started = time.perf_counter()
            manage(
                "run_readers",
                "--dataset",
                "bench",
                "--no-wait",
                "--batch-size",
                "100",
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            while count_readings(url) < expected:
                if worker.poll() is not None:
                    raise SystemExit(f"worker died; see {log_path}")
                time.sleep(0.2)
            elapsed = time.perf_counter() - started
        finally:
            stop(worker, timeout=30)
    rate_e2e = expected / elapsed
    print(f"end to end: {expected} readings in {elapsed:.1f}s, {rate_e2e:.0f}/s (2 worker processes)", flush=True)
    result("pipeline_verdicts_per_s", rate_e2e)
    result("pipeline_ratio", rate_e2e / rate_bare)


if __name__ == "__main__":
    main()
