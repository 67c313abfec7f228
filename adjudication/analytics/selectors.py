"""Database mode: turn a dataset's readings, review items and labels into the plain records the
analytics functions take. Reads only; every statistic is computed elsewhere (no ORM there).

What is aggregated where: the readers' overview and their ranking need only how many readings of
each reader had each verdict on each run, which PostgreSQL counts (`reading_summary`, a few hundred
grouped rows for millions of readings); only the readings of labelled responses come back one by
one (`reader_observations(labelled_only=True)`), for the comparisons with humans; format share
reads the per-response verdicts of its two readers.

Which label counts: per queue item, the newest FinalLabel (append-only); per response, the
newest final label over every queue that reviewed it. Per annotator and item, the newest Label
(skips excluded), as services.review.current_labels does.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, connections, transaction
from django.db.models import BooleanField, Case, Count, Exists, F, OuterRef, Q, QuerySet, Value, When
from django.db.models.fields.json import KT

from adjudication.analytics.agreement import HumanObs, ReaderObs, VerdictCount, human_verdict
from adjudication.analytics.bias_card import ResponseTraits
from adjudication.analytics.consensus import ConsensusInputs
from adjudication.analytics.estimates import (
    BINARY,
    EstimateError,
    Population,
    producer_predictor,
    vote_predictor,
)
from adjudication.analytics.format_share import MULTIPLE_CHOICE, Observation, item_task_type
from adjudication.analytics.parsing import ParsingCount
from adjudication.analytics.versions.compare import prompt_hash_label
from adjudication.fields import SENTINEL, VerbatimTextField, decode_verbatim
from adjudication.models import (
    AnalyticsChoice,
    AnalyticsReport,
    Dataset,
    FinalLabel,
    Label,
    Question,
    ReaderSpec,
    Reading,
    Response,
    ReviewItem,
    RoutingPolicy,
    Run,
    Verdict,
)
from adjudication.rawsql import raw_one
from adjudication.review.labels import label_category
from adjudication.revisions import dataset_version
from adjudication.routing.rules import comparable_answer

if TYPE_CHECKING:  # report.py imports this module
    from adjudication.analytics.report import Params
    from adjudication.analytics.reports import ReportSpec

HUMAN = "human"
# The panel consensus (analytics.consensus) as a reader: each response's most likely truth.
CONSENSUS = "consensus"


def reader_labels(*, dataset: Dataset, spec_ids: Iterable[int] | None = None) -> dict[int, str]:
    """{reader_spec_id: display name}: the reader's name, or "name version (hash)" when several
    versions or configs of one name have read this dataset. `spec_ids`: the specs with readings
    of the dataset, when the caller has them already (reading_summary does)."""
    if spec_ids is None:
        found = ReaderSpec.objects.filter(readings__response__dataset=dataset).distinct()
    else:
        found = ReaderSpec.objects.filter(id__in=list(spec_ids))
    specs = list(found.values_list("id", "name", "version", "config_hash"))
    per_name: dict[str, int] = defaultdict(int)
    for _, name, _, _ in specs:
        per_name[name] += 1
    return {
        sid: name if per_name[name] == 1 else f"{name} {version} ({config_hash[:8]})"
        for sid, name, version, config_hash in specs
    }


def reader_spec_kinds(*, dataset: Dataset, labels: dict[int, str] | None = None) -> dict[str, str]:
    labels = reader_labels(dataset=dataset) if labels is None else labels
    kinds = dict(ReaderSpec.objects.filter(id__in=labels).values_list("id", "kind"))
    return {labels[sid]: kinds[sid] for sid in labels}


@dataclass(frozen=True)
class ReadingSummary:
    """A dataset's readings, counted in the database: per reader spec, run and verdict."""

    labels: dict[int, str]  # reader spec id -> display name
    kinds: dict[str, str]  # display name -> kind (rule, regeneration, judge)
    counts: list[VerdictCount]
    runs: dict[int, tuple[str, str, str]]  # run id -> (model, checkpoint, benchmark)


def _applicable_readings(dataset: Dataset) -> QuerySet:
    """The dataset's readings by readers that apply to their item's task type: a not_applicable
    reading (the reader did not run) is in no count, denominator, agreement or comparison."""
    return Reading.objects.filter(response__dataset=dataset).exclude(verdict=Verdict.NOT_APPLICABLE)


def reading_summary(*, dataset: Dataset) -> ReadingSummary:
    grouped = (
        _applicable_readings(dataset)
        .values("reader_spec_id", "response__run_id", "verdict")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("reader_spec_id", "response__run_id", "verdict", "n")
    )
    rows = list(grouped)
    runs = {
        rid: (m, c, b)
        for rid, m, c, b in Run.objects.filter(dataset=dataset).values_list("id", "model", "checkpoint", "benchmark")
    }
    labels = reader_labels(dataset=dataset, spec_ids={sid for sid, _, _, _ in rows})
    counts = [
        VerdictCount(labels[sid], verdict, n, *runs.get(run_id, ("", "", ""))) for sid, run_id, verdict, n in rows
    ]
    return ReadingSummary(
        labels=labels, kinds=reader_spec_kinds(dataset=dataset, labels=labels), counts=counts, runs=runs
    )


def _labelled_responses(dataset: Dataset) -> QuerySet:
    """The ids of the dataset's responses with a standing final label (a subquery, not a list)."""
    return FinalLabel.objects.filter(item__queue__dataset=dataset).values("item__review_item__response_id")


