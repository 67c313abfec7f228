"""The managers' item browser (reads only): responses found by id or text, by run identity, by queue
and review state, by what the readers said of them and by which annotators disagree on them; and one
response with everything stored about it. Manager-facing: model, checkpoint, prompt, reader and
annotator identities are shown here, and nowhere an annotator looks.

Every filter is SQL on the responses (review states and reader verdicts as EXISTS subqueries), so a
page over 100,000 responses costs its ids, its rows, a capped count and two batched look-ups
(items_page); only `disagree` reads one queue's labels into Python, because label equality is
`review.labels`' rule (normalised answers), the same one the queue's agreement is computed with.
The text search has no index: one pass over the texts (bench/items_bench.py; docs/review.md)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Substr

from adjudication.fields import SENTINEL
from adjudication.models import FinalLabel, Label, QueueItem, ReaderSpec, Reading, Response, ReviewQueue, Run
from adjudication.review.labels import agreement, label_key
from adjudication.review.rendering import shown_item
from adjudication.text import displayable

# The review state of a queue item, as the browser names it, and what each means.
STATES: dict[str, str] = {
    "open": "needs labels",
    "labelled": "all labels in and unanimous",
    "conflicting": "labels disagree, awaiting adjudication",
    "adjudicated": "decided by an adjudicator",
    "unresolved": "an adjudicator marked it unresolved (newest final label)",
}
PAGE_SIZE = 50
# Counting every match of a broad filter over 100,000 responses costs more than the page itself;
# beyond this many the page says "more than 10000 items".
COUNT_CAP = 10_000
PREVIEW_CHARS = 160
# What the preview reads of each text from the database (a response may be megabytes): enough for
# the preview after whitespace is collapsed, and for a JSON-escaped (verbatim-stored) text's prefix.
_PREVIEW_READ = 1_000
_MAX_EXACT = 1_000  # external ids are unique per dataset: one exact match per dataset at most
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACES = re.compile(r"\s+")


def shown(text: str) -> str:
    """Model text made displayable (adjudication.text.displayable: lone surrogates and NUL become
    U+FFFD, one code point for one, so reader spans still line up)."""
    return displayable(text)


@dataclass(frozen=True)
class VerdictCondition:
    """A condition "<reader> said <verdict>": a reading by any version of the reader named `reader`."""

    reader: str
    verdict: str

    def __str__(self) -> str:
        return f"{self.reader}:{self.verdict}"


@dataclass(frozen=True)
class ItemFilters:
    """The browser's filters, AND-ed; empty values filter nothing. `disagree_any` and
    `disagree_pair` (two user ids) need `queue_id`."""

    q: str = ""
    dataset_id: int | None = None
    model: str = ""
    checkpoint: str = ""
    benchmark: str = ""
    queue_id: int | None = None
    status: str = ""
    verdicts: tuple[VerdictCondition, ...] = ()
    disagree_any: bool = False
    disagree_pair: tuple[int, int] | None = None


# -- review states --------------------------------------------------------------------------------


def _newest_provenance() -> Subquery:
    """The provenance of a queue item's newest valid final label (ORM: FinalLabel.objects sees only
    the valid ones)."""
    newest = FinalLabel.objects.filter(item=OuterRef("pk")).order_by("-created_at", "-id")
    return Subquery(newest.values("provenance")[:1])


def items_in_state(items: QuerySet[QueueItem], state: str) -> QuerySet[QueueItem]:
    """The queue items of `items` in the browser's review state `state` (one of STATES)."""
    if state == "open":
        return items.filter(status=QueueItem.Status.OPEN)
    if state == "labelled":
        return items.filter(status=QueueItem.Status.AGREED)
    if state == "conflicting":
        return items.filter(status=QueueItem.Status.CONFLICT)
    decided = items.filter(status=QueueItem.Status.ADJUDICATED).annotate(newest_provenance=_newest_provenance())
    if state == "unresolved":
        return decided.filter(newest_provenance=FinalLabel.Provenance.UNRESOLVED)
    if state == "adjudicated":
        return decided.exclude(newest_provenance=FinalLabel.Provenance.UNRESOLVED)
    raise ValueError(f"unknown review state {state!r}")


def review_state(status: str, newest_provenance: str | None) -> str:
    """items_in_state's rule for one item: its QueueItem.status and newest final label's provenance."""
    if status == QueueItem.Status.AGREED:
        return "labelled"
    if status == QueueItem.Status.CONFLICT:
        return "conflicting"
    if status == QueueItem.Status.ADJUDICATED:
        return "unresolved" if newest_provenance == FinalLabel.Provenance.UNRESOLVED else "adjudicated"
    return "open"


# -- disagreement, by review.labels' equality ------------------------------------------------------


