"""Routing disputed responses (and controls) into review items, and keeping the queues built on a
policy in step with it. Information policies route by label value for a target instead, and their
priorities are refitted after final labels (routing.refresh.information_refresh_request -> the Celery
task -> information_refresh_claimed)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from adjudication.errors import ApplicationError
from adjudication.fields import json_safe
from adjudication.models import (
    Dataset,
    FinalLabel,
    QueueItem,
    ReaderSpec,
    Reading,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
)
from adjudication.pipeline.readings import reader_spec_for
from adjudication.revisions import dataset_changed
from adjudication.routing.rules import (
    Compare,
    Decision,
    PanelReading,
    information_priorities,
    random_priority,
    route_response,
)
from adjudication.routing.selectors import (
    RouteCounts,
    dataset_readers,
    information_fit,
    information_picks,
    panel_readings,
)
from adjudication.routing.specs import PolicySpec, RoutingError, UnknownPanelReader
from readers import registry as reader_registry


@dataclass
class RouteReport(RouteCounts):
    created: int = 0
    refreshed: int = 0  # items whose response was replaced, routed again on the new readings
    queued: int = 0  # queue items added to the queues built on the policy
    informative: int = 0  # information policies: items routed by label value (the rest are controls)


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
    except reader_registry.UnknownReader as unknown:
        found = [s for s in dataset_readers(dataset=dataset) if s.name == reader]
        if len(found) == 1:
            return found[0]
        if found:
            raise RoutingError(
                f"several versions of reader {reader!r} have read dataset {dataset.name!r}; "
                "choose one on the queue form (/queues/new/)",
                field="panel",
            ) from None
        raise UnknownPanelReader(str(unknown), field="panel") from None


def routing_policy_create(*, dataset: Dataset, name: str, spec: PolicySpec) -> RoutingPolicy:
    """A routing policy over `spec.panel`: reader names (see panel_spec) or the specs themselves.
    With priority "information", the spec's target is checked against the dataset's consensus fit
    now."""
    if len(spec.panel) < 2:
        raise RoutingError("a routing panel needs at least two readers to disagree", field="panel")
    policy = RoutingPolicy(dataset=dataset, name=name, **spec.settings())
    try:
        # The spec checked the settings; the model's validators check the name (one printable line).
        policy.full_clean()
    except ValidationError as exc:
        raise RoutingError(validation_message(exc)) from None
    _check_information(policy)
    specs = [panel_spec(dataset=dataset, reader=member) for member in spec.panel]
    if len({s.pk for s in specs}) < 2:
        raise RoutingError("a routing panel needs at least two readers to disagree", field="panel")
    try:
        with transaction.atomic():
            policy.save()
            policy.panel.set(specs)
    except IntegrityError:
        raise RoutingError(f"a routing policy named {name!r} exists already on dataset {dataset.name!r}") from None
    return policy


def _check_information(policy: RoutingPolicy) -> None:
    if policy.priority != RoutingPolicy.Priority.INFORMATION:
        return
    try:
        # parse_target's message lists the accepted forms; check_target's names what the fit has.
        information_fit(dataset=policy.dataset, target=policy.target)
    except ApplicationError as exc:
        raise RoutingError(f"priority information: {exc.message}") from None


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
    if policy.priority == RoutingPolicy.Priority.INFORMATION:
        return _route_information(policy)
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
                compare=cast(Compare, policy.compare),  # the column holds one of its choices, Compare's values
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


def _route_information(policy: RoutingPolicy) -> RouteReport:
    """Route by label value for the policy's target: the budget (else every response whose label
    tells something) minus what the policy holds already, a random share of it drawn uniformly as
    controls; then every not-yet-labelled item of the policy is re-prioritised on the same fit."""
    report = RouteReport()
    fit = information_fit(dataset=policy.dataset, target=policy.target)
    held = set(ReviewItem.objects.filter(policy=policy).values_list("response_id", flat=True))
    picks = information_picks(
        fit=fit, held=held, budget=policy.budget, control_fraction=policy.control_fraction, seed=policy.seed
    )
    drawn, informative, taken = picks.controls, picks.informative, set(picks.controls)
    panel = {s.pk: s.name for s in policy.panel.all()}
    readings = _panel_readings_of(panel, [*drawn, *informative])
    target = str(fit.target)
    items = [
        ReviewItem(
            policy=policy,
            response_id=i,
            is_control=i in taken,
            priority=fit.values[i],
            reason=json_safe(
                {
                    "readings": readings.get(i, {}),
                    "information": {"target": target, "pick": "random" if i in taken else "information"},
                }
            ),
        )
        for i in (*drawn, *informative)
    ]
    ReviewItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    report.created = ReviewItem.objects.filter(policy=policy).count() - len(held)
    report.controls, report.informative = len(drawn), len(informative)
    report.refreshed = _information_reasons_renew(policy, panel, target)
    _information_priorities_write(policy, fit.values)
    for queue in ReviewQueue.objects.filter(policy=policy):
        report.queued += _queue_items_add(queue)
    return report


def _information_reasons_renew(policy: RoutingPolicy, panel: dict[int, str], target: str) -> int:
    """Items whose response was replaced since they were routed (the reason holds only the old one):
    they stay, with the new readings as their reason and the old reason kept."""
    replaced = [
        (pk, rid, control, reason)
        for pk, rid, control, reason in ReviewItem.objects.filter(policy=policy, replaced_at__isnull=False)
        .order_by("id")
        .values_list("id", "response_id", "is_control", "reason")
        if "readings" not in reason
    ]
    readings = _panel_readings_of(panel, [rid for _, rid, _, _ in replaced])
    for pk, rid, control, reason in replaced:
        renewed = {
            "readings": readings.get(rid, {}),
            "information": {"target": target, "pick": "random" if control else "information"},
            "before_replacement": reason.get("before_replacement"),
        }
        ReviewItem.objects.filter(pk=pk).update(reason=json_safe(renewed))
    return len(replaced)


def _panel_readings_of(panel: dict[int, str], response_ids: list[int]) -> dict[int, dict[str, dict]]:
    """{response id: {panel reader: {answer, verdict}}}: the manager-facing provenance of the reason."""
    out: dict[int, dict[str, dict]] = {}
    rows = Reading.objects.filter(response_id__in=response_ids, reader_spec_id__in=list(panel))
    for rid, sid, answer, verdict in rows.values_list("response_id", "reader_spec_id", "answer", "verdict"):
        out.setdefault(rid, {})[panel[sid]] = {"answer": answer, "verdict": verdict}
    return out


def _information_priorities_write(policy: RoutingPolicy, values: Mapping[int, float]) -> int:
    """Rewrite the priority of the policy's items no final label has settled yet, and of their open
    queue items; returns how many review items changed."""
    settled = FinalLabel.objects.filter(item__review_item__policy=policy, invalidated_at__isnull=True)
    open_items = list(
        ReviewItem.objects.filter(policy=policy)
        .exclude(id__in=settled.values("item__review_item_id"))
        .order_by("id")  # rows locked in one order by every writer: two refits never deadlock
        .values_list("id", "response_id", "is_control", "priority")
    )
    priorities = information_priorities(
        values=values,
        informative=[rid for _, rid, control, _ in open_items if not control],
        controls=[rid for _, rid, control, _ in open_items if control],
        seed=policy.seed,
    )
    changed = [ReviewItem(id=pk, priority=priorities[rid]) for pk, rid, _, old in open_items if priorities[rid] != old]
    ReviewItem.objects.bulk_update(changed, ["priority"], batch_size=1000)
    by_item = {ri.id: ri.priority for ri in changed}
    queue_items = [
        QueueItem(id=pk, priority=by_item[ri])
        for pk, ri in QueueItem.objects.filter(review_item_id__in=list(by_item), status=QueueItem.Status.OPEN)
        .order_by("id")
        .values_list("id", "review_item_id")
    ]
    QueueItem.objects.bulk_update(queue_items, ["priority"], batch_size=1000)
    return len(changed)


def _priority(policy: RoutingPolicy, rid: int, external_id: str, decision: Decision) -> float:
    if policy.priority == RoutingPolicy.Priority.RANDOM:
        return random_priority(seed=policy.seed, response_key=external_id)
    if policy.priority == RoutingPolicy.Priority.ORDER:
        return -float(rid)
    return decision.strength


@dataclass(frozen=True)
class RefreshReport:
    refitted: bool  # False: another refit had claimed the request already, or the policy is gone
    changed: int = 0  # review items whose priority changed


def information_priorities_refresh(*, policy: RoutingPolicy) -> int:
    """Refit the consensus with the current final human labels and rewrite the priorities of the
    policy's not-yet-labelled items (and their open queue items), so that the next claim serves the
    item now most informative for the target. The fit runs outside any transaction (it takes
    seconds on a large dataset); the writes are one short transaction. Returns how many changed."""
    fit = information_fit(dataset=policy.dataset, target=policy.target)
    with transaction.atomic():
        return _information_priorities_write(policy, fit.values)


def information_refresh_claimed(*, policy_id: int) -> RefreshReport:
    """The task's service: claim the pending request (compare-and-set: clear it if still set; of
    two deliveries, one refits), then refit. A label that lands after the claim makes a new request,
    so no label is left out of the priorities; one that landed before it is in the refit."""
    claimed = RoutingPolicy.objects.filter(pk=policy_id, refresh_requested_at__isnull=False).update(
        refresh_requested_at=None
    )
    policy = RoutingPolicy.objects.select_related("dataset").filter(pk=policy_id).first() if claimed else None
    if policy is None:
        return RefreshReport(refitted=False)
    return RefreshReport(refitted=True, changed=information_priorities_refresh(policy=policy))
