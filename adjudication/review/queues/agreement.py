"""Selectors: how much a queue's annotators agree with each other (percent agreement, Cohen's κ per
pair, Krippendorff's α) and the pairwise annotator matrix of the queue page. Manager-facing: it
names annotators. The arithmetic is analytics.stats'; a label's category is review.labels'."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import mean

from adjudication.analytics.stats import Undefined, all_agree_rate, krippendorff_alpha, pairwise
from adjudication.models import Label, ReviewQueue
from adjudication.review.labels import label_category


@dataclass(frozen=True)
class PairAgreement:
    """Two annotators on the items both labelled."""

    a: str
    b: str
    n: int
    agree: int
    rate: float | None  # None without common items
    kappa: float | None
    kappa_undefined: str  # why κ has no value ("" when it has one)

    @property
    def disagree(self) -> int:
        return self.n - self.agree

    @property
    def percent(self) -> float | None:
        return None if self.rate is None else 100 * self.rate


@dataclass(frozen=True)
class MatrixCell:
    column: str  # the column's annotator
    pair: PairAgreement | None  # None on the diagonal


@dataclass(frozen=True)
class MatrixRow:
    annotator: str
    cells: list[MatrixCell]  # one per annotator, in the matrix's order


@dataclass(frozen=True)
class QueueAgreement:
    annotators: list[str]
    items: int  # items with at least two current labels: the ones agreement is measured on
    all_agree: int  # of those, the items on which every current label is the same
    percent: float | None
    light_kappa: float | None  # mean of the pairs' defined κ (Light's κ)
    alpha: float | None
    alpha_undefined: str
    pairs: list[PairAgreement]
    matrix: list[MatrixRow]

    @property
    def disagreeing(self) -> int:
        return self.items - self.all_agree

    @property
    def percent_points(self) -> float | None:
        return None if self.percent is None else 100 * self.percent


def queue_ratings(*, queue: ReviewQueue) -> dict[str, dict[int, str]]:
    """{annotator username: {queue item id: category}} from each annotator's current label per item
    (their newest row; an item whose newest row is a skip is not rated by them), restricted to the
    items with at least two such labels."""
    rows = (
        Label.objects.filter(queue=queue)
        .order_by("created_at", "id")
        .values_list("annotator__username", "item_id", "kind", "answer", "correctness")
    )
    newest: dict[tuple[str, int], str | None] = {}
    for user, item_id, kind, answer, correctness in rows.iterator(chunk_size=5000):
        # Oldest first: the last row per (annotator, item) is the current one.
        newest[(user, item_id)] = (
            None if kind == Label.Kind.SKIPPED else label_category(kind, answer, correctness, queue.judge_correctness)
        )
    per_item: dict[int, int] = defaultdict(int)
    for (_user, item_id), category in newest.items():
        if category is not None:
            per_item[item_id] += 1
    ratings: dict[str, dict[int, str]] = defaultdict(dict)
    for (user, item_id), category in newest.items():
        if category is not None and per_item[item_id] >= 2:
            ratings[user][item_id] = category
    return dict(ratings)


def _value(stat: float | Undefined) -> tuple[float | None, str]:
    return (None, stat.reason) if isinstance(stat, Undefined) else (stat, "")


def queue_agreement(*, queue: ReviewQueue) -> QueueAgreement:
    ratings = queue_ratings(queue=queue)
    annotators = sorted(ratings)
    overall = all_agree_rate(ratings)
    pairs = []
    for row in pairwise(ratings):
        kappa, why = _value(row["cohen_kappa"])
        a, b = row["raters"]
        agreement = row["agreement"]
        pairs.append(PairAgreement(a, b, row["n"], agreement["k"], agreement["rate"], kappa, why))
    by_pair = {(p.a, p.b): p for p in pairs} | {(p.b, p.a): p for p in pairs}
    matrix = [
        MatrixRow(a, [MatrixCell(b, None if a == b else by_pair[(a, b)]) for b in annotators]) for a in annotators
    ]
    kappas = [p.kappa for p in pairs if p.kappa is not None]
    alpha, alpha_why = _value(krippendorff_alpha(ratings))
    return QueueAgreement(
        annotators=annotators,
        items=overall["n"],
        all_agree=overall["k"],
        percent=overall["rate"],
        light_kappa=mean(kappas) if kappas else None,
        alpha=alpha,
        alpha_undefined=alpha_why,
        pairs=pairs,
        matrix=matrix,
    )
