"""The managers' item browser over 100,000 responses in PostgreSQL: /items/ with each filter, and one
item page, server time per request (Django's test client in one process, DEBUG off, so the template
rendering is included and the network is not).

Setup (not timed): review_bench.py's data (100,000 generated MC rows imported with import_responses,
strict-match and boxed readings bulk-inserted, create_queue routing the disputed third into a queue);
then 10,000 labels on 5,000 of its items by 10 annotators, bulk-inserted with the states and final
labels the services would leave (80 % of the pairs agree: labelled, unanimous; the rest conflict, and
of those half are adjudicated and a fifth marked unresolved). Bulk rows, not label_submit: the
services' own cost is review_bench.py's business; the browser only reads them.

Timed: REPEAT requests per filter after one untimed warm-up; per filter the median and the max.
Baseline, same run: GET /healthz through the same client (one trivial DB round trip).

Prints, last:
  RESULT items_worst_filter_median_ms <the slowest filter's median>
  RESULT items_vs_healthz_ratio <that / healthz median>
Run: python bench/items_bench.py   (PostgreSQL on 127.0.0.1:5432; BENCH_DATABASE_SERVER, BENCH_ROWS,
BENCH_REPEAT override; BENCH_REUSE=1 times again on the last run's database)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_SERVER, fresh_database, import_timed, manage, service_env  # noqa: E402
from review_bench import PANEL, READINGS_SCRIPT, generate, vacuum_analyze  # noqa: E402

N = int(os.environ.get("BENCH_ROWS", "100000"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "15"))
DATABASE = "adjudication_bench_items"

LABELS_SCRIPT = r"""
import random
from django.contrib.auth.models import Group, User
from django.utils import timezone
from adjudication.models import FinalLabel, Label, QueueItem, ReviewQueue

rnd = random.Random(17)
group = Group.objects.get_or_create(name="annotator")[0]
users = []
for i in range(10):
    user = User.objects.create_user(f"annotator{i}", password="bench-items-pw-1")
    user.groups.add(group)
    users.append(user)
adj = User.objects.create_user("adjudicator", password="bench-items-pw-1")
adj.groups.add(Group.objects.get_or_create(name="adjudicator")[0])
boss = User.objects.create_user("boss", password="bench-items-pw-1")
boss.groups.add(Group.objects.get_or_create(name="manager")[0])
queue = ReviewQueue.objects.get(name="bench-q")
items = list(QueueItem.objects.filter(queue=queue).order_by("id")[:5000])
now = timezone.now()
labels, finals, changed = [], [], []
for item in items:
    a, b = rnd.sample(users, 2)
    first = rnd.choice("ABCD")
    agree = rnd.random() < 0.8
    second = first if agree else rnd.choice([c for c in "ABCD" if c != first])
    for user, letter in ((a, first), (b, second)):
        labels.append(Label(item=item, queue=queue, annotator=user, kind="option", answer=letter, guidelines_version=1))
    item.label_count = 2
    if agree:
        item.status = "agreed"
        finals.append(FinalLabel(item=item, kind="option", answer=first, provenance="unanimous"))
    elif rnd.random() < 0.5:
        item.status = "adjudicated"
        unresolved = rnd.random() < 0.2
        finals.append(FinalLabel(
            item=item, kind="ambiguous" if unresolved else "option", answer="" if unresolved else first,
            provenance="unresolved" if unresolved else "adjudicated", decided_by=adj,
        ))
    else:
        item.status = "conflict"
    changed.append(item)
Label.objects.bulk_create(labels, batch_size=5000)
FinalLabel.objects.bulk_create(finals, batch_size=5000)
QueueItem.objects.bulk_update(changed, ["label_count", "status"], batch_size=5000)
print("labels", len(labels), "final labels", len(finals))
"""

TIMING_SCRIPT = r"""
import statistics, time
from django.contrib.auth.models import User
from django.test import Client
from adjudication.models import Dataset, FinalLabel, ReviewQueue
from adjudication.browse import selectors as browse