class _Current(NamedTuple):
    kind: str
    answer: str
    correctness: str


def disagreeing_items(*, queue: ReviewQueue, pair: tuple[int, int] | None) -> set[int]:
    """Queue items whose annotators' current labels (each annotator's newest valid label, skips
    aside: what agreement reads) are not all equal; with `pair` (two user ids, either order), those
    on which both of them have a current label and the two differ. Equality is
    review.labels.label_key with the queue's judge_correctness, as in the queue's agreement. One
    statement: the queue's labels, five columns each, from the (queue, annotator, item) index."""
    labels = Label.objects.filter(queue_id=queue.pk)
    if pair is not None:
        labels = labels.filter(annotator_id__in=pair)
    newest: dict[tuple[int, int], _Current] = {}
    rows = labels.order_by("item_id", "annotator_id", "created_at", "id").values_list(
        "item_id", "annotator_id", "kind", "answer", "correctness"
    )
    for item_id, annotator_id, kind, answer, correctness in rows:
        newest[(item_id, annotator_id)] = _Current(kind, answer, correctness)
    by_item: dict[int, list[_Current]] = defaultdict(list)
    for (item_id, _annotator), current in newest.items():
        if current.kind != Label.Kind.SKIPPED:
            by_item[item_id].append(current)
    judge = queue.judge_correctness
    if pair is None:
        return {i for i, current in by_item.items() if agreement(current, judge) < 1.0}
    return {
        i
        for i, current in by_item.items()
        if len(current) == 2 and label_key(current[0], judge) != label_key(current[1], judge)
    }


# -- the list --------------------------------------------------------------------------------------


def items_filtered(*, filters: ItemFilters) -> QuerySet[Response]:
    """The responses matching every filter, in import order (items_page puts exact ids of `q` first)."""
    return _searched(_filtered(filters), filters.q)


def _searched(responses: QuerySet[Response], q: str) -> QuerySet[Response]:
    if not q:
        return responses
    return responses.filter(Q(external_id__icontains=q) | Q(text__icontains=q))


def _filtered(filters: ItemFilters) -> QuerySet[Response]:
    """Every filter but `q`. `disagree` is computed here, once: the queryset carries its item ids."""
    responses = Response.objects.order_by("id")
    if filters.dataset_id is not None:
        responses = responses.filter(dataset_id=filters.dataset_id)
    for column in ("model", "checkpoint", "benchmark"):
        value = getattr(filters, column)
        if value:
            responses = responses.filter(**{f"run__{column}": value})
    if filters.queue_id is not None or filters.status:
        items = QueueItem.objects.filter(review_item__response=OuterRef("pk"))
        if filters.queue_id is not None:
            items = items.filter(queue_id=filters.queue_id)
        if filters.status:
            items = items_in_state(items, filters.status)
        responses = responses.filter(Exists(items))
    for condition in filters.verdicts:
        said = Reading.objects.filter(
            response=OuterRef("pk"), reader_spec__name=condition.reader, verdict=condition.verdict
        )
        responses = responses.filter(Exists(said))
    if (filters.disagree_any or filters.disagree_pair) and filters.queue_id is not None:
        queue = ReviewQueue.objects.filter(pk=filters.queue_id).first()
        ids = set() if queue is None else disagreeing_items(queue=queue, pair=filters.disagree_pair)
        disputed = QueueItem.objects.filter(pk__in=sorted(ids), review_item__response=OuterRef("pk"))
        responses = responses.filter(Exists(disputed))
    return responses


def _page_ids(without_q: QuerySet[Response], q: str, offset: int, limit: int) -> list[int]:
    """Ids of rows offset..offset+limit of the listing: responses whose external id is `q` (in any
    case; at most one per dataset) first, then the other matches in import order. Not one ORDER BY
    over a "matches exactly" expression: that sorts every match, so a common word would be searched
    for in every text, where import order stops at the page's last match."""
    matching = _searched(without_q, q)
    if not q:
        return list(matching.values_list("id", flat=True)[offset : offset + limit])
    exact = list(without_q.filter(external_id__iexact=q).values_list("id", flat=True)[:_MAX_EXACT])
    head = exact[offset : offset + limit]
    if len(head) == limit:
        return head
    start = max(0, offset - len(exact))
    rest = matching.exclude(pk__in=exact) if exact else matching
    return head + list(rest.values_list("id", flat=True)[start : start + limit - len(head)])


def _decode_prefix(body: str) -> str:
    """A JSON string literal cut anywhere, decoded: closed after dropping an escape cut in half
    (the longest, a cut \\uXXXX, leaves five characters)."""
    try:
        return json.loads(body)
    except ValueError:
        pass
    for cut in range(7):
        try:
            return json.loads(body[: len(body) - cut] + '"')
        except ValueError:
            continue
    return ""


