"""Review: claim-next + render latency for 10 concurrent annotators over 100,000 responses in PostgreSQL.

Setup (not timed): a throwaway database; 100,000 generated canonical MC rows imported with
`import_responses` (5,000 questions x 20 runs); readings of two readers (strict-match, boxed)
written in bulk; `create_queue --panel strict-match --panel boxed --overlap 2` routes the disputed
responses (about a third) into a queue; 10 annotator users.

The readings are bulk-inserted by a Django shell script in a child process instead of running the
readers: running real readers over 200,000 (response, reader) pairs would take minutes and is
measured by pipeline_bench.py, not here. The inserted rows are what those two readers produce on
these generated texts: strict-match reads the letter of "The answer is (X)", boxed the letter in
\\boxed{Y}, with their character spans, a verdict against the gold, under the registry's reader specs
(the script checks 300 sampled responses against the real readers).

Timed: the app under the deployment's gunicorn (config/gunicorn.conf.py: gthread, by default
cores + 1 workers x 4 threads; DEBUG off) on a free loopback port; 10 annotator threads, each logged
in through /accounts/login/ with its own cookies and keep-alive connection, doing
ITERATIONS x (GET /review/?queue=<id> -> 302 -> GET /review/item/<lease>/ -> POST the label; the first
claim from /review/, later ones from where the POST redirects). One sample = the claim + render: from
sending that GET to the item page's last byte. Every annotator first
labels WARMUP items untimed (a running server is warm: connections open, statements prepared).

Two workloads, in this order:
  paced (the RESULT): like annotators, each pauses on the item page before submitting, THINK_MS
    +-50% (default 500 ms, so each annotator labels about 1.5 items a second: a person reading a
    reasoning trace takes several seconds, so this is a team 5-20 times faster than a real one);
  closed loop (a stress test, reported before the RESULT): no pause at all, so the 10 annotators
    keep both cores saturated and latency is queueing; its throughput is the server's capacity.
Baseline, same run and same concurrency: GET /healthz (one trivial DB round trip), closed loop.

Prints, last:
  RESULT review_closed_loop_items_per_s <capacity>
  RESULT review_closed_loop_p95_ms <value>
  RESULT review_vs_healthz_p95_ratio <paced review p95 / healthz p95>
  RESULT review_p95_ms <value>            (paced; target <= 100)
Run: python bench/review_bench.py   (PostgreSQL on 127.0.0.1:5432; override BENCH_DATABASE_SERVER,
BENCH_ROWS, BENCH_ANNOTATORS, BENCH_ITERATIONS, BENCH_THINK_MS, BENCH_WORKERS, BENCH_THREADS)
"""

from __future__ import annotations

import http.client
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, fresh_database, import_timed, manage, result, service_env, spawn, stop, write_mc_rows  # noqa: E402

N = int(os.environ.get("BENCH_ROWS", "100000"))
ANNOTATORS = int(os.environ.get("BENCH_ANNOTATORS", "10"))
ITERATIONS = int(os.environ.get("BENCH_ITERATIONS", "40"))
WORKERS = os.environ.get("BENCH_WORKERS", "")  # default: config/gunicorn.conf.py's
THREADS = os.environ.get("BENCH_THREADS", "")
THINK_MS = float(os.environ.get("BENCH_THINK_MS", "500"))
WARMUP = 3
PASSWORD = "bench-review-pw-4471"
PANEL = ["strict-match", "boxed"]


def generate(path: Path, n: int) -> None:
    rnd = random.Random(4242)
    filler = (
        "Let me reason about each option in turn, weighing the evidence carefully; "
        "$\\frac{a}{b}$ of the authors agree. "
    ) * 8

    def respond(i: int, gold: str) -> str:
        said = gold if rnd.random() < 0.7 else rnd.choice("ABCD")
        # About a third of the responses hedge: the stated answer and the boxed one differ.
        boxed = rnd.choice([c for c in "ABCD" if c != said]) if rnd.random() < 0.35 else said
        ending = (
            f"The answer is ({said}).\nThen again, \\boxed{{{boxed}}}"
            if boxed != said
            else f"The answer is ({said}).\nFinal: \\boxed{{{boxed}}}"
        )
        return f"<think>{filler}(draft {i})</think>\n**Reasoning.** {filler}\n\n{ending}"

    write_mc_rows(path, n, respond)


