"""Which human labels of a dataset come from one probability design, and with what probabilities:
the sample the prediction-powered estimates (analytics.estimates) weigh. Reads only.

Routing records, per routed item, its stratum and its probability of being routed
(ReviewItem.stratum, ReviewItem.inclusion_probability). A labelled item counts through its cell:

* ``<policy>/control``: the controls of a disagreement policy, drawn with the control fraction
  among the responses it does not dispute: N_c = population − the policy's disputed items.
* ``<policy>/information``: a randomized information policy's draw over every response but the
  unreadable ones: N_c = population − the unreadable stratum.
* ``<policy>/unreadable``: the responses no reader of the policy's panel could read, drawn with
  the policy's unreadable fraction: N_c = their number at the last routing (the control cell of a
  disagreement policy excludes them too).
* ``<policy>/disputed`` (priority random) or ``<policy>/disputed@<priority>`` (priorities
  disagreement and order): the disputed items, routed with probability 1. A queue serves them in
  priority order and at random only within equal priority, so each priority value is a cell of its
  own (N_c = its routed items): a cell whose items are all unlabelled has no label to stand for it,
  and the estimate is withheld rather than extrapolated from the higher priorities.

Within a cell of r routed items of which m carry a usable label, π_i = π_route_i · m / r: the
labelled items are a simple random sample of the routed ones, because the queue serves a seeded
shuffle within equal priority (controls are spread through the disputes in a seeded order of their
own, routing.rules.controls_spread), so a queue labelled part-way is still a probability sample.
A label with no correct / incorrect verdict (ambiguous, unresolved) is left out and counted; the
ones that remain are taken to be missing at random within their cell. Items with no probability
(greedy information routing, and its controls) are in no cell: labels outside the design.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db.models import Count

from adjudication.analytics.agreement import human_verdict
from adjudication.analytics.estimates import BINARY, Design, EstimateError
from adjudication.models import Dataset, FinalLabel, Response, ReviewItem, RoutingPolicy
from adjudication.routing.selectors import unreadable_responses

# Why a labelled response of the dataset is not in the sample (EstimateSample.left_out's keys).
NO_VERDICT = "no_verdict"  # labelled through the policy, but neither correct nor incorrect
OUTSIDE_DESIGN = "outside_design"  # routed with no known probability (greedy information routing)
OTHER_POLICY = "other_policy"  # labelled through another policy's design only


@dataclass(frozen=True)
class EstimateSample:
    """The human labels of one probability design: {response id: correct | incorrect}, their
    Design, the policy they come from (None: no policy of the dataset has a design label), the
    dataset's number of responses, and the labelled responses left out, by reason."""

    policy: str | None
    labels: dict[str, str]
    design: Design
    population: int
    left_out: dict[str, int] = field(default_factory=dict)


def _priority_name(priority: float) -> str:
    return str(int(priority)) if priority.is_integer() else repr(priority)


@dataclass
class _Policy:
    name: str
    priority: str
    sampling: str
    unreadable: int = 0  # the unreadable stratum's size at the last routing (RoutingPolicy.design)
    disputed: int = 0
    # cell -> routed items with a known probability
    routed: dict[str, int] = field(default_factory=dict)

    @property
    def probability_design(self) -> bool:
        information = self.priority == RoutingPolicy.Priority.INFORMATION
        return not information or self.sampling == RoutingPolicy.Sampling.RANDOMIZED

    def cell(self, stratum: str, priority: float) -> str | None:
        if stratum == ReviewItem.Stratum.DISPUTED and self.priority != RoutingPolicy.Priority.INFORMATION:
            if self.priority == RoutingPolicy.Priority.RANDOM:
                return f"{self.name}/disputed"
            return f"{self.name}/disputed@{_priority_name(priority)}"
        if stratum == ReviewItem.Stratum.CONTROL and self.priority != RoutingPolicy.Priority.INFORMATION:
            return f"{self.name}/control"
        if stratum == ReviewItem.Stratum.INFORMATION and self.priority == RoutingPolicy.Priority.INFORMATION:
            return f"{self.name}/information"
        if stratum == ReviewItem.Stratum.UNREADABLE and self.probability_design:
            return f"{self.name}/unreadable"
        return None

    def cell_sizes(self, population: int) -> dict[str, int]:
        """Every cell of the policy's design, labelled or not: its cells partition the population."""
        if not self.probability_design:
            return {}
        # The unreadable stratum (no panel reader could read them) is a cell of its own, present
        # even with none of it routed, like the controls' below.
        apart = {f"{self.name}/unreadable": self.unreadable} if self.unreadable else {}
        if self.priority == RoutingPolicy.Priority.INFORMATION:
            return {f"{self.name}/information": population - self.unreadable, **apart}
        sizes = {c: n for c, n in self.routed.items() if c not in (f"{self.name}/control", f"{self.name}/unreadable")}
        if population - self.disputed - self.unreadable > 0:
            # Present even with no control routed: the undisputed part of the population is then
            # in no sample, and the estimate must say so rather than leave it out.
            sizes[f"{self.name}/control"] = population - self.disputed - self.unreadable
        return {**sizes, **apart}