def reader_observations(
    *, dataset: Dataset, labelled_only: bool = False, labels: dict[int, str] | None = None
) -> list[ReaderObs]:
    """Every reading of the dataset as a record; `labelled_only`: only those of responses with a
    final label (all that a comparison with humans reads)."""
    labels = reader_labels(dataset=dataset) if labels is None else labels
    kinds = dict(ReaderSpec.objects.filter(id__in=labels).values_list("id", "kind"))
    readings = _applicable_readings(dataset)
    if labelled_only:
        readings = readings.filter(response_id__in=_labelled_responses(dataset))
    rows = readings.values_list(
        "response_id",
        "reader_spec_id",
        "verdict",
        "canonical",
        "normalized",
        "answer",
        "response__run__model",
        "response__run__checkpoint",
        "response__run__benchmark",
    )
    # Readers are compared on one answer form whoever read ("(C) Merton" and "C" are one answer).
    return [
        ReaderObs(
            response=str(rid),
            reader=labels[sid],
            verdict=verdict,
            answer=comparable_answer(canonical=canonical, normalized=normalized, answer=answer),
            kind=kinds[sid],
            model=model,
            checkpoint=ckpt,
            benchmark=bench,
        )
        for rid, sid, verdict, canonical, normalized, answer, model, ckpt, bench in _plain_rows(rows, chunk_size=5000)
    ]


def _plain_rows(rows: QuerySet, *, chunk_size: int) -> Iterator[tuple]:
    """`rows.iterator(chunk_size)` of a values_list, read off the database: the same statement
    (streamed on PostgreSQL: `_chunks`), without the ORM's per-row layers; verbatim text decoded as
    its field decodes it (decode_verbatim), and any other conversion left to the ORM. Every reading
    of 100,000 responses: 1.7 CPU-s through the ORM, 1.0 without (issue 36 item 15)."""
    compiler = rows.query.get_compiler(using=rows.db)
    sql, params = compiler.as_sql()
    converters = compiler.get_converters([col for col, _, _ in compiler.select])
    verbatim = sorted(converters)
    if not all(
        len(funcs) == 1 and isinstance(getattr(funcs[0], "__self__", None), VerbatimTextField)
        for funcs, _ in converters.values()
    ):
        yield from rows.iterator(chunk_size=chunk_size)
        return
    for chunk in _chunks(rows.db, sql, params, chunk_size=chunk_size):
        if not verbatim or not _any_encoded(chunk, verbatim):
            yield from chunk
            continue
        for row in chunk:
            if any(isinstance(row[k], str) and row[k].startswith(SENTINEL) for k in verbatim):
                row = list(row)
                for k in verbatim:
                    row[k] = decode_verbatim(row[k]) if isinstance(row[k], str) else row[k]
                row = tuple(row)
            yield row


def _libpq_streams_chunks() -> bool:
    from psycopg import pq

    return pq.version() >= 170000  # libpq 17 added the chunked rows mode `stream(size=...)` needs


def _chunks(alias: str, sql: str, params: Sequence[Any], *, chunk_size: int) -> Iterator[list[Any]]:
    """The statement's rows in lists of at most chunk_size. On PostgreSQL, streamed (libpq's chunked
    rows mode): the server sends rows while this process works on the ones it has, where a
    server-side cursor's FETCH waits for each chunk in turn (every reading of 100,000 responses:
    0.8 s instead of 1.8). Neither statement orders its rows, so neither order is the other's by
    contract; on the same plan they come out the same. The statement goes past Django's cursor
    wrappers (it is logged where Django would log it, but not timed, and `execute_wrapper`s do not
    see it). Elsewhere (SQLite), Django's chunked cursor."""
    db = connections[alias]
    if db.vendor == "postgresql" and _libpq_streams_chunks():
        db.ensure_connection()
        if db.queries_logged:  # under DEBUG or CaptureQueriesContext, as Django's cursor logs a statement
            db.queries_log.append({"sql": db.ops.compose_sql(sql, params), "time": "0.000"})  # type: ignore[attr-defined]
        raw = db.connection.cursor()
        rows = raw.stream(sql, params, size=chunk_size)
        try:
            chunk: list[Any] = []
            for row in rows:
                chunk.append(row)
                if len(chunk) == chunk_size:
                    yield chunk
                    chunk = []
            if chunk:
                yield chunk
        finally:
            # Left early (the caller stopped or raised): psycopg would cancel the statement, and a
            # cancelled statement aborts the transaction around it, so the rest is read and dropped
            # instead; a server-side cursor closed early left the transaction usable, and so must this.
            for _ in rows:
                pass
            raw.close()
        return
    with db.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(chunk_size):
            yield chunk


def _any_encoded(chunk: Sequence[tuple], columns: Sequence[int]) -> bool:
    """Might a value of these columns be stored under the verbatim sentinel? Asked of each column's
    text joined in C: never a false "no" (a stored value starting with the sentinel contains it); a
    false "yes" (the sentinel across two values) only sends the chunk through the per-row check."""
    try:
        return any(SENTINEL in "".join(filter(None, map(itemgetter(k), chunk))) for k in columns)
    except TypeError:  # not text: let the per-row check look
        return True


def consensus_inputs(*, dataset: Dataset) -> ConsensusInputs:
    """Every reading of the dataset as a vote (response id, producer display name, verdict), the
    final human verdicts as labels (correct / incorrect only), and each response's model,
    checkpoint and benchmark: the input of consensus.consensus."""
    labels = reader_labels(dataset=dataset)
    # The run's id, not its three texts: a run's strata are read once below instead of joined onto
    # each of the readings (1.8 M at 100,000 responses), and the statement loses the join to runs
    # only (the same scan of readings merged with responses, hence the same row order).
    rows = _applicable_readings(dataset).values_list("response_id", "reader_spec_id", "verdict", "response__run_id")
    read = list(_plain_rows(rows, chunk_size=5000))
    # A response's strata once, in the order of its first reading (its readings repeat them).
    response_run = {row[0]: row[3] for row in read}
    # One string object per response for all its votes: a str caches its hash, so the fit's
    # dictionaries hash each response once, not once per reading.
    key_of = {rid: str(rid) for rid in response_run}
    votes: list[tuple[str, str, str]] = [(key_of[rid], labels[sid], verdict) for rid, sid, verdict, _ in read]
    del read
    run_strata = {
        run_id: {"model": model, "checkpoint": ckpt, "benchmark": bench}
        for run_id, model, ckpt, bench in Run.objects.filter(id__in=set(response_run.values())).values_list(
            "id", "model", "checkpoint", "benchmark"
        )
    }
    # A dict per response, as before: callers may hold one response's strata apart from another's.
    strata: dict[str, dict[str, str]] = {key_of[rid]: dict(run_strata[run_id]) for rid, run_id in response_run.items()}
    human = {
        rid: obs.verdict
        for rid, obs in human_observations(dataset=dataset).items()
        if obs.verdict in ("correct", "incorrect")
    }
    # A labelled response that no producer read still has its strata (it counts in the human-only figure).
    missing = [int(r) for r in human if r not in strata]
    if missing:
        for rid, model, ckpt, bench in Response.objects.filter(id__in=missing).values_list(
            "id", "run__model", "run__checkpoint", "run__benchmark"
        ):
            strata[str(rid)] = {"model": model, "checkpoint": ckpt, "benchmark": bench}
    # A response has one reading per reader spec (the readings' unique constraint), and distinct
    # specs have distinct display names: no (item, producer) twice, unless two names collide.
    return ConsensusInputs(
        votes=votes, human=human, strata=strata, votes_unique=len(set(labels.values())) == len(labels)
    )


