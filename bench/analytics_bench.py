"""Analytics: the stored report's page and JSON download over 100,000 responses in PostgreSQL.

Setup (not timed): a throwaway database; 100,000 generated canonical MC rows imported with
`import_responses` (5,000 questions x 4 models x 2 checkpoints, the review bench's texts: a third
state one letter in prose and box another); readings of 18 rule readers written in bulk (COPY);
`create_queue` over a panel of two of them (routing, with 5 % controls); 10,000 of its items
labelled by two annotators each (90 % agree: a unanimous final label; otherwise an adjudicated
one), written in bulk.

The readings are not produced by running the readers (18 x 100,000 readings would take most of
an hour; pipeline_bench.py measures that): each reader is given a family and a verdict mix
instead. Box readers read the boxed letter, prose readers the letter of "The answer is (X)"; each
misses its answer on a reader-specific share of responses (no_answer, 1-40 %), misreads a few
(a different letter, 0.5-5 %), and errors or times out on a few in a thousand. Answers are stored
as readers store them (answer "(B)" or "B", normalized and canonical "B", a span), verdicts
against the gold. The labels and final labels are rows as label_submit and final_label_adjudicate
write them (labels with their queue, guideline version and time spent; items settled). Every bulk
write ends with adjudication.revisions.dataset_changed, as the services do.

Timed:
  1. the report task once (what compute_report runs: claim, build on one snapshot, store), in a
     child process: `RESULT analytics_report_task_s`;
  2. baseline, same run: the old path, the report built in the request (`report.build` on the
     same data, then its body), BASELINE_BUILDS times;
  3. the page (/analytics/<id>/) and its JSON download (report.json) under the deployment's
     gunicorn (config/gunicorn.conf.py, DEBUG off), CLIENTS concurrent managers, each logged in
     with its own keep-alive connection, REQUESTS requests each, alternating page and download,
     after WARMUP untimed ones.

Prints, last:
  RESULT analytics_report_task_s <seconds>
  RESULT analytics_vs_recompute_ratio <stored p95 / median build time>
  RESULT analytics_page_p95_ms <value>
  RESULT analytics_json_p95_ms <value>
  RESULT analytics_p95_ms <the larger of the two; target <= 1000>
Run: python bench/analytics_bench.py   (PostgreSQL on 127.0.0.1:5432; override BENCH_DATABASE_SERVER,
BENCH_ROWS, BENCH_LABELS, BENCH_CLIENTS, BENCH_REQUESTS, BENCH_BASELINE_BUILDS, BENCH_WORKERS,
BENCH_THREADS)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_database, import_timed, manage, result, service_env, stop  # noqa: E402
from review_bench import PASSWORD, Browser, free_port, generate, p95, start_server, vacuum_analyze  # noqa: E402

N = int(os.environ.get("BENCH_ROWS", "100000"))
LABELS = int(os.environ.get("BENCH_LABELS", "10000"))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
REQUESTS = int(os.environ.get("BENCH_REQUESTS", "60"))
BASELINE_BUILDS = int(os.environ.get("BENCH_BASELINE_BUILDS", "3"))
WARMUP = 2
PANEL = ["strict-match", "boxed"]

# name -> (family, share with no answer, share misread, share error, share timeout)
READERS = {
    "boxed": ("box", 0.01, 0.005, 0.0, 0.0),
    "fixed": ("box", 0.01, 0.005, 0.001, 0.0),
    "math-verify-latex": ("box", 0.02, 0.01, 0.002, 0.001),
    "math-verify-expr": ("box", 0.05, 0.02, 0.002, 0.001),
    "strip-string": ("box", 0.02, 0.01, 0.0, 0.0),
    "strip-string-lm-eval": ("box", 0.02, 0.015, 0.0, 0.0),
    "sympy-cascade": ("box", 0.08, 0.03, 0.003, 0.002),
    "sympy-cascade-magnitude-safe": ("box", 0.08, 0.03, 0.003, 0.002),
    "math-verify-latex-seed001": ("box", 0.03, 0.01, 0.002, 0.001),
    "strict-match": ("prose", 0.01, 0.005, 0.0, 0.0),
    "flexible-extract": ("prose", 0.05, 0.04, 0.0, 0.0),
    "last-extract": ("prose", 0.02, 0.05, 0.0, 0.0),
    "multi-choice-regex": ("prose", 0.10, 0.03, 0.0, 0.0),
    "mmlu-pro-custom-extract": ("prose", 0.03, 0.01, 0.0, 0.0),
    "mmlu-pro-released": ("prose", 0.04, 0.02, 0.0, 0.0),
    "mmlu-pro-released-first-pattern": ("prose", 0.15, 0.02, 0.0, 0.0),
    "answer-is-correct": ("prose", 0.40, 0.01, 0.0, 0.0),
    "instructed-format": ("prose", 0.30, 0.02, 0.0, 0.0),
}

READINGS_SCRIPT = r"""
import json, random, re, zlib
from django.db import connection, transaction
from django.utils import timezone
from adjudication.models import Dataset, Response
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.revisions import dataset_changed