def preview(stored_prefix: str | None, limit: int = PREVIEW_CHARS) -> str:
    """The first `limit` characters of a response on one line, from the prefix of its stored form
    (a text stored verbatim-escaped, because it holds NUL or lone surrogates, is a JSON string:
    adjudication.fields). Control characters and lone surrogates are shown as U+FFFD."""
    text = stored_prefix or ""
    if text.startswith(SENTINEL):
        text = _decode_prefix(text[len(SENTINEL) :])
    text = _SPACES.sub(" ", _CONTROL.sub("\ufffd", shown(text))).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class ListedQueueItem:
    item_id: int
    queue_id: int
    queue_name: str
    state: str


@dataclass(frozen=True)
class ListedItem:
    response_id: int
    external_id: str
    dataset: str
    model: str
    checkpoint: str
    benchmark: str
    preview: str
    queue_items: list[ListedQueueItem] = field(default_factory=list)
    # (reader name, version, verdict) of the readers the verdict conditions name
    verdicts: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ItemsPage:
    items: list[ListedItem]
    number: int
    has_previous: bool
    has_next: bool
    total: int  # at most COUNT_CAP + 1: more than COUNT_CAP when total_capped
    total_capped: bool
    first: int  # 1-based positions of the first and last rows shown
    last: int


def _queue_items_of(response_ids: Sequence[int]) -> dict[int, list[ListedQueueItem]]:
    rows = (
        QueueItem.objects.filter(review_item__response_id__in=response_ids)
        .annotate(newest_provenance=_newest_provenance())
        .order_by("queue__name", "id")
        .values_list("id", "queue_id", "queue__name", "status", "newest_provenance", "review_item__response_id")
    )
    out: dict[int, list[ListedQueueItem]] = defaultdict(list)
    for item_id, queue_id, queue_name, status, provenance, response_id in rows:
        out[response_id].append(ListedQueueItem(item_id, queue_id, queue_name, review_state(status, provenance)))
    return out


def _verdicts_of(response_ids: Sequence[int], readers: Iterable[str]) -> dict[int, list[tuple[str, str, str]]]:
    rows = (
        Reading.objects.filter(response_id__in=response_ids, reader_spec__name__in=sorted(set(readers)))
        .order_by("reader_spec__name", "reader_spec__version", "reader_spec_id")
        .values_list("response_id", "reader_spec__name", "reader_spec__version", "verdict")
    )
    out: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
    for response_id, name, version, verdict in rows:
        out[response_id].append((name, version, verdict))
    return out


def items_page(*, filters: ItemFilters, page: int = 1, page_size: int | None = None) -> ItemsPage:
    """One page of the filtered responses with what the list shows of each, in a fixed number of
    statements whatever the page size: the page's ids (two with `q`: the exact ids first), their
    rows, their queue items with their states, the named readers' verdicts, a count capped at
    COUNT_CAP (skipped when the first page is not full), and with `disagree` the queue's labels."""
    page_size = page_size or PAGE_SIZE
    offset = (page - 1) * page_size
    without_q = _filtered(filters)
    ids = _page_ids(without_q, filters.q, offset, page_size + 1)
    has_next = len(ids) > page_size
    ids = ids[:page_size]
    # The page's rows by their ids: a deep page skips ids only, never reads the texts it skips.
    by_id = {
        row[0]: row
        for row in Response.objects.filter(pk__in=ids)
        .annotate(text_prefix=Substr("text", 1, _PREVIEW_READ))
        .values_list(
            "id", "external_id", "dataset__name", "run__model", "run__checkpoint", "run__benchmark", "text_prefix"
        )
    }
    rows = [by_id[pk] for pk in ids if pk in by_id]
    if offset == 0 and not has_next:
        total = len(rows)
    else:
        total = _searched(without_q, filters.q).order_by()[: COUNT_CAP + 1].count()
    queue_items = _queue_items_of(ids) if ids else {}
    verdicts = _verdicts_of(ids, (c.reader for c in filters.verdicts)) if ids and filters.verdicts else {}
    items = [
        ListedItem(
            response_id=pk,
            external_id=shown(external_id),
            dataset=dataset,
            model=model,
            checkpoint=checkpoint,
            benchmark=benchmark,
            preview=preview(prefix),
            queue_items=queue_items.get(pk, []),
            verdicts=verdicts.get(pk, []),
        )
        for pk, external_id, dataset, model, checkpoint, benchmark, prefix in rows
    ]
    return ItemsPage(
        items=items,
        number=page,
        has_previous=page > 1,
        has_next=has_next,
        total=total,
        total_capped=total > COUNT_CAP,
        first=offset + 1,
        last=offset + len(items),
    )


# -- one item --------------------------------------------------------------------------------------


