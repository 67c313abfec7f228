"""Reads of the routing: a dataset's readers, the panel's readings response by response, what a
policy would route (the preview a manager sees before creating a queue), and the consensus fit an
information policy routes by, with its draw (randomized) or its picks (greedy). Nothing here
writes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from adjudication.analytics.allocation import (
    Target,
    TargetEstimate,
    check_target,
    choose_labels,
    design_floor,
    inclusion_probabilities,
    label_values,
    parse_target,
    poisson_draw,
    target_estimate,
)
from adjudication.analytics.consensus import consensus
from adjudication.analytics.selectors import consensus_inputs
from adjudication.models import Dataset, ReaderSpec, Reading, Response
from adjudication.pipeline.selectors import dataset_task_types, default_panel
from adjudication.routing.rules import (
    READS_NOTHING,
    PanelReading,
    Route,
    comparable_answer,
    route_response,
)
from adjudication.routing.specs import PolicySpec, RoutingError
from readers import registry as reader_registry
from readers.tasks import TASK_TYPE_LABELS

CHUNK = 2000


@dataclass
class RouteCounts:
    """How many responses of a dataset a panel disputes, how many are drawn as controls, how many
    it agrees on (controls included), how many no panel reader could read (`unreadable`, of which
    `unreadable_routed` are drawn into review) and how many still lack a reading by some panel
    reader."""

    disputed: int = 0
    controls: int = 0
    agreeing: int = 0
    pending: int = 0
    unreadable: int = 0
    unreadable_routed: int = 0

    def count(self, route: Route) -> None:
        if route.outcome == "pending":
            self.pending += 1
        elif route.outcome == "disputed":
            self.disputed += 1
        elif route.outcome in ("unreadable", "unreadable_left"):
            self.unreadable += 1
            self.unreadable_routed += route.outcome == "unreadable"
        else:
            self.agreeing += 1
            if route.outcome == "control":
                self.controls += 1

    @property
    def routed(self) -> int:
        """Responses that become review items: the disputed ones, the controls and the unreadable
        ones drawn."""
        return self.disputed + self.controls + self.unreadable_routed

    @property
    def population(self) -> int:
        """Every response of the dataset: disputed, agreed on, unreadable or still unread."""
        return self.disputed + self.agreeing + self.unreadable + self.pending

    @property
    def routed_share(self) -> float:
        return self.routed / self.population if self.population else 0.0


def dataset_readers(*, dataset: Dataset) -> list[ReaderSpec]:
    """Every reader spec (rule readers, LLM judges, regenerations) with at least one reading of the
    dataset, by kind and name. One EXISTS per spec, not a join over every reading."""
    read = Reading.objects.filter(reader_spec=OuterRef("pk"), response__dataset=dataset)
    return list(ReaderSpec.objects.filter(Exists(read)).order_by("kind", "name", "version", "id"))


@dataclass(frozen=True)
class PanelPreset:
    """A panel to tick on the queue form: the default panel of one task type (`key`, a
    readers.tasks task type; "default": the dataset's own task types together) among the readers
    that have read the dataset."""

    key: str
    label: str
    questions: int  # the dataset's questions of that task type (all of them for "default")
    reader_ids: list[int]


def panel_presets(*, dataset: Dataset, readers: Sequence[ReaderSpec]) -> list[PanelPreset]:
    """The queue form's presets: first the dataset's default panel (the readers that apply to its
    questions' task types: what the form ticks to begin with), then one per task type present, most
    questions first. A preset holds only rule readers that have read the dataset."""
    task_types = dataset_task_types(dataset_id=dataset.pk)

    def ids(names: list[str]) -> list[int]:
        wanted = set(names)
        return [r.pk for r in readers if r.kind == "rule" and r.name in wanted]

    kinds = ", ".join(TASK_TYPE_LABELS.get(t, t) for t in task_types) or "no questions"
    default = ids(default_panel(task_types=task_types))
    presets = [PanelPreset("default", f"default for this dataset ({kinds})", sum(task_types.values()), default)]
    for task_type, n in task_types.items():
        label = TASK_TYPE_LABELS.get(task_type, task_type)
        presets.append(PanelPreset(task_type, label, n, ids(default_panel(task_types=[task_type]))))
    return presets


# A panel that routes more than this share of a dataset does not select anything for review: the
# queue form warns rather than showing the count as a success.
MOST_OF_DATASET = 0.5


def route_preview_warning(
    *, counts: RouteCounts, panel: Sequence[ReaderSpec], task_types: Collection[str]
) -> str | None:
    """Why a previewed panel routes most of the dataset, or None when it routes at most
    MOST_OF_DATASET of it. Readers whose task types are none of the dataset's are named: they find
    no answer, or a wrong kind of one, on nearly every response, and so dispute everything."""
    if counts.routed_share <= MOST_OF_DATASET:
        return None
    outside = []
    for spec in panel:
        try:
            applies = reader_registry.get(spec.name).applicable_task_types()
        except reader_registry.UnknownReader:
            continue  # an LLM judge or a plugin gone: no declared task types to check
        if not applies & set(task_types):
            outside.append(spec.name)
    share = f"{counts.routed} of {counts.population} responses ({counts.routed_share:.0%})"
    if outside:
        kinds = ", ".join(TASK_TYPE_LABELS.get(t, t) for t in task_types)
        return (
            f"This panel routes {share}: most of the dataset, so review would not be selective. "
            f"{', '.join(outside)} do{'es' if len(outside) == 1 else ''} not apply to this dataset's questions "
            f"({kinds}) and dispute{'s' if len(outside) == 1 else ''} nearly every response: "
            f"untick {'it' if len(outside) == 1 else 'them'}, or use the preset for the task type."
        )
    return (
        f"This panel routes {share}: most of the dataset, so review would not be selective. Its readers "
        "disagree on most responses: compare by verdict only, leave out a reader that reads another answer "
        "format, or route by information with a budget."
    )


@dataclass(frozen=True)
class ResponseReadings:
    response_id: int
    external_id: str
    readings: list[PanelReading]


def panel_readings(*, dataset: Dataset, specs: Sequence[ReaderSpec]) -> Iterator[list[ResponseReadings]]:
    """The dataset's responses in id order, in chunks, each with its readings by the panel's specs,
    compared on one answer form whoever read them (routing.rules.comparable_answer)."""
    names = {s.id: s.name for s in specs}
    ids = list(Response.objects.filter(dataset=dataset).order_by("id").values_list("id", "external_id"))
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        by_response: dict[int, list[PanelReading]] = defaultdict(list)
        rows = Reading.objects.filter(response_id__in=[i for i, _ in chunk], reader_spec__in=list(specs))
        for rid, spec_id, answer, normalized, canonical, verdict in rows.values_list(
            "response_id", "reader_spec_id", "answer", "normalized", "canonical", "verdict"
        ):
            by_response[rid].append(
                PanelReading(
                    names[spec_id],
                    comparable_answer(canonical=canonical, normalized=normalized, answer=answer),
                    verdict,
                )
            )
        yield [ResponseReadings(rid, external_id, by_response.get(rid, [])) for rid, external_id in chunk]


def unreadable_responses(*, dataset: Dataset, specs: Sequence[ReaderSpec]) -> dict[int, str]:
    """{response id: external id} of the responses every panel reader has read and none could read
    (each reading no_answer, error, timeout or not_applicable): the unreadable stratum."""
    if not specs:
        return {}
    # Counted in the database: only verdicts matter here, and building every panel reading of a
    # large dataset in Python took seconds of the analytics report (100,000 responses: 3.5 s).
    # A response has at most one reading per reader, so "every reader has read it" is a count.
    rows = (
        Reading.objects.filter(response__dataset=dataset, reader_spec__in=list(specs))
        .values("response_id", "response__external_id")
        .annotate(read=Count("id"), readable=Count("id", filter=~Q(verdict__in=READS_NOTHING)))
        .filter(read__gte=len(specs), readable=0)
        .order_by("response_id")
        .values_list("response_id", "response__external_id")
    )
    return dict(rows)


def route_preview(*, dataset: Dataset, spec: PolicySpec) -> RouteCounts:
    """What a new policy with these settings (its panel: specs) would route now, computed without
    writing anything: the same per-response decision (routing.rules.route_response) as the routing
    itself."""
    panel = [member for member in spec.panel if isinstance(member, ReaderSpec)]
    if len(panel) != len(spec.panel):
        raise TypeError("route_preview takes a panel of reader specs, not names")
    counts = RouteCounts()
    for chunk in panel_readings(dataset=dataset, specs=panel):
        for response in chunk:
            counts.count(
                route_response(
                    response.readings,
                    panel_size=len(panel),
                    compare=spec.compare,
                    missing_is_disagreement=spec.missing_is_disagreement,
                    control_fraction=spec.control_fraction,
                    unreadable_fraction=spec.unreadable_fraction,
                    seed=spec.seed,
                    response_key=response.external_id,
                )
            )
    return counts


@dataclass(frozen=True)
class InformationFit:
    """A consensus fit over every producer's verdicts and the final human labels, and what a label
    on each response would tell about the target: {response id: label value} (analytics.allocation)."""

    target: Target
    values: dict[int, float]
    estimate: TargetEstimate


def information_fit(*, dataset: Dataset, target: str) -> InformationFit:
    """Fit the dataset's panel consensus now (no bootstrap) and value every response for `target`.
    TargetError on a target that does not parse or names no group or producer of the fit;
    RoutingError on a dataset with no correct / incorrect verdict to fit."""
    parsed = parse_target(target)
    inputs = consensus_inputs(dataset=dataset)
    try:
        result = consensus(inputs, n_boot=0)
    except ValueError as exc:
        raise RoutingError(f"dataset {dataset.name!r}: no consensus to route by information ({exc})") from None
    check_target(parsed, inputs, result)
    values = {int(item): value for item, value in label_values(parsed, inputs, result).items()}
    return InformationFit(parsed, values, target_estimate(parsed, inputs, result))


@dataclass(frozen=True)
class InformationPicks:
    """A greedy information policy's next items (unfit for estimates: the picks by value have no
    known probability)."""

    controls: list[int]  # drawn uniformly at random among the responses not yet routed
    informative: list[int]  # the highest label values among the rest

    @property
    def routed(self) -> int:
        return len(self.controls) + len(self.informative)


def information_picks(
    *,
    fit: InformationFit,
    held: Collection[int],
    budget: int | None,
    control_fraction: float,
    seed: int,
    excluded: Collection[int] = (),
) -> InformationPicks:
    """What an information policy routes next: the budget less what it holds (no budget: every
    response whose label tells something), round(k · control_fraction) of them drawn at random as
    controls, the rest by label value. Two draws, so that which pick is a control is known.
    `excluded` (the unreadable stratum, drawn apart) is never picked."""
    values = {str(rid): v for rid, v in fit.values.items()}
    pool = [str(rid) for rid in fit.values if rid not in held and rid not in excluded]
    k = max(budget - len(held), 0) if budget is not None else sum(values[i] > 0 for i in pool)
    k = min(k, len(pool))
    n_random = round(k * control_fraction)
    drawn = choose_labels(values, k=n_random, random_share=1.0, seed=seed, candidates=pool)
    taken = set(drawn)
    informative = choose_labels(values, k=k - n_random, seed=seed, candidates=[i for i in pool if i not in taken])
    return InformationPicks([int(i) for i in drawn], [int(i) for i in informative])


@dataclass(frozen=True)
class InformationDraw:
    """A randomized information policy's draw: every response of the dataset (the population) has
    inclusion probability π (allocation.inclusion_probabilities over the label values, the floor
    design_floor(control_fraction)); `drawn` is the Poisson sample, seeded by the policy's seed."""

    probabilities: dict[int, float]  # every response of the dataset -> π
    drawn: list[int]
    floor: float
    expected: float  # Σπ = the budget (no budget: the responses whose label tells something), at most N

    @property
    def population(self) -> int:
        return len(self.probabilities)

    @property
    def routed(self) -> int:
        return len(self.drawn)

    @property
    def pi_min(self) -> float:
        """The least inclusion probability, k·δ/N at most 1: every response's is at least this."""
        return min(1.0, self.expected * self.floor / self.population) if self.population else 0.0

    def design(self) -> dict[str, float | int]:
        """What the policy records of the draw (RoutingPolicy.design)."""
        return {
            "population": self.population,
            "floor": self.floor,
            "expected": self.expected,
            "pi_min": self.pi_min,
            "drawn": self.routed,
        }


def information_draw(
    *,
    dataset: Dataset,
    fit: InformationFit,
    budget: int | None,
    control_fraction: float,
    seed: int,
    excluded: Collection[int] = (),
) -> InformationDraw:
    """The draw a randomized information policy with these settings makes on the fit now. The
    population is every response of the dataset (one no producer read has value 0 and the floor's
    probability) but the `excluded` ones (the unreadable stratum, drawn apart: their label values
    are the highest, since no reader says anything about them, and would fill the budget), so that
    the draw's cell is the dataset less that stratum."""
    left_out = set(excluded)
    population = [
        rid
        for rid in Response.objects.filter(dataset=dataset).order_by("id").values_list("id", flat=True)
        if rid not in left_out
    ]
    values = {str(rid): fit.values.get(rid, 0.0) for rid in population}
    k = budget if budget is not None else sum(v > 0 for v in values.values())
    floor = design_floor(control_fraction)
    probabilities = inclusion_probabilities(values, k=k, floor=floor)
    drawn = poisson_draw(probabilities, seed=seed)
    return InformationDraw(
        probabilities={int(i): p for i, p in probabilities.items()},
        drawn=[int(i) for i in drawn],
        floor=floor,
        expected=float(min(k, len(population))),
    )


def information_preview(
    *, dataset: Dataset, spec: PolicySpec
) -> tuple[InformationFit, InformationPicks | InformationDraw]:
    """What a new information policy with these settings would route now, without writing: its
    draw (sampling randomized) or its picks (greedy)."""
    fit = information_fit(dataset=dataset, target=spec.target)
    panel = [member for member in spec.panel if isinstance(member, ReaderSpec)]
    excluded = unreadable_responses(dataset=dataset, specs=panel)
    if spec.sampling == "randomized":
        draw = information_draw(
            dataset=dataset,
            fit=fit,
            budget=spec.budget,
            control_fraction=spec.control_fraction,
            seed=spec.seed,
            excluded=excluded,
        )
        return fit, draw
    picks = information_picks(
        fit=fit,
        held=(),
        budget=spec.budget,
        control_fraction=spec.control_fraction,
        seed=spec.seed,
        excluded=excluded,
    )
    return fit, picks
