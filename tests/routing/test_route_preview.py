"""The routing preview (routing.selectors.route_preview) counts what the routing then routes, writes
nothing, and takes LLM readers into the panel as the routing does."""

from __future__ import annotations

import pytest

from adjudication.models import ReaderSpec, Reading, Response, ReviewItem
from adjudication.pipeline.readings import reader_spec_by_name, reader_spec_get_or_create
from adjudication.routing.rules import PanelReading, route_response
from adjudication.routing.selectors import dataset_readers, route_preview
from adjudication.routing.services import review_items_route, routing_policy_create
from adjudication.routing.specs import PolicySpec

from ..conftest import mc_row, project_table_counts, run_command

pytestmark = pytest.mark.django_db


def judge_spec(name: str = "judge-qwen", config_hash: str = "a" * 64) -> ReaderSpec:
    return reader_spec_get_or_create(name=name, version="1", config={}, config_hash=config_hash, kind="judge")


@pytest.fixture
def three_readers(write_jsonl):
    """20 responses. strict-match reads B (correct) everywhere. fixed: C/incorrect on 0-4, no answer
    on 5-7, B elsewhere. boxed: B/incorrect on 10-12 (same answer, other verdict), D/correct on
    13-14 (other answer, same verdict), nothing on 19 (pending), B elsewhere. A judge agrees with
    strict-match except on 0-1."""
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(20)])), dataset="p", no_progress=True)
    strict, fixed, boxed = (reader_spec_by_name(name=n) for n in ("strict-match", "fixed", "boxed"))
    judge = judge_spec()
    readings = []
    for i, response in enumerate(Response.objects.order_by("id")):
        readings.append(Reading(response=response, reader_spec=strict, answer="B", normalized="B", verdict="correct"))
        if i < 5:
            readings.append(Reading(response=response, reader_spec=fixed, answer="C", verdict="incorrect"))
        elif i < 8:
            readings.append(Reading(response=response, reader_spec=fixed, verdict="no_answer"))
        else:
            readings.append(Reading(response=response, reader_spec=fixed, answer="(B)", verdict="correct"))
        if 10 <= i < 13:
            readings.append(Reading(response=response, reader_spec=boxed, answer="B", verdict="incorrect"))
        elif 13 <= i < 15:
            readings.append(Reading(response=response, reader_spec=boxed, answer="D", verdict="correct"))
        elif i != 19:
            readings.append(Reading(response=response, reader_spec=boxed, answer="B", verdict="correct"))
        readings.append(Reading(response=response, reader_spec=judge, answer="A" if i < 2 else "B", verdict="correct"))
    Reading.objects.bulk_create(readings)
    return Response.objects.first().dataset, {"strict-match": strict, "fixed": fixed, "boxed": boxed, "judge": judge}


CASES = [
    # panel, compare, missing_is_disagreement, control_fraction, (disputed, controls?, agreeing, pending)
    (("strict-match", "boxed"), "either", False, 0.0, (5, 0, 14, 1)),
    (("strict-match", "boxed"), "answer", False, 0.0, (2, 0, 17, 1)),
    (("strict-match", "boxed"), "verdict", False, 0.0, (3, 0, 16, 1)),
    (("strict-match", "fixed"), "either", False, 0.0, (5, 0, 15, 0)),
    (("strict-match", "fixed"), "either", True, 0.0, (8, 0, 12, 0)),
    (("strict-match", "judge"), "answer", False, 0.0, (2, 0, 18, 0)),
    (("strict-match", "fixed", "boxed"), "either", False, 0.5, (10, None, 9, 1)),
]


@pytest.mark.parametrize(("names", "compare", "missing", "fraction", "expected"), CASES)
def test_the_preview_counts_what_the_routing_then_routes(three_readers, names, compare, missing, fraction, expected):
    dataset, specs = three_readers
    panel = [specs[n] for n in names]
    settings = {"compare": compare, "missing_is_disagreement": missing, "control_fraction": fraction, "seed": 7}
    before = project_table_counts()
    preview = route_preview(dataset=dataset, spec=PolicySpec(panel=panel, **settings))
    assert project_table_counts() == before  # read-only
    disputed, controls, agreeing, pending = expected
    assert (preview.disputed, preview.agreeing, preview.pending) == (disputed, agreeing, pending)
    if controls is not None:
        assert preview.controls == controls
    else:
        assert 0 < preview.controls < agreeing  # half of the agreeing ones, drawn by the seed
    policy = routing_policy_create(dataset=dataset, name="p", spec=PolicySpec(panel=panel, **settings))
    report = review_items_route(policy=policy)
    assert (report.disputed, report.controls, report.agreeing, report.pending) == (
        preview.disputed,
        preview.controls,
        preview.agreeing,
        preview.pending,
    )
    items = ReviewItem.objects.filter(policy=policy)
    assert items.count() == preview.routed
    assert items.filter(is_control=True).count() == preview.controls


def test_route_response_waits_for_missing_readings_and_draws_controls_only_from_agreement():
    agree = [PanelReading("a", "B", "correct"), PanelReading("b", "B", "correct")]
    assert route_response(agree[:1], panel_size=2, response_key="r").outcome == "pending"
    assert route_response(agree, panel_size=2, response_key="r").outcome == "agreeing"
    assert route_response(agree, panel_size=2, response_key="r", control_fraction=1.0).outcome == "control"
    split = [PanelReading("a", "B", "correct"), PanelReading("b", "C", "incorrect")]
    assert route_response(split, panel_size=2, response_key="r", control_fraction=1.0).outcome == "disputed"


def test_the_dataset_readers_are_the_specs_that_read_it_rule_readers_and_llm_readers(three_readers):
    dataset, _specs = three_readers
    judge_spec(name="judge-elsewhere", config_hash="b" * 64)  # no reading of this dataset
    assert {s.name for s in dataset_readers(dataset=dataset)} == {"strict-match", "fixed", "boxed", "judge-qwen"}
    assert [s.kind for s in dataset_readers(dataset=dataset)] == ["judge", "rule", "rule", "rule"]


def test_a_panel_names_an_llm_reader_that_read_the_dataset(three_readers):
    dataset, _ = three_readers
    policy = routing_policy_create(
        dataset=dataset, name="j", spec=PolicySpec(panel=["strict-match", "judge-qwen"], compare="answer")
    )
    assert review_items_route(policy=policy).disputed == 2
    assert set(ReviewItem.objects.filter(policy=policy).values_list("response__external_id", flat=True)) == {
        "mc-0",
        "mc-1",
    }


def test_a_panel_name_read_by_several_versions_must_be_chosen_and_an_unknown_name_is_refused(three_readers):
    dataset, _ = three_readers
    second = judge_spec(config_hash="c" * 64)
    Reading.objects.create(response=Response.objects.first(), reader_spec=second, answer="B", verdict="correct")
    with pytest.raises(ValueError, match="several versions of reader 'judge-qwen'"):
        routing_policy_create(dataset=dataset, name="x", spec=PolicySpec(panel=["strict-match", "judge-qwen"]))
    with pytest.raises(KeyError, match="unknown reader 'nobody'"):
        routing_policy_create(dataset=dataset, name="y", spec=PolicySpec(panel=["strict-match", "nobody"]))


def test_a_panel_of_one_spec_named_twice_cannot_disagree(three_readers):
    dataset, specs = three_readers
    with pytest.raises(ValueError, match="at least two readers"):
        routing_policy_create(dataset=dataset, name="z", spec=PolicySpec(panel=[specs["fixed"], "fixed"]))
