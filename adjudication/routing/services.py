"""Routing disputed responses (and controls) into review items, and keeping the queues built on a
policy in step with it. Every item records its stratum and inclusion probability (the sampling
design the estimates weigh labels by). Information policies route for a target instead: randomized
ones draw once, every response with a known probability; greedy ones (unfit for estimates) take the
top label values and have their priorities refitted after final labels
(routing.refresh.information_refresh_request -> the Celery task -> information_refresh_claimed)."""

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
    Response,
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
    controls_spread,
    controls_tiebreaks,
    is_unreadable_drawn,
    random_priority,
    route_response,
)
from adjudication.routing.selectors import (
    RouteCounts,
    dataset_readers,
    information_draw,
    information_fit,
    information_picks,
    panel_readings,
    unreadable_responses,
)
from adjudication.routing.specs import PolicySpec, RoutingError, UnknownPanelReader
from readers import registry as reader_registry


@dataclass
class RouteReport(RouteCounts):
    created: int = 0
    refreshed: int = 0  # items whose response was replaced, routed again on the new readings
    queued: int = 0  # queue items added to the queues built on the policy
    informative: int = 0  # information policies: items drawn (randomized) or routed by label value (greedy)


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
            _controls_place(queue)
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


def _controls_place(queue: ReviewQueue) -> int:
    """Serve the queue's open controls, and its open unreadable items, evenly spread through its
    other open items (rules.controls_tiebreaks), each in the policy's seeded order (the one
    controls_spread gave their priorities by). A random-priority policy interleaves them already.
    Returns how many tiebreaks changed."""
    policy = queue.policy
    if policy.priority == RoutingPolicy.Priority.RANDOM:
        return 0
    rows = list(
        QueueItem.objects.filter(queue=queue, status=QueueItem.Status.OPEN)
        .order_by("id")
        .values_list("id", "priority", "tiebreak", "review_item__stratum", "review_item__response_id")
    )
    others = [(priority, tiebreak) for _, priority, tiebreak, stratum, _ in rows if stratum not in _SPREAD]
    placed: dict[int, int] = {}
    for spread in _SPREAD:
        group = sorted(
            ((pk, priority, rid) for pk, priority, _, stratum, rid in rows if stratum == spread),
            key=lambda c: random_priority(seed=policy.seed, response_key=str(c[2])),
        )
        placed |= controls_tiebreaks(others=others, controls=[(pk, priority) for pk, priority, _ in group])
    held = {pk: tiebreak for pk, _, tiebreak, _, _ in rows}
    changed = [QueueItem(id=pk, tiebreak=t) for pk, t in placed.items() if held[pk] != t]
    QueueItem.objects.bulk_update(changed, ["tiebreak"], batch_size=1000)
    return len(changed)


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
                unreadable_fraction=policy.unreadable_fraction,
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
            if route.outcome in ("agreeing", "unreadable_left"):
                continue
            control = route.outcome == "control"
            # Disputed: always routed; a control: drawn among the undisputed with the policy's
            # fraction (rules.is_control); unreadable: drawn among the responses no panel reader
            # could read with the policy's unreadable fraction (rules.is_unreadable_drawn).
            stratum, probability = {
                "disputed": (ReviewItem.Stratum.DISPUTED, 1.0),
                "control": (ReviewItem.Stratum.CONTROL, policy.control_fraction),
                "unreadable": (ReviewItem.Stratum.UNREADABLE, policy.unreadable_fraction),
            }[route.outcome]
            items.append(
                ReviewItem(
                    policy=policy,
                    response_id=rid,
                    is_control=control,
                    stratum=stratum,
                    inclusion_probability=probability,
                    priority=_priority(policy, rid, external_id, decision),
                    reason=_reason(response.readings, decision),
                )
            )
        ReviewItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    report.created = ReviewItem.objects.filter(policy=policy).count() - before
    if policy.priority != RoutingPolicy.Priority.RANDOM:
        # A random priority interleaves the controls already; the others would serve every
        # control after the last dispute (an agreeing item's strength is 0).
        _open_priorities_write(policy, None)
    _design_record(
        policy,
        {
            "population": Response.objects.filter(dataset_id=policy.dataset_id).count(),
            "disputed": ReviewItem.objects.filter(policy=policy, stratum=ReviewItem.Stratum.DISPUTED).count(),
            "undisputed": report.agreeing,
            "unreadable": report.unreadable,
            "pending": report.pending,
        },
    )
    for queue in ReviewQueue.objects.filter(policy=policy).select_related("policy"):
        report.queued += _queue_items_add(queue)
        _controls_place(queue)
    return report


def _design_record(policy: RoutingPolicy, design: dict) -> None:
    policy.design = design
    RoutingPolicy.objects.filter(pk=policy.pk).update(design=design)