def consensus_verdicts(*, dataset: Dataset) -> dict[int, str]:
    """{response id: the consensus verdict}: correct where the posterior P(correct) is at least one
    half. One Dawid–Skene fit per checkpoint, because format share compares checkpoints and a
    reader's error rates are what differ between them (a base model's unboxed answers are what a
    boxed reader misses); the final human labels are clamped. Items no producer voted on and no
    human labelled have no verdict."""
    from adjudication.analytics.consensus import consensus

    inputs = consensus_inputs(dataset=dataset)
    if not any(v in ("correct", "incorrect") for _, _, v in inputs.votes):
        raise LookupError(f"no correct/incorrect readings in dataset {dataset.name!r} to fit a consensus from")
    fit = consensus(inputs, by="checkpoint", n_boot=0)
    return {int(i.item): "correct" if i.p_correct >= 0.5 else "incorrect" for i in fit.items}


def _oldest_first(model: type[Label] | type[FinalLabel], dataset: Dataset, *fields: str) -> QuerySet:
    """The dataset's (final) labels as value tuples, oldest first: the last row per key is the newest."""
    return model.objects.filter(item__queue__dataset=dataset).order_by("created_at", "id").values_list(*fields)


def human_observations(*, dataset: Dataset) -> dict[str, HumanObs]:
    """The current final label of every reviewed response of the dataset, as a human verdict.
    Inside read_snapshot, read once per dataset: the report's sections each ask for them (three
    reads of 10,000 labels, ~1 s at 100,000 responses), and one snapshot gives the same rows."""
    memo = _SNAPSHOT_MEMO.get()
    key = ("human_observations", dataset.pk)
    if memo is not None and key in memo:
        return dict(memo[key])  # a dict of its own: a caller may add to or drop from it
    out = _human_observations(dataset)
    if memo is not None:
        memo[key] = dict(out)
    return out


def _human_observations(dataset: Dataset) -> dict[str, HumanObs]:
    finals = _oldest_first(
        FinalLabel,
        dataset,
        "item_id",
        "kind",
        "answer",
        "correctness",
        "item__review_item__is_control",
        "item__review_item__policy__name",
        "item__review_item__response_id",
        "item__review_item__response__question__gold",
        "item__review_item__response__question__choices",
    )
    newest: dict[int, tuple] = {}
    for row in finals.iterator(chunk_size=5000):
        # Ordered oldest first: the last row per response is its newest final label.
        newest[row[6]] = row
    out = {}
    for rid, (_item, kind, answer, correctness, is_control, policy, _rid, gold, choices) in newest.items():
        verdict, ans = human_verdict(kind, answer, correctness, gold, choices or ())
        out[str(rid)] = HumanObs(response=str(rid), verdict=verdict, answer=ans, is_control=is_control, policy=policy)
    return out


def annotator_ratings(*, dataset: Dataset) -> tuple[dict[str, dict[str, str]], set[str]]:
    """({annotator: {response: label category}}, control response ids) from each annotator's
    current label per item; the category is kind + normalised answer (+ correctness if judged)."""
    labels = _oldest_first(
        Label,
        dataset,
        "annotator__username",
        "item__review_item__response_id",
        "kind",
        "answer",
        "correctness",
        "item__queue__judge_correctness",
        "item__review_item__is_control",
    )
    ratings: dict[str, dict[str, str]] = defaultdict(dict)
    controls: set[str] = set()
    skipped: set[tuple[str, str]] = set()
    for user, rid, kind, answer, correctness, judged, is_control in labels.iterator(chunk_size=5000):
        key = str(rid)
        if is_control:
            controls.add(key)
        if kind == Label.Kind.SKIPPED:
            skipped.add((user, key))
            ratings[user].pop(key, None)
            continue
        skipped.discard((user, key))
        ratings[user][key] = label_category(kind, answer, correctness, judged)
    return {u: r for u, r in ratings.items() if r}, controls


def policy_strata(*, dataset: Dataset) -> list[dict[str, Any]]:
    """For each routing policy with labelled items: how many responses it routed as disputed, and how
    many the panel read completely and agreed on (the stratum the controls were drawn from)."""
    out = []
    labelled = set(
        FinalLabel.objects.filter(item__queue__dataset=dataset).values_list("item__review_item__policy_id", flat=True)
    )
    for policy in RoutingPolicy.objects.filter(id__in=labelled, dataset=dataset).prefetch_related("panel"):
        if policy.priority == RoutingPolicy.Priority.INFORMATION:
            # Its controls are drawn from every response, its other items are not "the disputed
            # ones": the controls alone are the population sample (the disputed stratum weighs 0).
            total = Response.objects.filter(dataset=dataset).count()
            out.append({"policy": policy.name, "n_disputed": 0, "n_undisputed": total})
            continue
        disputed = ReviewItem.objects.filter(policy=policy, stratum=ReviewItem.Stratum.DISPUTED).count()
        panel = list(policy.panel.all())
        complete = (
            Response.objects.filter(dataset=dataset)
            .annotate(k=Count("readings", filter=Q(readings__reader_spec__in=panel)))
            .filter(k=len(panel))
            .count()
        )
        out.append({"policy": policy.name, "n_disputed": disputed, "n_undisputed": max(complete - disputed, 0)})
    return out


