"""Database mode: turn a dataset's readings, review items and labels into the plain records the
analytics functions take. Reads only; every statistic is computed elsewhere (no ORM there).

Which label counts: per queue item, the newest FinalLabel (append-only); per response, the
newest final label over every queue that reviewed it. Per annotator and item, the newest Label
(skips excluded), as services.review.current_labels does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import BooleanField, Case, Count, Q, QuerySet, Value, When

from adjudication.analytics.agreement import HumanObs, ReaderObs, human_verdict
from adjudication.analytics.format_share import Observation, item_task_type
from adjudication.models import (
    Dataset,
    FinalLabel,
    Label,
    Question,
    ReaderSpec,
    Reading,
    Response,
    ReviewItem,
    RoutingPolicy,
)
from adjudication.review.labels import normalise_answer
from adjudication.routing.rules import comparable_answer

HUMAN = "human"


def reader_labels(*, dataset: Dataset) -> dict[int, str]:
    """{reader_spec_id: display name}: the reader's name, or "name version (hash)" when several
    versions or configs of one name have read this dataset."""
    specs = list(
        ReaderSpec.objects.filter(readings__response__dataset=dataset)
        .distinct()
        .values_list("id", "name", "version", "config_hash")
    )
    per_name: dict[str, int] = defaultdict(int)
    for _, name, _, _ in specs:
        per_name[name] += 1
    return {
        sid: name if per_name[name] == 1 else f"{name} {version} ({config_hash[:8]})"
        for sid, name, version, config_hash in specs
    }


def reader_spec_kinds(*, dataset: Dataset) -> dict[str, str]:
    labels = reader_labels(dataset=dataset)
    kinds = dict(ReaderSpec.objects.filter(id__in=labels).values_list("id", "kind"))
    return {labels[sid]: kinds[sid] for sid in labels}


def reader_observations(*, dataset: Dataset) -> list[ReaderObs]:
    labels = reader_labels(dataset=dataset)
    kinds = dict(ReaderSpec.objects.filter(id__in=labels).values_list("id", "kind"))
    rows = Reading.objects.filter(response__dataset=dataset).values_list(
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
        for rid, sid, verdict, canonical, normalized, answer, model, ckpt, bench in rows.iterator(chunk_size=5000)
    ]


def _oldest_first(model: type[Label] | type[FinalLabel], dataset: Dataset, *fields: str) -> QuerySet:
    """The dataset's (final) labels as value tuples, oldest first: the last row per key is the newest."""
    return model.objects.filter(item__queue__dataset=dataset).order_by("created_at", "id").values_list(*fields)


def human_observations(*, dataset: Dataset) -> dict[str, HumanObs]:
    """The current final label of every reviewed response of the dataset, as a human verdict."""
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
        ratings[user][key] = f"{kind}:{normalise_answer(kind, answer)}" + (f":{correctness}" if judged else "")
    return {u: r for u, r in ratings.items() if r}, controls


def policy_strata(*, dataset: Dataset) -> list[dict[str, Any]]:
    """For each routing policy with labelled items: how many responses it routed as disputed, and how
    many the panel read completely and agreed on (the stratum the controls were drawn from)."""
    out = []
    labelled = set(
        FinalLabel.objects.filter(item__queue__dataset=dataset).values_list("item__review_item__policy_id", flat=True)
    )
    for policy in RoutingPolicy.objects.filter(id__in=labelled, dataset=dataset).prefetch_related("panel"):
        disputed = ReviewItem.objects.filter(policy=policy, is_control=False).count()
        panel = list(policy.panel.all())
        complete = (
            Response.objects.filter(dataset=dataset)
            .annotate(k=Count("readings", filter=Q(readings__reader_spec__in=panel)))
            .filter(k=len(panel))
            .count()
        )
        out.append({"policy": policy.name, "n_disputed": disputed, "n_undisputed": max(complete - disputed, 0)})
    return out


