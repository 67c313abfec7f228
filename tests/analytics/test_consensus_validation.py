"""`python -m scripts.realdata consensus-validation`: the panel consensus against real human labels
(answer matching, EVOUNA). Run on its --quick slice; the report's figures are checked against
direct counts on the files. Skipped cleanly when ../shared/data is not there."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adjudication.analytics.allocation import Target, simulate_budget
from adjudication.analytics.consensus import ConsensusInputs
from adjudication.analytics.stats import jsonable
from readers import Item, registry
from scripts import realdata

from ..conftest import shared_data

DATASETS = {"gpqa_diamond", "mmlu_pro", "NQ", "TQ"}


@pytest.fixture(scope="module")
def dirs():
    return shared_data("answer-matching-human-annotations"), shared_data("evouna-qa-eval")


@pytest.fixture(scope="module")
def report(dirs):
    am, evouna = dirs
    return jsonable(realdata.consensus_validation(answer_matching_dir=am, evouna_dir=evouna, quick=True))


@pytest.mark.system  # reads ../shared/data
def test_every_data_set_has_the_three_comparisons_and_the_curves(report):
    assert report["quick"] is True and set(report["datasets"]) == DATASETS
    for name, ds in report["datasets"].items():
        assert ds["per_item"]["n"] == ds["items"] == sum(r["n"] for r in ds["per_model"]), name
        for key in ("consensus_agreement", "majority_agreement"):
            assert 0 <= ds["per_item"][key] <= 1
        for r in ds["per_model"]:
            assert r["consensus_error_points"] == pytest.approx(100 * (r["consensus_accuracy"] - r["human_accuracy"]))
            assert r["human_accuracy"] == r["human_correct"] / r["n"]
        for r in ds["per_producer"]:
            assert r["coverage"] >= realdata.MIN_COVERAGE and r["producer"] in ds["producers_kept"]
            assert r["error_points"] == pytest.approx(100 * (r["consensus_accuracy"] - r["human_accuracy"]))
        assert all(c < realdata.MIN_COVERAGE for c in ds["producers_dropped"].values())
        assert ds["curves"], name


@pytest.mark.system  # reads ../shared/data
def test_the_label_curves_end_with_every_label_revealed_and_no_error(report):
    for name, ds in report["datasets"].items():
        for target, c in ds["curves"].items():
            steps = c["information_steps"]
            assert steps[0]["labels"] == 0 and steps[-1]["labels"] == c["items"], (name, target)
            # every label revealed: the estimate is the human value itself
            assert steps[-1]["error"] == pytest.approx(0, abs=1e-9)
            # the randomized allocator, the greedy one and random labels; random labels alone too
            # for a model's accuracy (--quick runs no weighted allocator)
            alone = {"human-only"} if target.startswith("accuracy") else set()
            assert set(c["labels_to_goal"]) == {"information", "greedy", "random"} | alone, (name, target)
            for block in c["labels_to_goal"].values():
                assert all(r is not None and 0 <= r <= c["items"] for r in block["runs"])


@pytest.mark.system  # reads ../shared/data
def test_evouna_human_accuracy_and_producer_accuracy_are_direct_counts(report, dirs):
    with open(dirs[1] / "TQ.json", encoding="utf-8") as fh:
        questions = realdata._sample(json.load(fh), 40)  # the --quick slice: 40 seeded questions
    proper = [q for q in questions if not q.get("improper") and q["golden_answer"]]
    gpt4 = [q for q in proper if q["judge_gpt4"] is not None]
    tq = report["datasets"]["TQ"]
    assert tq["excluded_items"]["no machine vote"] == 0
    row = next(r for r in tq["per_model"] if r["model"] == "GPT-4")
    assert (row["human_correct"], row["n"]) == (sum(q["judge_gpt4"] for q in gpt4), len(gpt4))
    # qa-contains against the humans, over every system's answers
    reader = registry.get("qa-contains")
    hits = total = 0
    for q in proper:
        for key in realdata.EVOUNA_SYSTEMS:
            if q[f"judge_{key}"] is None:
                continue
            verdict = reader.read(Item(response=q[f"answer_{key}"] or "", gold=q["golden_answer"])).verdict
            if verdict in ("correct", "incorrect"):
                total += 1
                hits += (verdict == "correct") == q[f"judge_{key}"]
    contains = next(r for r in tq["per_producer"] if r["producer"] == "qa-contains")
    assert (contains["votes"], contains["human_accuracy"]) == (total, hits / total)


@pytest.mark.system  # reads ../shared/data
def test_answer_matching_truth_is_the_agreeing_raters_label(report, dirs):
    rows = realdata._sample(realdata._load(dirs[0] / realdata.FILES["gpqa_diamond"]), 80)
    agreed = []
    for r in rows:
        labels = {realdata.human_binary(h["rating_match"]) for h in r["human"].values()} - {None}
        if len(labels) == 1:
            agreed.append((r["model"].split("/")[-1], labels.pop()))
    gpqa = report["datasets"]["gpqa_diamond"]
    assert gpqa["excluded_items"]["raters disagree"] == len(rows) - len(agreed)
    for row in gpqa["per_model"]:
        mine = [label for model, label in agreed if model == row["model"]]
        assert (row["human_correct"], row["n"]) == (mine.count("correct"), len(mine)), row["model"]
    judges = {p for p in gpqa["producers_kept"] if p.startswith("judge:")}
    assert judges == {"judge:deepseek-chat-v3-0324", "judge:qwen-2.5-7b-instruct"}


@pytest.mark.system  # reads ../shared/data
def test_the_markdown_report_renders_every_data_set(report):
    text = realdata.consensus_validation_markdown(report)
    assert "--quick: a seeded slice" in text
    for name in DATASETS:
        assert f"| {name} |" in text
    assert "| TQ | reader:qa-contains on GPT-4 |" in text


def test_the_command_names_a_missing_directory(tmp_path, capsys):
    with pytest.raises(SystemExit):
        realdata.main(["consensus-validation", "--quick", "--evouna", str(tmp_path / "nope")])
    assert "no such directory" in capsys.readouterr().err


def test_the_weighted_loop_at_weight_one_is_simulate_budget():
    # weighted_budget replays simulate_budget's rounds with a label weight; at weight 1 the two agree,
    # the randomized draws (information) included.
    rng = np.random.default_rng(4)
    truth = {f"i{i}": "correct" if t else "incorrect" for i, t in enumerate(rng.random(60) < 0.6)}
    votes = []
    for producer, (se, sp) in {"a": (0.9, 0.8), "b": (0.7, 0.9), "c": (0.8, 0.6)}.items():
        for item, t in truth.items():
            says = rng.random() < se if t == "correct" else rng.random() >= sp
            votes.append((item, producer, "correct" if says else "incorrect"))
    inputs = ConsensusInputs(votes=votes, strata={i: {"model": "m"} for i in truth})
    target = Target("accuracy", ("m",))
    for strategy in ("information", "greedy", "random"):
        expected = simulate_budget(inputs, truth, target=target, strategy=strategy, batch=20, by="model", seed=3)
        got = realdata.weighted_budget(
            inputs, truth, target=target, strategy=strategy, batch=20, human_weight=1, seed=3
        )
        assert got == expected, strategy