def judge_template_hashes(*, dataset: Dataset, labels: dict[int, str] | None = None) -> dict[str, str]:
    """{display name: template hash} of the LLM judges that read this dataset: a judge's bias is a
    property of its prompt as much as of its model, so every bias figure shows which prompt."""
    return {name: prompt_hash_label(config) for name, config in _judge_configs(dataset, labels).items()}


def _judge_configs(dataset: Dataset, labels: dict[int, str] | None) -> dict[str, dict[str, Any]]:
    """{display name: reader-spec config} of the LLM judges that read this dataset."""
    labels = reader_labels(dataset=dataset) if labels is None else labels
    specs = ReaderSpec.objects.filter(id__in=labels, kind="judge").values_list("id", "config")
    return {labels[sid]: config or {} for sid, config in specs}


def judge_parsing_counts(*, dataset: Dataset, labels: dict[int, str] | None = None) -> list[ParsingCount]:
    """Every LLM judge's readings of the dataset counted by what the judge recorded on each: its parse
    status, its template's upstream parser and whether that parser read the reply differently
    (analytics.parsing). A few grouped rows, however many readings."""
    labels = reader_labels(dataset=dataset) if labels is None else labels
    rows = (
        _applicable_readings(dataset)
        .filter(reader_spec__kind="judge", reader_spec_id__in=list(labels))
        .annotate(
            parse_status=KT("detail__parse_status"),
            upstream_parser=KT("detail__upstream_parser"),
            disagrees=KT("detail__parser_disagrees"),
        )
        .values("reader_spec_id", "parse_status", "upstream_parser", "disagrees")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("reader_spec_id", "parse_status", "upstream_parser", "disagrees", "n")
    )
    # KT gives a JSON boolean as its text: "true" / "false" (PostgreSQL), "1" / "0" (SQLite).
    recorded = {"true": True, "1": True, "false": False, "0": False}
    return [
        ParsingCount(labels[sid], status or "", upstream or "", recorded.get(str(disagrees).lower()), n)
        for sid, status, upstream, disagrees, n in rows
    ]


def judge_endpoint_models(*, dataset: Dataset, labels: dict[int, str] | None = None) -> dict[str, str]:
    """{display name: endpoint model} of the LLM judges that read this dataset (the model its
    reader spec's config names), for the judge-bias card's self-preference flag."""
    return {name: str(config.get("endpoint_model") or "") for name, config in _judge_configs(dataset, labels).items()}


def unparsed_judgements(*, dataset: Dataset, labels: dict[int, str]) -> set[tuple[str, str]]:
    """(response id, display name) of the judges' readings of labelled responses whose reply no
    parser understood: stored as verdict `error` with `detail.parse_status` "unparsed" (judges'
    judging service), so that the judge-bias card counts them as parse failures, apart from calls
    that failed. Few rows: one per unparsed reply of a labelled response."""
    rows = Reading.objects.filter(
        response__dataset=dataset,
        response_id__in=_labelled_responses(dataset),
        verdict=Verdict.ERROR,
        detail__parse_status="unparsed",
    ).values_list("response_id", "reader_spec_id")
    return {(str(rid), labels[sid]) for rid, sid in rows if sid in labels}


def labelled_response_traits(*, dataset: Dataset) -> dict[str, ResponseTraits]:
    """{response id: its length, answer format and gold type} for the responses with a final label
    only (the judge-bias card's strata; readers.strata classifies). At most the labelled responses'
    texts are read: ~10,000 at the largest datasets the report is measured on."""
    from readers.strata import gold_type, response_format

    rows = (
        Response.objects.filter(dataset=dataset, id__in=_labelled_responses(dataset))
        .order_by()
        .values_list("id", "text", "question__gold", "question__choices")
    )
    golds: dict[tuple[str, int], str] = {}
    out: dict[str, ResponseTraits] = {}
    for rid, text, gold, choices in rows.iterator(chunk_size=2000):
        key = (gold or "", len(choices or ()))
        kind = golds.get(key)
        if kind is None:
            kind = golds[key] = gold_type(gold or "", choices or ())
        text = text or ""
        out[str(rid)] = ResponseTraits(length=len(text), format=response_format(text), gold_type=kind)
    return out


def agreement_inputs(*, dataset: Dataset, summary: ReadingSummary | None = None) -> dict[str, Any]:
    """What agreement.report takes: the verdict counts of every reading (`counts`), the readings of
    labelled responses only (`obs`), the final labels, the annotators' labels, the strata and how
    many control items were routed."""
    summary = reading_summary(dataset=dataset) if summary is None else summary
    ratings, controls = annotator_ratings(dataset=dataset)
    return {
        "counts": summary.counts,
        "obs": reader_observations(dataset=dataset, labelled_only=True, labels=summary.labels),
        "human": human_observations(dataset=dataset),
        "annotator_ratings": ratings,
        "control_ids": controls,
        "strata": policy_strata(dataset=dataset),
        "routed_controls": ReviewItem.objects.filter(policy__dataset=dataset, is_control=True).count(),
        "templates": judge_template_hashes(dataset=dataset, labels=summary.labels),
        "parsing": judge_parsing_counts(dataset=dataset, labels=summary.labels),
    }


def disputed_by_benchmark(*, dataset: Dataset) -> dict[str, int]:
    """{benchmark: responses some routing panel disputes} (controls are not disputes)."""
    rows = (
        ReviewItem.objects.filter(policy__dataset=dataset, is_control=False)
        .exclude(stratum=ReviewItem.Stratum.UNREADABLE)  # drawn at random, not disputed
        .exclude(policy__priority=RoutingPolicy.Priority.INFORMATION)  # routed by label value, not dispute
        .values("response__run__benchmark")
        .annotate(n=Count("response_id", distinct=True))
        .order_by()
        .values_list("response__run__benchmark", "n")
    )
    return dict(rows)


