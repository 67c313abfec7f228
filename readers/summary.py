"""Per-reader summary table: coverage, extraction rate and accuracy, optionally per group.

Definitions (seed 000 and 001 ask for extraction rate and coverage beside accuracy):
- coverage: share of responses on which the reader returned a verdict at all
  (anything but `error` / `timeout`);
- extraction rate: share of responses from which it extracted an answer (`correct` + `incorrect`);
- accuracy: `correct` over all responses (a harness scores no-answer as wrong);
- accuracy_extracted: `correct` over extracted answers.

Every share is over the responses the reader applies to: its `not_applicable` readings (items
outside its task types, readers.tasks) are counted apart (`not_applicable`), in no denominator. A
row with only those has n = 0 and no shares.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .base import NOT_APPLICABLE, Reading


@dataclass
class Row:
    reader: str
    group: str
    n: int  # the responses the reader applies to (not_applicable ones left out)
    counts: Counter

    @property
    def not_applicable(self) -> int:
        return self.counts[NOT_APPLICABLE]

    @property
    def coverage(self) -> float:
        return (self.n - self.counts["error"] - self.counts["timeout"]) / self.n if self.n else 0.0

    @property
    def extraction_rate(self) -> float:
        return (self.counts["correct"] + self.counts["incorrect"]) / self.n if self.n else 0.0

    @property
    def accuracy(self) -> float:
        return self.counts["correct"] / self.n if self.n else 0.0

    @property
    def accuracy_extracted(self) -> float | None:
        k = self.counts["correct"] + self.counts["incorrect"]
        return self.counts["correct"] / k if k else None

    def as_dict(self) -> dict:
        return {
            "reader": self.reader,
            "group": self.group,
            "n": self.n,
            "coverage": self.coverage,
            "extraction_rate": self.extraction_rate,
            "accuracy": self.accuracy,
            "accuracy_extracted": self.accuracy_extracted,
            "not_applicable": self.not_applicable,
            "verdicts": dict(self.counts),
        }


def summarise(records: Iterable[tuple[str, str, str]]) -> list[Row]:
    """records: (reader, group, verdict). Returns rows sorted by reader, then group."""
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for reader, group, verdict in records:
        counts[(reader, group)][verdict] += 1
    return [Row(r, g, sum(c.values()) - c[NOT_APPLICABLE], c) for (r, g), c in sorted(counts.items())]


def render(rows: list[Row], group_label: str = "group") -> str:
    """The table; `n/a` is how many responses the reader did not apply to (in no share), and a
    row with none it applies to shows dashes, not 0 %."""
    header = f"{'reader':<30} {group_label:<16} {'n':>6} {'coverage':>9} {'extracted':>10} {'accuracy':>9} {'n/a':>6}"
    lines = [header, "-" * len(header)]
    for row in rows:
        if row.n:
            shares = f"{row.coverage:>9.1%} {row.extraction_rate:>10.1%} {row.accuracy:>9.1%}"
        else:
            shares = f"{'-':>9} {'-':>10} {'-':>9}"
        lines.append(f"{row.reader:<30} {row.group:<16} {row.n:>6} {shares} {row.not_applicable:>6}")
    return "\n".join(lines)


def decided_by(reading: Reading) -> dict[str, str | None]:
    """What decided a reading, from its detail: the extraction rule (`rule`, or the reason when
    nothing was read), the equality rule (`equivalence`) and the tolerance policy, where the reader
    records them (`fixed` does; other readers may record none)."""
    detail = reading.detail or {}
    rule = detail.get("rule") or detail.get("reason")
    return {
        "rule": str(rule) if rule is not None else None,
        "equivalence": detail.get("equivalence"),
        "tolerance": detail.get("tolerance"),
    }


def rule_table(counts: Counter[tuple[str, str]]) -> str:
    """How often each rule decided, per reader: (reader, rule) -> count."""
    header = f"\n{'reader':<30} {'rule that decided':<40} {'n':>6}"
    lines = [header, "-" * (len(header) - 1)]
    for (reader, rule), n in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1])):
        lines.append(f"{reader:<30} {rule:<40} {n:>6}")
    return "\n".join(lines) + "\n"
