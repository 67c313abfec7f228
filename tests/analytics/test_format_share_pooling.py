"""Seed 000's pooling rules: eligible comparisons only, box rate by base / RL role, warnings on
thresholds left at 0, task types per benchmark and pooling by task type or benchmark, summed
reported gain per model pair, and the mean of shares labelled as our reading of the seed."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from adjudication.analytics import format_share as fs
from adjudication.analytics.format_share import Observation

from ..conftest import run_command

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def side(
    model, ckpt, n, k_rep, k_fix, *, bench="mmlu", prompt="p1", boxed=0, task_type="multiple_choice", extracted=None
):
    """n responses of one checkpoint: the first k_rep correct under the reported reader, the first
    k_fix under the fixed one; the first `boxed` contain a box; the fixed reader extracts from the
    first `extracted` (default all)."""
    extracted = n if extracted is None else extracted
    return [
        Observation(
            model=model,
            checkpoint=ckpt,
            benchmark=bench,
            prompt=prompt,
            question=str(q),
            reported="correct" if q < k_rep else "no_answer",
            fixed="correct" if q < k_fix else ("incorrect" if q < extracted else "no_answer"),
            has_box=q < boxed,
            task_type=task_type,
        )
        for q in range(n)
    ]


def test_the_box_rate_counts_eligible_comparisons_only():
    # "up" is eligible: base boxes 1 of 10, RL 9 of 10. "down" (reported gain < 0) boxes everything
    # on both sides; counting it would move the base rate from 10 % to 55 %.
    data = (
        side("up", "base", 10, 2, 5, boxed=1)
        + side("up", "rl", 10, 8, 6, boxed=9)
        + side("down", "base", 10, 6, 5, boxed=10)
        + side("down", "rl", 10, 4, 5, boxed=10)
    )
    res = fs.compute(data, n_boot=0)
    assert [c["eligible"] for c in res["comparisons"]] == [False, True]
    assert res["box_rate"]["base"] == {**res["box_rate"]["base"], "k": 1, "n": 10, "rate": 0.1}
    assert res["box_rate"]["rl"]["k"] == 9 and res["box_rate"]["rl"]["n"] == 10


def test_the_box_rate_groups_checkpoints_by_role_not_by_name():
    # Two RL recipes with different checkpoint names, and a base called "pretrained".
    data = (
        side("qwen", "pretrained", 10, 1, 5, boxed=2)
        + side("qwen", "simplerl", 10, 6, 6, boxed=6)
        + side("llama", "pretrained", 10, 1, 5, boxed=0)
        + side("llama", "zero-rl", 10, 5, 5, boxed=3)
    )
    res = fs.compute(data, base_checkpoint="pretrained", n_boot=0)
    box = res["box_rate"]
    assert (box["base"]["k"], box["base"]["n"]) == (2, 20)
    assert (box["rl"]["k"], box["rl"]["n"]) == (9, 20) and box["rl"]["rate"] == 0.45
    assert {ck: (b["k"], b["n"]) for ck, b in box["rl_by_checkpoint"].items()} == {
        "simplerl": (6, 10),
        "zero-rl": (3, 10),
    }
    assert set(box["base_by_checkpoint"]) == {"pretrained"}


def test_a_base_compared_with_two_rl_checkpoints_counts_once_in_the_box_rate():
    data = (
        side("m", "base", 10, 1, 4, boxed=3)
        + side("m", "grpo", 10, 6, 5, boxed=8)
        + side("m", "ppo", 10, 5, 5, boxed=7)
    )
    res = fs.compute(data, n_boot=0)
    assert res["n_eligible"] == 2
    assert (res["box_rate"]["base"]["k"], res["box_rate"]["base"]["n"]) == (3, 10)
    assert (res["box_rate"]["rl"]["k"], res["box_rate"]["rl"]["n"]) == (15, 20)


def test_the_box_rate_denominator_is_what_the_fixed_reader_extracted():
    data = side("m", "base", 10, 0, 2, boxed=6, extracted=4) + side("m", "rl", 10, 5, 3, boxed=6)
    box = fs.compute(data, n_boot=0)["box_rate"]
    assert (box["base"]["k"], box["base"]["n"]) == (4, 4) and (box["rl"]["k"], box["rl"]["n"]) == (6, 10)


def test_thresholds_left_at_zero_are_warned_about_and_chosen_ones_are_not():
    data = side("m", "base", 10, 1, 5) + side("m", "rl", 10, 6, 6)
    warned = fs.compute(data, n_boot=0)["warnings"]
    assert any("--min-reported-gain is 0" in w for w in warned)
    assert any("--min-extraction-rate is 0" in w for w in warned)
    quiet = fs.compute(data, min_reported_gain=5, min_extraction_rate=0.5, n_boot=0)["warnings"]
    assert not any("eligibility" in w for w in quiet)


def mixed_rows():
    """A canonical file with a multiple-choice benchmark (options) and a maths one (numeric golds)."""
    rows = []
    for i in range(4):  # seed 000's toy: base writes prose, RL boxes
        said = "ABCD"[i] if i < 2 else ("D" if i == 2 else None)
        common = dict(
            question=f"Toy {i}?",
            choices=["w", "x", "y", "z"],
            gold="ABCD"[i],
            model="toy",
            benchmark="mmlu",
            prompt="p1",
        )
        rows.append(
            dict(id=f"b{i}", checkpoint="base", response=f"The answer is {said}." if said else "No idea.", **common)
        )
        rows.append(dict(id=f"r{i}", checkpoint="rl", response=f"\\boxed{{{said}}}" if said else "Hmm.", **common))
    for i in range(10):  # maths: base 4/10 in prose, RL 6/10 boxed
        common = dict(question=f"What is {i} times 3?", gold=str(3 * i), model="toy", benchmark="arith", prompt="p1")
        rows.append(dict(id=f"mb{i}", checkpoint="base", response=f"It is {3 * i if i < 4 else 999}.", **common))
        rows.append(dict(id=f"mr{i}", checkpoint="rl", response=f"\\boxed{{{3 * i if i < 6 else 999}}}", **common))
    return rows


def test_the_command_warns_on_zero_thresholds_in_text_and_on_stderr_with_json(write_jsonl, capsys):
    path = write_jsonl(mixed_rows())
    note, text = run_command("format_share", input=path, bootstrap=0).split("\n", 1)
    # First the reader it used and why (issue 36 item 13), then the warnings.
    assert note == "reported reader: boxed (the default for a file; name another with --reported-reader)"
    assert text.startswith("WARNING: eligibility: --min-reported-gain is 0")
    out = json.loads(run_command("format_share", input=path, bootstrap=0, json=True))
    assert any("--min-extraction-rate is 0" in w for w in out["warnings"])
    chosen = run_command("format_share", input=path, bootstrap=0, min_reported_gain=5, min_extraction_rate=0.5)
    assert "--min-reported-gain is 0" not in chosen
    with pytest.raises(CommandError, match="--require-thresholds: --min-extraction-rate left at 0"):
        run_command("format_share", input=path, require_thresholds=True, min_reported_gain=5)


def test_task_types_come_from_the_items_and_pool_separately(write_jsonl):
    out = json.loads(
        run_command("format_share", input=write_jsonl(mixed_rows()), bootstrap=0, json=True, by="task_type")
    )
    assert {b: t["task_type"] for b, t in out["task_types"].items()} == {"arith": "maths", "mmlu": "multiple_choice"}
    assert out["task_types"]["arith"]["items"] == {"maths": 10}
    by = {c["benchmark"]: c for c in out["comparisons"]}
    assert (by["mmlu"]["reported_gain"], by["mmlu"]["fixed_gain"]) == (50.0, 0.0)
    assert (by["arith"]["reported_gain"], by["arith"]["fixed_gain"]) == (60.0, 20.0)
    groups = out["groups"]
    assert groups["multiple_choice"]["pooled"]["format_share"] == 1.0
    assert groups["maths"]["pooled"]["format_share"] == pytest.approx(40 / 60)
    assert groups["maths"]["box_rate"]["base"]["rate"] == 0.0 and groups["maths"]["box_rate"]["rl"]["rate"] == 1.0
    # The overall pool is still there: (55 − 10) / 55.
    assert out["pooled"]["format_share"] == pytest.approx(45 / 55)
    assert not any("mixes task types" in w for w in out["warnings"])


def test_pooling_task_types_together_is_warned_about(write_jsonl):
    out = json.loads(run_command("format_share", input=write_jsonl(mixed_rows()), bootstrap=0, json=True))
    assert out["groups"] is None
    assert any("mixes task types (maths 1, multiple_choice 1" in w and "--by task_type" in w for w in out["warnings"])


def test_pooling_by_benchmark_and_overriding_a_task_type(write_jsonl):
    out = json.loads(
        run_command(
            "format_share",
            input=write_jsonl(mixed_rows()),
            bootstrap=0,
            json=True,
            by="benchmark",
            task_type=["arith=multiple-choice"],
        )
    )
    assert set(out["groups"]) == {"arith", "mmlu"}
    assert out["task_types"]["arith"] == {
        **out["task_types"]["arith"],
        "task_type": "multiple_choice",
        "source": "override",
    }
    assert not any("mixes task types" in w for w in out["warnings"])  # both multiple choice now
    with pytest.raises(CommandError, match="--task-type 'arith=poetry': unknown task type"):
        run_command("format_share", input=write_jsonl(mixed_rows()), task_type=["arith=poetry"])
    with pytest.raises(CommandError, match="expected BENCHMARK=TYPE"):
        run_command("format_share", input=write_jsonl(mixed_rows()), task_type=["maths"])


@pytest.mark.parametrize(
    "gold, choices, expected",
    [
        ("B", ("w", "x", "y", "z"), "multiple_choice"),
        ("Paris", ("Paris", "Rome"), "multiple_choice"),
        ("(C)", (), "multiple_choice"),
        ("42", (), "maths"),
        ("-3.5", (), "maths"),
        ("1,000", (), "maths"),
        ("3/4", (), "maths"),
        ("\\frac{1}{2}", (), "maths"),
        ("$x^2$", (), "maths"),
        ("52_8", (), "maths"),
        ("2k", (), "maths"),
        ("\\$18.90", (), "maths"),
        ("3, 5, 7", (), "maths"),
        ("Wilhelm Conrad Röntgen", (), "free_form"),
        ("the mitochondria", (), "free_form"),
        ("", (), "free_form"),
        ("-", (), "free_form"),
    ],
)
def test_an_items_task_type_follows_its_options_and_gold(gold, choices, expected):
    assert fs.item_task_type(gold, choices) == expected


def test_a_benchmark_is_typed_by_the_majority_of_its_questions_and_a_weak_majority_is_flagged():
    data = [
        Observation(
            model="m",
            checkpoint=ck,
            benchmark="quiz",
            prompt="p",
            question=str(q),
            reported="correct",
            fixed="correct",
            task_type="maths" if q < 6 else "free_form",
        )
        for q in range(10)
        for ck in ("base", "rl")
    ]
    types = fs.benchmark_task_types(data)
    assert types["quiz"] == {
        "task_type": "maths",
        "source": "items",
        "items": {"maths": 6, "free_form": 4},
        "agreement": 0.6,
    }
    res = fs.compute(data, n_boot=0)
    assert any("'quiz' is typed maths by a 60% majority" in w for w in res["warnings"])
    assert fs.benchmark_task_types(data, {"quiz": "free form"})["quiz"]["task_type"] == "free_form"


def test_pair_contributions_sum_reported_gains_over_benchmarks_and_prompts():
    # Four pairs; three "Qwen" pairs carry 197 of 200 summed points: seed 000's 98.5 %.
    gains = {
        ("qwen-7b", "simplerl"): [(40, "mmlu", "p1"), (40, "arc", "p2")],
        ("qwen-math-7b", "simplerl"): [(35, "mmlu", "p1"), (35, "mmlu-pro", "p1")],
        ("qwen-coder-7b", "simplerl"): [(47, "arc", "p1")],
        ("llama-8b", "simplerl"): [(3, "mmlu", "p1")],
    }
    data = []
    for (model, rl), comps in gains.items():
        for g, bench, prompt in comps:
            data += side(model, "base", 100, 10, 40, bench=bench, prompt=prompt)
            data += side(model, rl, 100, 10 + g, 41, bench=bench, prompt=prompt)
    res = fs.compute(data, n_boot=0)
    pairs = res["pair_contributions"]
    assert [p["model"] for p in pairs] == ["qwen-7b", "qwen-math-7b", "qwen-coder-7b", "llama-8b"]
    assert [p["summed_reported_gain"] for p in pairs] == [80.0, 70.0, 47.0, 3.0]
    assert [p["n_comparisons"] for p in pairs] == [2, 2, 1, 1]
    assert pairs[2]["cumulative_share"] == 197 / 200 and round(pairs[2]["cumulative_share"], 3) == 0.985
    assert pairs[-1]["cumulative_share"] == 1.0


def test_an_ineligible_comparison_adds_nothing_to_its_pair():
    data = (
        side("q", "base", 100, 10, 40, bench="a")
        + side("q", "rl", 100, 40, 45, bench="a")
        + side("q", "base", 100, 10, 40, bench="b")
        + side("q", "rl", 100, 12, 41, bench="b")
    )
    res = fs.compute(data, min_reported_gain=5, n_boot=0)
    (pair,) = res["pair_contributions"]
    assert pair["summed_reported_gain"] == 30.0 and pair["n_comparisons"] == 1


def test_the_seed_arithmetic_stays_and_the_mean_of_shares_is_labelled_ours(write_jsonl):
    # Gains (30, 3) and (15, 5): means 22.5 and 4.0, seed 000's headline → 82.2 %.
    data = (
        side("a", "base", 100, 10, 30)
        + side("a", "rl", 100, 40, 33)
        + side("b", "base", 100, 50, 50)
        + side("b", "rl", 100, 65, 55)
    )
    res = fs.compute(data, n_boot=0)
    assert res["pooled"]["format_share"] == float(Fraction(37, 45)) == fs.format_share(22.5, 4.0)
    assert "seed 000's stated arithmetic" in res["definitions"]["pooled"]
    assert (
        "OUR reading" in res["definitions"]["mean_of_shares"] and "does not say" in res["definitions"]["mean_of_shares"]
    )
    text = run_command("format_share", input=write_jsonl(mixed_rows()), bootstrap=0)
    assert "mean of per-comparison shares (our reading of the seed's 'other pooling rule', not the seed's own" in text


def test_groups_carry_their_own_bootstrap_intervals():
    data = (
        side("a", "base", 60, 10, 30, bench="gsm8k", task_type="maths")
        + side("a", "rl", 60, 40, 33, bench="gsm8k", task_type="maths")
        + side("b", "base", 60, 20, 25)
        + side("b", "rl", 60, 45, 30)
    )
    res = fs.compute(data, by="task_type", n_boot=300, seed=1)
    for name, g in res["groups"].items():
        lo, hi = g["pooled"]["format_share_ci"]
        assert lo <= g["pooled"]["format_share"] <= hi, name
    assert res["groups"]["maths"]["pooled"]["format_share"] == pytest.approx(27 / 30)


# ------------------------------------------------------------------------------------------------
# real data: the task-type heuristic on benchmarks whose type is known (skipped without the data)
# ------------------------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _type_of(items: list[tuple[str, tuple]]) -> dict:
    data = [
        Observation(
            model="m",
            checkpoint="base",
            benchmark="b",
            prompt="",
            question=str(i),
            reported=None,
            fixed=None,
            task_type=fs.item_task_type(gold, choices),
        )
        for i, (gold, choices) in enumerate(items)
    ]
    return fs.benchmark_task_types(data)["b"]


def test_real_benchmarks_get_their_known_task_type():
    first = lambda a: a[0] if isinstance(a, list) else a  # noqa: E731
    math500 = _type_of([(first(r["answer"]), ()) for r in _jsonl(DATA / "math500" / "math500.jsonl")])
    assert math500["task_type"] == "maths" and math500["agreement"] == 1.0
    gsm8k = _type_of([(r["answer"].split("####")[-1].strip(), ()) for r in _jsonl(DATA / "gsm8k" / "test.jsonl")])
    assert gsm8k["task_type"] == "maths" and gsm8k["agreement"] == 1.0
    mmlu_pro = _type_of(
        [
            (r["answer"], tuple(r["options"]))
            for r in _jsonl(DATA / "mmlu-pro-model-outputs" / "mmlu_pro_cot_outputs_sample.jsonl")
        ]
    )
    assert mmlu_pro["task_type"] == "multiple_choice" and mmlu_pro["agreement"] == 1.0
    nq_path = DATA / "evouna-qa-eval" / "NQ.json"
    if not nq_path.exists():
        pytest.skip(f"{nq_path} not present")
    nq = _type_of([(first(r["golden_answer"]), ()) for r in json.loads(nq_path.read_text(encoding="utf-8"))])
    assert nq["task_type"] == "free_form" and nq["agreement"] > 0.85  # years and counts read as maths


def test_free_form_science_answers_are_typed_free_form_with_a_warning_worthy_majority():
    """GPQA asked free-form: many golds are quantities (maths-like), so the majority is weak; the
    pooling warns about it rather than trusting it."""
    rows = _jsonl(DATA / "answer-matching-human-annotations" / "gpqa_diamond_freeform_annotated.jsonl")
    golds = {r["question_id"]: r["reference_answer"] for r in rows}
    gpqa = _type_of([(g, ()) for g in golds.values()])
    assert gpqa["task_type"] == "free_form" and gpqa["agreement"] < fs.MIXED_BELOW


def test_the_seed_000_examples_reproduce_the_documented_figures():
    """docs/seeds.md quotes these numbers; the files are synthetic constructions from the seed's text."""
    from ..conftest import ROOT

    toy = json.loads(
        run_command("format_share", input=ROOT / "docs" / "examples" / "seed000-toy.jsonl", json=True, bootstrap=0)
    )
    (c,) = toy["comparisons"]
    assert (c["reported_gain"], c["fixed_gain"], c["format_share"]) == (50.0, 0.0, 1.0)
    out = json.loads(
        run_command("format_share", input=ROOT / "docs" / "examples" / "seed000-pooling.jsonl", json=True)
    )  # the documented intervals use the defaults: 1000 resamples, seed 0
    assert [(c["reported_gain"], c["fixed_gain"]) for c in out["comparisons"]] == [(30.0, 3.0), (15.0, 5.0)]
    p = out["pooled"]
    assert (p["reported_gain"], p["fixed_gain"], p["format_share"]) == (22.5, 4.0, fs.format_share(22.5, 4.0))
    assert round(out["mean_of_shares"], 3) == 0.783
    assert [round(x, 3) for x in p["format_share_ci"]] == [0.688, 0.933]
    assert [round(x, 3) for x in out["mean_of_shares_ci"]] == [0.641, 0.911]
    box = out["box_rate"]
    assert (box["base"]["k"], box["base"]["n"], box["rl"]["k"], box["rl"]["n"]) == (50, 200, 197, 200)