READINGS_SCRIPT = r"""
import re
from adjudication.models import Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name

PATTERNS = {"strict-match": re.compile(r"The answer is \(([A-D])\)"), "boxed": re.compile(r"\\boxed\{([A-D])\}")}
specs = {name: reader_spec_by_name(name=name) for name in PATTERNS}
batch, total = [], 0
rows = Response.objects.filter(dataset__name="bench").values_list("id", "text", "question__gold")
for rid, text, gold in rows.iterator(chunk_size=5000):
    for name, pattern in PATTERNS.items():
        m = pattern.search(text)
        if m is None:
            batch.append(Reading(response_id=rid, reader_spec=specs[name], verdict="no_answer"))
            continue
        letter = m.group(1)
        batch.append(Reading(response_id=rid, reader_spec=specs[name], answer=letter, normalized=letter,
                             verdict="correct" if letter == gold else "incorrect",
                             span_start=m.start(1), span_end=m.end(1)))
    if len(batch) >= 10000:
        Reading.objects.bulk_create(batch, batch_size=5000)
        total += len(batch)
        batch = []
Reading.objects.bulk_create(batch, batch_size=5000)
print("readings", total + len(batch))

# The shortcut must write what the real readers would: check a sample against them.
import random
from readers import Item, registry
ids = random.Random(7).sample(list(Response.objects.filter(dataset__name="bench").values_list("id", flat=True)), 300)
for response in Response.objects.filter(id__in=ids).select_related("question"):
    q = response.question
    item = Item(response=response.text, gold=q.gold, choices=tuple(q.choices), question=q.text)
    for name, spec in specs.items():
        real = registry.get(name).read(item)
        stored = Reading.objects.get(response=response, reader_spec=spec)
        span = (stored.span_start, stored.span_end) if stored.span_start is not None else None
        got = (stored.answer, stored.verdict, span)
        assert got == (real.answer, real.verdict, tuple(real.span) if real.span else None), (name, got, real)
print("300 sampled responses: bulk readings equal the real readers' readings")
"""

