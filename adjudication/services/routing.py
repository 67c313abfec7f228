"""Routing disputed responses (and controls) into review items."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction

from readers import registry as reader_registry

from ..models import Dataset, ReaderSpec, Reading, Response, ReviewItem, RoutingPolicy
from ..routing import PanelReading, decide, is_control, random_priority
from .readings import reader_spec_for

CHUNK = 2000


@dataclass
class RouteReport:
    disputed: int = 0
    controls: int = 0
    agreeing: int = 0
    pending: int = 0  # responses still missing a reading by some panel reader
    created: int = 0


def routing_policy_create(
    *, dataset: Dataset, name: str, panel: list[str], compare: str = "either", missing_is_disagreement: bool = False,
    control_fraction: float = 0.0, seed: int = 0, priority: str = "disagreement",
) -> RoutingPolicy:
    if len(panel) < 2:
        raise ValueError("a routing panel needs at least two readers to disagree")
    if not 0.0 <= control_fraction <= 1.0:
        raise ValueError("control fraction must be between 0 and 1")
    if compare not in RoutingPolicy.Compare.values:
        raise ValueError(f"compare must be one of {', '.join(RoutingPolicy.Compare.values)}")
    if priority not in RoutingPolicy.Priority.values:
        raise ValueError(f"priority must be one of {', '.join(RoutingPolicy.Priority.values)}")
    specs = [reader_spec_for(reader=reader_registry.get(n)) for n in panel]
    with transaction.atomic():
        policy = RoutingPolicy.objects.create(
            dataset=dataset, name=name, compare=compare, missing_is_disagreement=missing_is_disagreement,
            control_fraction=control_fraction, seed=seed, priority=priority,
        )
        policy.panel.set(specs)
    return policy


def review_items_route(*, policy: RoutingPolicy) -> RouteReport:
    """Create a review item for every response the panel disputes, plus controls. Idempotent:
    each (policy, response) becomes an item at most once, however often this runs."""
    report = RouteReport()
    specs: list[ReaderSpec] = list(policy.panel.all())
    spec_names = {s.id: s.name for s in specs}
    ids = list(Response.objects.filter(dataset=policy.dataset).order_by("id").values_list("id", "external_id"))
    before = ReviewItem.objects.filter(policy=policy).count()
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        by_response: dict[int, list[PanelReading]] = defaultdict(list)
        readings = Reading.objects.filter(response_id__in=[i for i, _ in chunk], reader_spec__in=specs)
        for rid, spec_id, answer, normalized, verdict in readings.values_list(
                "response_id", "reader_spec_id", "answer", "normalized", "verdict"):
            by_response[rid].append(PanelReading(spec_names[spec_id], normalized if normalized is not None else answer,
                                                 verdict))
        items = []
        for rid, external_id in chunk:
            panel_readings = by_response.get(rid, [])
            if len(panel_readings) < len(specs):
                report.pending += 1
                continue
            decision = decide(panel_readings, compare=policy.compare,
                              missing_is_disagreement=policy.missing_is_disagreement)
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
            if policy.priority == RoutingPolicy.Priority.RANDOM:
                priority = random_priority(seed=policy.seed, response_key=external_id)
            elif policy.priority == RoutingPolicy.Priority.ORDER:
                priority = -float(rid)
            else:
                priority = decision.strength
            items.append(ReviewItem(
                policy=policy, response_id=rid, is_control=control, priority=priority,
                reason={"readings": {r.reader: {"answer": r.answer, "verdict": r.verdict} for r in panel_readings},
                        "distinct_answers": decision.distinct_answers,
                        "distinct_verdicts": decision.distinct_verdicts},
            ))
        ReviewItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    report.created = ReviewItem.objects.filter(policy=policy).count() - before
    return report
