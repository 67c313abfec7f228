"""Estimates: every headline prediction-powered estimate over 100,000 responses × the default panel.

Setup (not timed): a throwaway database; 100,000 generated canonical MC rows imported with
`import_responses` (5,000 questions x 4 models x 2 checkpoints, texts as the review bench's: a
third state one letter in prose and box another; rl answers right more often than base);
readings of the 26 readers of the default panel (`pipeline.selectors.default_panel`) written in
bulk as analytics_bench.py writes them (each reader a family, box or prose, and a verdict mix;
2.6 M readings); `create_queue` routes the responses
strict-match and boxed dispute, with 5 % of the others as controls, served in one seeded random
order (priority random: the controls spread through the disputes); the first LABELS items the
queue serves get a final label (the boxed letter), as a queue labelled part-way has them.

Timed, ROUNDS times each, in one child process (medians):
  baseline, same run: reading the estimates' inputs from the database: the population (every
    response, its groups, every producer's verdict: `analytics.selectors.estimate_population`) and
    the probability design's labels (`analytics.design.estimate_sample`);
  the estimates: with `fixed` as predictor, accuracy pooled and per checkpoint, the gain base → rl
    and its format share under boxed (`estimate_blocks.format_share_estimates`), and every
    producer's false-accept rate, false-reject rate, bias and agreement with the vote of the other
    producers as predictor (`estimate_blocks.judge_bias_estimates`): 109 estimates, each three ways.

Prints, last:
  RESULT estimates_load_s <seconds: the inputs from the database>
  RESULT estimates_count <estimates computed>
  RESULT estimates_cpu_s <CPU seconds of the estimates: what a shared machine's load does not move>
  RESULT estimates_vs_load_ratio <estimates ÷ load>
  RESULT estimates_s <seconds; target <= 5>
Run: python bench/estimates_bench.py   (PostgreSQL on 127.0.0.1:5432; override BENCH_DATABASE_SERVER,
BENCH_ROWS, BENCH_LABELS, BENCH_ROUNDS)
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_database, import_timed, manage, result, service_env, write_mc_rows  # noqa: E402
from analytics_bench import READERS as ANALYTICS_READERS  # noqa: E402
from analytics_bench import READINGS_SCRIPT  # noqa: E402
from review_bench import vacuum_analyze  # noqa: E402

N = int(os.environ.get("BENCH_ROWS", "100000"))
LABELS = int(os.environ.get("BENCH_LABELS", "1000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PANEL = ["strict-match", "boxed"]

# The default panel's readers the analytics bench does not write, in the same form:
# name -> (family, share with no answer, share misread, share error, share timeout).
READERS = {
    **ANALYTICS_READERS,
    "gsm8k-strict-match": ("prose", 0.05, 0.01, 0.0, 0.0),
    "gsm8k-flexible-extract": ("prose", 0.03, 0.04, 0.0, 0.0),
    "gsm8k-cot-strict-match": ("prose", 0.06, 0.01, 0.0, 0.0),
    "answer-is-correct-gsm8k": ("prose", 0.35, 0.01, 0.0, 0.0),
    "instructed-format-gsm8k": ("prose", 0.25, 0.02, 0.0, 0.0),
    "math-verify-expr-seed001": ("box", 0.06, 0.02, 0.002, 0.001),
    "strip-string-deepseek": ("box", 0.02, 0.01, 0.0, 0.0),
    "sympy-cascade-seed001": ("box", 0.09, 0.03, 0.003, 0.002),
}

LABELS_SCRIPT = r"""
import re
from django.contrib.auth.models import Group, User
from django.db import transaction
from adjudication.models import FinalLabel, Guidelines, Label, QueueItem, ReviewQueue
from adjudication.revisions import dataset_changed

BOX = re.compile(r"\\boxed\{{([A-D])\}}")
queue = ReviewQueue.objects.get(name="bench-q")
version = Guidelines.objects.filter(queue=queue).order_by("-version").values_list("version", flat=True).first()
user = User.objects.create_user("ann", password="x-ann")
user.groups.add(Group.objects.get_or_create(name="annotator")[0])
# The first items the queue serves (annotate.services._BY_PRIORITY): a queue labelled part-way.
items = list(QueueItem.objects.filter(queue=queue).select_related("review_item__response")
             .order_by("-priority", "tiebreak", "id")[: {labels}])
labels, finals = [], []
for item in items:
    said = BOX.search(item.review_item.response.text).group(1)
    labels.append(Label(item=item, queue=queue, annotator=user, kind="option", answer=said,
                        guidelines_version=version, seconds_spent=20.0))
    finals.append(FinalLabel(item=item, kind="option", answer=said, provenance="unanimous"))
with transaction.atomic():
    Label.objects.bulk_create(labels, batch_size=5000)
    FinalLabel.objects.bulk_create(finals, batch_size=5000)
    QueueItem.objects.filter(pk__in=[i.pk for i in items]).update(label_count=1, status="agreed")
    dataset_changed(dataset_id=queue.dataset_id)
controls = sum(i.review_item.is_control for i in items)
total = QueueItem.objects.filter(queue=queue).count()
print(f"final labels {{len(finals)}} of {{total}} queue items, {{controls}} on controls")
"""

ESTIMATES_SCRIPT = r"""
import json, statistics, time
from collections import Counter
from adjudication.analytics.design import estimate_sample
from adjudication.analytics.estimate_blocks import format_share_estimates, judge_bias_estimates
from adjudication.analytics.estimates import Frame
from adjudication.analytics.selectors import estimate_population, estimate_predictor
from adjudication.models import Dataset