client = Client()
client.force_login(User.objects.get(username="boss"))
dataset = Dataset.objects.get(name="bench").pk
queue = ReviewQueue.objects.get(name="bench-q").pk
decided = FinalLabel.objects.filter(provenance="adjudicated")
labelled = decided.values_list("item__review_item__response_id", flat=True)[0]
CASES = [
    ("healthz (baseline)", "/healthz"),
    ("no filter", "/items/"),
    ("q: an exact id", "/items/?q=row-4242"),
    ("q: a rare text (one match)", "/items/?q=draft+4242)"),
    ("q: a common text", "/items/?q=then+again"),
    ("dataset, model, checkpoint", f"/items/?dataset={dataset}&model=model-1&checkpoint=rl"),
    ("benchmark, last page", "/items/?benchmark=mmlu&page=1999"),
    ("queue", f"/items/?queue={queue}"),
    ("status open, in the queue", f"/items/?queue={queue}&status=open"),
    ("status conflicting, any queue", "/items/?status=conflicting"),
    ("status unresolved, any queue", "/items/?status=unresolved"),
    ("status adjudicated, any queue", "/items/?status=adjudicated"),
    ("two verdict conditions", "/items/?verdict=strict-match:correct&verdict=boxed:incorrect"),
    ("verdicts that never co-occur", "/items/?verdict=strict-match:no_answer&verdict=boxed:no_answer"),
    ("disagree any", f"/items/?queue={queue}&disagree=any"),
    ("disagree pair", f"/items/?queue={queue}&disagree=annotator0,annotator1"),
    ("everything at once", f"/items/?dataset={dataset}&checkpoint=base&queue={queue}&status=labelled"
                           "&verdict=boxed:correct&q=reasoning"),
    ("item page", f"/items/{labelled}/"),
]
worst = 0.0
for name, path in CASES:
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.content[:500])
    times = []
    for _ in range(__REPEAT__):
        t = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - t) * 1000)
    median = statistics.median(times)
    count = ""
    if path.startswith("/items/?"):
        import re
        found = re.search(rb'<p id="item-count">([^<;.]+)', response.content)
        count = found.group(1).decode() if found else ""
    print(f"{name:34} median {median:7.1f} ms  max {max(times):7.1f} ms  {count}", flush=True)
    if name.startswith("healthz"):
        base = median
    elif median > worst:
        worst, worst_name = median, name
print(f"slowest: {worst_name}")
print(f"RESULT items_worst_filter_median_ms {worst:.1f}")
print(f"RESULT items_vs_healthz_ratio {worst / base:.3g}")
"""


def main() -> None:
    if os.environ.get("BENCH_REUSE"):
        # Time again on the database a previous run left (setup takes minutes).
        from urllib.parse import urlparse, urlunparse

        server = urlparse(os.environ.get("BENCH_DATABASE_SERVER", DEFAULT_SERVER))
        env = service_env(urlunparse(server._replace(path="/" + DATABASE)))
        env.update(DEBUG="0", ALLOWED_HOSTS="testserver", SECURE_SSL_REDIRECT="0")
        manage("shell", "--no-imports", "-c", TIMING_SCRIPT.replace("__REPEAT__", str(REPEAT)), env=env)
        return
    url = fresh_database(DATABASE)
    env = service_env(url)
    # The test client talks plain HTTP as host "testserver".
    env.update(DEBUG="0", ALLOWED_HOSTS="testserver", SECURE_SSL_REDIRECT="0")
    manage("migrate", "-v0", env=env)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        generate(path, N)
        import_timed(path, rows=N, env=env)
    manage("shell", "--no-imports", "-c", READINGS_SCRIPT, env=env)
    args = ["create_queue", "--dataset", "bench", "--name", "bench-q", "--overlap", "2"]
    for name in PANEL:
        args += ["--panel", name]
    manage(*args, env=env)
    manage("shell", "--no-imports", "-c", LABELS_SCRIPT, env=env)
    vacuum_analyze(url)
    manage("shell", "--no-imports", "-c", TIMING_SCRIPT.replace("__REPEAT__", str(REPEAT)), env=env)


if __name__ == "__main__":
    main()