def _box_annotation():
    return Case(
        When(Q(text__contains="\\boxed") | Q(text__contains="\\fbox"), then=Value(True)),
        default=Value(False),
        output_field=BooleanField(),
    )


def resolve_reader(*, dataset: Dataset, name: str, labels: dict[int, str] | None = None) -> int | str:
    """The reader spec of `name` among the dataset's readings (its display name; a plain name that
    several versions share means the newest of them), or HUMAN for the final human labels."""
    if name in (HUMAN, CONSENSUS):
        return name
    labels = reader_labels(dataset=dataset) if labels is None else labels
    exact = [sid for sid, label in labels.items() if label == name]
    if exact:
        return exact[0]
    newest = (
        ReaderSpec.objects.filter(id__in=list(labels), name=name).order_by("-id").values_list("id", flat=True).first()
    )
    if newest is not None:
        return newest
    known = ", ".join(sorted(labels.values())) or "none"
    raise LookupError(
        f"no readings by {name!r} in dataset {dataset.name!r} (readers with readings: {known}; "
        f"or 'human' for the final human labels, 'consensus' for the panel consensus)"
    )


def format_share_observations(
    *,
    dataset: Dataset,
    reported: str,
    fixed: str,
    labels: dict[int, str] | None = None,
    human: dict[str, HumanObs] | None = None,
) -> list[Observation]:
    """One record per response: its run, question, box and the verdicts of the two readers (the
    only readings format share needs). `labels` and `human`: when the caller has them already."""
    labels = reader_labels(dataset=dataset) if labels is None else labels
    rep, fix = (resolve_reader(dataset=dataset, name=n, labels=labels) for n in (reported, fixed))
    if HUMAN in (rep, fix) and human is None:
        human = human_observations(dataset=dataset)
    verdicts: dict[int | str, dict[int, str]] = {}
    if CONSENSUS in (rep, fix):
        verdicts[CONSENSUS] = consensus_verdicts(dataset=dataset)
    for spec in {rep, fix} - {HUMAN, CONSENSUS}:
        assert isinstance(spec, int)  # resolve_reader's only strings are HUMAN and CONSENSUS
        verdicts[spec] = dict(
            _applicable_readings(dataset).filter(reader_spec_id=spec).values_list("response_id", "verdict")
        )
    if human is not None and HUMAN in (rep, fix):
        verdicts[HUMAN] = {int(k): h.verdict for k, h in human.items() if h.verdict}
    types = {
        qid: item_task_type(gold, choices or ())
        for qid, gold, choices in Question.objects.filter(dataset=dataset).values_list("id", "gold", "choices")
    }
    rows = (
        Response.objects.filter(dataset=dataset)
        .annotate(boxed=_box_annotation())
        .values_list(
            *("id", "run__model", "run__family", "run__checkpoint", "run__benchmark", "run__prompt"),
            *("question_id", "boxed"),
        )
    )
    # Comparisons pair a family's checkpoints (Run.family, declared with --pair), else a model's own.
    return [
        Observation(
            model=fam or m,
            checkpoint=c,
            benchmark=b,
            prompt=p,
            question=str(q),
            reported=verdicts[rep].get(rid),
            fixed=verdicts[fix].get(rid),
            has_box=boxed,
            task_type=types.get(q),
        )
        for rid, m, fam, c, b, p, q, boxed in rows.iterator(chunk_size=5000)
    ]


def ranking_tables(
    *, dataset: Dataset, by_checkpoint: bool | None = None, summary: ReadingSummary | None = None
) -> dict[str, dict[str, tuple[int, int]]]:
    """{reader: {model: (correct, n)}}; a model is "model@checkpoint" when the dataset has several
    checkpoints of one model (unless `by_checkpoint` says otherwise). From the grouped counts."""
    summary = reading_summary(dataset=dataset) if summary is None else summary
    if by_checkpoint is None:
        per_model = defaultdict(set)
        for m, c, _ in summary.runs.values():
            per_model[m].add(c)
        by_checkpoint = any(len(c) > 1 for c in per_model.values())
    tables: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for row in summary.counts:
        model = row.model or "-"
        if by_checkpoint:
            model = f"{model}@{row.checkpoint or '-'}"
        cell = tables[row.reader][model]
        cell[0] += row.n if row.verdict == "correct" else 0
        cell[1] += row.n
    return {r: {m: (k, n) for m, (k, n) in sorted(t.items())} for r, t in sorted(tables.items())}


# ---------------------------------------------------------------------------------------------
# stored reports (adjudication.analytics.services computes them)
# ---------------------------------------------------------------------------------------------


@dataclass
class StoredReport:
    """What is stored for one dataset and one set of report parameters."""

    report: AnalyticsReport | None  # the newest DONE report for these params (any data version); None if none yet
    current: bool  # report is not None and report.data_version == the dataset's current version
    pending: AnalyticsReport | None  # a queued/running computation for the current version, if any
    failed: AnalyticsReport | None  # the current version's computation, if it failed
    data_version: int  # the dataset's current data version


def report_stored(*, dataset: Dataset, params: Params | ReportSpec) -> StoredReport:
    """The stored report for these parameters and the state of the current version's computation
    (read only: report_for_view in analytics.services requests one). Two or three key lookups."""
    version = dataset_version(dataset_id=dataset.pk)
    # The bodies stay in the database: readers take the parts they show (report_parts).
    rows = AnalyticsReport.objects.filter(dataset=dataset, params_key=params.key).defer("body")
    # At most one row per data version (analytics_report_once); its body is null unless done.
    this = rows.filter(data_version=version).first()
    if this is not None and this.status == AnalyticsReport.Status.DONE:
        report: AnalyticsReport | None = this
    else:
        report = rows.filter(status=AnalyticsReport.Status.DONE).order_by("-data_version").first()
    running = (AnalyticsReport.Status.QUEUED, AnalyticsReport.Status.RUNNING)
    return StoredReport(
        report=report,
        current=report is not None and report.data_version == version,
        pending=this if this is not None and this.status in running else None,
        failed=this if this is not None and this.status == AnalyticsReport.Status.FAILED else None,
        data_version=version,
    )