def _route_information(policy: RoutingPolicy) -> RouteReport:
    if policy.sampling == RoutingPolicy.Sampling.GREEDY:
        return _route_greedy(policy)
    return _route_drawn(policy)


# One priority for every drawn item: the queue's seeded tiebreak shuffle is then the serving order,
# so the items labelled first are a simple random sample of the drawn ones.
DRAWN_PRIORITY = 0.0


def _route_drawn(policy: RoutingPolicy) -> RouteReport:
    """A randomized information policy: one Poisson draw over every response of the dataset, with
    the inclusion probabilities of the policy's target on the consensus fit now (the budget as the
    expected size). It draws once: a second draw under a refitted model would mix two designs, so
    routing again only renews replaced responses' reasons and fills the policy's queues."""
    report = RouteReport()
    specs = list(policy.panel.all())
    panel = {s.pk: s.name for s in specs}
    # Locked: of two routings racing on a new policy, one draws.
    locked = RoutingPolicy.objects.select_for_update().only("design").get(pk=policy.pk)
    if not locked.design:
        fit = information_fit(dataset=policy.dataset, target=policy.target)
        unreadable = unreadable_responses(dataset=policy.dataset, specs=specs)
        draw = information_draw(
            dataset=policy.dataset,
            fit=fit,
            budget=policy.budget,
            control_fraction=policy.control_fraction,
            seed=policy.seed,
            excluded=unreadable,
        )
        readings = _panel_readings_of(panel, draw.drawn)
        items = [
            ReviewItem(
                policy=policy,
                response_id=i,
                stratum=ReviewItem.Stratum.INFORMATION,
                inclusion_probability=draw.probabilities[i],
                priority=DRAWN_PRIORITY,
                reason=json_safe(
                    {
                        "readings": readings.get(i, {}),
                        "information": {
                            "target": policy.target,
                            "pick": "drawn",
                            "value": fit.values.get(i, 0.0),
                            "probability": draw.probabilities[i],
                        },
                    }
                ),
            )
            for i in draw.drawn
        ]
        informative = len(items)
        items += _unreadable_items(policy, unreadable, panel, priority=DRAWN_PRIORITY)
        ReviewItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
        report.created, report.informative = len(items), informative
        report.unreadable, report.unreadable_routed = len(unreadable), len(items) - informative
        _design_record(policy, {**draw.design(), "unreadable": len(unreadable)})
    else:
        policy.design = locked.design
    report.refreshed = _information_reasons_renew(policy, panel, policy.target)
    for queue in ReviewQueue.objects.filter(policy=policy):
        report.queued += _queue_items_add(queue)
    return report


