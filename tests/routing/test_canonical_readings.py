"""Stored readings carry the canonical answer beside the raw span: written by the readers' pipeline,
backfilled by the migration, exported, printed by `read`, and what routing and the review
candidates compare, so that "(C) Merton" and "C" are one answer."""

from __future__ import annotations

import csv
import importlib
import json

import pytest
from django.apps import apps as django_apps

from adjudication.models import Dataset, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.review.annotate.selectors import panel_candidates
from adjudication.routing.services import review_items_route, routing_policy_create
from adjudication.routing.specs import PolicySpec

from ..conftest import math_row, mc_row, reading_at, run_command

pytestmark = pytest.mark.django_db

# Every reader that finds this box reads it differently: boxed keeps "\text{(C) Merton}", strip-string
# "\text{(C)Merton}", fixed the letter "C". All of them mean option C.
MERTON = "<think>Durkheim? No.</think>\nTherefore \\boxed{\\text{(C) Merton}}"


def import_rows(rows: list[dict], dataset: str, write_jsonl) -> Dataset:
    run_command("import_responses", str(write_jsonl(rows, name=f"{dataset}.jsonl")), dataset=dataset, no_progress=True)
    return Dataset.objects.get(name=dataset)


def read_with(dataset: Dataset, *names: str) -> None:
    ids = list(dataset.responses.order_by("id").values_list("id", flat=True))
    readings_create(reader_specs=[reader_spec_by_name(name=n) for n in names], response_ids=ids)


def readings_of(external_id: str) -> dict[str, Reading]:
    return {
        r.reader_spec.name: r
        for r in Reading.objects.filter(response__external_id=external_id).select_related("reader_spec")
    }


# -- stored by the pipeline -----------------------------------------------------------------------


def test_stored_readings_keep_the_raw_answer_and_span_and_add_the_canonical_answer(write_jsonl):
    ds = import_rows(
        [mc_row(0, response=MERTON), math_row(0, gold="0.5", response="So \\boxed{\\dfrac{1}{2}}")], "st", write_jsonl
    )
    read_with(ds, "boxed", "fixed", "strip-string")
    mc = readings_of("mc-0")
    assert {name: r.canonical for name, r in mc.items()} == {"boxed": "C", "fixed": "C", "strip-string": None}
    # A maths reader does not read a multiple-choice item (issue 36 item 3): nothing to canonicalise.
    assert mc["strip-string"].verdict == "not_applicable"
    boxed = mc["boxed"]
    assert boxed.answer == "\\text{(C) Merton}"  # raw, as the reader extracted it
    assert MERTON[boxed.span_start : boxed.span_end] == "\\text{(C) Merton}"
    math = readings_of("math-0")
    assert {name: r.canonical for name, r in math.items()} == {"boxed": "0.5", "fixed": "0.5", "strip-string": "0.5"}
    assert math["boxed"].answer == "\\dfrac{1}{2}"


def test_a_canonical_answer_holding_nul_or_a_lone_surrogate_is_stored_verbatim(write_jsonl):
    ds = import_rows([math_row(0, response="\\boxed{x\ud800\x00y}")], "hv", write_jsonl)
    read_with(ds, "boxed")
    reading = Reading.objects.get()
    assert reading.canonical == "x\ud800y"  # normalize drops the NUL; the surrogate survives
    assert reading.answer == "x\ud800\x00y"


# -- the migration backfills what was stored before -----------------------------------------------