def _parts_on_postgresql(report: AnalyticsReport, parts: Sequence[str], *, as_text: bool) -> list[Any]:
    # A body is one TOASTed jsonb value, and PostgreSQL decompresses it again for every `body -> key`
    # of a select list (7 ms each for a 2 MB body): the subquery decompresses it once, and the
    # parts are taken from that copy (OFFSET 0 keeps the planner from folding it away).
    exprs, params = [], []
    for path in parts:
        keys = path.split("__")
        exprs.append("(s.b" + " -> %s" * len(keys) + ")" + ("::text" if as_text else ""))
        params += keys
    sql = (
        f"SELECT {', '.join(exprs)} FROM (SELECT body || '{{}}'::jsonb AS b "
        "FROM adjudication_analyticsreport WHERE id = %s OFFSET 0) s"
    )
    row = raw_one(sql, [*params, report.pk])
    if row is None:
        raise AnalyticsReport.DoesNotExist(f"analytics report {report.pk}")
    if as_text:
        return list(row)
    return [json.loads(v) if isinstance(v, str) else v for v in row]


def report_parts(*, report: AnalyticsReport, parts: Sequence[str]) -> dict[str, Any]:
    """Parts of a stored report's body, parsed, by key path ("headline", "tables__readers",
    "agreement__selection"); a missing part is None. Only these leave the database: a body holds
    every table, and the rank flips alone can run to megabytes. Raises AnalyticsReport.DoesNotExist
    when the report is gone (a newer one of the same parameters replaced it meanwhile)."""
    if connection.vendor == "postgresql":
        return dict(zip(parts, _parts_on_postgresql(report, parts, as_text=False), strict=True))
    row = (
        AnalyticsReport.objects.filter(pk=report.pk)
        .values(**{f"part{i}": F(f"body__{path}") for i, path in enumerate(parts)})
        .first()
    )
    if row is None:
        raise AnalyticsReport.DoesNotExist(f"analytics report {report.pk}")
    return {path: row.get(f"part{i}") for i, path in enumerate(parts)}


def report_body_stored(*, report: AnalyticsReport) -> dict[str, Any]:
    """A stored report's whole body (a report page's JSON: every number of the report); raises
    AnalyticsReport.DoesNotExist when the report is gone (replaced by a newer one meanwhile)."""
    body = AnalyticsReport.objects.values_list("body", flat=True).get(pk=report.pk)
    return body if isinstance(body, dict) else {}


def report_parts_json(*, report: AnalyticsReport, parts: Sequence[str]) -> dict[str, str]:
    """The same for parts that are objects or arrays, as JSON text straight from the database (not
    parsed and dumped again); a missing or null part is "null"."""
    if connection.vendor == "postgresql":
        texts = _parts_on_postgresql(report, parts, as_text=True)
    else:
        row = (
            AnalyticsReport.objects.filter(pk=report.pk)
            .values(**{f"part{i}": KT(f"body__{path}") for i, path in enumerate(parts)})
            .first()
        )
        if row is None:
            raise AnalyticsReport.DoesNotExist(f"analytics report {report.pk}")
        texts = [row.get(f"part{i}") for i in range(len(parts))]
    return {path: text or "null" for path, text in zip(parts, texts, strict=True)}


def analytics_lease_seconds() -> float:
    return float(settings.ANALYTICS_LEASE_SECONDS)


def report_last_seen(report: AnalyticsReport) -> datetime:
    """When a queued report was last handed to the queue, or a running one claimed."""
    return report.heartbeat_at or report.started_at or report.created_at


def report_is_stale(report: AnalyticsReport, *, now: datetime) -> bool:
    """Queued or running, and nothing has been heard of it for a lease: its task message or its
    worker was lost (a computation takes seconds to minutes; the lease is much longer)."""
    if report.status not in (AnalyticsReport.Status.QUEUED, AnalyticsReport.Status.RUNNING):
        return False
    return (now - report_last_seen(report)).total_seconds() > analytics_lease_seconds()


def report_retryable(report: AnalyticsReport) -> bool:
    return report.status == AnalyticsReport.Status.FAILED and report.attempts < settings.ANALYTICS_MAX_ATTEMPTS


def report_still_needed(report: AnalyticsReport) -> bool:
    """Not done, and no report of the same parameters for this data version or a later one is."""
    if report.status == AnalyticsReport.Status.DONE:
        return False
    return not AnalyticsReport.objects.filter(
        dataset_id=report.dataset_id,
        params_key=report.params_key,
        status=AnalyticsReport.Status.DONE,
        data_version__gte=report.data_version,
    ).exists()


DEFAULT_FIXED = "fixed"
DEFAULT_BASE = "base"


@dataclass(frozen=True)
class ReportReaders:
    """The readers and base checkpoint a dataset's analytics use when none is named, and why."""

    reported: str
    fixed: str
    base: str
    why: str
    chosen: bool  # set on the analytics page (AnalyticsChoice), not the benchmarks' default


# Questions without options typed per benchmark to find its majority task type (maths or free
# form, by the gold's shape): a bounded sample, so that the landing page's cost does not grow with
# the dataset (issue 36 item 13 read every question's gold on each request).
TASK_TYPE_SAMPLE = 200