@dataclass
class ShownLabel:
    label: Label
    answer: str
    current: bool  # the annotator's newest valid label of the item


@dataclass
class ShownFinal:
    final: FinalLabel
    answer: str
    current: bool  # the item's newest valid final label: the one it ends with


@dataclass
class ShownQueueItem:
    item: QueueItem
    state: str
    reason: str  # the routing reason (which readers said what), as indented JSON
    labels: list[ShownLabel]
    finals: list[ShownFinal]
    adjudicable: bool  # its labels conflict, or an adjudicator left it unresolved


def _queue_items_detail(response: Response) -> list[ShownQueueItem]:
    items = list(
        QueueItem.objects.filter(review_item__response=response)
        .select_related("queue", "review_item")
        .order_by("queue__name", "id")
    )
    labels: dict[int, list[Label]] = defaultdict(list)
    for label in Label.all_objects.filter(item__in=items).select_related("annotator").order_by("created_at", "id"):
        labels[label.item_id].append(label)
    finals: dict[int, list[FinalLabel]] = defaultdict(list)
    for final in (
        FinalLabel.all_objects.filter(item__in=items).select_related("decided_by").order_by("-created_at", "-id")
    ):
        finals[final.item_id].append(final)
    out = []
    for item in items:
        current_of: dict[int, int] = {}
        for label in labels[item.pk]:
            if label.invalidated_at is None:
                current_of[label.annotator_id] = label.pk
        valid_finals = [f for f in finals[item.pk] if f.invalidated_at is None]
        current_final = valid_finals[0].pk if valid_finals else None
        state = review_state(item.status, valid_finals[0].provenance if valid_finals else None)
        out.append(
            ShownQueueItem(
                item=item,
                state=state,
                reason=shown(json.dumps(item.review_item.reason, indent=1, ensure_ascii=False, sort_keys=True)),
                labels=[
                    ShownLabel(lab, shown(lab.answer), current_of.get(lab.annotator_id) == lab.pk)
                    for lab in labels[item.pk]
                ],
                finals=[ShownFinal(f, shown(f.answer), f.pk == current_final) for f in finals[item.pk]],
                adjudicable=state in ("conflicting", "unresolved"),
            )
        )
    return out


@dataclass
class ShownReading:
    number: int  # its mark in the response (data-candidate), when it has a span there
    reading: Reading
    answer: str | None
    canonical: str | None
    normalized: str | None
    marked: bool


def item_detail(*, response_id: int) -> dict | None:
    """Everything about one response: question, options, gold, the response rendered with every
    reading's span marked, run identity, every reading, and per queue item its state, routing
    reason, every label (invalidated ones kept, marked) and every final label, newest first."""
    response = Response.objects.select_related("run", "dataset", "question").filter(pk=response_id).first()
    if response is None:
        return None
    readings = list(
        response.readings.select_related("reader_spec").order_by(
            "reader_spec__name", "reader_spec__version", "reader_spec_id"
        )
    )
    length = len(response.text)
    shown_readings: list[ShownReading] = []
    spans: list[tuple[int, int, int]] = []
    for number, reading in enumerate(readings, start=1):
        start, end = reading.span_start, reading.span_end
        span = (start, end, number) if start is not None and end is not None and 0 <= start < end <= length else None
        marked = span is not None
        if span is not None:
            spans.append(span)
        shown_readings.append(
            ShownReading(
                number=number,
                reading=reading,
                answer=shown(reading.answer) if reading.answer is not None else None,
                canonical=shown(reading.canonical) if reading.canonical is not None else None,
                normalized=shown(reading.normalized) if reading.normalized is not None else None,
                marked=marked,
            )
        )
    question = response.question
    return {
        "response": response,
        "external_id": shown(response.external_id),
        "run": response.run,
        "prompt_text": shown(response.prompt_text) if response.prompt_text else "",
        "readings": shown_readings,
        "queue_items": _queue_items_detail(response),
        "shown": shown_item(
            question=shown(question.text),
            choices=[shown(str(c)) for c in question.choices],
            gold=shown(question.gold),
            response=shown(response.text),
            show_gold=True,
            candidates=([], spans),
        ),
    }


def filter_choices(*, dataset_id: int | None) -> dict[str, list[str]]:
    """The distinct models, checkpoints and benchmarks of the dataset's runs (of every run: None)."""
    runs = Run.objects.all() if dataset_id is None else Run.objects.filter(dataset_id=dataset_id)
    return {
        column: list(runs.order_by(column).values_list(column, flat=True).distinct())
        for column in ("model", "checkpoint", "benchmark")
    }


def reader_names() -> list[str]:
    """Every reader spec name (any version), for the verdict conditions' suggestions."""
    return list(ReaderSpec.objects.order_by("name").values_list("name", flat=True).distinct())