READERS = json.loads({readers!r})
PROSE, BOX = re.compile(r"The answer is \(([A-D])\)"), re.compile(r"\\boxed\{{([A-D])\}}")
ds = Dataset.objects.get(name="bench")
specs = {{name: reader_spec_by_name(name=name).pk for name in READERS}}
now = timezone.now()
columns = ("response_id, reader_spec_id, answer, normalized, canonical, verdict, span_start, span_end, detail, "
           "elapsed_ms, created_at")
# First what each response says (small tuples), then one COPY: the connection cannot read the
# responses while it is copying.
said = []
responses = Response.objects.filter(dataset=ds).values_list("id", "text", "question__gold")
for rid, text, gold in responses.iterator(chunk_size=5000):
    found = {{}}
    for family, pattern in (("prose", PROSE), ("box", BOX)):
        m = pattern.search(text)
        found[family] = (m.group(1), m.start(1), m.end(1)) if m else None
    said.append((rid, gold, found))
total = 0
with transaction.atomic(), connection.cursor() as cursor:
    with cursor.cursor.copy(f"COPY adjudication_reading ({{columns}}) FROM STDIN") as copy:
        for rid, gold, found in said:
            for name, (family, miss, misread, error, timeout) in READERS.items():
                rnd = random.Random(zlib.crc32(f"{{name}}:{{rid}}".encode()))
                m, x = found[family], rnd.random()
                if x < error:
                    row = (None, None, None, "error", None, None)
                elif x < error + timeout:
                    row = (None, None, None, "timeout", None, None)
                elif m is None or x < error + timeout + miss:
                    row = (None, None, None, "no_answer", None, None)
                else:
                    letter, start, end = m
                    if rnd.random() < misread:
                        letter = rnd.choice([c for c in "ABCD" if c != letter])
                    raw = f"({{letter}})" if family == "prose" else letter
                    row = (raw, letter, letter, "correct" if letter == gold else "incorrect", start, end)
                answer, normalized, canonical, verdict, start, end = row
                copy.write_row((rid, specs[name], answer, normalized, canonical, verdict, start, end, "{{}}", 1.0, now))
                total += 1
    dataset_changed(dataset_id=ds.pk)
print("readings", total)
"""

LABELS_SCRIPT = r"""
import random, re
from django.contrib.auth.models import Group, User
from django.db import transaction
from adjudication.models import FinalLabel, Guidelines, Label, QueueItem, ReviewQueue
from adjudication.revisions import dataset_changed

BOX = re.compile(r"\\boxed\{{([A-D])\}}")
queue = ReviewQueue.objects.get(name="bench-q")
version = Guidelines.objects.filter(queue=queue).order_by("-version").values_list("version", flat=True).first()
annotators = []
for name in ("ann", "bob"):
    user = User.objects.create_user(name, password="x-" + name)
    user.groups.add(Group.objects.get_or_create(name="annotator")[0])
    annotators.append(user)
