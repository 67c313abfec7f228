"""The two real-data results (docs/analytics.md), checked against the counts the data sets'
READMEs give. Skipped cleanly when ../shared/data is not there."""

from __future__ import annotations

import pytest

from adjudication.analytics.stats import jsonable
from scripts import realdata

from ..conftest import shared_data

pytestmark = pytest.mark.system  # reads ../shared/data


@pytest.fixture(scope="module")
def answer_matching_result():
    """Computed once for the module (~10 s): every test reads the same result."""
    return realdata.answer_matching(shared_data("answer-matching-human-annotations"))


@pytest.fixture(scope="module")
def answer_matching(answer_matching_result):
    return jsonable(answer_matching_result)


def test_the_counts_match_the_answer_matching_readme(answer_matching):
    gpqa, mmlu = answer_matching["datasets"]["gpqa_diamond"], answer_matching["datasets"]["mmlu_pro"]
    # README: 792 and 852 rows; judge verdicts on 636 of 792 and 801 of 852 rows; the binary label
    # (rating_match >= 4) agrees between the annotators on 750/792 and 709/802 rows.
    assert (gpqa["rows"], mmlu["rows"]) == (792, 852)
    assert gpqa["rows_with_judge"] == {"deepseek-chat-v3-0324": 636, "qwen-2.5-7b-instruct": 636}
    assert mmlu["rows_with_judge"] == {"deepseek-chat-v3-0324": 801}
    assert (gpqa["human_human"]["binary_agreement"], gpqa["human_human"]["items_rated_by_both"]) == (750, 792)
    assert (mmlu["human_human"]["binary_agreement"], mmlu["human_human"]["items_rated_by_both"]) == (709, 802)


def test_deepseek_v3_bias_against_each_human_rater(answer_matching):
    got = {}
    for name, ds in answer_matching["datasets"].items():
        for ann, block in ds["judges"][realdata.DEEPSEEK].items():
            s = block["all"]
            assert s["n"] == s["tp"] + s["fp"] + s["fn"] + s["tn"]
            assert s["bias"] == pytest.approx((s["fp"] - s["fn"]) / s["n"], abs=1e-15)
            assert s["false_accept_rate"] == s["fp"] / (s["fp"] + s["tn"])
            assert s["false_accept_rate_ci"][0] <= s["false_accept_rate"] <= s["false_accept_rate_ci"][1]
            got[(name, ann)] = (s["n"], s["tp"], s["fp"], s["fn"], s["tn"])
    # Every row with a DeepSeek verdict is compared against each rater who rated it.
    assert got[("gpqa_diamond", "annotator_ameya")] == (636, 160, 8, 29, 439)
    assert got[("gpqa_diamond", "annotator_nikhil")] == (636, 155, 13, 11, 457)
    assert got[("mmlu_pro", "annotator_2907")] == (801, 442, 77, 41, 241)
    assert got[("mmlu_pro", "annotator_strat1shash")] == (801, 447, 72, 48, 234)
    # the consensus rows are exactly the rows on which the two raters agree (709 on MMLU-Pro)
    assert got[("mmlu_pro", "consensus")][0] == 709
    mmlu = answer_matching["datasets"]["mmlu_pro"]["judges"][realdata.DEEPSEEK]
    assert mmlu["annotator_2907"]["all"]["lean"] == "toward correct"  # +4.5 points, McNemar p = 0.001
    assert set(mmlu["consensus"]["by_model"]) == {
        "deepseek/deepseek-chat-v3-0324",
        "google/gemma-3-27b-it",
        "meta-llama/llama-4-maverick",
        "openai/gpt-4o",
    }


def test_the_answer_matching_markdown_renders(answer_matching_result):
    text = realdata.answer_matching_markdown(answer_matching_result)
    assert "| deepseek-chat-v3-0324 | annotator_ameya | 636 | 160 | 8 | 29 | 439 |" in text


@pytest.fixture(scope="module")
def ranking():
    path = shared_data("mmlu-pro-model-outputs", "mmlu_pro_cot_outputs_sample.jsonl")
    return jsonable(realdata.mmlu_pro_ranking(path, processes=2))


README_RELEASED = {  # released pred == gold, pred missing: the README's table for the stratified slice
    "Meta-Llama-3_1-70B-Instruct": (170, 0),
    "Meta-Llama-3_1-8B-Instruct": (108, 0),
    "Mixtral-8x7B-Instruct-v0.1": (120, 17),
    "Phi-3-mini-4k-instruct": (121, 28),
    "Qwen1.5-72B-Chat": (130, 32),
    "mathstral-7B": (114, 0),
    "gemini-1.5-pro-002": (202, 0),
}


def test_seven_models_ranked_under_each_reader(ranking):
    assert ranking["rows"] == 1960 and ranking["questions"] == 280
    assert ranking["readers"] == [
        "fixed",
        "strict-match",
        "mmlu-pro-custom-extract",
        "last-extract",
        "boxed",
        "released",
    ]
    for rows in ranking["rankings"].values():
        assert len(rows) == 7 and all(r["n"] == 280 for r in rows)
    released = {r["model"]: r for r in ranking["rankings"]["released"]}
    for model, (correct, missing) in README_RELEASED.items():
        assert released[model]["k"] == correct
        assert ranking["extraction_rate"]["released"][model] == (280 - missing) / 280
    assert ranking["rankings"]["released"][0]["model"] == "gemini-1.5-pro-002"
    assert len(ranking["kendall_tau"]) == 15


def test_rank_flips_are_found_and_qwen_falls_under_strict_match(ranking):
    assert ranking["flips"], "readers that disagree about the order must show flips"
    strict = [f for f in ranking["flips_vs_released"] if f["readers"] == ["released", "strict-match"]]
    assert strict and all("Qwen1.5-72B-Chat" in f["models"] for f in strict)
    qwen = {r["model"]: r["rank"] for r in ranking["rankings"]["strict-match"]}["Qwen1.5-72B-Chat"]
    assert qwen == 7 and "Qwen1.5-72B-Chat" in ranking["rank_changes_vs_released"]["strict-match"]
    text = realdata.ranking_markdown(ranking)
    assert "Flips against the released extractor" in text and "Qwen1.5-72B-Chat" in text