USERS_SCRIPT = r"""
from django.contrib.auth.models import Group, User
group = Group.objects.get_or_create(name="annotator")[0]
for i in range({n}):
    user = User.objects.create_user(f"annotator{{i}}", password={password!r})
    user.groups.add(group)
print("users", {n})
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One annotator: a keep-alive connection and a cookie jar."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict[str, str], str]:
        headers = {"Host": f"127.0.0.1:{self.port}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        data = None
        if body is not None:
            data = urlencode(body)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                text = resp.read().decode("utf-8", "replace")
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closed an idle keep-alive connection: reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt == 2:
                    raise
        for header, value in resp.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, text

    def csrf(self, html: str) -> str:
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert match, "no CSRF token on the page"
        return match.group(1)

    def login(self, username: str) -> None:
        status, _, html = self.request("GET", "/accounts/login/")
        assert status == 200, status
        status, _, _ = self.request(
            "POST",
            "/accounts/login/",
            {"csrfmiddlewaretoken": self.csrf(html), "username": username, "password": PASSWORD, "next": "/review/"},
        )
        assert status == 302 and "sessionid" in self.cookies, f"login failed for {username}: {status}"


def path_of(location: str) -> str:
    return re.sub(r"^https?://[^/]+", "", location)


def annotate(
    port: int,
    username: str,
    seed: int,
    think_s: float,
    samples: list[float],
    submits: list[float],
    errors: list[str],
    iterations: int,
    barrier: threading.Barrier,
) -> None:
    rnd = random.Random(seed)
    b = Browser(port)
    try:
        b.login(username)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"{username}: {exc}")
        barrier.abort()
        return
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        return
    # The first claim starts from the landing page; later ones from where a submit sends the
    # annotator (the queue's next item, /review/?queue=<id>), as in the browser.
    next_url = "/review/"
    for _ in range(iterations):
        started = time.perf_counter()
        status, headers, _ = b.request("GET", next_url)
        if status != 302:
            errors.append(f"{username}: GET {next_url} -> {status} (queue exhausted?)")
            return
        item_path = path_of(headers["location"])
        status, _, html = b.request("GET", item_path)
        samples.append((time.perf_counter() - started) * 1000)
        if status != 200 or 'id="label-form"' not in html:
            errors.append(f"{username}: GET {item_path} -> {status}")
            return
        if think_s:
            time.sleep(think_s * rnd.uniform(0.5, 1.5))
        started = time.perf_counter()
        status, headers, _ = b.request(
            "POST",
            item_path,
            {
                "csrfmiddlewaretoken": b.csrf(html),
                "action": "label",
                "kind": "option",
                "answer": rnd.choice("ABCD"),
                "confidence": str(rnd.randint(1, 5)),
                "note": "",
            },
        )
        submits.append((time.perf_counter() - started) * 1000)
        if status != 302 or "/review/item/" in headers.get("location", ""):
            errors.append(f"{username}: POST {item_path} -> {status} {headers.get('location')}")
            return
        next_url = path_of(headers["location"])


def healthz(port: int, samples: list[float], errors: list[str], barrier: threading.Barrier) -> None:
    b = Browser(port)
    b.request("GET", "/healthz")
    barrier.wait()
    for _ in range(ITERATIONS):
        started = time.perf_counter()
        status, _, _ = b.request("GET", "/healthz")
        samples.append((time.perf_counter() - started) * 1000)
        if status != 200:
            errors.append(f"/healthz -> {status}")
            return


def run_threads(target, args_of) -> float:
    barrier = threading.Barrier(ANNOTATORS)
    threads = [threading.Thread(target=target, args=(*args_of(i), barrier)) for i in range(ANNOTATORS)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[94]


def start_server(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    """The deployment's gunicorn (config/gunicorn.conf.py, as docker-compose runs it), DEBUG off."""
    server_env = dict(
        env,
        DEBUG="0",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_LOGLEVEL="warning",
    )
    if WORKERS:
        server_env["GUNICORN_WORKERS"] = WORKERS
    if THREADS:
        server_env["GUNICORN_THREADS"] = THREADS
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        str(ROOT / "config" / "gunicorn.conf.py"),
        "config.wsgi:application",
    ]
    proc = spawn(argv, server_env, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited: {log.read_text()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{port}"})
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not answer /healthz within 60 s")


def vacuum_analyze(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def check_invariants(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        over = conn.execute(
            "SELECT count(*) FROM (SELECT item_id FROM adjudication_label GROUP BY item_id "
            "HAVING count(DISTINCT annotator_id) > 2) x"
        ).fetchone()[0]
        twice = conn.execute(
            "SELECT count(*) FROM (SELECT item_id, annotator_id FROM adjudication_label "
            "GROUP BY 1, 2 HAVING count(*) > 1) x"
        ).fetchone()[0]
        items = conn.execute("SELECT count(*) FROM adjudication_queueitem").fetchone()[0]
        labels = conn.execute("SELECT count(*) FROM adjudication_label").fetchone()[0]
    assert over == 0, f"{over} items got more than 2 labels"
    assert twice == 0, f"{twice} (item, annotator) pairs labelled twice"
    return f"{items} queue items, {labels} labels, none over the overlap, none labelled twice by one annotator"


def main() -> None:
    url = fresh_database("adjudication_bench_review")
    env = service_env(url)
    manage("migrate", "-v0", env=env)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        path = tmp_path / "rows.jsonl"
        generate(path, N)
        import_timed(path, rows=N, env=env)
        t = time.perf_counter()
        manage("shell", "--no-imports", "-c", READINGS_SCRIPT, env=env)
        print(f"bulk-inserted readings in {time.perf_counter() - t:.0f}s", flush=True)
        t = time.perf_counter()
        args = ["create_queue", "--dataset", "bench", "--name", "bench-q", "--overlap", "2"]
        for name in PANEL:
            args += ["--panel", name]
        manage(*args, env=env)
        print(f"queue routed in {time.perf_counter() - t:.0f}s", flush=True)
        vacuum_analyze(url)  # what autovacuum does shortly after a bulk load: fresh planner statistics
        manage("shell", "--no-imports", "-c", USERS_SCRIPT.format(n=ANNOTATORS, password=PASSWORD), env=env)

        port = free_port()
        server = start_server(env, port, tmp_path / "gunicorn.log")
        errors: list[str] = []
        try:
            health: list[float] = []
            run_threads(healthz, lambda i: (port, health, errors))
            run_threads(annotate, lambda i: (port, f"annotator{i}", 200 + i, 0.0, [], [], errors, WARMUP))
            paced: list[float] = []
            paced_submits: list[float] = []
            run_threads(
                annotate,
                lambda i: (port, f"annotator{i}", 100 + i, THINK_MS / 1000, paced, paced_submits, errors, ITERATIONS),
            )
            closed: list[float] = []
            closed_submits: list[float] = []
            wall = run_threads(
                annotate, lambda i: (port, f"annotator{i}", i, 0.0, closed, closed_submits, errors, ITERATIONS)
            )
        finally:
            stop(server)
            log = (tmp_path / "gunicorn.log").read_text()
        wanted = ANNOTATORS * ITERATIONS
        if errors or len(closed) != wanted or len(paced) != wanted:
            print(log[-3000:], file=sys.stderr)
            raise SystemExit(f"{len(errors)} errors, {len(paced)} + {len(closed)} samples: {errors[:5]}")
    print(check_invariants(url), flush=True)
    workers = WORKERS or str((os.cpu_count() or 1) + 1)
    print(
        f"gunicorn config/gunicorn.conf.py: gthread, {workers} workers x {THREADS or 4} threads; "
        f"{ANNOTATORS} annotators, {ITERATIONS} timed items each per workload",
        flush=True,
    )
    print(
        f"paced ({THINK_MS:.0f} ms +-50% on each item page): claim+render ms p50 {statistics.median(paced):.1f} "
        f"p95 {p95(paced):.1f} max {max(paced):.1f}; submit ms p95 {p95(paced_submits):.1f}",
        flush=True,
    )
    print(
        f"closed loop (no pause; {len(closed) / wall:.0f} items/s): claim+render ms p50 "
        f"{statistics.median(closed):.1f} p95 {p95(closed):.1f} max {max(closed):.1f}; "
        f"submit ms p95 {p95(closed_submits):.1f}",
        flush=True,
    )
    print(f"healthz (closed loop) ms: p50 {statistics.median(health):.1f} p95 {p95(health):.1f}", flush=True)
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    result("review_closed_loop_items_per_s", len(closed) / wall)
    result("review_closed_loop_p95_ms", p95(closed))
    result("review_vs_healthz_p95_ratio", p95(paced) / p95(health))
    result("review_p95_ms", p95(paced))


if __name__ == "__main__":
    main()