def _benchmark_task_types(*, dataset: Dataset) -> tuple[dict[str, Counter[str]], dict[str, int]]:
    """({benchmark: {task type: questions}}, {benchmark: questions}): questions with options are
    multiple choice, counted in one grouped query; those without are typed by their golds
    (format_share.item_task_type) over the first TASK_TYPE_SAMPLE of each benchmark, scaled to
    their number."""
    has_choices = Case(When(choices=[], then=Value(False)), default=Value(True), output_field=BooleanField())
    groups = (
        Question.objects.filter(dataset=dataset)
        .annotate(has_choices=has_choices)
        .values_list("benchmark", "has_choices")
        .annotate(n=Count("id"))
        .order_by()
    )
    types: dict[str, Counter[str]] = defaultdict(Counter)
    sizes: Counter[str] = Counter()
    for benchmark, with_choices, n in groups:
        sizes[benchmark] += n
        if with_choices:
            types[benchmark][MULTIPLE_CHOICE] += n
            continue
        golds = list(
            Question.objects.filter(dataset=dataset, benchmark=benchmark, choices=[])
            .order_by("pk")
            .values_list("gold", flat=True)[:TASK_TYPE_SAMPLE]
        )
        for task_type, k in Counter(item_task_type(g) for g in golds).items():
            types[benchmark][task_type] += round(k * n / len(golds))
    return dict(types), dict(sizes)


def harness_reader_of(*, dataset: Dataset) -> tuple[str, str]:
    """(reader, why): the reported reader the dataset's benchmarks call for (readers.harness.
    harness_readers, each benchmark typed by the majority of its questions: its declared harness
    reader, else its task type's default, else `boxed`, whichever first has read the dataset); where its
    benchmarks call for different readers, the one of most questions (ties by name), saying so."""
    from readers.harness import harness_readers

    # One EXISTS per reader spec, not a join over every reading (this runs on the landing page).
    # A reader whose every reading is not_applicable (outside the dataset's task types) has read nothing.
    has_read = Reading.objects.filter(reader_spec=OuterRef("pk"), response__dataset=dataset).exclude(
        verdict="not_applicable"
    )
    read = set(ReaderSpec.objects.filter(Exists(has_read)).values_list("name", flat=True))

    types, sizes = _benchmark_task_types(dataset=dataset)
    if not types:
        return "boxed", "the dataset has no questions yet"
    weight: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    for benchmark, counts in sorted(types.items()):
        candidates = harness_readers(benchmark, counts.most_common(1)[0][0])
        # None of them has read it (nothing read yet): boxed, the last, whose absence the page names.
        reader, why = next(((r, w) for r, w in candidates if r in read), candidates[-1])
        weight[reader] += sizes[benchmark]
        reasons.setdefault(reader, why)
    reader = min(weight, key=lambda r: (r not in read, -weight[r], r))
    why = reasons[reader]
    if len(weight) > 1:
        others = ", ".join(f"{r} for {n} questions" for r, n in sorted(weight.items()) if r != reader)
        why += f" (the benchmarks differ: {reader} for {weight[reader]} questions, {others})"
    return reader, why


def report_readers(*, dataset: Dataset) -> ReportReaders:
    """What the analytics page shows without parameters, the landing card shows and `format_share
    --dataset` defaults to: the readers the page was last set to, else the benchmarks' harness
    reader beside `fixed`, over the `base` checkpoint."""
    choice = AnalyticsChoice.objects.filter(dataset=dataset).first()
    if choice is not None:
        return ReportReaders(
            reported=choice.reported,
            fixed=choice.fixed,
            base=choice.base,
            why="as the analytics page was last set",
            chosen=True,
        )
    reported, why = harness_reader_of(dataset=dataset)
    return ReportReaders(reported=reported, fixed=DEFAULT_FIXED, base=DEFAULT_BASE, why=why, chosen=False)


def known_readers(*, dataset: Dataset) -> list[str]:
    """The readers of the newest stored report of the dataset (any parameters); [] before any."""
    row = (
        AnalyticsReport.objects.filter(dataset=dataset, status=AnalyticsReport.Status.DONE)
        .order_by("-data_version", "-id")
        .values_list("body__readers", flat=True)
        .first()
    )
    return list(row or [])


def dataset_checkpoints(*, dataset: Dataset) -> set[str]:
    return set(Run.objects.filter(dataset=dataset).values_list("checkpoint", flat=True))


# What read_snapshot's body has read already, by key (None outside a snapshot): see human_observations.
_SNAPSHOT_MEMO: ContextVar[dict[tuple[str, int], Any] | None] = ContextVar("analytics_snapshot_memo", default=None)


@contextmanager
def read_snapshot(*, read_only: bool = True) -> Iterator[None]:
    """One snapshot of the data for everything read inside (REPEATABLE READ on PostgreSQL), so that
    every table of a report agrees with every other however long it takes; inside a transaction
    already open, that transaction's view (its isolation is set by whoever opened it)."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ" + (" READ ONLY" if read_only else ""))
        # Reads remembered for the snapshot (human_observations): only the outermost snapshot opens
        # the memo, and a read-write one none, since what it writes would not be in what it read.
        token = _SNAPSHOT_MEMO.set({}) if read_only and _SNAPSHOT_MEMO.get() is None else None
        try:
            yield
        finally:
            if token is not None:
                _SNAPSHOT_MEMO.reset(token)


# The predictors an estimate can use besides a producer's own verdicts (analytics.estimates).
VOTE = "vote"


def estimate_population(*, dataset: Dataset) -> Population:
    """Every response of the dataset as the estimates' population: its model, checkpoint,
    benchmark and task type (the groups a target may name), and every producer's verdict on it,
    by the producer's display name."""
    per_reader = list(_verdicts_per_reader(dataset))
    labels = reader_labels(dataset=dataset, spec_ids={sid for sid, _, _ in per_reader})
    runs = {
        rid: (m, c, b)
        for rid, m, c, b in Run.objects.filter(dataset=dataset).values_list("id", "model", "checkpoint", "benchmark")
    }
    # A question's task type once, not once per response (its choices are JSON to parse).
    questions = Question.objects.filter(dataset=dataset).values_list("id", "gold", "choices")
    task_types = {qid: item_task_type(gold or "", choices or ()) for qid, gold, choices in questions.iterator(5000)}
    # Responses of one run and task type share their groups (read only); every key is one string
    # object, so that the verdicts' dictionaries below hold the same keys the items do.
    shared: dict[tuple[int, str], dict[str, str]] = {}
    key_of: dict[int, str] = {}
    groups: dict[str, dict[str, str]] = {}
    rows = Response.objects.filter(dataset=dataset).order_by("id").values_list("id", "run_id", "question_id")
    for rid, run_id, question_id in rows.iterator(chunk_size=5000):
        key = key_of[rid] = str(rid)
        task_type = task_types[question_id]
        group = shared.get((run_id, task_type))
        if group is None:
            model, checkpoint, benchmark = runs[run_id]
            group = {"model": model, "checkpoint": checkpoint, "benchmark": benchmark, "task_type": task_type}
            shared[(run_id, task_type)] = group
        groups[key] = group
    items = list(key_of.values())
    verdicts: dict[str, dict[str, str]] = defaultdict(dict)
    for sid, rids, said in per_reader:
        verdicts[labels[sid]].update(zip(map(key_of.__getitem__, rids), said))
    return Population(items=items, groups=groups, verdicts=dict(verdicts))


