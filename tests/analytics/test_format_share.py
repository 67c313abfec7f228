"""Format share (seed 000): the formula, the toy, the pooling rules, filters, box rate, and the
file-mode command, which must never touch the database."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from django.core.management.base import CommandError

from adjudication.analytics import format_share as fs
from adjudication.analytics.format_share import Observation

from ..conftest import run_command


def test_seed_000_share_of_22_5_and_4_0_is_82_2_percent():
    share = fs.format_share(22.5, 4.0)
    assert share == 18.5 / 22.5 == float(Fraction(37, 45))
    assert round(share, 3) == 0.822


@pytest.mark.parametrize("reported", [0.0, -3.0])
def test_a_reported_gain_that_is_not_positive_is_an_error(reported):
    with pytest.raises(ValueError, match="reported gain must be positive"):
        fs.format_share(reported, 1.0)


def obs(model, ckpt, q, rep, fix, *, box=False, bench="mmlu", prompt="p1"):
    return Observation(
        model=model,
        checkpoint=ckpt,
        benchmark=bench,
        prompt=prompt,
        question=str(q),
        reported=rep,
        fixed=fix,
        has_box=box,
    )


def comparison(model, n, *, base_rep, rl_rep, base_fix, rl_fix):
    """n questions; the first k of each side are correct under each reader."""
    out = []
    for q in range(n):
        out.append(
            obs(
                model, "base", q, "correct" if q < base_rep else "no_answer", "correct" if q < base_fix else "incorrect"
            )
        )
        out.append(
            obs(
                model,
                "rl",
                q,
                "correct" if q < rl_rep else "incorrect",
                "correct" if q < rl_fix else "incorrect",
                box=True,
            )
        )
    return out


def test_pooled_share_and_mean_of_shares_differ_on_a_set_built_for_it():
    # Reported / fixed gains (30, 3) and (15, 5): the means are 22.5 and 4.0, seed 000's headline, so
    # the pooled share is 18.5 / 22.5 = 82.2 %; the shares are 90 % and 66.7 %, whose mean is 78.3 %.
    data = comparison("a", 100, base_rep=10, rl_rep=40, base_fix=30, rl_fix=33) + comparison(
        "b", 100, base_rep=50, rl_rep=65, base_fix=50, rl_fix=55
    )
    res = fs.compute(data, n_boot=0)
    a, b = res["comparisons"]
    assert (a["reported_gain"], a["fixed_gain"], a["format_share"]) == (30.0, 3.0, 0.9)
    assert (b["reported_gain"], b["fixed_gain"]) == (15.0, 5.0) and b["format_share"] == float(Fraction(2, 3))
    assert res["pooled"]["reported_gain"] == 22.5 and res["pooled"]["fixed_gain"] == 4.0
    assert res["pooled"]["format_share"] == 18.5 / 22.5
    assert res["mean_of_shares"] == float((Fraction(9, 10) + Fraction(2, 3)) / 2)
    assert round(res["pooled"]["format_share"], 3) == 0.822 and round(res["mean_of_shares"], 3) == 0.783
    assert res["pooled"]["largest_contributions"][0]["share_of_summed_reported_gain"] == float(Fraction(2, 3))


def test_ineligible_and_undefined_comparisons_are_left_out_of_both_pools():
    data = (
        comparison("up", 10, base_rep=2, rl_rep=7, base_fix=5, rl_fix=6)
        + comparison("down", 10, base_rep=6, rl_rep=4, base_fix=5, rl_fix=5)
        + comparison("small", 10, base_rep=5, rl_rep=6, base_fix=5, rl_fix=6)
    )
    res = fs.compute(data, min_reported_gain=20, n_boot=0)
    by = {c["model"]: c for c in res["comparisons"]}
    assert by["down"]["format_share"] is None and "≤ 0" in by["down"]["format_share_error"]
    assert (
        not by["down"]["eligible"]
        and not by["small"]["eligible"]
        and "threshold 20" in by["small"]["ineligible_reason"]
    )
    assert by["up"]["eligible"] and res["n_eligible"] == 1
    assert res["pooled"]["format_share"] == res["mean_of_shares"] == by["up"]["format_share"] == 0.8


def test_the_extraction_rate_filter_uses_the_fixed_reader_on_both_checkpoints():
    data = [
        obs("m", "base", q, "correct" if q < 2 else "no_answer", "correct" if q < 5 else "no_answer") for q in range(10)
    ]
    data += [
        obs("m", "rl", q, "correct" if q < 8 else "incorrect", "correct" if q < 6 else "incorrect") for q in range(10)
    ]
    ok = fs.compute(data, min_extraction_rate=0.5, n_boot=0)["comparisons"][0]
    assert ok["eligible"] and ok["base"]["fixed_extraction_rate"] == 0.5
    low = fs.compute(data, min_extraction_rate=0.6, n_boot=0)["comparisons"][0]
    assert not low["eligible"] and "extraction rate 0.500 < threshold 0.6" in low["ineligible_reason"]


def test_box_rate_counts_boxes_among_answers_the_fixed_reader_extracted():
    data = [
        obs("m", "base", 0, "no_answer", "correct", box=False),
        obs("m", "base", 1, "correct", "incorrect", box=True),
        obs("m", "base", 2, "no_answer", "no_answer", box=True),
        obs("m", "rl", 0, "correct", "correct", box=True),
        obs("m", "rl", 1, "correct", "correct", box=True),
        obs("m", "rl", 2, "correct", "correct", box=False),
    ]
    res = fs.compute(data, n_boot=0)
    assert res["box_rate"]["base"]["k"] == 1 and res["box_rate"]["base"]["n"] == 2
    assert res["box_rate"]["rl"]["k"] == 2 and res["box_rate"]["rl"]["n"] == 3
    assert fs.has_box("so \\boxed{B}") and fs.has_box("\\fbox {3}") and not fs.has_box("a box of chocolates")


def test_questions_are_paired_and_repeated_samples_average():
    data = [
        obs("m", "base", 0, "correct", "correct"),
        obs("m", "base", 0, "incorrect", "correct"),
        obs("m", "base", 1, "incorrect", "correct"),
        obs("m", "base", 9, "correct", "correct"),
        obs("m", "rl", 0, "correct", "correct"),
        obs("m", "rl", 1, "correct", "correct"),
    ]
    c = fs.compute(data, n_boot=0)["comparisons"][0]
    assert c["n_questions"] == 2 and c["unpaired_questions"] == {"base": 1, "rl": 0}
    assert c["base"]["reported_accuracy"] == 0.25 and c["reported_gain"] == 75.0 and c["fixed_gain"] == 0.0


def test_bootstrap_intervals_are_reproducible_and_contain_the_estimate():
    data = comparison("a", 60, base_rep=10, rl_rep=40, base_fix=30, rl_fix=33) + comparison(
        "b", 60, base_rep=20, rl_rep=45, base_fix=25, rl_fix=30
    )
    one, two = fs.compute(data, n_boot=300, seed=3), fs.compute(data, n_boot=300, seed=3)
    assert fs.strip_private(one) == fs.strip_private(two)
    p = one["pooled"]
    assert p["format_share_ci"][0] <= p["format_share"] <= p["format_share_ci"][1]
    assert one["mean_of_shares_ci"][0] <= one["mean_of_shares"] <= one["mean_of_shares_ci"][1]
    for c in one["comparisons"]:
        assert c["reported_gain_ci"][0] <= c["reported_gain"] <= c["reported_gain_ci"][1]
    other = fs.compute(data, n_boot=300, seed=4)
    assert other["pooled"]["format_share_ci"] != p["format_share_ci"]


def test_a_share_interval_is_withheld_when_the_reported_gain_is_often_not_positive():
    data = comparison("flat", 10, base_rep=5, rl_rep=6, base_fix=5, rl_fix=6)
    c = fs.compute(data, n_boot=400)["comparisons"][0]
    assert c["format_share"] == 0.0 and c["format_share_ci"] is None and "≤ 0" in c["format_share_ci_reason"]


def test_no_base_checkpoint_is_reported_as_skipped():
    res = fs.compute([obs("m", "sft", 0, "correct", "correct"), obs("m", "rl", 0, "correct", "correct")], n_boot=0)
    assert res["comparisons"] == [] and "no 'base' checkpoint" in res["skipped"][0]["reason"]


# ------------------------------------------------------------------------------------------------
# the command, on files: no database (these tests are not marked django_db, so any query fails)
# ------------------------------------------------------------------------------------------------


def toy_rows():
    """Seed 000's toy: both checkpoints state two correct answers, one wrong, one unusable; the RL
    checkpoint boxes its answers, the base writes prose."""
    rows = []
    for i, (gold, said) in enumerate([("A", "A"), ("B", "B"), ("C", "D"), ("D", None)]):
        common = dict(
            question=f"Toy question {i}?",
            choices=["w", "x", "y", "z"],
            gold=gold,
            model="toy",
            benchmark="mmlu",
            prompt="p1",
        )
        rows.append(
            dict(
                id=f"base-{i}",
                checkpoint="base",
                **common,
                response=f"Let me think. The answer is {said}." if said else "I cannot tell which one.",
            )
        )
        rows.append(
            dict(
                id=f"rl-{i}",
                checkpoint="rl",
                **common,
                response=f"Thinking done. \\boxed{{{said}}}" if said else "No idea, sorry.",
            )
        )
    return rows


def test_the_toy_shows_a_50_point_reported_gain_and_no_fixed_gain(write_jsonl):
    out = json.loads(run_command("format_share", input=write_jsonl(toy_rows()), json=True, bootstrap=0))
    (c,) = out["comparisons"]
    assert (c["model"], c["benchmark"], c["prompt"]) == ("toy", "mmlu", "p1")
    assert c["reported_gain"] == 50.0 and c["fixed_gain"] == 0.0 and c["format_share"] == 1.0
    assert c["base"]["reported_accuracy"] == 0.0 and c["rl"]["reported_accuracy"] == 0.5
    assert c["base"]["fixed_accuracy"] == c["rl"]["fixed_accuracy"] == 0.5
    assert c["base"]["box_rate"]["rate"] == 0.0 and c["rl"]["box_rate"]["rate"] == 1.0
    assert out["pooled"] == {**out["pooled"], "reported_gain": 50.0, "fixed_gain": 0.0, "format_share": 1.0}
    assert out["mean_of_shares"] == 1.0
    assert out["sources"]["boxed"].startswith("reader boxed run")


def test_the_text_output_is_a_table(write_jsonl):
    text = run_command("format_share", input=write_jsonl(toy_rows()), bootstrap=0)
    assert "+50.00" in text and "100.0%" in text and "mean of per-comparison shares" in text


def test_an_llm_reader_or_the_humans_can_stand_in_for_the_fixed_reader(write_jsonl):
    rows = toy_rows()
    for r in rows:
        i = int(r["id"].split("-")[1])
        r["human_verdict"] = "correct" if i < 2 else "incorrect"
        r["meta"] = {
            "verdicts": {"judge-x": "correct" if i == 0 or (i == 1 and r["checkpoint"] == "rl") else "incorrect"}
        }
    path = write_jsonl(rows)
    human = json.loads(run_command("format_share", input=path, fixed_reader="human", json=True, bootstrap=0))
    assert human["comparisons"][0]["fixed_gain"] == 0.0 and human["sources"]["human"].startswith("human_verdict")
    judge = json.loads(run_command("format_share", input=path, fixed_reader="judge-x", json=True, bootstrap=0))
    c = judge["comparisons"][0]
    assert c["fixed_gain"] == 25.0 and c["format_share"] == 0.5


def test_bad_input_names_file_line_and_field(write_jsonl):
    rows = toy_rows()
    rows[3] = {**rows[3], "gold": "Q"}
    with pytest.raises(CommandError, match=r"in\.jsonl, line 4, field 'gold'"):
        run_command("format_share", input=write_jsonl(rows), json=True)
    rows = toy_rows()
    rows[2] = {**rows[2], "human_verdict": "maybe"}
    with pytest.raises(CommandError, match=r"line 3, field 'human_verdict': must be one of correct, incorrect"):
        run_command("format_share", input=write_jsonl(rows), fixed_reader="human")
    rows = toy_rows()
    del rows[0]["checkpoint"]
    with pytest.raises(CommandError, match=r"line 1, field 'checkpoint'"):
        run_command("format_share", input=write_jsonl(rows))
    with pytest.raises(CommandError, match=r"line 2: not valid JSON"):
        run_command("format_share", input=write_jsonl([toy_rows()[0], "{oops"]))
    with pytest.raises(CommandError, match="'nobody' is not a registered reader"):
        run_command("format_share", input=write_jsonl(toy_rows()), fixed_reader="nobody")


def test_without_a_base_checkpoint_the_command_says_so(write_jsonl):
    rows = [dict(r, checkpoint="sft") if r["checkpoint"] == "base" else r for r in toy_rows()]
    with pytest.raises(CommandError, match=r"no base/RL comparison.*no 'base' checkpoint"):
        run_command("format_share", input=write_jsonl(rows))
    out = json.loads(
        run_command("format_share", input=write_jsonl(rows), base_checkpoint="sft", json=True, bootstrap=0)
    )
    assert out["comparisons"][0]["base_checkpoint"] == "sft"


@pytest.mark.system  # a child process
def test_the_command_runs_without_a_database_server(write_jsonl, tmp_path):
    """As the analytics check runs it: a DATABASE_URL that points nowhere."""
    import os
    import subprocess
    import sys

    from ..conftest import ROOT

    env = dict(os.environ, DATABASE_URL="postgres://nobody@127.0.0.1:1/none", SECRET_KEY="t")
    env.pop("CELERY_BROKER_URL", None)
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "format_share",
            "--input",
            str(write_jsonl(toy_rows())),
            "--json",
            "--bootstrap",
            "50",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["comparisons"][0]["reported_gain"] == 50.0


def test_the_toy_next_to_a_real_gain_makes_pooled_and_mean_of_shares_differ(write_jsonl):
    rows = toy_rows()
    for i in range(10):  # every answer boxed: the whole 10-point gain is real
        common = dict(
            question=f"Real question {i}?",
            choices=["w", "x", "y", "z"],
            gold="A",
            model="real",
            benchmark="mmlu",
            prompt="p1",
        )
        rows.append(
            dict(id=f"real-base-{i}", checkpoint="base", response="\\boxed{A}" if i < 5 else "\\boxed{B}", **common)
        )
        rows.append(
            dict(id=f"real-rl-{i}", checkpoint="rl", response="\\boxed{A}" if i < 6 else "\\boxed{B}", **common)
        )
    out = json.loads(run_command("format_share", input=write_jsonl(rows), json=True, bootstrap=200))
    by = {c["model"]: c for c in out["comparisons"]}
    assert (by["real"]["reported_gain"], by["real"]["fixed_gain"], by["real"]["format_share"]) == (10.0, 10.0, 0.0)
    assert out["pooled"]["format_share"] == 25 / 30 and out["mean_of_shares"] == 0.5