def _route_greedy(policy: RoutingPolicy) -> RouteReport:
    """A greedy information policy (unfit for estimates): the budget (else every response whose
    label tells something) minus what the policy holds already by label value, a random share of it
    drawn uniformly as controls; then every not-yet-labelled item of the policy is re-prioritised on
    the same fit."""
    report = RouteReport()
    fit = information_fit(dataset=policy.dataset, target=policy.target)
    specs = list(policy.panel.all())
    unreadable = unreadable_responses(dataset=policy.dataset, specs=specs)
    held = set(
        ReviewItem.objects.filter(policy=policy)
        .exclude(stratum=ReviewItem.Stratum.UNREADABLE)
        .values_list("response_id", flat=True)
    )
    picks = information_picks(
        fit=fit,
        held=held,
        budget=policy.budget,
        control_fraction=policy.control_fraction,
        seed=policy.seed,
        excluded=unreadable,
    )
    drawn, informative, taken = picks.controls, picks.informative, set(picks.controls)
    panel = {s.pk: s.name for s in specs}
    readings = _panel_readings_of(panel, [*drawn, *informative])
    target = str(fit.target)
    items = [
        ReviewItem(
            policy=policy,
            response_id=i,
            is_control=i in taken,
            # No known probability: the picks by value are chosen, not drawn, and the controls'
            # chance depends on the pool and budget of every run.
            stratum=ReviewItem.Stratum.CONTROL if i in taken else ReviewItem.Stratum.GREEDY,
            inclusion_probability=None,
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
    # The unreadable stratum: drawn apart (each run draws the same ones: a seeded hash per response).
    items += _unreadable_items(policy, unreadable, panel, priority=0.0)
    before = ReviewItem.objects.filter(policy=policy).count()
    ReviewItem.objects.bulk_create(items, ignore_conflicts=True, batch_size=1000)
    report.created = ReviewItem.objects.filter(policy=policy).count() - before
    report.unreadable = len(unreadable)
    report.unreadable_routed = ReviewItem.objects.filter(policy=policy, stratum=ReviewItem.Stratum.UNREADABLE).count()
    _design_record(policy, {"unreadable": len(unreadable)})
    report.controls, report.informative = len(drawn), len(informative)
    report.refreshed = _information_reasons_renew(policy, panel, target)
    _open_priorities_write(policy, fit.values)
    for queue in ReviewQueue.objects.filter(policy=policy).select_related("policy"):
        report.queued += _queue_items_add(queue)
        _controls_place(queue)
    return report


def _unreadable_items(
    policy: RoutingPolicy, unreadable: Mapping[int, str], panel: dict[int, str], *, priority: float
) -> list[ReviewItem]:
    """Review items for the responses of the unreadable stratum (no panel reader could read them)
    that the policy's unreadable fraction draws (rules.is_unreadable_drawn)."""
    drawn = [
        rid
        for rid, external_id in unreadable.items()
        if is_unreadable_drawn(seed=policy.seed, response_key=external_id, fraction=policy.unreadable_fraction)
    ]
    readings = _panel_readings_of(panel, drawn)
    return [
        ReviewItem(
            policy=policy,
            response_id=rid,
            stratum=ReviewItem.Stratum.UNREADABLE,
            inclusion_probability=policy.unreadable_fraction,
            priority=priority,
            reason=json_safe({"readings": readings.get(rid, {}), "unreadable": True}),
        )
        for rid in drawn
    ]


# What an information item's reason calls its pick, by its stratum.
_PICK = {"control": "random", "greedy": "information", "information": "drawn", "unreadable": "unreadable"}


def _information_reasons_renew(policy: RoutingPolicy, panel: dict[int, str], target: str) -> int:
    """Items whose response was replaced since they were routed (the reason holds only the old one):
    they stay, with the new readings as their reason and the old reason kept."""
    replaced = [
        (pk, rid, stratum, reason)
        for pk, rid, stratum, reason in ReviewItem.objects.filter(policy=policy, replaced_at__isnull=False)
        .order_by("id")
        .values_list("id", "response_id", "stratum", "reason")
        if "readings" not in reason
    ]
    readings = _panel_readings_of(panel, [rid for _, rid, _, _ in replaced])
    for pk, rid, stratum, reason in replaced:
        old = reason.get("before_replacement") or {}
        renewed = {
            "readings": readings.get(rid, {}),
            "information": {
                **(old.get("information") or {}),
                "target": target,
                "pick": _PICK.get(stratum, "information"),
            },
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


# The strata drawn at random that a queue serves spread evenly through its other items, each from
# its first item: the controls and the unreadable responses.
_SPREAD = (ReviewItem.Stratum.CONTROL, ReviewItem.Stratum.UNREADABLE)


def _open_priorities_write(policy: RoutingPolicy, own: Mapping[int, float] | None) -> int:
    """Rewrite the priority of the policy's items no final label has settled yet, and of their open
    queue items: the controls, and the unreadable items, spread evenly through the other items'
    priorities (rules.controls_spread), each other item at its `own` priority (the label values of a greedy
    information policy; None: the priority it holds, a dispute's strength or its import order).
    Returns how many review items changed."""
    settled = FinalLabel.objects.filter(item__review_item__policy=policy, invalidated_at__isnull=True)
    open_items = list(
        ReviewItem.objects.filter(policy=policy)
        .exclude(id__in=settled.values("item__review_item_id"))
        .order_by("id")  # rows locked in one order by every writer: two refits never deadlock
        .values_list("id", "response_id", "stratum", "priority")
    )
    own_priorities = {
        rid: (old if own is None else own.get(rid, 0.0))
        for _, rid, stratum, old in open_items
        if stratum not in _SPREAD
    }
    priorities = dict(own_priorities)
    for spread in _SPREAD:
        # Each random stratum spread through the others on its own (rules.controls_spread).
        group = [rid for _, rid, stratum, _ in open_items if stratum == spread]
        priorities.update(controls_spread(priorities=own_priorities, controls=group, seed=policy.seed))
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
    """Refit the consensus with the current final human labels and rewrite the priorities of a
    greedy policy's not-yet-labelled items (and their open queue items), so that the next claim
    serves the item now most informative for the target. The fit runs outside any transaction (it
    takes seconds on a large dataset); the writes are one short transaction. Returns how many
    changed. A randomized policy: nothing (its draw and its serving order stay: reordering by a
    refitted model would make the labelled items no longer a random sample of the drawn ones)."""
    if policy.sampling != RoutingPolicy.Sampling.GREEDY:
        return 0
    fit = information_fit(dataset=policy.dataset, target=policy.target)
    with transaction.atomic():
        changed = _open_priorities_write(policy, fit.values)
        for queue in ReviewQueue.objects.filter(policy=policy).select_related("policy"):
            _controls_place(queue)
        return changed


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
