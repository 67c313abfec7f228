"""The managers' landing page right after a label, on the embedded default (SQLite, eager Celery,
`manage.py runserver`, what `make demo` serves): issue 36 item 15.

Setup (not timed): a throwaway SQLite file; `quickstart --no-serve` (the bundled sample: 320
responses, the reader panel, the review queue, the stored report); an annotator; the server.

Timed: ROUNDS times, the annotator labels one item through the pages (claim, item page, POST), then
the manager loads `/` at once: one sample = that GET, from sending it to the last byte. Each label
makes the stored report stale, so every sample is a landing page whose report must be recomputed
(after the response, on the server's background thread; before issue 36 item 15, inside the GET).
Baseline, same run: GET /healthz (one trivial database round trip) between the rounds.

Prints, last:
  RESULT landing_after_label_p50_ms <value>
  RESULT landing_vs_healthz_p95_ratio <landing p95 / healthz p95>
  RESULT landing_after_label_p95_ms <value>      (target <= 300)
Run: python bench/landing_bench.py   (no services needed; BENCH_ROUNDS=30, BENCH_PAUSE_S=1.0: the time
between a page and the next label, as a person takes)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, manage, result, spawn, stop  # noqa: E402
from review_bench import PASSWORD, Browser, free_port, p95, path_of  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "30"))
PAUSE_S = float(os.environ.get("BENCH_PAUSE_S", "1.0"))

USERS_SCRIPT = r"""
from django.contrib.auth.models import Group, User
for name, role in (("ann", "annotator"), ("manager", "manager")):
    user = User.objects.create_user(name, password={password!r})
    user.groups.add(Group.objects.get_or_create(name=role)[0])
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp}/embedded.sqlite3", SECRET_KEY="bench-only")
        for name in ("CELERY_BROKER_URL", "REDIS_URL"):
            env.pop(name, None)
        started = time.perf_counter()
        manage("quickstart", "--no-serve", env=env, stdout=subprocess.DEVNULL)
        manage("shell", "--no-imports", "-c", USERS_SCRIPT.format(password=PASSWORD), env=env)
        print(f"quickstart in {time.perf_counter() - started:.0f} s", flush=True)
        port = free_port()
        server = spawn(
            [sys.executable, str(ROOT / "manage.py"), "runserver", "--noreload", f"127.0.0.1:{port}"],
            env,
            Path(tmp) / "server.log",
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    Browser(port).request("GET", "/healthz")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            annotator, manager, probe = Browser(port), Browser(port), Browser(port)
            annotator.login("ann")
            manager.login("manager")
            manager.request("GET", "/")  # warm
            landing, healthz = [], []
            next_url = "/review/?queue=1"
            for k in range(ROUNDS):
                status, headers, html = annotator.request("GET", next_url)
                item = next_url
                if status == 302:  # the queue's next item, claimed
                    item = path_of(headers["location"])
                    status, _, html = annotator.request("GET", item)
                assert status == 200 and 'id="label-form"' in html, f"GET {item} -> {status}"
                form = {"csrfmiddlewaretoken": annotator.csrf(html), "action": "label", "kind": "option", "note": ""}
                status, headers, _ = annotator.request(
                    "POST", item, {**form, "answer": "ABCD"[k % 4], "confidence": "3"}
                )
                assert status == 302, f"POST {item} -> {status}"
                next_url = path_of(headers["location"])
                if next_url == item:  # refused (the page says why): claim the next one instead
                    next_url = "/review/?queue=1"
                t = time.perf_counter()
                status, _, page = manager.request("GET", "/")
                landing.append((time.perf_counter() - t) * 1000)
                assert status == 200 and "section" in page, status
                t = time.perf_counter()
                probe.request("GET", "/healthz")
                healthz.append((time.perf_counter() - t) * 1000)
                time.sleep(PAUSE_S)
        except AssertionError:
            print((Path(tmp) / "server.log").read_text()[-4000:], file=sys.stderr)
            raise
        finally:
            stop(server)
    print(
        f"landing page after a label: ms p50 {statistics.median(landing):.0f} p95 {p95(landing):.0f} "
        f"max {max(landing):.0f} (n={len(landing)}); healthz p95 {p95(healthz):.1f}",
        flush=True,
    )
    print(f"load average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    result("landing_after_label_p50_ms", statistics.median(landing))
    result("landing_vs_healthz_p95_ratio", p95(landing) / p95(healthz))
    result("landing_after_label_p95_ms", p95(landing))


if __name__ == "__main__":
    main()
