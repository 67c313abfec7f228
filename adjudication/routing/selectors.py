"""Reads of the routing: a dataset's readers, the panel's readings response by response, and what a
policy would route (the preview a manager sees before creating a queue). Nothing here writes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from django.db.models import Exists, OuterRef

from adjudication.models import Dataset, ReaderSpec, Reading, Response
from adjudication.routing.rules import Compare, PanelReading, Route, comparable_answer, route_response

CHUNK = 2000


@dataclass
class RouteCounts:
    """How many responses of a dataset a panel disputes, how many are drawn as controls, how many
    it agrees on (controls included) and how many still lack a reading by some panel reader."""

    disputed: int = 0
    controls: int = 0
    agreeing: int = 0
    pending: int = 0

    def count(self, route: Route) -> None:
        if route.outcome == "pending":
            self.pending += 1
        elif route.outcome == "disputed":
            self.disputed += 1
        else:
            self.agreeing += 1
            if route.outcome == "control":
                self.controls += 1

    @property
    def routed(self) -> int:
        """Responses that become review items: the disputed ones and the controls."""
        return self.disputed + self.controls


def dataset_readers(*, dataset: Dataset) -> list[ReaderSpec]:
    """Every reader spec (rule readers, LLM judges, regenerations) with at least one reading of the
    dataset, by kind and name. One EXISTS per spec, not a join over every reading."""
    read = Reading.objects.filter(reader_spec=OuterRef("pk"), response__dataset=dataset)
    return list(ReaderSpec.objects.filter(Exists(read)).order_by("kind", "name", "version", "id"))


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


def route_preview(
    *,
    dataset: Dataset,
    panel: Sequence[ReaderSpec],
    compare: Compare = "either",
    missing_is_disagreement: bool = False,
    control_fraction: float = 0.0,
    seed: int = 0,
) -> RouteCounts:
    """What a new policy with these settings would route now, computed without writing anything:
    the same per-response decision (routing.rules.route_response) as the routing itself."""
    counts = RouteCounts()
    for chunk in panel_readings(dataset=dataset, specs=panel):
        for response in chunk:
            counts.count(
                route_response(
                    response.readings,
                    panel_size=len(panel),
                    compare=compare,
                    missing_is_disagreement=missing_is_disagreement,
                    control_fraction=control_fraction,
                    seed=seed,
                    response_key=response.external_id,
                )
            )
    return counts
