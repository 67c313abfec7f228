"""Analytics report computation time at 1,000 and 100,000 responses (issue 36 item 15).

Setup per size (not timed), as bench/analytics_bench.py sets up: a throwaway PostgreSQL database;
N generated canonical MC rows imported with `import_responses` (5,000 questions, or N / 8 when
fewer, x 4 models x 2 checkpoints); the readings of 18 rule readers written in bulk (COPY);
`create_queue` over a panel of two of them (5 % controls); a tenth of the responses (at most
10,000) labelled by two annotators each, with final labels.

Timed, in a child process per size, ROUNDS rounds each:
  the report: what the compute_report task runs (claim, build on one snapshot, store), on a new data
    version each round (the previous report superseded, as after a label);
  baseline, same process: reading the report's inputs (every reading with its response's model,
    checkpoint and gold, and the final labels) from the database, the floor a computation that
    reads its data cannot go below.

Prints, last, for each size N (1000, 100000):
  RESULT report_<N>_cpu_s <median CPU seconds of the computing process> (steadier on a shared machine)
  RESULT report_<N>_s <median seconds>            (targets: <= 2 s at 1,000, <= 20 s at 100,000)
  RESULT report_<N>_load_s <median baseline seconds>
  RESULT report_<N>_vs_load_ratio <report / baseline>
Run: python bench/report_bench.py   (PostgreSQL on 127.0.0.1:5432; override BENCH_DATABASE_SERVER,
BENCH_SIZES=1000,100000, BENCH_ROUNDS=3; BENCH_PROFILE=1 prints a cProfile of one computation;
BENCH_REUSE=1 times again on the databases a previous run left, without the setup)
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
from _common import DEFAULT_SERVER, fresh_database, import_timed, manage, result, service_env  # noqa: E402
from analytics_bench import LABELS_SCRIPT, PANEL, READERS, READINGS_SCRIPT  # noqa: E402
from review_bench import PASSWORD, generate, vacuum_analyze  # noqa: E402

SIZES = [int(s) for s in os.environ.get("BENCH_SIZES", "1000,100000").split(",")]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PROFILE = os.environ.get("BENCH_PROFILE", "") == "1"
REUSE = os.environ.get("BENCH_REUSE", "") == "1"

TIMED_SCRIPT = r"""
import cProfile, io, json, pstats, statistics, time
from django.db import connection
from adjudication.analytics.report import Params
from adjudication.analytics.services import report_compute, report_request
from adjudication.models import AnalyticsReport, Dataset, FinalLabel, Reading
from adjudication.revisions import dataset_changed

ds = Dataset.objects.get(name="bench")
report_s, load_s, cpu_s = [], [], []
for round in range({rounds}):
    dataset_changed(dataset_id=ds.pk)  # a new data version: what a label does
    # Celery is a broker-less eager app here: the request's on_commit would run the task inline;
    # the row is requested, then computed exactly as compute_report computes it.
    started, cpu = time.perf_counter(), time.process_time()
    row = report_request(dataset=ds, params=Params())
    report = AnalyticsReport.objects.get(pk=row.pk)
    if report.status != "done":
        report_compute(report_id=row.pk)
    report_s.append(time.perf_counter() - started)
    cpu_s.append(time.process_time() - cpu)
    report = AnalyticsReport.objects.get(pk=row.pk)
    assert report.status == "done", report.error
    started = time.perf_counter()
    n = 0
    for _ in Reading.objects.filter(response__dataset=ds).values_list(
        "response_id", "reader_spec_id", "verdict", "canonical", "response__run__model",
        "response__run__checkpoint", "response__question__gold").iterator(chunk_size=20000):
        n += 1
    list(FinalLabel.objects.filter(item__queue__dataset=ds).values_list("item__review_item__response_id", "answer"))
    load_s.append(time.perf_counter() - started)
profile = ""
if {profile}:
    dataset_changed(dataset_id=ds.pk)
    prof = cProfile.Profile()
    prof.enable()
    row = report_request(dataset=ds, params=Params())
    if AnalyticsReport.objects.get(pk=row.pk).status != "done":
        report_compute(report_id=row.pk)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(60)
    profile = out.getvalue()
print(profile)
print("TIMED " + json.dumps({{"report_s": report_s, "cpu_s": cpu_s, "load_s": load_s, "readings": n}}))
"""


def database_name(n: int) -> str:
    return f"adjudication_bench_report_{n}"


def reused(n: int) -> dict[str, str]:
    """The environment of the database a previous run set up for n (setup takes minutes at 100,000)."""
    from urllib.parse import urlparse, urlunparse

    server = urlparse(os.environ.get("BENCH_DATABASE_SERVER", DEFAULT_SERVER))
    return service_env(urlunparse(server._replace(path="/" + database_name(n))))


def setup(n: int, tmp: Path) -> dict[str, str]:
    url = fresh_database(database_name(n))
    env = service_env(url)
    manage("migrate", "-v0", env=env)
    path = tmp / f"rows-{n}.jsonl"
    generate(path, n)
    import_timed(path, rows=n, env=env)
    manage(
        "shell",
        "--no-imports",
        "-c",
        READINGS_SCRIPT.format(readers=json.dumps(READERS)),
        env=env,
        stdout=subprocess.DEVNULL,
    )
    args = ["create_queue", "--dataset", "bench", "--name", "bench-q", "--overlap", "2", "--control-fraction", "0.05"]
    for name in PANEL:
        args += ["--panel", name]
    manage(*args, env=env, stdout=subprocess.DEVNULL)
    labels = min(10_000, n // 10)
    manage(
        "shell",
        "--no-imports",
        "-c",
        LABELS_SCRIPT.format(labels=labels, password=PASSWORD),
        env=env,
        stdout=subprocess.DEVNULL,
    )
    vacuum_analyze(url)
    return env


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for n in SIZES:
            started = time.perf_counter()
            if REUSE:
                env = reused(n)
            else:
                env = setup(n, Path(tmp))
                print(
                    f"{n} responses x {len(READERS)} readers set up in {time.perf_counter() - started:.0f} s",
                    flush=True,
                )
            out = manage(
                "shell",
                "--no-imports",
                "-c",
                TIMED_SCRIPT.format(rounds=ROUNDS, profile=PROFILE),
                env=env,
                stdout=subprocess.PIPE,
            )
            line = next(x for x in out.stdout.splitlines() if x.startswith("TIMED "))
            if PROFILE:
                print(out.stdout[: out.stdout.index("TIMED ")])
            timed = json.loads(line[len("TIMED ") :])
            report_s, load_s = sorted(timed["report_s"]), sorted(timed["load_s"])
            median_report, median_load = report_s[len(report_s) // 2], load_s[len(load_s) // 2]
            cpu_s = sorted(timed["cpu_s"])
            print(
                f"{n} responses ({timed['readings']} readings): report "
                f"{', '.join(f'{s:.2f}' for s in timed['report_s'])} s (CPU of this process "
                f"{', '.join(f'{s:.2f}' for s in timed['cpu_s'])} s); reading its inputs "
                f"{', '.join(f'{s:.2f}' for s in timed['load_s'])} s; load average "
                f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
                flush=True,
            )
            result(f"report_{n}_cpu_s", cpu_s[len(cpu_s) // 2])
            result(f"report_{n}_s", median_report)
            result(f"report_{n}_load_s", median_load)
            result(f"report_{n}_vs_load_ratio", median_report / median_load)


if __name__ == "__main__":
    main()
