"""Cost of hard isolation for math-verify, and raw speed of a regex reader.

1. ~2,000 deterministic MATH-style pairs (gold, "The final answer is $\\boxed{X}$."): 40 % integers,
   25 % fractions, 10 % decimals, 25 % simple expressions; 60 % equivalent rewrites, 40 % wrong.
   Measured in the same run, on the same pairs, interleaved in 8 slices:
     bare      serial in-process loop over `math-verify-latex`'s read(), plus the canonical answer
               (readers.canonical.with_canonical) that the pool's worker adds to every reading
     isolated  IsolatedPool(processes=2).read_many("math-verify-latex", ...), including pool
               start-up and close
2. ~10,000 synthetic 2,000-character CoT responses to A-J multiple-choice questions, read
   in-process by `strict-match` from the registry (or, if absent, a literal
   `answer is \\(?([A-J])\\)?` last-match reader): the reader's own read() alone, no canonical
   answer (the raw speed of a regex reader).
3. Per-item cost of the pool for a FAST reader: 5,000 shorter (300-character) CoT responses read
   by `strict-match` (~20-40 us per item, like most readers of the panel), bare in-process loop
   (read() + with_canonical, as in 1) vs IsolatedPool(processes=2) (start-up and close included),
   interleaved in 10 slices; the pool is
   called the way a Celery reading task calls it: read_many on 100 items at a time.

Prints, last:
  RESULT isolation_fast_reader_ratio <isolated ÷ bare verdicts/s for the fast reader>
  RESULT regex_verdicts_per_s <value>
  RESULT isolation_ratio <isolated verdicts/s ÷ bare verdicts/s>
Run: python bench/isolation_bench.py   (no arguments, no services needed)
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import result  # noqa: E402

from readers import registry  # noqa: E402
from readers.base import Item, Reader, Reading  # noqa: E402
from readers.canonical import with_canonical  # noqa: E402
from readers.isolation.pool import IsolatedPool  # noqa: E402

N_MATH = 2000
N_COT = 10_000
COT_CHARS = 2000
N_FAST = 5000
FAST_CHARS = 300


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def _math_pair(rnd: random.Random) -> tuple[str, str, bool]:
    """(gold, boxed prediction content, intended label)."""
    equivalent = rnd.random() < 0.6
    kind = rnd.random()
    if kind < 0.40:  # integers
        n = rnd.choice([rnd.randint(0, 99), rnd.randint(100, 9999), rnd.randint(10_000, 999_999)])
        n = -n if rnd.random() < 0.1 else n
        if equivalent:
            pred = rnd.choice([str(n), f"{n}.0", f"{n:,}" if abs(n) >= 1000 else str(n)])
        else:
            pred = str(n + rnd.choice([-2, -1, 1, 2, 10]))
        return str(n), pred, equivalent
    if kind < 0.65:  # fractions
        a, b = rnd.randint(1, 40), rnd.randint(2, 40)
        while a % b == 0:
            b = rnd.randint(2, 40)
        gold = f"\\frac{{{a}}}{{{b}}}"
        if equivalent:
            pred = rnd.choice([f"\\dfrac{{{a}}}{{{b}}}", f"{a}/{b}", f"\\frac{{{2 * a}}}{{{2 * b}}}", gold])
        else:
            pred = rnd.choice([f"\\frac{{{b}}}{{{a}}}", f"\\frac{{{a + 1}}}{{{b}}}", f"{a}/{b + 1}"])
        return gold, pred, equivalent
    if kind < 0.75:  # decimals
        value = rnd.randint(1, 9999) / 100
        gold = f"{value:.2f}"
        if equivalent:
            pred = rnd.choice([gold, f"{value:.2f}0", f"{value:g}"])
        else:
            pred = f"{value + rnd.choice([0.01, 0.1, 1.0]):.2f}"
        return gold, pred, equivalent
    # simple expressions
    a, c = rnd.randint(2, 9), rnd.choice([2, 3, 5, 6, 7])
    form = rnd.randrange(4)
    if form == 0:
        gold = f"{a}\\sqrt{{{c}}}"
        pred = rnd.choice([f"{a} \\sqrt{{{c}}}", f"\\sqrt{{{a * a * c}}}"]) if equivalent else f"{a + 1}\\sqrt{{{c}}}"
    elif form == 1:
        gold = f"{a}x+{c}"
        pred = rnd.choice([f"{c}+{a}x", f"{a}x + {c}"]) if equivalent else f"{a}x-{c}"
    elif form == 2:
        gold = f"\\frac{{\\pi}}{{{a}}}"
        pred = rnd.choice([f"\\pi/{a}", f"\\frac{{1}}{{{a}}}\\pi"]) if equivalent else f"\\frac{{\\pi}}{{{a + 1}}}"
    else:
        gold = f"(x-{a})(x+{c})"
        # (x+a)(x-c) is only wrong when a != c; (x+a)(x+c) is wrong for every a, c > 0.
        pred = f"x^2+{c - a}x-{a * c}" if equivalent else (f"(x+{a})(x-{c})" if a != c else f"(x+{a})(x+{c})")
    return gold, pred, equivalent


def math_items(n: int = N_MATH, seed: int = 20260901) -> tuple[list[Item], list[bool]]:
    rnd = random.Random(seed)
    items, labels = [], []
    for _ in range(n):
        gold, pred, label = _math_pair(rnd)
        items.append(Item(response=f"The final answer is $\\boxed{{{pred}}}$.", gold=gold))
        labels.append(label)
    return items, labels


_COT_SENTENCES = [
    "Let us look at each option in turn and check it against the constraints.",
    "Option (B) mentions a value of $x^2 + 3x - 4$, which factors as $(x+4)(x-1)$.",
    "If we substitute $x = 2$ we get $\\frac{12}{3} = 4$, consistent with the table.",
    "The claim in (D) is too strong, because the inequality is not strict.",
    "We can rule out option (F): its sign is wrong for negative inputs.",
    "Summing the series gives $\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$.",
    "Hmm, wait, that contradicts the earlier step, so re-check the algebra.",
    "Both (A) and (H) describe the same quantity in different units.",
]
_COT_ENDINGS = [
    "So the answer is ({L}).",
    "Therefore, the answer is {L}.",
    "The answer is ({L})",
    "Answer: {L}",
    "I think the correct choice is ({L}).",
    "Final answer: \\boxed{{{L}}}",
]


def cot_items(n: int = N_COT, seed: int = 7, chars: int = COT_CHARS) -> list[Item]:
    rnd = random.Random(seed)
    choices = tuple(f"choice {c}" for c in "ABCDEFGHIJ")
    items = []
    for _ in range(n):
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < chars - 60:
            parts.append(rnd.choice(_COT_SENTENCES))
        gold = rnd.choice("ABCDEFGHIJ")
        pick = gold if rnd.random() < 0.6 else rnd.choice("ABCDEFGHIJ")
        body = " ".join(parts)[: chars - 40]
        items.append(Item(response=body + " " + rnd.choice(_COT_ENDINGS).format(L=pick), gold=gold, choices=choices))
    return items


class _LiteralRegexReader(Reader):
    """Fallback when `strict-match` is not registered: last `answer is (X)` / `answer is X`."""

    name = "bench-literal-answer-is"
    version = "0"
    _pattern = re.compile(r"answer is \(?([A-J])\)?")

    def read(self, item: Item) -> Reading:
        found = self._pattern.findall(item.response)
        if not found:
            return Reading("no_answer")
        return Reading("correct" if found[-1] == item.gold else "incorrect", answer=found[-1])


# ---------------------------------------------------------------------------------------------
# measurements
# ---------------------------------------------------------------------------------------------


def _interleaved(
    reader: Reader, items: list[Item], rounds: int, call_size: int | None = None
) -> tuple[list[Reading], list[tuple[Reading, float]], float, float]:
    """Bare and isolated runs over `items` interleaved in `rounds` slices (alternating which goes
    first), so that both sides see the same background load: on a shared 2-core machine a load
    spike during one contiguous half would otherwise decide the ratio. The isolated side pays
    the pool's start-up and close; it sends `call_size` items per read_many (default: a slice).
    Returns (bare readings, isolated readings, bare seconds, isolated seconds)."""
    size = -(-len(items) // rounds)
    slices = [items[i : i + size] for i in range(0, len(items), size)]
    call_size = call_size or size
    bare: list[Reading] = []
    isolated: list[tuple[Reading, float]] = []
    bare_s = 0.0
    t0 = time.perf_counter()
    pool = IsolatedPool(processes=2)
    isolated_s = time.perf_counter() - t0
    try:
        for k, chunk in enumerate(slices):
            for side in ("bare", "iso") if k % 2 == 0 else ("iso", "bare"):
                t0 = time.perf_counter()
                if side == "bare":
                    # Like with like: the pool's worker adds the canonical answer to every reading.
                    bare.extend(with_canonical(reader.read(item), item) for item in chunk)
                    bare_s += time.perf_counter() - t0
                else:
                    for i in range(0, len(chunk), call_size):
                        isolated.extend(pool.read_many(reader.name, chunk[i : i + call_size]))
                    isolated_s += time.perf_counter() - t0
    finally:
        t0 = time.perf_counter()
        pool.close()
        isolated_s += time.perf_counter() - t0
    return bare, isolated, bare_s, isolated_s


def bench_math(rounds: int = 8) -> float:
    """math-verify-latex isolated ÷ bare, interleaved (see _interleaved)."""
    items, labels = math_items()
    reader = registry.get("math-verify-latex")
    for item in items[:20]:  # grammar / regex warm-up, so neither side pays it in the timing
        reader.read(item)
    bare, isolated, bare_s, isolated_s = _interleaved(reader, items, rounds)

    same = sum(a.verdict == b.verdict for a, (b, _) in zip(bare, isolated))
    agree = sum((r.verdict == "correct") == lab for r, lab in zip(bare, labels))
    print(
        f"math pairs: {len(items)} in {rounds} interleaved rounds; bare verdicts "
        f"{dict(Counter(r.verdict for r in bare))}"
    )
    print(
        f"bare and isolated verdicts identical on {same}/{len(items)}; "
        f"bare agrees with the generator's label on {agree}/{len(items)}"
    )
    bare_rate = len(items) / bare_s
    iso_rate = len(items) / isolated_s
    print(f"bare in-process math-verify-latex: {bare_rate:.1f} verdicts/s ({bare_s:.2f} s)")
    print(
        f"isolated, IsolatedPool(processes=2), incl. pool start+close: {iso_rate:.1f} verdicts/s ({isolated_s:.2f} s)"
    )
    with contextlib.suppress(OSError):
        print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return iso_rate / bare_rate


def bench_regex() -> float:
    items = cot_items()
    try:
        reader = registry.get("strict-match")
    except KeyError:
        reader = _LiteralRegexReader()
    for item in items[:100]:
        reader.read(item)
    t0 = time.perf_counter()
    readings = [reader.read(item) for item in items]
    elapsed = time.perf_counter() - t0
    mean_len = sum(len(i.response) for i in items) / len(items)
    print(
        f"regex reader {reader.name}: {len(items)} responses, mean {mean_len:.0f} chars, "
        f"verdicts {dict(Counter(r.verdict for r in readings))}, {elapsed:.3f} s"
    )
    return len(items) / elapsed


def _fast_reader() -> Reader:
    try:
        return registry.get("strict-match")
    except KeyError:
        if _LiteralRegexReader.name not in registry.names():
            registry.register(_LiteralRegexReader.name, _LiteralRegexReader, "bench fallback")
        return registry.get(_LiteralRegexReader.name)


def bench_fast_reader(n: int = N_FAST, call_size: int = 100, rounds: int = 10) -> float:
    """Isolated ÷ bare verdicts/s for a fast regex reader: with so little work per item, what
    shows is the pool's own per-item and per-call cost. Interleaved (see _interleaved)."""
    items = cot_items(n, seed=11, chars=FAST_CHARS)
    reader = _fast_reader()
    for item in items[:100]:
        reader.read(item)
    bare, isolated, bare_s, isolated_s = _interleaved(reader, items, rounds, call_size)
    same = sum(a == b for a, (b, _) in zip(bare, isolated))
    bare_rate, iso_rate = n / bare_s, n / isolated_s
    print(
        f"fast reader {reader.name}: {n} responses, read_many on {call_size} at a time; readings "
        f"identical bare vs isolated on {same}/{n}"
    )
    print(
        f"fast reader bare in-process: {bare_rate:.0f} verdicts/s ({bare_s * 1e6 / n:.1f} us/item); "
        f"isolated, IsolatedPool(processes=2): {iso_rate:.0f} verdicts/s ({isolated_s * 1e6 / n:.1f} us/item)"
    )
    return iso_rate / bare_rate


def main() -> None:
    fast_ratio = bench_fast_reader()
    regex_rate = bench_regex()
    ratio = bench_math()
    result("isolation_fast_reader_ratio", fast_ratio)
    result("regex_verdicts_per_s", regex_rate)
    result("isolation_ratio", ratio)


if __name__ == "__main__":
    main()