def test_the_migration_backfills_canonical_answers_of_existing_readings(write_jsonl):
    ds = import_rows(
        [mc_row(0, response=MERTON), math_row(0, gold="0.5"), mc_row(1, choices=[], gold="B")], "bf", write_jsonl
    )
    spec = reader_spec_by_name(name="boxed")
    other = reader_spec_by_name(name="fixed")
    by_id = {r.external_id: r for r in Response.objects.filter(dataset=ds)}
    Reading.objects.bulk_create(
        [
            Reading(response=by_id["mc-0"], reader_spec=spec, answer="(C) Merton", verdict="incorrect"),
            Reading(response=by_id["mc-0"], reader_spec=other, verdict="no_answer"),
            Reading(response=by_id["math-0"], reader_spec=spec, answer="\\dfrac{1}{2}", verdict="incorrect"),
            Reading(response=by_id["math-0"], reader_spec=other, answer="0.5", canonical="kept", verdict="correct"),
            Reading(response=by_id["mc-1"], reader_spec=spec, answer="option c)", verdict="incorrect"),
        ]
    )
    migration = importlib.import_module("adjudication.migrations.0010_reading_canonical")
    migration.backfill_canonical(django_apps, None)
    got = {
        (r.response.external_id, r.reader_spec.name): r.canonical
        for r in Reading.objects.select_related("response", "reader_spec")
    }
    assert got == {
        ("mc-0", "boxed"): "C",
        ("mc-0", "fixed"): None,
        ("math-0", "boxed"): "0.5",
        ("math-0", "fixed"): "kept",
        ("mc-1", "boxed"): "C",
    }


# -- export and read ------------------------------------------------------------------------------


def test_export_puts_the_canonical_answer_beside_the_raw_answer_and_its_span(write_jsonl, tmp_path):
    ds = import_rows([mc_row(0, response=MERTON)], "ex", write_jsonl)
    read_with(ds, "boxed")
    jsonl, table = tmp_path / "r.jsonl", tmp_path / "r.csv"
    run_command("export_readings", dataset="ex", fmt="jsonl", out=jsonl)
    run_command("export_readings", dataset="ex", fmt="csv", out=table)
    (row,) = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert (row["canonical"], row["answer"]) == ("C", "\\text{(C) Merton}")
    assert MERTON[row["span_start"] : row["span_end"]] == row["answer"]
    header = next(csv.reader(table.open()))
    assert header[header.index("canonical") + 1] == "answer"
    (csv_row,) = list(csv.DictReader(table.open()))
    assert csv_row["canonical"] == "C"


def test_read_prints_the_canonical_answer_with_the_raw_answer_and_span(write_jsonl, tmp_path):
    src = write_jsonl([mc_row(0, response=MERTON), math_row(0, response="So \\boxed{\\dfrac{144}{2}}")])
    out = tmp_path / "out.jsonl"
    run_command("read", str(src), readers=["boxed"], out=out, processes=1)
    lines = {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}
    assert (lines["mc-0"]["canonical"], lines["mc-0"]["answer"]) == ("C", "\\text{(C) Merton}")
    start, end = lines["mc-0"]["span"]
    assert MERTON[start:end] == "\\text{(C) Merton}"
    assert (lines["math-0"]["canonical"], lines["math-0"]["answer"]) == ("72", "\\dfrac{144}{2}")


# -- routing and the review candidates compare canonical answers ----------------------------------


def test_routing_does_not_dispute_two_ways_of_writing_the_same_option(write_jsonl):
    ds = import_rows([mc_row(0, response=MERTON)], "rt", write_jsonl)
    read_with(ds, "boxed", "fixed")
    policy = routing_policy_create(dataset=ds, name="p", spec=PolicySpec(panel=["boxed", "fixed"], compare="answer"))
    report = review_items_route(policy=policy)
    assert (report.disputed, report.agreeing) == (0, 1)


def test_routing_still_disputes_different_options(write_jsonl):
    ds = import_rows([mc_row(0, response=MERTON + "\nThe answer is (B).")], "rd", write_jsonl)
    read_with(ds, "boxed", "strict-match")
    policy = routing_policy_create(
        dataset=ds, name="p", spec=PolicySpec(panel=["boxed", "strict-match"], compare="answer")
    )
    assert review_items_route(policy=policy).disputed == 1