judge = User.objects.create_user("judy", password="x-judy")
judge.groups.add(Group.objects.get_or_create(name="adjudicator")[0])
items = QueueItem.objects.filter(queue=queue).select_related("review_item__response")
controls = list(items.filter(review_item__is_control=True).order_by("tiebreak")[: {labels} // 10])
disputed = list(items.filter(review_item__is_control=False).order_by("tiebreak")[: {labels} - len(controls)])
rnd = random.Random(11)
labels, finals, agreed, adjudicated = [], [], [], []
for item in controls + disputed:
    said = BOX.search(item.review_item.response.text).group(1)
    other = said if rnd.random() < 0.9 else rnd.choice([c for c in "ABCD" if c != said])
    for user, answer in zip(annotators, (said, other)):
        labels.append(Label(item=item, queue=queue, annotator=user, kind="option", answer=answer,
                            guidelines_version=version, seconds_spent=rnd.uniform(5, 60)))
    if other == said:
        finals.append(FinalLabel(item=item, kind="option", answer=said, provenance="unanimous"))
        agreed.append(item.pk)
    else:
        finals.append(FinalLabel(item=item, kind="option", answer=said, provenance="adjudicated", decided_by=judge))
        adjudicated.append(item.pk)
with transaction.atomic():
    Label.objects.bulk_create(labels, batch_size=5000)
    FinalLabel.objects.bulk_create(finals, batch_size=5000)
    QueueItem.objects.filter(pk__in=agreed).update(label_count=2, status="agreed")
    QueueItem.objects.filter(pk__in=adjudicated).update(label_count=2, status="adjudicated")
    dataset_changed(dataset_id=queue.dataset_id)
print(f"labels {{len(labels)}}, final labels {{len(finals)}}: {{len(adjudicated)}} adjudicated, "
      f"{{len(controls)}} on controls")

manager = User.objects.create_user("manager", password={password!r})
manager.groups.add(Group.objects.get_or_create(name="manager")[0])
"""

TASK_SCRIPT = r"""
import json, time
from adjudication.analytics.report import Params
from adjudication.analytics.services import report_request
from adjudication.models import AnalyticsReport, Dataset

ds = Dataset.objects.get(name="bench")
started = time.perf_counter()
# No broker in this process: Celery is eager, and the request's on_commit runs compute_report here.
row = report_request(dataset=ds, params=Params())
wall = time.perf_counter() - started
report = AnalyticsReport.objects.get(pk=row.pk)
assert report.status == "done", report.error
print("TASK " + json.dumps({"wall_s": wall, "elapsed_s": report.elapsed_s, "id": ds.pk,
                            "body_bytes": len(json.dumps(report.body)), "version": report.data_version}))
"""

BASELINE_SCRIPT = r"""
import json, statistics, time
from adjudication.analytics.agreement import reader_overview
from adjudication.analytics.report import Params, build
from adjudication.analytics.selectors import reader_observations
from adjudication.models import Dataset

ds = Dataset.objects.get(name="bench")
times = []
for _ in range({builds}):
    started = time.perf_counter()
    build(ds, Params()).body()
    times.append(time.perf_counter() - started)
# What the overview alone cost before it was counted in SQL: every reading into Python.
started = time.perf_counter()
obs = reader_observations(dataset=ds)
reader_overview(obs)
old_overview = time.perf_counter() - started
print("BASELINE " + json.dumps({{"builds_s": times, "old_overview_s": old_overview, "readings": len(obs)}}))
"""


def child_json(tag: str, script: str, env: dict[str, str]) -> dict:
    out = manage("shell", "--no-imports", "-c", script, env=env, stdout=subprocess.PIPE)
    line = next(x for x in out.stdout.splitlines() if x.startswith(tag + " "))
    return json.loads(line[len(tag) + 1 :])


def fetch(port: int, paths: list[str], samples: dict[str, list[float]], errors: list[str], barrier) -> None:
    b = Browser(port)
    try:
        b.login("manager")
        for path in paths[:WARMUP]:
            b.request("GET", path)
        barrier.wait()
        for i in range(REQUESTS):
            path = paths[i % len(paths)]
            started = time.perf_counter()
            status, _, body = b.request("GET", path)
            samples[path].append((time.perf_counter() - started) * 1000)
            if status != 200:
                errors.append(f"GET {path} -> {status}")
            elif path.endswith(".json") and '"computed_at"' not in body:
                errors.append(f"GET {path}: no computed_at")
            elif not path.endswith(".json") and "It is up to date" not in body:
                errors.append(f"GET {path}: not the current stored report")
    except Exception as exc:  # noqa: BLE001 - reported below
        errors.append(repr(exc))
        barrier.abort()


def main() -> None:
    url = fresh_database("adjudication_bench_analytics")
    env = service_env(url)
    manage("migrate", "-v0", env=env)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        path = tmp_path / "rows.jsonl"
        generate(path, N)
        import_timed(path, rows=N, env=env)
        t = time.perf_counter()
        manage("shell", "--no-imports", "-c", READINGS_SCRIPT.format(readers=json.dumps(READERS)), env=env)
        print(f"bulk-wrote the readings of {len(READERS)} readers in {time.perf_counter() - t:.0f}s", flush=True)
        t = time.perf_counter()
        args = [
            "create_queue",
            "--dataset",
            "bench",
            "--name",
            "bench-q",
            "--overlap",
            "2",
            "--control-fraction",
            "0.05",
        ]
        for name in PANEL:
            args += ["--panel", name]
        manage(*args, env=env)
        print(f"queue routed in {time.perf_counter() - t:.0f}s", flush=True)
        manage("shell", "--no-imports", "-c", LABELS_SCRIPT.format(labels=LABELS, password=PASSWORD), env=env)
        vacuum_analyze(url)  # what autovacuum does shortly after a bulk load: fresh planner statistics

        task = child_json("TASK", TASK_SCRIPT, env)
        print(
            f"report task: {task['wall_s']:.1f} s (build and store {task['elapsed_s']:.1f} s; "
            f"body {task['body_bytes'] / 1e6:.2f} MB; data version {task['version']})",
            flush=True,
        )
        baseline = child_json("BASELINE", BASELINE_SCRIPT.format(builds=BASELINE_BUILDS), env)
        build_s = statistics.median(baseline["builds_s"])
        print(
            f"baseline, the report built in the request: {', '.join(f'{s:.1f}' for s in baseline['builds_s'])} s "
            f"(median {build_s:.1f}); the readers' overview alone from all {baseline['readings']} readings in "
            f"Python (before SQL counting): {baseline['old_overview_s']:.1f} s",
            flush=True,
        )

        dataset_id = task["id"]
        paths = [f"/analytics/{dataset_id}/", f"/analytics/{dataset_id}/report.json"]
        port = free_port()
        server = start_server(env, port, tmp_path / "gunicorn.log")
        samples: dict[str, list[float]] = {p: [] for p in paths}
        errors: list[str] = []
        try:
            barrier = threading.Barrier(CLIENTS)
            threads = [
                threading.Thread(target=fetch, args=(port, paths[i % 2 :] + paths[: i % 2], samples, errors, barrier))
                for i in range(CLIENTS)
            ]
            wall = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            wall = time.perf_counter() - wall
        finally:
            stop(server)
            log = (tmp_path / "gunicorn.log").read_text()
        if errors:
            print(log[-3000:], file=sys.stderr)
            raise SystemExit(f"{len(errors)} errors: {errors[:5]}")
    page, data = samples[paths[0]], samples[paths[1]]
    workers = os.environ.get("BENCH_WORKERS") or str((os.cpu_count() or 1) + 1)
    print(
        f"gunicorn config/gunicorn.conf.py: {workers} workers; {CLIENTS} concurrent managers, "
        f"{len(page) + len(data)} timed requests in {wall:.1f} s",
        flush=True,
    )
    for name, values in (("page", page), ("report.json", data)):
        print(
            f"{name}: ms p50 {statistics.median(values):.0f} p95 {p95(values):.0f} max {max(values):.0f} "
            f"(n={len(values)})",
            flush=True,
        )
    print(f"load average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    stored_p95 = max(p95(page), p95(data))
    result("analytics_report_task_s", task["wall_s"])
    result("analytics_vs_recompute_ratio", stored_p95 / 1000 / build_s)
    result("analytics_page_p95_ms", p95(page))
    result("analytics_json_p95_ms", p95(data))
    result("analytics_p95_ms", stored_p95)


if __name__ == "__main__":
    main()