@dataclass(frozen=True)
class _Labelled:
    policy_id: int
    response: str
    stratum: str
    probability: float | None
    priority: float
    verdict: str | None


def _policies(dataset: Dataset) -> dict[int, _Policy]:
    policies = {
        pk: _Policy(name, priority, sampling, unreadable=int((design or {}).get("unreadable") or 0))
        for pk, name, priority, sampling, design in RoutingPolicy.objects.filter(dataset=dataset).values_list(
            "id", "name", "priority", "sampling", "design"
        )
    }
    items = ReviewItem.objects.filter(policy__dataset=dataset)
    for policy_id, n in (
        items.filter(stratum=ReviewItem.Stratum.DISPUTED)
        .values("policy_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("policy_id", "n")
    ):
        policies[policy_id].disputed = n
    grouped = (
        items.filter(inclusion_probability__isnull=False)
        .values("policy_id", "stratum", "priority")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("policy_id", "stratum", "priority", "n")
    )
    for policy_id, stratum, priority, n in grouped:
        policy = policies[policy_id]
        cell = policy.cell(stratum, priority)
        if cell is not None:
            policy.routed[cell] = policy.routed.get(cell, 0) + n
    return policies


def _labelled(dataset: Dataset) -> list[_Labelled]:
    """Each labelled review item of the dataset once, with the verdict of its newest standing final
    label over the queues built on its policy (human_observations' rule, per policy)."""
    rows = (
        FinalLabel.objects.filter(item__review_item__policy__dataset=dataset)
        .order_by("created_at", "id")
        .values_list(
            "item__review_item_id",
            "item__review_item__policy_id",
            "item__review_item__response_id",
            "item__review_item__stratum",
            "item__review_item__inclusion_probability",
            "item__review_item__priority",
            "kind",
            "answer",
            "correctness",
            "item__review_item__response__question__gold",
            "item__review_item__response__question__choices",
        )
    )
    newest: dict[int, tuple] = {}
    for row in rows.iterator(chunk_size=5000):
        newest[row[0]] = row  # oldest first: the last row per item is its newest label
    out = []
    for _, policy_id, rid, stratum, pi, priority, kind, answer, correctness, gold, choices in newest.values():
        verdict, _answer = human_verdict(kind, answer, correctness, gold, choices or ())
        out.append(_Labelled(policy_id, str(rid), stratum, pi, priority, verdict if verdict in BINARY else None))
    return out


def estimate_sample(*, dataset: Dataset, policy: str | None = None) -> EstimateSample:
    """The human labels of `policy`'s design (default: the probability design with the most
    labels), as the estimates take them. EstimateError (field "policy") for a policy the dataset
    does not have. A greedy information policy may be named: its labels are all outside the
    design, and the sample is empty."""
    policies = _policies(dataset)
    by_name = {p.name: pk for pk, p in policies.items()}
    if policy is not None and policy not in by_name:
        known = ", ".join(sorted(by_name)) or "none"
        raise EstimateError(
            f"dataset {dataset.name!r} has no routing policy {policy!r} (its policies: {known})", field="policy"
        )
    population = Response.objects.filter(dataset=dataset).count()
    labelled = _labelled(dataset)
    in_design: dict[int, list[_Labelled]] = defaultdict(list)
    for item in labelled:
        owner = policies[item.policy_id]
        if (
            owner.probability_design
            and item.probability is not None
            and item.verdict is not None
            and owner.cell(item.stratum, item.priority) is not None
        ):
            in_design[item.policy_id].append(item)
    if policy is not None:
        chosen: int | None = by_name[policy]
    else:
        # The most design labels; ties by name, so the choice does not depend on row order.
        ranked = sorted(in_design, key=lambda pk: (-len(in_design[pk]), policies[pk].name))
        chosen = ranked[0] if ranked else None
    if chosen is None:
        return EstimateSample(
            policy=None,
            labels={},
            design=Design(cell_of={}, probability={}, cell_sizes={}, name="no probability design"),
            population=population,
            left_out=_left_out(labelled, used=set(), chosen=None, policies=policies),
        )
    owner = policies[chosen]
    items = in_design.get(chosen, [])
    cells = {item.response: owner.cell(item.stratum, item.priority) or "" for item in items}
    labelled_per_cell: dict[str, int] = defaultdict(int)
    for cell in cells.values():
        labelled_per_cell[cell] += 1
    # π_route · m / r: the labelled items are a simple random sample of the cell's routed ones.
    probability = {
        item.response: (item.probability or 0.0) * labelled_per_cell[cell] / owner.routed[cell]
        for item in items
        for cell in (cells[item.response],)
    }
    used = set(cells)
    return EstimateSample(
        policy=owner.name,
        labels={item.response: item.verdict or "" for item in items},
        design=Design(
            cell_of=cells,
            probability=probability,
            cell_sizes=owner.cell_sizes(population),
            name=owner.name,
            population_cell=_population_cells(dataset, chosen, owner),
        ),
        population=population,
        left_out=_left_out(labelled, used=used, chosen=chosen, policies=policies),
    )


def _population_cells(dataset: Dataset, policy_id: int, owner: _Policy) -> dict[str, str]:
    """Every response's cell in the policy's design: its disputed cell if the policy routed it as
    disputed, else the control cell (or the one information cell). The estimates post-stratify
    each target's domain by these, with known sizes."""
    rest = (
        f"{owner.name}/information" if owner.priority == RoutingPolicy.Priority.INFORMATION else f"{owner.name}/control"
    )
    disputed = {
        str(rid): owner.cell(stratum, priority) or rest
        for rid, stratum, priority in ReviewItem.objects.filter(
            policy_id=policy_id, stratum=ReviewItem.Stratum.DISPUTED
        ).values_list("response_id", "stratum", "priority")
    }
    if owner.unreadable:
        # Routed or not, a response no panel reader could read is in the unreadable cell.
        specs = list(RoutingPolicy.objects.get(pk=policy_id).panel.all())
        unreadable = f"{owner.name}/unreadable"
        disputed |= {str(rid): unreadable for rid in unreadable_responses(dataset=dataset, specs=specs)}
    ids = Response.objects.filter(dataset=dataset).values_list("id", flat=True)
    return {str(rid): disputed.get(str(rid), rest) for rid in ids.iterator(chunk_size=10000)}


def _left_out(
    labelled: list[_Labelled], *, used: set[str], chosen: int | None, policies: Mapping[int, _Policy]
) -> dict[str, int]:
    """The labelled responses of the dataset not in the sample, each counted once, by reason. A
    response labelled through the chosen policy: its label has no verdict, or its item is outside
    the design. Otherwise: a label in another policy's design, else outside any design."""
    reason_of: dict[str, tuple[int, str]] = {}  # response -> (rank, reason): the lowest rank wins
    for item in labelled:
        if item.response in used:
            continue
        owner = policies[item.policy_id]
        designed = (
            owner.probability_design
            and item.probability is not None
            and owner.cell(item.stratum, item.priority) is not None
        )
        if item.policy_id == chosen:
            found = (0, NO_VERDICT if designed else OUTSIDE_DESIGN)
        else:
            found = (1, OTHER_POLICY) if designed else (2, OUTSIDE_DESIGN)
        reason_of[item.response] = min(found, reason_of.get(item.response, found))
    out: dict[str, int] = defaultdict(int)
    for _, reason in reason_of.values():
        out[reason] += 1
    return dict(out)