def judge_template_hashes(*, dataset: Dataset) -> dict[str, str]:
    """{display name: template hash} of the LLM judges that read this dataset: a judge's bias is a
    property of its prompt as much as of its model, so every bias figure shows which prompt."""
    labels = reader_labels(dataset=dataset)
    specs = ReaderSpec.objects.filter(id__in=labels, kind="judge").values_list("id", "config")
    return {labels[sid]: str((config or {}).get("template_hash") or "") for sid, config in specs}


def agreement_inputs(*, dataset: Dataset) -> dict[str, Any]:
    ratings, controls = annotator_ratings(dataset=dataset)
    return {
        "obs": reader_observations(dataset=dataset),
        "human": human_observations(dataset=dataset),
        "annotator_ratings": ratings,
        "control_ids": controls,
        "strata": policy_strata(dataset=dataset),
        "templates": judge_template_hashes(dataset=dataset),
    }


def _box_annotation():
    return Case(
        When(Q(text__contains="\\boxed") | Q(text__contains="\\fbox"), then=Value(True)),
        default=Value(False),
        output_field=BooleanField(),
    )


def resolve_reader(*, dataset: Dataset, name: str) -> int | str:
    """The reader spec of `name` among the dataset's readings (its display name; a plain name that
    several versions share means the newest of them), or HUMAN for the final human labels."""
    if name == HUMAN:
        return HUMAN
    labels = reader_labels(dataset=dataset)
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
        f"or 'human' for the final human labels)"
    )


def format_share_observations(*, dataset: Dataset, reported: str, fixed: str) -> list[Observation]:
    rep, fix = resolve_reader(dataset=dataset, name=reported), resolve_reader(dataset=dataset, name=fixed)
    human = human_observations(dataset=dataset) if HUMAN in (rep, fix) else {}
    verdicts: dict[int | str, dict[int, str]] = {}
    for spec in {rep, fix} - {HUMAN}:
        verdicts[spec] = dict(
            Reading.objects.filter(response__dataset=dataset, reader_spec_id=spec).values_list("response_id", "verdict")
        )
    if HUMAN in (rep, fix):
        verdicts[HUMAN] = {int(k): h.verdict for k, h in human.items() if h.verdict}
    types = {
        qid: item_task_type(gold, choices or ())
        for qid, gold, choices in Question.objects.filter(dataset=dataset).values_list("id", "gold", "choices")
    }
    rows = (
        Response.objects.filter(dataset=dataset)
        .annotate(boxed=_box_annotation())
        .values_list("id", "run__model", "run__checkpoint", "run__benchmark", "run__prompt", "question_id", "boxed")
    )
    return [
        Observation(
            model=m,
            checkpoint=c,
            benchmark=b,
            prompt=p,
            question=str(q),
            reported=verdicts[rep].get(rid),
            fixed=verdicts[fix].get(rid),
            has_box=boxed,
            task_type=types.get(q),
        )
        for rid, m, c, b, p, q, boxed in rows.iterator(chunk_size=5000)
    ]


def ranking_tables(*, dataset: Dataset, by_checkpoint: bool | None = None) -> dict[str, dict[str, tuple[int, int]]]:
    """{reader: {model: (correct, n)}}; a model is "model@checkpoint" when the dataset has several
    checkpoints of one model (unless `by_checkpoint` says otherwise)."""
    labels = reader_labels(dataset=dataset)
    if by_checkpoint is None:
        per_model = defaultdict(set)
        for m, c in dataset.runs.values_list("model", "checkpoint"):
            per_model[m].add(c)
        by_checkpoint = any(len(c) > 1 for c in per_model.values())
    counts = (
        Reading.objects.filter(response__dataset=dataset)
        .values("reader_spec_id", "response__run__model", "response__run__checkpoint")
        .annotate(n=Count("id"), k=Count("id", filter=Q(verdict="correct")))
    )
    tables: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for row in counts:
        model = row["response__run__model"] or "-"
        if by_checkpoint:
            model = f"{model}@{row['response__run__checkpoint'] or '-'}"
        cell = tables[labels[row["reader_spec_id"]]][model]
        cell[0] += row["k"]
        cell[1] += row["n"]
    return {r: {m: (k, n) for m, (k, n) in sorted(t.items())} for r, t in sorted(tables.items())}
