"""Routing disputed responses (and controls) into review items, and keeping the queues built on a
policy in step with it."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from adjudication.fields import json_safe
from adjudication.models import (
    Dataset,
    QueueItem,
    ReaderSpec,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
)
from adjudication.pipeline.readings import reader_spec_for
from adjudication.revisions import dataset_changed
from adjudication.routing.rules import Decision, PanelReading, random_priority, route_response
from adjudication.routing.selectors import RouteCounts, dataset_readers, panel_readings
from readers import registry as reader_registry


@dataclass
class RouteReport(RouteCounts):
    created: int = 0
    refreshed: int = 0  # items whose response was replaced, routed again on the new readings
    queued: int = 0  # queue items added to the queues built on the policy


def validation_message(exc: ValidationError) -> str:
    """A model ValidationError as one line: "field: message; field: message"."""
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
    return " ".join(exc.messages)


def panel_spec(*, dataset: Dataset, reader: str | ReaderSpec) -> ReaderSpec:
    """A panel member: a spec as given; a name of the reader registry as its current version; any
    other name (an LLM judge, a regeneration) as the one spec of that name that has read the dataset."""
    if isinstance(reader, ReaderSpec):
        return reader
    try:
        return reader_spec_for(reader=reader_registry.get(reader))
    except reader_registry.UnknownReader:
        found = [s for s in dataset_readers(dataset=dataset) if s.name == reader]
        if len(found) == 1:
            return found[0]
        if found:
            raise ValueError(
                f"several versions of reader {reader!r} have read dataset {dataset.name!r}; "
                "choose one on the queue form (/queues/new/)"
            ) from None
        raise


def routing_policy_create(
    *,
    dataset: Dataset,
    name: str,
    panel: Sequence[str | ReaderSpec],
    compare: str = "either",
    missing_is_disagreement: bool = False,
    control_fraction: float = 0.0,
    seed: int = 0,
    priority: str = "disagreement",
) -> RoutingPolicy:
    """A routing policy over `panel`: reader names (see panel_spec) or the specs themselves."""
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
    specs = [panel_spec(dataset=dataset, reader=member) for member in panel]
    if len({s.pk for s in specs}) < 2:
        raise ValueError("a routing panel needs at least two readers to disagree")
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


def _reason(readings: list[PanelReading], decision: Decision) -> dict:
    # Reader answers are model text: NUL and lone surrogates cannot go into a jsonb column.
    return json_safe(
        {
            "readings": {r.reader: {"answer": r.answer, "verdict": r.verdict} for r in readings},
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
    replaced = dict(
        ReviewItem.objects.filter(policy=policy, replaced_at__isnull=False).values_list("response_id", "reason")
    )
    replaced = {rid: reason for rid, reason in replaced.items() if "readings" not in reason}
    before = ReviewItem.objects.filter(policy=policy).count()
    for chunk in panel_readings(dataset=policy.dataset, specs=specs):
        items = []
        for response in chunk:
            rid, external_id = response.response_id, response.external_id
            route = route_response(
                response.readings,
                panel_size=len(specs),
                compare=policy.compare,
                missing_is_disagreement=policy.missing_is_disagreement,
                control_fraction=policy.control_fraction,
                seed=policy.seed,
                response_key=external_id,
            )
            decision = route.decision
            if decision is None:
                report.pending += 1
                continue
            if rid in replaced:
                # Already in review (its labels were invalidated and it was re-opened when the text
                # changed): it stays, with the new readings as its reason and the old one kept.
                priority = _priority(policy, rid, external_id, decision)
                ReviewItem.objects.filter(policy=policy, response_id=rid).update(
                    reason={
                        **_reason(response.readings, decision),
                        "before_replacement": replaced[rid].get("before_replacement"),
                    },
                    priority=priority,
                )
                QueueItem.objects.filter(review_item__policy=policy, review_item__response_id=rid).update(
                    priority=priority
                )
                report.refreshed += 1
                continue
            report.count(route)
            if route.outcome == "agreeing":
                continue
            items.append(
                ReviewItem(
                    policy=policy,
                    response_id=rid,
                    is_control=route.outcome == "control",
                    priority=_priority(policy, rid, external_id, decision),
                    reason=_reason(response.readings, decision),
                )
            )
        ReviewItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    report.created = ReviewItem.objects.filter(policy=policy).count() - before
    for queue in ReviewQueue.objects.filter(policy=policy):
        report.queued += _queue_items_add(queue)
    return report


def _priority(policy: RoutingPolicy, rid: int, external_id: str, decision: Decision) -> float:
    if policy.priority == RoutingPolicy.Priority.RANDOM:
        return random_priority(seed=policy.seed, response_key=external_id)
    if policy.priority == RoutingPolicy.Priority.ORDER:
        return -float(rid)
    return decision.strength