# Each reader's readings of a dataset as two arrays, aggregated by PostgreSQL: a default panel over
# 100,000 responses is 2.6 million readings, which the ORM hands back at about 3 µs a row.
_VERDICTS_PER_READER_SQL = """
    SELECT r.reader_spec_id, array_agg(r.response_id), array_agg(r.verdict)
    FROM adjudication_reading r JOIN adjudication_response p ON p.id = r.response_id
    WHERE p.dataset_id = %s AND r.verdict <> 'not_applicable' GROUP BY r.reader_spec_id"""


def _verdicts_per_reader(dataset: Dataset) -> Iterator[tuple[int, Sequence[int], Sequence[str]]]:
    """(reader spec id, response ids, verdicts) per reader spec with readings of the dataset."""
    if connection.vendor != "postgresql":
        yield from _verdicts_per_reader_orm(dataset)
        return
    with connection.cursor() as cursor:
        cursor.execute(_VERDICTS_PER_READER_SQL, [dataset.pk])
        yield from cursor.fetchall()


def _verdicts_per_reader_orm(dataset: Dataset) -> Iterator[tuple[int, Sequence[int], Sequence[str]]]:
    """The same through the ORM (SQLite, the embedded default, has no arrays)."""
    per_reader: dict[int, tuple[list[int], list[str]]] = defaultdict(lambda: ([], []))
    readings = _applicable_readings(dataset).values_list("reader_spec_id", "response_id", "verdict")
    for sid, rid, verdict in readings.iterator(chunk_size=5000):
        per_reader[sid][0].append(rid)
        per_reader[sid][1].append(verdict)
    for sid, (rids, said) in per_reader.items():
        yield sid, rids, said


def estimate_producer_name(*, dataset: Dataset, population: Population, name: str) -> str:
    """The producer `name` means among the population's producers (display names): itself, or, for
    a plain name several versions share, the newest of them (resolve_reader's rule); LookupError
    for a name with no readings, or for 'human' and 'consensus', which are not producers."""
    if name in population.verdicts:
        return name
    spec = resolve_reader(dataset=dataset, name=name)
    if not isinstance(spec, int):
        raise LookupError(f"{name!r} is not a producer of dataset {dataset.name!r}: an estimate needs its verdicts")
    return reader_labels(dataset=dataset)[spec]


def estimate_predictor(*, dataset: Dataset, population: Population, name: str) -> dict[str, float]:
    """P(correct) per response from the predictor `name`: a producer's display name (its
    verdicts), "vote" (the share of the producers calling it correct), or "consensus" (the panel
    consensus's posterior, one Dawid–Skene fit per checkpoint, from the machine verdicts alone:
    the human labels must not enter the predictor they correct)."""
    if name == VOTE:
        return vote_predictor(population)
    if name == CONSENSUS:
        from adjudication.analytics.consensus import consensus

        votes = [(item, producer, v) for producer, said in population.verdicts.items() for item, v in said.items()]
        if not any(v in BINARY for _, _, v in votes):
            raise EstimateError(
                f"no correct/incorrect readings in dataset {dataset.name!r} to fit a consensus from", field="predictor"
            )
        strata = {i: dict(g) for i, g in population.groups.items()}
        fit = consensus(ConsensusInputs(votes=votes, strata=strata), by="checkpoint", n_boot=0)
        return {i.item: i.p_correct for i in fit.items}
    return producer_predictor(population, name)


def judge_confidence_points(
    *, dataset: Dataset, human: dict[str, HumanObs]
) -> dict[str, tuple[list[float], list[bool]]]:
    """{judge: (confidences, agrees)}: every correct/incorrect judge verdict of the dataset that
    carries a confidence (the judges app stores it in the reading's detail when the judge asked
    for log-probabilities) on a response whose final human label is correct or incorrect; agrees
    is whether the two verdicts are the same. Judges without log-probabilities are absent."""
    rows = (
        Reading.objects.filter(
            response__dataset=dataset,
            reader_spec__kind="judge",
            verdict__in=("correct", "incorrect"),
            detail__has_key="confidence",
        )
        .order_by("reader_spec_id", "response_id")
        .values_list("response_id", "reader_spec_id", "verdict", "detail__confidence")
    )
    points: dict[int, tuple[list[float], list[bool]]] = defaultdict(lambda: ([], []))
    for rid, spec_id, verdict, confidence in rows.iterator(chunk_size=5000):
        h = human.get(str(rid))
        if h is None or h.verdict not in ("correct", "incorrect"):
            continue
        if not isinstance(confidence, int | float) or isinstance(confidence, bool):
            continue  # a detail written by hand or by another version: not a probability
        conf, agrees = points[spec_id]
        conf.append(float(confidence))
        agrees.append(verdict == h.verdict)
    labels = reader_labels(dataset=dataset, spec_ids=points)
    return {labels[sid]: points[sid] for sid in sorted(points, key=lambda s: labels[s])}
