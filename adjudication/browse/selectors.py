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

import hashlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.apps import apps
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
    reading's span marked, run identity, every reading, the LLM readings' traces (llm_traces), and
    per queue item its state, routing reason, every label (invalidated ones kept, marked) and every
    final label, newest first."""
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
        "traces": llm_traces(response_id=response.pk),
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


# -- LLM traces ------------------------------------------------------------------------------------

# What the trace of an LLM reading is made from: judges.Judgement and judges.LLMAttempt, by name from
# the app registry (adjudication never imports the judges app: docs/architecture.md).
_LLM_KINDS = ("judge", "regeneration")
# How a --no-text bundle keeps a private text: "sha256:" and its hex digest (bundles.contents.text_hash;
# not imported: no capability imports bundles).
_BUNDLE_TEXT_HASH = "sha256:"
# What Answer Regeneration's reading detail may say about how it got its answer, besides its scores,
# in the order a reader of the trace wants it (judges/services/regeneration.py writes them).
_REGENERATION_NOTES = (
    "prompt",
    "prompt_missing",
    "fallback_reason",
    "logprobs_refused",
    "logprobs_missing",
    "prompt_list_refused",
    "echo_shifted",
    "tie",
    "truncated",
    "gold_unresolved",
)


@dataclass(frozen=True)
class SentMessage:
    role: str
    content: str


@dataclass(frozen=True)
class ParserReading:
    parser: str
    label: str | None  # None: this parser read no label in the reply
    ours: bool  # the judge's own parser, whose label is the verdict


@dataclass(frozen=True)
class JudgeTrace:
    """What a judge was sent and said. `messages` is the prompt as sent, shown only when its sha256
    is the judgement's prompt_hash (`prompt_state` says which case holds, never a rebuilt prompt)."""

    messages: list[SentMessage] | None
    prompt_state: str
    prompt_hash: str
    template_hash: str
    raw_reply: str | None  # None: no reply (every attempt failed)
    parse_status: str
    parser_readings: list[ParserReading]
    served_model: str
    finish_reason: str
    upstream_parser: str  # the template's upstream parser ("" for readings judged before it was recorded)
    parser_disagrees: bool | None  # whether it reads the reply differently from ours (None: not compared)
    confidence: float | None  # the verdict's confidence (judges.confidence), when log-probabilities came
    label_masses: list[tuple[str, float]]  # label -> probability mass at the verdict token, as sent


@dataclass(frozen=True)
class OptionScore:
    letter: str
    logprob: float | None  # None: the server gave none for this option
    share: float | None  # exp(logprob) over the options' sum: the model's choice among the options only
    chosen: bool


@dataclass(frozen=True)
class RegenerationTrace:
    """How Answer Regeneration reached its answer: the endpoint's method, what actually scored
    (completions echo, per option, top log-probabilities, or a generation), the option scores."""

    method: str
    scored_by: str
    scores: list[OptionScore]
    chosen: str | None
    generated: str | None  # the short generation's text, when a generation answered
    fallback: bool
    notes: list[tuple[str, str]]


@dataclass(frozen=True)
class TracedAttempt:
    number: int
    purpose: str
    status: str
    http_status: int | None
    latency_ms: float
    prompt_tokens: int | None
    completion_tokens: int | None
    error: str
    started_at: Any


@dataclass(frozen=True)
class LLMTrace:
    """One LLM reading (a judge's or Answer Regeneration's) of a response, with every call it took."""

    reading_id: int
    reader: str
    version: str
    kind: str
    config: str  # the spec's config (model, template, method...) as indented JSON
    verdict: str
    answer: str | None
    failure: str  # why the reading is an error reading: the call's or our code's error, else ""
    judge: JudgeTrace | None
    regeneration: RegenerationTrace | None
    attempts: list[TracedAttempt]

    @property
    def total_latency_ms(self) -> float:
        return sum(a.latency_ms for a in self.attempts)


def _sent_messages(messages_sent: str | None, prompt_hash: str) -> tuple[list[SentMessage] | None, str]:
    """The messages a judgement kept, if their sha256 is its prompt_hash (judges.services.judging:
    prompt_hash is the sha256 of exactly this text, UTF-8 with surrogates passed)."""
    if messages_sent is None:
        return None, "not kept: judged before prompts were kept, or our code failed before sending"
    if messages_sent == _BUNDLE_TEXT_HASH + prompt_hash:
        return None, "left out: loaded from a bundle written without texts (--no-text), which keeps its hash only"
    digest = hashlib.sha256(messages_sent.encode("utf-8", "surrogatepass")).hexdigest()
    if digest != prompt_hash:
        return None, "not shown: the kept prompt's sha256 is not the prompt hash recorded with the judgement"
    try:
        parsed = json.loads(messages_sent)
    except ValueError:
        parsed = None
    if not isinstance(parsed, list):
        return [SentMessage("(unparsed)", shown(messages_sent))], "as sent (sha256 matches the prompt hash)"
    messages = [
        SentMessage(
            shown(str(m.get("role", ""))) if isinstance(m, dict) else "",
            shown(m["content"] if isinstance(m, dict) and isinstance(m.get("content"), str) else json.dumps(m)),
        )
        for m in parsed
    ]
    return messages, "as sent (sha256 matches the prompt hash)"