ds = Dataset.objects.get(name="bench")
loads, runs, cpu = [], [], []
for _ in range({rounds}):
    started = time.perf_counter()
    population = estimate_population(dataset=ds)
    drawn = estimate_sample(dataset=ds)
    loads.append(time.perf_counter() - started)


def every_estimate():
    frame = Frame.build(
        population, estimate_predictor(dataset=ds, population=population, name="fixed"), by="checkpoint", name="fixed"
    )
    sample = frame.sample(drawn.labels, drawn.design)
    design = drawn.design.name
    checkpoints = sorted({{g["checkpoint"] for g in population.groups.values()}})
    out = [frame.estimate(t, sample, design=design) for t in ["accuracy", *(f"accuracy:{{c}}" for c in checkpoints)]]
    out = [e.as_dict() for e in out]
    for row in format_share_estimates(frame, sample, base="base", reported="boxed", design=design):
        out += [row["gain"], *([row["format_share"]] if row["format_share"] else [])]
    for entry in judge_bias_estimates(frame, sample, design=design).values():
        out += [entry[k] for k in ("false_accept", "false_reject", "bias", "agreement")]
    return out


for _ in range({rounds}):
    started, cpu_started = time.perf_counter(), time.process_time()
    estimates = every_estimate()
    runs.append(time.perf_counter() - started)
    cpu.append(time.process_time() - cpu_started)
headlines = Counter(e["headline"] for e in estimates)
withheld = Counter(e["withheld"].split(" (")[0] for e in estimates if e["withheld"])
pooled = estimates[0]
print("ESTIMATES " + json.dumps({{
    "loads_s": loads, "runs_s": runs, "cpu_s": cpu, "count": len(estimates), "producers": len(population.verdicts),
    "responses": len(population.items), "labels": len(drawn.labels), "design": drawn.design.name,
    "cells": {{c: n for c, n in drawn.design.cell_sizes.items()}}, "headlines": headlines, "withheld": withheld,
    "pooled": pooled,
}}))
"""


def generate(path: Path, n: int) -> None:
    """The review bench's texts (a third state one letter in prose and box another), with a gain:
    the rl checkpoint answers right 75 % of the time, base 65 % (write_mc_rows: row i is rl when
    (i // 4) is odd), so that the format share of base → rl is defined."""
    rnd = random.Random(4242)
    filler = "Let me reason about each option in turn, weighing the evidence carefully. " * 8

    def respond(i: int, gold: str) -> str:
        right = 0.75 if (i // 4) % 2 else 0.65
        said = gold if rnd.random() < right else rnd.choice([c for c in "ABCD" if c != gold])
        boxed = rnd.choice([c for c in "ABCD" if c != said]) if rnd.random() < 0.35 else said
        return f"<think>{filler}(draft {i})</think>\n{filler}\n\nThe answer is ({said}).\nFinal: \\boxed{{{boxed}}}"

    write_mc_rows(path, n, respond)


def child_json(tag: str, script: str, env: dict[str, str]) -> dict:
    out = manage("shell", "--no-imports", "-c", script, env=env, stdout=subprocess.PIPE)
    line = next(x for x in out.stdout.splitlines() if x.startswith(tag + " "))
    return json.loads(line[len(tag) + 1 :])


def main() -> None:
    import statistics

    url = fresh_database("adjudication_bench_estimates")
    env = service_env(url)
    manage("migrate", "-v0", env=env)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        generate(path, N)
        import_timed(path, rows=N, env=env)
    t = time.perf_counter()
    manage("shell", "--no-imports", "-c", READINGS_SCRIPT.format(readers=json.dumps(READERS)), env=env)
    print(f"bulk-wrote the readings of {len(READERS)} readers in {time.perf_counter() - t:.0f}s", flush=True)
    args = ["create_queue", "--dataset", "bench", "--name", "bench-q", "--overlap", "1"]
    args += ["--control-fraction", "0.05", "--priority", "random"]
    for name in PANEL:
        args += ["--panel", name]
    t = time.perf_counter()
    manage(*args, env=env)
    print(f"queue routed in {time.perf_counter() - t:.0f}s", flush=True)
    manage("shell", "--no-imports", "-c", LABELS_SCRIPT.format(labels=LABELS), env=env)
    vacuum_analyze(url)

    out = child_json("ESTIMATES", ESTIMATES_SCRIPT.format(rounds=ROUNDS), env)
    load_s, run_s = statistics.median(out["loads_s"]), statistics.median(out["runs_s"])
    print(
        f"{out['responses']} responses x {out['producers']} producers, {out['labels']} design labels "
        f"(design {out['design']}; cells {out['cells']})",
        flush=True,
    )
    print(
        f"load: {', '.join(f'{s:.2f}' for s in out['loads_s'])} s; estimates: "
        f"{', '.join(f'{s:.2f}' for s in out['runs_s'])} s, CPU {', '.join(f'{s:.2f}' for s in out['cpu_s'])} s "
        f"({out['count']} estimates); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    print(f"headlines: {out['headlines']}; withheld: {out['withheld'] or 'none'}", flush=True)
    p = out["pooled"]
    print(
        f"pooled accuracy: machine {p['machine']:.4f}, human only {p['human']['estimate']:.4f} "
        f"[{p['human']['low']:.4f}, {p['human']['high']:.4f}], prediction-powered "
        f"{p['prediction_powered']['estimate']:.4f} [{p['prediction_powered']['low']:.4f}, "
        f"{p['prediction_powered']['high']:.4f}], effective labels {p['effective_labels']:.0f}",
        flush=True,
    )
    result("estimates_load_s", load_s)
    result("estimates_count", out["count"])
    result("estimates_cpu_s", statistics.median(out["cpu_s"]))
    result("estimates_vs_load_ratio", run_s / load_s)
    result("estimates_s", run_s)


if __name__ == "__main__":
    main()
