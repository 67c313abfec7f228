"""Routing disputed responses (and controls) into review items, and keeping the queues built on a
policy in step with it."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from adjudication.fields import json_safe
from adjudication.models import (
    Dataset,
    QueueItem,
    ReaderSpec,
    Reading,
    Response,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
)
from adjudication.pipeline.readings import reader_spec_for
from adjudication.revisions import dataset_changed
from adjudication.routing.rules import PanelReading, comparable_answer, decide, is_control, random_priority
from readers import registry as reader_registry

CHUNK = 2000


@dataclass
class RouteReport:
    disputed: int = 0
    controls: int = 0
    agreeing: int = 0
    pending: int = 0  # responses still missing a reading by some panel reader
    created: int = 0
    refreshed: int = 0  # items whose response was replaced, routed again on the new readings
    queued: int = 0  # queue items added to the queues built on the policy


def validation_message(exc: ValidationError) -> str:
    """A model ValidationError as one line: "field: message; field: message"."""
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
    return " ".join(exc.messages)


def routing_policy_create(
    *,
    dataset: Dataset,
    name: str,
    panel: list[str],
    compare: str = "either",
    missing_is_disagreement: bool = False,
    control_fraction: float = 0.0,
    seed: int = 0,
    priority: str = "disagreement",
) -> RoutingPolicy:
    if len(panel) < 2:
        raise ValueError("a routing panel needs at least two readers to disagree")
    if not (
        isinstance(control_fraction, (int, float))
        and math.isfinite(control_fraction)
        and 0.0 <= control_fraction <= 1.0
    ):
        # NaN passes every comparison-based validator and PostgreSQL orders it above 1.
        raise ValueError("control fraction must be a number between 0 and 1")
    policy = RoutingPolicy(
        dataset=dataset,
        name=name,
        compare=compare,
        missing_is_disagreement=missing_is_disagreement,
        control_fraction=control_fraction,
        seed=seed,
        priority=priority,
    )
    try:
        # The model's validators are the bounds: a seed that does not fit the column is refused here.
        policy.full_clean()
    except ValidationError as exc:
        raise ValueError(validation_message(exc)) from None
    specs = [reader_spec_for(reader=reader_registry.get(n)) for n in panel]
    try:
        with transaction.atomic():
            policy.save()
            policy.panel.set(specs)
    except IntegrityError:
        raise ValueError(f"a routing policy named {name!r} exists already on dataset {dataset.name!r}") from None
    return policy


def tiebreak(*, queue: ReviewQueue, review_item_id: int) -> int:
    """A reproducible shuffle key of the item within the queue (63 bits, fits a bigint)."""
    digest = hashlib.sha256(f"tiebreak:{queue.pk}:{queue.seed}:{review_item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def queue_items_sync(*, queue: ReviewQueue) -> int:
    """Add to the queue every item of its policy it does not hold yet; returns how many."""
    with transaction.atomic():
        added = _queue_items_add(queue)
        if added:
            # Last (adjudication.revisions): the new items first, then the dataset's counter.
            dataset_changed(dataset_id=queue.dataset_id)
    return added


def _queue_items_add(queue: ReviewQueue) -> int:
    missing = (
        ReviewItem.objects.filter(policy_id=queue.policy_id)
        .exclude(queue_items__queue=queue)
        .values_list("id", "priority")
    )
    items = [
        QueueItem(
            queue=queue, review_item_id=ri_id, priority=priority, tiebreak=tiebreak(queue=queue, review_item_id=ri_id)
        )
        for ri_id, priority in missing
    ]
    # Created in shuffled order, so that item ids (in adjudication URLs) do not follow import order.
    items.sort(key=lambda item: item.tiebreak)
    # ignore_conflicts: two syncs racing for the same queue add each item once (queue_item_once).
    QueueItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    return len(items)


def _reason(panel_readings: list[PanelReading], decision) -> dict:
    # Reader answers are model text: NUL and lone surrogates cannot go into a jsonb column.
    return json_safe(
        {
            "readings": {r.reader: {"answer": r.answer, "verdict": r.verdict} for r in panel_readings},
            "distinct_answers": decision.distinct_answers,
            "distinct_verdicts": decision.distinct_verdicts,
        }
    )


def review_items_route(*, policy: RoutingPolicy) -> RouteReport:
    """Create a review item for every response the panel disputes, plus controls, and add them to
    every queue built on the policy. Idempotent: each (policy, response) becomes an item at most
    once, however often this runs. An item whose response was replaced since it was routed gets
    its reason and priority from the new readings once they are all in.

    One transaction: the data version is raised with the items (last, after them), so a crash
    half way leaves neither items nor a version that claims them."""
    with transaction.atomic():
        report = _route(policy)
        if report.created or report.refreshed or report.queued:
            dataset_changed(dataset_id=policy.dataset_id)
    return report


def _route(policy: RoutingPolicy) -> RouteReport:
    report = RouteReport()
    specs: list[ReaderSpec] = list(policy.panel.all())
    spec_names = {s.id: s.name for s in specs}
    ids = list(Response.objects.filter(dataset=policy.dataset).order_by("id").values_list("id", "external_id"))
    replaced = dict(
        ReviewItem.objects.filter(policy=policy, replaced_at__isnull=False).values_list("response_id", "reason")
    )
    replaced = {rid: reason for rid, reason in replaced.items() if "readings" not in reason}
    before = ReviewItem.objects.filter(policy=policy).count()
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        by_response: dict[int, list[PanelReading]] = defaultdict(list)
        readings = Reading.objects.filter(response_id__in=[i for i, _ in chunk], reader_spec__in=specs)
        for rid, spec_id, answer, normalized, canonical, verdict in readings.values_list(
            "response_id", "reader_spec_id", "answer", "normalized", "canonical", "verdict"
        ):
            by_response[rid].append(
                PanelReading(
                    spec_names[spec_id],
                    comparable_answer(canonical=canonical, normalized=normalized, answer=answer),
                    verdict,
                )
            )
        items = []
        for rid, external_id in chunk:
            panel_readings = by_response.get(rid, [])
            if len(panel_readings) < len(specs):
                report.pending += 1
                continue
            decision = decide(
                panel_readings, compare=policy.compare, missing_is_disagreement=policy.missing_is_disagreement
            )
            if rid in replaced:
                # Already in review (its labels were invalidated and it was re-opened when the text
                # changed): it stays, with the new readings as its reason and the old one kept.
                priority = _priority(policy, rid, external_id, decision)
                ReviewItem.objects.filter(policy=policy, response_id=rid).update(
                    reason={
                        **_reason(panel_readings, decision),
                        "before_replacement": replaced[rid].get("before_replacement"),
                    },
                    priority=priority,
                )
                QueueItem.objects.filter(review_item__policy=policy, review_item__response_id=rid).update(
                    priority=priority
                )
                report.refreshed += 1
                continue
            control = False
            if not decision.disputed:
                report.agreeing += 1
                control = is_control(seed=policy.seed, response_key=external_id, fraction=policy.control_fraction)
                if not control:
                    continue
            if decision.disputed:
                report.disputed += 1
            else:
                report.controls += 1
            items.append(
                ReviewItem(
                    policy=policy,
                    response_id=rid,
                    is_control=control,
                    priority=_priority(policy, rid, external_id, decision),
                    reason=_reason(panel_readings, decision),
                )
            )
        ReviewItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    report.created = ReviewItem.objects.filter(policy=policy).count() - before
    for queue in ReviewQueue.objects.filter(policy=policy):
        report.queued += _queue_items_add(queue)
    return report


def _priority(policy: RoutingPolicy, rid: int, external_id: str, decision) -> float:
    if policy.priority == RoutingPolicy.Priority.RANDOM:
        return random_priority(seed=policy.seed, response_key=external_id)
    if policy.priority == RoutingPolicy.Priority.ORDER:
        return -float(rid)
    return decision.strength