def _judge_trace(judgement: Any, detail: Any) -> JudgeTrace:
    messages, state = _sent_messages(judgement.messages_sent, judgement.prompt_hash)
    detail = detail if isinstance(detail, dict) else {}
    disagrees = detail.get("parser_disagrees")
    masses = judgement.verdict_alternatives if isinstance(judgement.verdict_alternatives, dict) else {}
    readings = [ParserReading(shown(judgement.parser), judgement.label or None, True)]
    readings += [
        ParserReading(shown(str(name)), shown(str(label)) if label else None, False)
        for name, label in sorted((judgement.reparses or {}).items())
    ]
    return JudgeTrace(
        messages=messages,
        prompt_state=state,
        prompt_hash=judgement.prompt_hash,
        template_hash=judgement.template_hash,
        raw_reply=None if judgement.raw_reply is None else shown(judgement.raw_reply),
        parse_status=judgement.parse_status,
        parser_readings=readings,
        served_model=shown(judgement.served_model),
        finish_reason=shown(judgement.finish_reason),
        upstream_parser=shown(str(detail.get("upstream_parser") or "")),
        parser_disagrees=disagrees if isinstance(disagrees, bool) else None,
        confidence=_finite(judgement.confidence),
        label_masses=sorted(
            (shown(str(label)), mass) for label, value in masses.items() if (mass := _finite(value)) is not None
        ),
    )


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _note(value: Any) -> str:
    return shown(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True))


def _regeneration_trace(reading: Reading) -> RegenerationTrace:
    detail = reading.detail if isinstance(reading.detail, dict) else {}
    raw_scores = detail.get("scores")
    if not isinstance(raw_scores, dict):
        raw_scores = {}
    logprobs = {str(letter): _finite(value) for letter, value in raw_scores.items()}
    finite = [v for v in logprobs.values() if v is not None]
    top = max(finite, default=0.0)
    total = sum(math.exp(v - top) for v in finite)
    scores = [
        OptionScore(
            letter=shown(letter),
            logprob=value,
            share=None if value is None else math.exp(value - top) / total,
            chosen=letter == reading.answer,
        )
        for letter, value in sorted(logprobs.items())
    ]
    generated = detail.get("generated")
    notes = [(key, _note(detail[key])) for key in _REGENERATION_NOTES if key in detail]
    return RegenerationTrace(
        method=shown(str(detail.get("method", ""))),
        scored_by=shown(str(detail.get("scored_by", ""))),
        scores=scores,
        chosen=None if reading.answer is None else shown(reading.answer),
        generated=shown(generated) if isinstance(generated, str) else None,
        fallback=bool(detail.get("fallback")),
        notes=notes,
    )


def llm_traces(*, response_id: int) -> list[LLMTrace]:
    """Every LLM reading of a response (judges' and Answer Regeneration's) with its trace: for a
    judge the prompt as sent, the raw reply, every parser's reading of it, the served model and
    finish reason; for Answer Regeneration the option scores and how they were scored; for both
    every attempt of every call for that (response, reader spec). Two statements whatever the
    number of readings and attempts: the readings with their judgements, then the attempts.
    Managers and adjudicators only: it names models, judges and prompts."""
    readings = list(
        Reading.objects.filter(response_id=response_id, reader_spec__kind__in=_LLM_KINDS)
        .select_related("reader_spec", "judgement")
        .order_by("reader_spec__kind", "reader_spec__name", "reader_spec__version", "reader_spec_id")
    )
    if not readings:
        return []
    attempt_model = apps.get_model("judges", "LLMAttempt")
    attempts: dict[int, list[TracedAttempt]] = defaultdict(list)
    rows = (
        attempt_model._default_manager.filter(
            response_id=response_id, reader_spec_id__in=[r.reader_spec_id for r in readings]
        )
        .order_by("started_at", "attempt", "id")
        .values_list(
            "reader_spec_id",
            "attempt",
            "purpose",
            "status",
            "http_status",
            "latency_ms",
            "prompt_tokens",
            "completion_tokens",
            "error",
            "started_at",
        )
    )
    for spec_id, number, purpose, status, http_status, latency, p_tokens, c_tokens, error, started in rows:
        attempts[spec_id].append(
            TracedAttempt(number, purpose, status, http_status, latency, p_tokens, c_tokens, shown(error), started)
        )
    out = []
    for reading in readings:
        spec = reading.reader_spec
        detail = reading.detail if isinstance(reading.detail, dict) else {}
        failure = detail.get("error") if detail.get("failed") else None
        # A reverse one-to-one that select_related found empty raises on access.
        judgement = getattr(reading, "judgement", None) if spec.kind == "judge" else None
        out.append(
            LLMTrace(
                reading_id=reading.pk,
                reader=spec.name,
                version=spec.version,
                kind=spec.kind,
                config=shown(json.dumps(spec.config, indent=1, ensure_ascii=False, sort_keys=True)),
                verdict=reading.verdict,
                answer=None if reading.answer is None else shown(reading.answer),
                failure=shown(str(failure)) if failure else "",
                judge=_judge_trace(judgement, reading.detail) if judgement is not None else None,
                regeneration=_regeneration_trace(reading) if spec.kind == "regeneration" else None,
                attempts=attempts.get(spec.pk, []),
            )
        )
    return out
