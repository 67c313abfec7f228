"""Responses no reader of the panel can read (every reading no_answer, error, timeout or
not_applicable: loops, truncations) are a stratum of their own (issue 36 item 5): counted, drawn
at the rate the manager sets, never disputes nor controls, never at the head of the queue, and kept
out of an information policy's draw, whose label values they would otherwise top."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adjudication.models import QueueItem, Reading, Response, ReviewItem, RoutingPolicy
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.routing.rules import is_unreadable_drawn

from ..conftest import mc_row, run_command
from ..review.conftest import make_user
from .test_information_routing import info_dataset, route  # noqa: F401 (the fixture)

N = 90
# responses 0-29 disputed (B vs C), 30-59 agreed on (B), 60-89 read by neither reader
UNREADABLE = range(60, 90)
VERDICTS = ("no_answer", "error", "timeout", "not_applicable")


@pytest.fixture
def mixed(db, write_jsonl):
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(N)])), dataset="u", no_progress=True)
    a, b = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="fixed")
    rows = []
    for i, response in enumerate(Response.objects.filter(dataset__name="u").order_by("id")):
        if i in UNREADABLE:
            for spec, verdict in ((a, VERDICTS[i % 4]), (b, VERDICTS[(i + 1) % 4])):
                rows.append(Reading(response=response, reader_spec=spec, answer=None, verdict=verdict))
            continue
        answer = "C" if i < 30 else "B"
        rows.append(Reading(response=response, reader_spec=a, answer="B", canonical="B", verdict="correct"))
        rows.append(Reading(response=response, reader_spec=b, answer=answer, canonical=answer, verdict="correct"))
    Reading.objects.bulk_create(rows)


def expected_unreadable(seed: int, fraction: float) -> set[str]:
    return {f"mc-{i}" for i in UNREADABLE if is_unreadable_drawn(seed=seed, response_key=f"mc-{i}", fraction=fraction)}


def serving(queue: str) -> list[QueueItem]:
    return list(
        QueueItem.objects.filter(queue__name=queue)
        .select_related("review_item__response")
        .order_by("-priority", "tiebreak", "id")
    )


@pytest.mark.parametrize("missing_disagrees", [False, True])
def test_unreadable_responses_are_their_own_stratum_drawn_at_the_managers_rate(mixed, missing_disagrees):
    options = {"missing_disagrees": True} if missing_disagrees else {}
    run_command(
        "create_queue",
        dataset="u",
        name="q",
        panel=["strict-match", "fixed"],
        control_fraction=0.3,
        unreadable_fraction=0.4,
        seed=5,
        overlap=1,
        **options,
    )
    items = ReviewItem.objects.filter(policy__queues__name="q").select_related("response")
    unreadable = {i.response.external_id for i in items if i.stratum == "unreadable"}
    assert unreadable == expected_unreadable(5, 0.4) and unreadable
    assert {i.inclusion_probability for i in items if i.stratum == "unreadable"} == {0.4}
    assert not any(i.is_control for i in items if i.stratum == "unreadable")
    # nothing unreadable is a dispute or a control: those come from the readable responses only
    readable = {i.response.external_id for i in items if i.stratum != "unreadable"}
    assert not readable & {f"mc-{i}" for i in UNREADABLE}
    assert {i.response.external_id for i in items if i.stratum == "disputed"} == {f"mc-{i}" for i in range(30)}
    assert RoutingPolicy.objects.get(queues__name="q").design["unreadable"] == len(UNREADABLE)
    # served spread through the queue, not at its head
    order = serving("q")
    positions = [k for k, qi in enumerate(order) if qi.review_item.stratum == "unreadable"]
    assert order[0].review_item.stratum == "disputed"
    n, m = len(positions), sum(qi.review_item.stratum == "disputed" for qi in order)
    assert positions[0] <= m / n + 2 and positions[-1] >= len(order) - m / n - 3


def test_the_preview_and_the_queue_page_count_the_stratum(mixed):
    manager = Client()
    manager.force_login(make_user("m", "manager"))
    panel = [reader_spec_by_name(name="strict-match").pk, reader_spec_by_name(name="fixed").pk]
    form = {
        "dataset": Response.objects.first().dataset_id,
        "panel": panel,
        "compare": "either",
        "control_fraction": "0",
        "unreadable_fraction": "0.4",
        "seed": "5",
        "overlap": "2",
        "lease_seconds": "900",
        "action": "preview",
    }
    page = manager.post("/queues/new/", form).content.decode()
    drawn = len(expected_unreadable(5, 0.4))
    assert f'id="preview-unreadable-routed">{drawn}<' in page and 'id="preview-unreadable">30<' in page
    assert f'id="preview-routed">{30 + drawn}<' in page
    created = manager.post("/queues/new/", {**form, "name": "q", "action": "create"}, follow=True)
    queue_id = int(re.search(r"/queues/(\d+)/$", created.redirect_chain[-1][0]).group(1))
    body = manager.get(f"/queues/{queue_id}/").content.decode()
    assert f'<span id="queue-{queue_id}-unreadable">{drawn} unreadable</span>' in body
    assert "drawn at 0.4 of the 30 responses no panel reader could read" in body


def test_an_information_draw_leaves_the_unreadable_stratum_out_and_draws_it_apart(info_dataset):  # noqa: F811
    responses = list(Response.objects.filter(dataset=info_dataset).order_by("id"))
    gone = {r.pk: r.external_id for r in responses[:12]}
    Reading.objects.filter(response_id__in=gone, reader_spec__name__in=["strict-match", "fixed"]).update(
        answer=None, normalized=None, canonical=None, verdict="no_answer"
    )
    for name, sampling in (("r", "randomized"), ("g", "greedy")):
        route(
            name,
            priority="information",
            sampling=sampling,
            target="accuracy",
            budget=10,
            unreadable_fraction=0.5,
            seed=2,
        )
        items = ReviewItem.objects.filter(policy__name=name)
        by_value = {i.response_id for i in items if i.stratum in ("information", "greedy")}
        assert by_value and not by_value & set(gone)
        drawn = {rid for rid, ext in gone.items() if is_unreadable_drawn(seed=2, response_key=ext, fraction=0.5)}
        assert {i.response_id for i in items if i.stratum == "unreadable"} == drawn
        assert RoutingPolicy.objects.get(name=name).design["unreadable"] == len(gone)


def test_the_estimates_design_has_an_unreadable_cell_apart_from_the_controls(mixed):
    from adjudication.analytics.design import estimate_sample
    from adjudication.models import Dataset

    run_command(
        "route_disagreements",
        dataset="u",
        policy="p",
        panel=["strict-match", "fixed"],
        control_fraction=0.3,
        unreadable_fraction=0.4,
    )
    design = estimate_sample(dataset=Dataset.objects.get(name="u"), policy="p").design
    sizes = {cell: n for cell, n in design.cell_sizes.items() if not cell.startswith("p/disputed")}
    assert sizes == {"p/control": 30, "p/unreadable": 30}
    assert {c for r, c in design.population_cell.items() if int(r) in unreadable_ids()} == {"p/unreadable"}


def unreadable_ids() -> set[int]:
    ids = list(Response.objects.filter(dataset__name="u").order_by("id").values_list("id", flat=True))
    return {ids[i] for i in UNREADABLE}
