"""LLM fan-out: 500 judge calls against a loopback OpenAI-compatible server with 100 ms latency per
request and an endpoint concurrency of 16, through the real path (`run_judges` → judge task →
judging service → openai SDK → HTTP → attempts, readings and judgements written to the database).

Ideal wall time: 500 × 0.1 s ÷ 16 = 3.125 s. Prints, last:
    RESULT llm_fanout_ratio <wall time ÷ ideal>   (target ≤ 1.2)
Run: python bench/llm_fanout_bench.py   (PostgreSQL on 127.0.0.1:5432 if reachable, else SQLite;
the server runs in its own process so that its threads do not share our interpreter lock)
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, fresh_database, result  # noqa: E402

CALLS = 500
LATENCY_S = 0.1
CONCURRENCY = 16


def database_url(tmp: Path) -> str:
    try:
        return fresh_database("adjudication_bench_llm")
    except Exception as exc:  # noqa: BLE001 - no PostgreSQL here: a throwaway SQLite file does
        print(f"PostgreSQL unavailable ({type(exc).__name__}); using SQLite", flush=True)
        return f"sqlite:///{tmp / 'bench.sqlite3'}"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.environ["DATABASE_URL"] = database_url(tmp)
        os.environ.pop("CELERY_BROKER_URL", None)  # eager: the task runs here, as in the embedded default
        os.environ.pop("REDIS_URL", None)
        os.environ.setdefault("SECRET_KEY", "bench-only")
        os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
        server = subprocess.Popen(
            [sys.executable, "-m", "judges.testing.loopback", "--latency", str(LATENCY_S)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        try:
            base_url = server.stdout.readline().strip()  # type: ignore[union-attr]
            import django

            django.setup()
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            src = tmp / "in.jsonl"
            with open(src, "w") as f:
                for i in range(CALLS):
                    f.write(
                        json.dumps(
                            {
                                "id": f"q{i}",
                                "question": f"What is {i} + 1?",
                                "gold": str(i + 1),
                                "response": f"<think>{i} plus one</think> The answer is {i + 1}.",
                                "model": "m",
                                "checkpoint": "rl",
                                "benchmark": "math",
                            }
                        )
                        + "\n"
                    )
            with open(os.devnull, "w") as devnull:
                call_command("import_responses", str(src), dataset="bench", no_progress=True, stdout=devnull)
                call_command(
                    "add_endpoint",
                    "loop",
                    base_url=base_url,
                    model="loop-model",
                    concurrency=CONCURRENCY,
                    stdout=devnull,
                )
                call_command("add_judge", "sq", endpoint="loop", template="simpleqa", stdout=devnull)

                # A worker imports its task modules (the openai SDK among them) once, at start-up: not per run.
                importlib.import_module("judges.tasks")

                started = time.perf_counter()
                call_command(
                    "run_judges",
                    dataset="bench",
                    judges=["sq"],
                    batch_size=CALLS,
                    stdout=devnull,
                    stderr=devnull,
                )
                wall = time.perf_counter() - started

            from adjudication.models import Reading
            from judges.models import LLMAttempt

            readings = Reading.objects.filter(reader_spec__name="sq").count()
            attempts = LLMAttempt.objects.count()
            stats = json.load(__import__("urllib.request").request.urlopen(base_url + "/stats"))
        finally:
            server.terminate()
            server.wait(timeout=10)
    if readings != CALLS:
        raise SystemExit(f"{readings} readings for {CALLS} calls")
    ideal = CALLS * LATENCY_S / CONCURRENCY
    print(
        f"{CALLS} judge calls ({attempts} attempts, {readings} readings), concurrency {CONCURRENCY}, "
        f"{LATENCY_S * 1000:.0f} ms latency: {wall:.2f}s wall, ideal {ideal:.3f}s; "
        f"server saw at most {stats['max_in_flight']} in flight",
        flush=True,
    )
    result("llm_fanout_wall_s", wall)
    result("llm_fanout_ratio", wall / ideal)


if __name__ == "__main__":
    main()