def test_candidates_merge_the_readers_ways_of_writing_one_answer_and_mark_every_span(write_jsonl):
    text = "First (C) Merton. Then again option C) and finally \\boxed{B}"
    ds = import_rows([mc_row(0, response=text)], "cd", write_jsonl)
    response = Response.objects.get(dataset=ds)
    merton, option, box = text.index("(C) Merton"), text.index("option C)"), text.index("{B}") + 1
    boxed, fixed, strict = (reader_spec_by_name(name=n) for n in ("boxed", "fixed", "strict-match"))
    Reading.objects.bulk_create(
        [
            reading_at(response, boxed, "(C) Merton", at=merton, verdict="incorrect", canonical="C"),
            reading_at(response, fixed, "option C)", at=option, verdict="incorrect", normalized="C", canonical="C"),
            reading_at(response, strict, "B", at=box, verdict="correct", canonical="B"),
        ]
    )
    policy = routing_policy_create(dataset=ds, name="p", spec=PolicySpec(panel=["boxed", "fixed", "strict-match"]))
    cands, spans = panel_candidates(response_id=response.pk, policy_id=policy.pk, item_id=1, annotator_id=1)
    assert sorted(c["answer"] for c in cands) == ["B", "C"]
    number_of = {c["answer"]: c["number"] for c in cands}
    assert sorted((s, e) for s, e, n in spans if n == number_of["C"]) == [(merton, merton + 10), (option, option + 9)]
    assert [(s, e) for s, e, n in spans if n == number_of["B"]] == [(box, box + 1)]
    # Blinded: a candidate is its number and its answer, nothing about who read it.
    assert all(set(c) == {"number", "answer"} for c in cands)


def test_candidates_of_readings_stored_before_canonical_answers_get_one_from_the_item(write_jsonl):
    row = mc_row(0, response="The answer is (B). Then again \\boxed{C}")
    ds = import_rows([row], "old", write_jsonl)
    response = Response.objects.get(dataset=ds)
    a, b = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="boxed")
    Reading.objects.bulk_create(
        [
            Reading(response=response, reader_spec=a, answer="(B)", normalized="B", verdict="correct"),
            Reading(response=response, reader_spec=b, answer="C", normalized=None, verdict="incorrect"),
        ]
    )
    policy = routing_policy_create(dataset=ds, name="p", spec=PolicySpec(panel=["strict-match", "boxed"]))
    ids = {"response_id": response.pk, "policy_id": policy.pk, "item_id": 1, "annotator_id": 1}
    cands, _spans = panel_candidates(**ids, choices=row["choices"])
    assert sorted(c["answer"] for c in cands) == ["B", "C"]


@pytest.mark.parametrize(
    ("answers", "choices", "shown"),
    [
        # The review of the sample showed each of these as several candidates.
        (["\\text{A}", "A", "$\\boxed{\\text{A}}$"], ["Weber", "Merton", "Durkheim"], ["A"]),
        (["10,001", "10001", "10,001"], [], ["10001"]),
        (["\\dfrac{1}{2}", "\\frac12", "0.5", "3"], [], ["0.5", "3"]),
    ],
)
def test_one_candidate_per_distinct_answer_with_all_its_spans(write_jsonl, answers, choices, shown):
    text = " then ".join(answers)
    row = mc_row(0, response=text, choices=choices) if choices else math_row(0, response=text)
    ds = import_rows([row], "one", write_jsonl)
    response = Response.objects.get(dataset=ds)
    names = ["boxed", "fixed", "strict-match", "flexible-extract"][: len(answers)]
    specs = [reader_spec_by_name(name=n) for n in names]
    offsets = [text.index(a) for a in answers]
    Reading.objects.bulk_create(
        [
            reading_at(response, spec, answer, at=at, verdict="incorrect", normalized=None)
            for spec, answer, at in zip(specs, answers, offsets, strict=True)
        ]
    )
    policy = routing_policy_create(dataset=ds, name="p", spec=PolicySpec(panel=names))
    cands, spans = panel_candidates(
        response_id=response.pk, policy_id=policy.pk, item_id=1, annotator_id=1, choices=choices
    )
    assert sorted(c["answer"] for c in cands) == sorted(shown)
    assert len({(s, e) for s, e, _n in spans}) == len(set(zip(offsets, answers, strict=True)))


def test_reader_agreement_compares_the_canonical_answers(write_jsonl):
    from adjudication.analytics.selectors import reader_observations

    ds = import_rows([mc_row(0, response=MERTON)], "ag", write_jsonl)
    read_with(ds, "boxed", "fixed")
    answers = {obs.reader: obs.answer for obs in reader_observations(dataset=ds)}
    # boxed's own normalized form is the box text; what agreement compares is the option letter.
    assert answers == {"boxed": "C", "fixed": "C"}
