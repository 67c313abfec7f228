"""Throughput of the metamorphic verifier audit (seed 001) on this machine.

Fixed sample: the 575 distinct golds of MATH-500 + GSM8K (../shared/data), or, when that folder is
absent, 575 deterministic synthetic golds in the same answer forms. Readers: the seed's four
(math-verify-latex, math-verify-expr, strip-string, sympy-cascade), every reading through the
isolation pool (2 processes, 5 s budget). Timed end to end: building the variants, reading, the
tables and writing all five output files. Three runs, each with a fresh pool; the median is reported.

Seed 001 ran 307,420 verdicts on five CPU nodes; the projection below is that count at our rate.

Prints, last:
  RESULT audit_seed_scale_projected_minutes <307420 / rate / 60>
  RESULT audit_verdicts_per_s <median end-to-end verdicts per second>
Run: python bench/audit_bench.py   (no arguments, no services needed)
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, result  # noqa: E402

from readers.audit.runner import SEED_READERS, run_audit  # noqa: E402

SEED_VERDICTS = 307_420
RUNS = 3
N_GOLDS = 575


def real_golds() -> list[str] | None:
    data = ROOT.parent / "shared" / "data"
    math500, gsm8k = data / "math500" / "math500.jsonl", data / "gsm8k" / "test.jsonl"
    if not (math500.exists() and gsm8k.exists()):
        return None
    golds = [json.loads(x)["answer"][0] for x in math500.read_text(encoding="utf-8").splitlines() if x]
    golds += [
        json.loads(x)["answer"].split("####")[-1].strip() for x in gsm8k.read_text(encoding="utf-8").splitlines() if x
    ]
    return list(dict.fromkeys(g.strip() for g in golds))


def synthetic_golds(n: int = N_GOLDS) -> list[str]:
    rnd = random.Random(1)
    out: list[str] = []
    while len(out) < n:
        k = rnd.random()
        if k < 0.55:
            out.append(
                str(
                    rnd.choice(
                        [
                            rnd.randint(0, 9),
                            rnd.randint(10, 999),
                            rnd.randint(1000, 99_999),
                            rnd.randint(100_000, 10**7),
                        ]
                    )
                    * rnd.choice([1, 1, 1, -1])
                )
            )
        elif k < 0.70:
            out.append(f"\\frac{{{rnd.randint(1, 60)}}}{{{rnd.randint(2, 97)}}}")
        elif k < 0.77:
            out.append(f"{rnd.randint(0, 400)}.{rnd.randint(1, 99)}")
        elif k < 0.87:
            out.append(
                rnd.choice(
                    [
                        f"{rnd.randint(2, 20)}\\sqrt{{{rnd.choice([2, 3, 5, 7, 11])}}}",
                        f"{rnd.randint(1, 9)}+{rnd.randint(2, 9)}i",
                        f"{rnd.randint(2, 30)}\\pi",
                    ]
                )
            )
        elif k < 0.94:
            a, b = sorted(rnd.sample(range(-20, 40), 2))
            out.append(rnd.choice([f"({a},{b})", f"[{a},{b})", f"\\{{{a},{b}\\}}"]))
        else:
            out.append(f"x^{rnd.randint(2, 5)}+{rnd.randint(1, 9)}x-{rnd.randint(1, 9)}")
    return list(dict.fromkeys(out))


def main() -> None:
    golds = real_golds()
    source = "MATH-500 + GSM8K golds"
    if golds is None:
        golds, source = synthetic_golds(), "synthetic golds (../shared/data absent)"
    print(
        f"audit bench: {len(golds)} {source}, readers {', '.join(SEED_READERS)}, "
        f"{os.cpu_count()} CPUs, 2 reader processes",
        flush=True,
    )
    rates = []
    for run in range(RUNS):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            res = run_audit(golds, list(SEED_READERS), Path(tmp), processes=2, budget_s=5.0)
            seconds = time.perf_counter() - t0
        s = res.summary
        rate = s["verdicts"] / seconds
        rates.append(rate)
        per = ", ".join(f"{k} {v['verdicts_per_s']:.0f}/s" for k, v in s["throughput"]["per_reader"].items())
        print(
            f"run {run + 1}: {s['verdicts']} verdicts ({s['variants']} variants x {len(SEED_READERS)} readers) in "
            f"{seconds:.2f} s end to end = {rate:.0f} verdicts/s (reading only: {per}; "
            f"timeouts {sum(v['timeouts'] for v in s['throughput']['per_reader'].values())})",
            flush=True,
        )
        if run == 0:
            for name, r in s["readers"].items():
                ob = s["off_by_one"][name]
                print(
                    f"  {name:20s} self-validation {r['self_validation']:.3f} coverage {r['coverage']:.3f} "
                    f"judged {r['judged']:.3f}  off-by-one 1e3 {ob['1e3']} 1e4 {ob['1e4']}",
                    flush=True,
                )
    rate = statistics.median(rates)
    minutes = SEED_VERDICTS / rate / 60
    print(
        f"median {rate:.0f} verdicts/s; seed 001's {SEED_VERDICTS:,} verdicts would take {minutes:.1f} min "
        f"(budget: 10 min)",
        flush=True,
    )
    result("audit_seed_scale_projected_minutes", minutes)
    result("audit_verdicts_per_s", rate)


if __name__ == "__main__":
    main()
