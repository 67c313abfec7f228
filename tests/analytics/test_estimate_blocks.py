"""The prediction-powered figures beside format share (--fixed-reader human) and beside the judge-bias
table (analytics.estimate_blocks): on a dataset routed by disagreement with controls and labelled
part-way, each figure is the estimator's (estimates.Frame) on the same population and labels, the
predictor of a producer's rates is the other producers' vote, and the output that was there before
is unchanged."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from adjudication.analytics.design import estimate_sample
from adjudication.analytics.estimate_blocks import (
    ESTIMATED_RATES,
    format_share_estimates,
    headline_reason,
    judge_bias_estimates,
    leave_one_out_votes,
)
from adjudication.analytics.estimate_table import design_summary
from adjudication.analytics.estimates import (
    HEADLINE_MIN_LABELS,
    Design,
    EstimateError,
    Frame,
    Population,
    producer_predictor,
    vote_predictor,
)
from adjudication.analytics.reports import FormatShareOptions, ReportSpec, report_text
from adjudication.analytics.selectors import estimate_population, format_share_observations
from adjudication.bundles.services import bundle_replay, bundle_write
from adjudication.models import Dataset, ReaderSpec, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..bundles.test_bundle import wipe
from ..conftest import run_command
from ..review.conftest import make_user

CHOICES = ["Durkheim", "Weber", "Merton", "Parsons"]
QUESTIONS = 80
LABELLED = 100  # of the queue's items, in the order the queue serves them: a queue labelled part-way


# -- pure ----------------------------------------------------------------------------------------


def _population(n: int = 400, seed: int = 0) -> tuple[Population, np.ndarray]:
    """n responses of two checkpoints; three producers erring on different shares, one of which
    abstains on some responses, and one that judges only a few (a response only it judged has no
    vote of the others)."""
    rng = np.random.default_rng(seed)
    items = [f"r{i}" for i in range(n)]
    checkpoint = np.where(np.arange(n) % 2 == 0, "base", "rl")
    y = (rng.random(n) < np.where(checkpoint == "rl", 0.7, 0.5)).astype(int)

    def said(flip: float, abstain: float = 0.0) -> dict[str, str]:
        wrong = rng.random(n) < flip
        out = {}
        for i in range(n):
            if rng.random() < abstain:
                out[items[i]] = "no_answer"
            else:
                out[items[i]] = "correct" if y[i] != wrong[i] else "incorrect"
        return out

    sparse = {items[i]: "correct" if y[i] else "incorrect" for i in range(0, n, 50)}
    verdicts = {"judge": said(0.1), "lenient": said(0.2, abstain=0.1), "strict": said(0.3), "sparse": sparse}
    return Population(items, {items[i]: {"checkpoint": str(checkpoint[i])} for i in range(n)}, verdicts), y


def _random_labels(population: Population, y: np.ndarray, k: int, seed: int = 1) -> tuple[dict[str, str], Design]:
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(population.items), size=k, replace=False)
    labels = {population.items[i]: "correct" if y[i] else "incorrect" for i in chosen}
    return labels, Design.simple_random(labels, population=len(population.items), name="srs")


def test_the_leave_one_out_vote_is_the_vote_of_the_other_producers() -> None:
    population, _ = _population()
    frame = Frame.build(population, {})
    for name, vote in leave_one_out_votes(frame, sorted(population.verdicts)):
        expected = vote_predictor(population, [p for p in population.verdicts if p != name])
        got = {frame.items[i]: float(v) for i, v in enumerate(vote) if not np.isnan(v)}
        assert got == expected, name


def test_a_frame_with_another_predictor_estimates_as_a_frame_built_with_it() -> None:
    population, y = _population()
    labels, design = _random_labels(population, y, 120)
    first = Frame.build(population, producer_predictor(population, "judge"), name="judge")
    other = first.with_predictor(producer_predictor(population, "strict"), name="strict")
    fresh = Frame.build(population, producer_predictor(population, "strict"), name="strict")
    sample = fresh.sample(labels, design)
    for target in ("accuracy:rl", "gain:base,rl", "false-accept:lenient", "bias:judge"):
        assert other.estimate(target, sample).as_dict() == fresh.estimate(target, sample).as_dict()
    assert first.name == "judge" and first.estimate("accuracy", sample).predictor == "judge"


def test_each_producers_rates_use_the_vote_of_the_others_as_predictor() -> None:
    population, y = _population()
    labels, design = _random_labels(population, y, 150)
    frame = Frame.build(population, {})
    sample = frame.sample(labels, design)
    out = judge_bias_estimates(frame, sample, producers=["judge", "lenient"], design="srs", n_boot=0)
    assert sorted(out) == ["judge", "lenient"]
    for name, entry in out.items():
        others = [p for p in population.verdicts if p != name]
        reference = Frame.build(population, vote_predictor(population, others))
        for key, kind in ESTIMATED_RATES:
            expected = reference.estimate(f"{kind}:{name}", sample, n_boot=0, design="srs").as_dict()
            got = {k: v for k, v in entry[key].items() if k not in ("headline_reason", "predictor")}
            assert got == {k: v for k, v in expected.items() if k != "predictor"}
        assert entry["predictor"] == "vote of the other 3 producers"


def test_a_producer_without_a_correct_or_incorrect_verdict_has_an_error_not_figures() -> None:
    population, y = _population()
    silent = {**population.verdicts, "silent": dict.fromkeys(population.items, "no_answer")}
    population = Population(population.items, population.groups, silent)
    labels, design = _random_labels(population, y, 60)
    frame = Frame.build(population, {})
    out = judge_bias_estimates(frame, frame.sample(labels, design), producers=["silent"])
    assert "no correct/incorrect verdict" in out["silent"]["error"] and "bias" not in out["silent"]


def test_the_format_share_is_undefined_when_the_reported_gain_is_not_positive() -> None:
    population, y = _population()
    labels, design = _random_labels(population, y, 100)
    frame = Frame.build(population, producer_predictor(population, "judge"), name="judge")
    sample = frame.sample(labels, design)
    # Reversed roles: rl → base loses accuracy under every reader.
    (row,) = format_share_estimates(frame, sample, base="rl", reported="judge", n_boot=0)
    assert row["reported_gain"] < 0 and row["format_share"] is None
    assert "≤ 0" in row["format_share_error"] and row["gain"]["machine"] < 0
    with pytest.raises(EstimateError, match="no checkpoint 'sft'"):
        format_share_estimates(frame, sample, base="sft", reported="judge")


def test_the_headline_says_why_it_is_the_figure_it_is() -> None:
    population, y = _population()
    frame = Frame.build(population, producer_predictor(population, "judge"), name="judge")
    reasons = {}
    for k in (5, 20, 200):
        labels, design = _random_labels(population, y, k)
        e = frame.estimate("accuracy", frame.sample(labels, design))
        reasons[e.headline] = headline_reason(e)
    assert reasons["machine only"].startswith("machine only (inherits the predictor's errors): no interval (")
    assert (
        reasons["human only"]
        == f"human only: 20 design labels (< {HEADLINE_MIN_LABELS}) are too few to lean on the predictor"
    )
    assert reasons["prediction-powered"].startswith("prediction-powered: its interval rests on 200 design labels")


# -- on a routed, part-labelled dataset ------------------------------------------------------------


def _answers(i: int) -> tuple[str, str, str]:
    """(gold, base's answer, rl's answer): rl is right more often than base."""
    gold = "ABCD"[i % 4]
    wrong = "ABCD"[(i + 1) % 4]
    return gold, gold if i % 3 else wrong, gold if i % 5 else wrong


def _text(checkpoint: str, i: int) -> str:
    _, base, rl = _answers(i)
    said = base if checkpoint == "base" else rl
    if i % 4 == 0:  # a prose letter and a different boxed one: the panel disputes it
        return f"The answer is {'ABCD'[(i + 2) % 4]}. On reflection, \\boxed{{{said}}} [{i}]"
    return f"The answer is {said}. So \\boxed{{{said}}} [{i}]"


@pytest.fixture
def routed(db, write_jsonl) -> Dataset:
    """80 questions × base and rl, read by boxed, strict-match and fixed and judged by a lenient LLM
    judge; routed by the disagreement of boxed and strict-match with 30 % controls (served in one
    seeded random order), and LABELLED of its items labelled with the boxed answer, in the order
    the queue serves them."""
    rows = [
        {
            "id": f"{ckpt}-{i}",
            "question": f"Who fits description {i}?",
            "choices": CHOICES,
            "gold": _answers(i)[0],
            "response": _text(ckpt, i),
            "model": "orca-7b",
            "checkpoint": ckpt,
            "benchmark": "mmlu",
            "prompt": "cot-v1",
        }
        for i in range(QUESTIONS)
        for ckpt in ("base", "rl")
    ]
    run_command("import_responses", str(write_jsonl(rows, name="routed.jsonl")), dataset="routed", no_progress=True)
    ds = Dataset.objects.get(name="routed")
    ids = list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    readings_create(
        reader_specs=[reader_spec_by_name(name=n) for n in ("boxed", "strict-match", "fixed")], response_ids=ids
    )
    judge = ReaderSpec.objects.create(name="judge-x", version="1", kind="judge", config_hash="j" * 16, config={})
    for r in Response.objects.filter(dataset=ds).select_related("run", "question"):
        i = int(r.external_id.split("-")[1])
        gold, base, rl = _answers(i)
        lenient = i % 7 == 0  # accepts a few wrong answers
        right = (base if r.run.checkpoint == "base" else rl) == gold
        Reading.objects.create(response=r, reader_spec=judge, verdict="correct" if right or lenient else "incorrect")
    queue = queue_create(
        dataset=ds,
        spec=QueueSpec(
            name="rq",
            overlap=1,
            routing=PolicySpec(panel=["boxed", "strict-match"], control_fraction=0.3, seed=3, priority="random"),
        ),
    )
    annotator = make_user("ann", "annotator")
    for _ in range(LABELLED):
        lease = lease_claim_next(queue=queue, annotator=annotator).lease
        assert lease is not None
        response = lease.item.review_item.response
        gold, base, rl = _answers(int(response.external_id.split("-")[1]))
        said = base if response.run.checkpoint == "base" else rl
        label_submit(lease=lease, annotator=annotator, entry=LabelEntry(kind="option", answer=said))
    return ds


def _frame(ds: Dataset, predictor: dict[str, float], name: str) -> tuple[Frame, Any, Any]:
    population = estimate_population(dataset=ds)
    drawn = estimate_sample(dataset=ds)
    frame = Frame.build(population, predictor, by="checkpoint", name=name)
    return frame, frame.sample(drawn.labels, drawn.design), drawn


def _without_reason(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "headline_reason"}


@pytest.mark.django_db
def test_format_share_with_human_labels_adds_the_estimators_figures_over_every_response(routed) -> None:
    out = json.loads(run_command("format_share", dataset="routed", fixed_reader="human", json=True, bootstrap=0))
    block = out["estimates"]
    population = estimate_population(dataset=routed)
    frame, sample, drawn = _frame(routed, producer_predictor(population, "fixed"), "fixed")
    assert block["predictor"] == "fixed" and "the analytics' fixed reader" in block["predictor_why"]
    assert block["design"] == design_summary(
        policy=drawn.policy,
        design=drawn.design,
        labels=drawn.labels,
        population=drawn.population,
        left_out=drawn.left_out,
    )
    assert block["design"]["labels"] == LABELLED and len(block["design"]["cells"]) == 2
    (row,) = block["checkpoints"]
    assert (row["base"], row["rl"], row["reported_reader"]) == ("base", "rl", "boxed")
    design = drawn.design.name
    gain = frame.estimate("gain:base,rl", sample, n_boot=0, design=design)
    share = frame.estimate("format-share:base,rl,boxed", sample, n_boot=0, design=design)
    assert _without_reason(row["gain"]) == gain.as_dict()
    assert _without_reason(row["format_share"]) == share.as_dict()
    assert gain.headline == "prediction-powered" and gain.ppi is not None and gain.ppi.low is not None
    # The reported gain the share divides by: boxed's, over every response of each checkpoint.
    assert share.machine == pytest.approx(1 - gain.machine / row["reported_gain"])
    # The numbers `manage.py estimate` prints for the same targets.
    for target, key in (("gain:base,rl", "gain"), ("format-share:base,rl,boxed", "format_share")):
        (printed,) = json.loads(run_command("estimate", dataset="routed", target=target, json=True))["estimates"]
        assert {k: v for k, v in printed.items() if k not in ("kind", "note")} == _without_reason(row[key])


@pytest.mark.django_db
def test_format_share_with_human_labels_keeps_its_earlier_output_byte_for_byte(routed) -> None:
    arguments = {"dataset": "routed", "fixed_reader": "human", "bootstrap": 50, "seed": 2}
    out = json.loads(run_command("format_share", json=True, **arguments))
    note, printed = run_command("format_share", **arguments).split("\n", 1)
    assert note.startswith("reported reader: boxed (")  # the line it opens with since issue 36 item 13
    options = FormatShareOptions(fixed_reader="human", bootstrap=50, seed=2)
    earlier = options.pooled(format_share_observations(dataset=routed, reported="boxed", fixed="human"))
    assert {k: v for k, v in out.items() if k != "estimates"} == {
        "dataset": "routed",
        "reported_reader": "boxed",
        "fixed_reader": "human",
        "sources": {"boxed": "stored readings", "human": "final human labels (current per response)"},
        **earlier,
    }
    # The earlier text, then the block.
    earlier_text = report_text("format_share", {k: v for k, v in out.items() if k != "estimates"})
    assert printed.rstrip("\n").startswith(earlier_text + "\n\nprediction-powered estimates over every response")
    assert "true gain (points): machine" in printed and "headline: the prediction-powered figure when" in printed
    # Under another fixed reader nothing is added.
    assert "estimates" not in json.loads(run_command("format_share", dataset="routed", json=True, bootstrap=0))


@pytest.mark.django_db
def test_format_share_takes_the_predictor_it_is_given(routed) -> None:
    out = json.loads(
        run_command("format_share", dataset="routed", fixed_reader="human", predictor="vote", json=True, bootstrap=0)
    )
    population = estimate_population(dataset=routed)
    frame, sample, drawn = _frame(routed, vote_predictor(population), "vote")
    expected = frame.estimate("gain:base,rl", sample, n_boot=0, design=drawn.design.name)
    assert out["estimates"]["predictor"] == "vote"
    assert _without_reason(out["estimates"]["checkpoints"][0]["gain"]) == expected.as_dict()
    with pytest.raises(Exception, match="--predictor: no producer 'nobody'"):
        run_command("format_share", dataset="routed", fixed_reader="human", predictor="nobody")
    with pytest.raises(Exception, match="--predictor is the predictor of the prediction-powered estimates"):
        run_command("format_share", dataset="routed", predictor="vote")


@pytest.fixture
def greedy(db, write_jsonl) -> Dataset:
    """Every response labelled, but through greedy information routing: no label from a design."""
    rows = [
        {"id": f"{c}-{i}", "question": f"q{i}", "choices": CHOICES, "gold": "A", "response": _text(c, i)}
        | {"model": "m", "checkpoint": c, "benchmark": "mmlu", "prompt": "p"}
        for i in range(6)
        for c in ("base", "rl")
    ]
    run_command("import_responses", str(write_jsonl(rows, name="greedy.jsonl")), dataset="greedy", no_progress=True)
    ds = Dataset.objects.get(name="greedy")
    ids = list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    readings_create(reader_specs=[reader_spec_by_name(name=n) for n in ("boxed", "strict-match")], response_ids=ids)
    policy = PolicySpec(
        panel=["boxed", "strict-match"], priority="information", sampling="greedy", target="accuracy", budget=len(ids)
    )
    queue = queue_create(dataset=ds, spec=QueueSpec(name="gq", overlap=1, routing=policy))
    annotator = make_user("gus", "annotator")
    while (lease := lease_claim_next(queue=queue, annotator=annotator).lease) is not None:
        label_submit(lease=lease, annotator=annotator, entry=LabelEntry(kind="option", answer="A"))
    return ds


@pytest.mark.django_db
def test_format_share_without_design_labels_says_so_and_adds_no_figure(greedy) -> None:
    out = json.loads(run_command("format_share", dataset="greedy", fixed_reader="human", json=True, bootstrap=0))
    assert out["comparisons"] and out["comparisons"][0]["n_questions"] == 6
    assert "probability design" in out["estimates"]["error"] and "checkpoints" not in out["estimates"]


@pytest.mark.django_db
def test_the_format_share_report_with_human_labels_replays_from_a_bundle(routed, tmp_path) -> None:
    spec = ReportSpec("format_share", FormatShareOptions(fixed_reader="human", bootstrap=20, seed=1))
    path = tmp_path / "fs.zip"
    bundle_write(dataset=routed, out=path, report_specs=[spec])
    wipe()
    replayed = bundle_replay(path=path)
    assert replayed.ok, [(str(d), r.error) for r in replayed.reports for d in r.differences]


@pytest.mark.django_db
def test_the_judge_bias_table_adds_each_producers_rates_over_every_response(routed, computed) -> None:
    report = computed(routed, n_boot=0)
    headline = report.body["headline"]
    population = estimate_population(dataset=routed)
    _, sample, drawn = _frame(routed, {}, "")
    assert headline["judge_bias_sample"]["design"] == design_summary(
        policy=drawn.policy,
        design=drawn.design,
        labels=drawn.labels,
        population=drawn.population,
        left_out=drawn.left_out,
    )
    scope = headline["scope"]
    subset = report.body["agreement"]["vs_human"][scope]
    rows = headline["judge_bias"]
    assert {r["reader"] for r in rows} == {"boxed", "strict-match", "fixed", "judge-x"}
    table = report.body["tables"]["judge-bias-estimates"]["rows"]
    assert len(table) == 4 * len(rows)
    for row in rows:
        name = row["reader"]
        # Today's figures, on the labelled subset, as they were.
        today = subset[name]["all"]
        assert (row["n"], row["bias"], row["false_accept_rate"]) == (
            today["n"],
            today["bias"],
            today["false_accept_rate"],
        )
        others = [p for p in population.verdicts if p != name]
        reference = Frame.build(population, vote_predictor(population, others), by="checkpoint")
        for key, kind in ESTIMATED_RATES:
            expected = reference.estimate(f"{kind}:{name}", sample, n_boot=0, design=drawn.design.name).as_dict()
            got = row["estimates"][key]
            assert {k: v for k, v in got.items() if k not in ("headline_reason", "predictor")} == {
                k: v for k, v in expected.items() if k != "predictor"
            }
            (line,) = [t for t in table if t["reader"] == name and t["rate"] == kind]
            assert line["prediction_powered"] == (got["prediction_powered"] or {}).get("estimate")
            subset_key = {"bias": "bias", "agreement": "accuracy"}.get(kind, kind.replace("-", "_") + "_rate")
            assert line["labelled_subset"] == today[subset_key]
        assert row["estimates"]["predictor"] == "vote of the other 3 producers"
    text = run_command("report", "analytics n_boot=0", dataset="routed")
    assert "      every response, bias: machine" in text and "predictor the vote of the other producers" in text
