"""Disagreement routing: the rules on plain tuples, then the policy over stored readings."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management.base import CommandError

from adjudication.models import Reading, Response, ReviewItem
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.routing.rules import PanelReading, answer_key, decide, is_control

from ..conftest import mc_row, run_command


def panel(*pairs: tuple[str | None, str]) -> list[PanelReading]:
    return [PanelReading(f"r{i}", answer, verdict) for i, (answer, verdict) in enumerate(pairs)]


def test_cosmetic_differences_are_not_disagreement():
    assert answer_key("(B)") == answer_key("b") == answer_key(" B. ") == "B"
    assert answer_key("$\\dfrac{1}{2}$") == answer_key("\\frac{1}{2}")
    assert not decide(panel(("(B)", "correct"), ("B", "correct"))).disputed


def test_different_answers_or_verdicts_are_disputed_by_default():
    assert decide(panel(("B", "correct"), ("C", "incorrect"))).disputed
    # same extracted answer, different verdict (e.g. one reader's equivalence is stricter)
    assert decide(panel(("0.5", "correct"), ("0.5", "incorrect"))).disputed


def test_compare_answer_only_or_verdict_only():
    same_answer_split_verdict = panel(("0.5", "correct"), ("0.5", "incorrect"))
    assert not decide(same_answer_split_verdict, compare="answer").disputed
    assert decide(same_answer_split_verdict, compare="verdict").disputed
    two_wrong_answers = panel(("C", "incorrect"), ("D", "incorrect"))
    assert decide(two_wrong_answers, compare="answer").disputed
    assert not decide(two_wrong_answers, compare="verdict").disputed


@pytest.mark.parametrize("missing", ["no_answer", "timeout", "error"])
def test_missing_readings_count_only_when_asked(missing):
    readings = panel(("B", "correct"), (None, missing))
    assert not decide(readings).disputed
    assert decide(readings, missing_is_disagreement=True).disputed
    # all readers finding nothing is agreement either way
    assert not decide(panel((None, "no_answer"), (None, missing)), missing_is_disagreement=True).disputed


def test_a_not_applicable_reading_never_disputes_even_when_missing_answers_do():
    """issue 36 item 3: a reader outside the item's task type did not read it; it takes no part."""
    readings = panel(("J", "correct"), (None, "not_applicable"))
    assert not decide(readings).disputed
    assert not decide(readings, missing_is_disagreement=True).disputed
    assert not decide(readings, compare="verdict", missing_is_disagreement=True).disputed
    # the applicable readers still dispute among themselves
    assert decide(panel(("J", "correct"), ("I", "incorrect"), (None, "not_applicable"))).disputed


def test_controls_are_a_deterministic_fraction():
    keys = [f"resp-{i}" for i in range(4000)]
    chosen = [k for k in keys if is_control(seed=7, response_key=k, fraction=0.1)]
    assert 300 < len(chosen) < 500
    assert chosen == [k for k in keys if is_control(seed=7, response_key=k, fraction=0.1)]
    assert chosen != [k for k in keys if is_control(seed=8, response_key=k, fraction=0.1)]
    assert not any(is_control(seed=7, response_key=k, fraction=0.0) for k in keys)


@pytest.fixture
def disputed_dataset(db, write_jsonl):
    """20 responses read by two readers: 5 disputed answers, 3 where only one found an answer, 12 agreeing."""
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(20)])), dataset="r", no_progress=True)
    a = reader_spec_by_name(name="strict-match")
    b = reader_spec_by_name(name="fixed")
    for i, response in enumerate(Response.objects.order_by("id")):
        Reading.objects.create(response=response, reader_spec=a, answer="B", normalized="B", verdict="correct")
        if i < 5:
            Reading.objects.create(response=response, reader_spec=b, answer="C", normalized="C", verdict="incorrect")
        elif i < 8:
            Reading.objects.create(response=response, reader_spec=b, verdict="no_answer")
        else:
            Reading.objects.create(response=response, reader_spec=b, answer="(B)", normalized="B", verdict="correct")
    return a, b


def route(policy: str, **options: Any) -> str:
    """`route_disagreements` on the disputed dataset with the strict-match + fixed panel."""
    return run_command("route_disagreements", dataset="r", policy=policy, panel=["strict-match", "fixed"], **options)


def test_policy_routes_each_disputed_response_exactly_once(disputed_dataset):
    out = route("p")
    assert "5 new review items (5 disputed, 0 controls)" in out
    items = ReviewItem.objects.filter(policy__name="p")
    assert sorted(items.values_list("response__external_id", flat=True)) == [f"mc-{i}" for i in range(5)]
    assert items.first().reason["readings"]["fixed"]["answer"] == "C"
    again = run_command("route_disagreements", dataset="r", policy="p")
    assert "0 new review items" in again and items.count() == 5


def test_missing_as_disagreement_and_controls_are_recorded(disputed_dataset):
    route("m", missing_disagrees=True, control_fraction=0.5, seed=3)
    items = ReviewItem.objects.filter(policy__name="m")
    disputed = items.filter(is_control=False)
    assert disputed.count() == 8
    controls = items.filter(is_control=True)
    assert 0 < controls.count() < 12
    assert all(c.reason["distinct_answers"] == 1 for c in controls)
    # a control is never a disputed response, and the draw is reproducible
    expected = sorted(f"mc-{i}" for i in range(8, 20) if is_control(seed=3, response_key=f"mc-{i}", fraction=0.5))
    assert sorted(controls.values_list("response__external_id", flat=True)) == expected


def test_priority_orders(disputed_dataset):
    route("o", missing_disagrees=True, priority="order")
    ordered = list(
        ReviewItem.objects.filter(policy__name="o")
        .order_by("-priority")
        .values_list("response__external_id", flat=True)
    )
    assert ordered == [f"mc-{i}" for i in range(8)]
    route("d", missing_disagrees=True)
    strongest = ReviewItem.objects.filter(policy__name="d").order_by("-priority").first()
    assert strongest.reason["distinct_answers"] == 2


def test_responses_missing_a_panel_reading_wait(disputed_dataset):
    Reading.objects.filter(reader_spec__name="fixed", response__external_id="mc-0").delete()
    out = route("w")
    assert "4 new review items" in out and "1 responses still missing" in out


def test_a_panel_needs_two_readers(disputed_dataset):
    with pytest.raises(CommandError, match="at least two readers"):
        run_command("route_disagreements", dataset="r", policy="x", panel=["fixed"])
