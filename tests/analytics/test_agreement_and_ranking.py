"""`agreement --input` (judge bias per producer), the reader-vs-human functions, the selection
note and population estimate, rankings with flips, and the SVG plots."""

from __future__ import annotations

import json
import math
import random
import xml.etree.ElementTree as ET

import pytest
from django.core.management.base import CommandError
from scipy.stats import kendalltau

from adjudication.analytics import agreement as ag
from adjudication.analytics import ranking, svg
from adjudication.analytics.agreement import NO_ANSWER, HumanObs, ReaderObs

from ..conftest import run_command

Z = 1.959963984540054


def wilson(k, n):
    p = k / n
    c = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    m = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    return m - c, m + c


def agreement_lines(seed=11):
    rnd = random.Random(seed)
    lines = []
    for producer, (keep_c, keep_i) in {"lenient": (0.95, 0.4), "strict": (0.7, 0.97)}.items():
        for i in range(300):
            h = "correct" if rnd.random() < 0.6 else "incorrect"
            j = (
                h
                if rnd.random() < (keep_c if h == "correct" else keep_i)
                else ("incorrect" if h == "correct" else "correct")
            )
            lines.append(
                {
                    "id": f"q{i}",
                    "producer": producer,
                    "verdict": j,
                    "human_verdict": h,
                    "model": "m1" if i % 3 else "m2",
                    "checkpoint": "base" if i % 2 else "rl",
                }
            )
    return lines


def test_agreement_input_prints_every_statistic_per_producer(write_jsonl):
    lines = agreement_lines()
    out = json.loads(run_command("agreement", input=write_jsonl(lines), json=True))
    for producer in ("lenient", "strict"):
        rows = [r for r in lines if r["producer"] == producer]
        n = len(rows)
        tp = sum(r["verdict"] == "correct" and r["human_verdict"] == "correct" for r in rows)
        fp = sum(r["verdict"] == "correct" and r["human_verdict"] == "incorrect" for r in rows)
        fn = sum(r["verdict"] == "incorrect" and r["human_verdict"] == "correct" for r in rows)
        tn = n - tp - fp - fn
        got = out["producers"][producer]
        po, pj, ph = (tp + tn) / n, (tp + fp) / n, (tp + fn) / n
        pe = pj * ph + (1 - pj) * (1 - ph)
        assert got["n"] == n and got["accuracy"] == po
        assert math.isclose(got["cohen_kappa"], (po - pe) / (1 - pe), abs_tol=1e-12)
        assert got["judge_correct_rate"] == pj and got["human_correct_rate"] == ph
        assert math.isclose(got["bias"], pj - ph, abs_tol=1e-15)
        assert got["false_accept_rate"] == fp / (fp + tn) and got["false_reject_rate"] == fn / (fn + tp)
        for name, k, m in (
            ("accuracy", tp + tn, n),
            ("judge_correct_rate", tp + fp, n),
            ("human_correct_rate", tp + fn, n),
            ("false_accept_rate", fp, fp + tn),
            ("false_reject_rate", fn, fn + tp),
        ):
            lo, hi = wilson(k, m)
            assert math.isclose(got[f"{name}_ci"][0], lo, abs_tol=1e-12) and math.isclose(
                got[f"{name}_ci"][1], hi, abs_tol=1e-12
            )
    assert out["producers"]["lenient"]["lean"] == "toward correct"
    assert out["producers"]["strict"]["lean"] == "toward incorrect"


def test_agreement_breaks_down_by_model_and_checkpoint(write_jsonl):
    lines = agreement_lines()
    out = json.loads(run_command("agreement", input=write_jsonl(lines), json=True, by="model,checkpoint"))
    groups = out["by"]["producers"]["strict"]
    assert set(groups) == {"m1/base", "m1/rl", "m2/base", "m2/rl"}
    assert sum(g["n"] for g in groups.values()) == 300


def test_agreement_input_answer_agreement_when_answers_are_given(write_jsonl):
    lines = [
        {
            "id": "1",
            "producer": "r",
            "verdict": "correct",
            "human_verdict": "correct",
            "answer": "B",
            "human_answer": "(B)",
        },
        {
            "id": "2",
            "producer": "r",
            "verdict": "incorrect",
            "human_verdict": "incorrect",
            "answer": "0.5",
            "human_answer": "\\frac{1}{2}",
        },
        {"id": "3", "producer": "r", "verdict": "no_answer", "human_verdict": "incorrect", "human_answer": ""},
        {
            "id": "4",
            "producer": "r",
            "verdict": "correct",
            "human_verdict": "correct",
            "answer": "C",
            "human_answer": "D",
        },
    ]
    out = json.loads(run_command("agreement", input=write_jsonl(lines), json=True))
    assert out["producers"]["r"]["answer_agreement"]["k"] == 3 and out["producers"]["r"]["answer_agreement"]["n"] == 4


@pytest.mark.parametrize(
    "line, message",
    [
        ({"id": "1", "producer": "p", "verdict": "yes", "human_verdict": "correct"}, "line 1, field 'verdict'"),
        (
            {"id": "1", "producer": "p", "verdict": "correct", "human_verdict": "ambiguous"},
            "line 1, field 'human_verdict'",
        ),
        ({"id": "1", "producer": "p", "verdict": "correct"}, "line 1, field 'human_verdict': missing"),
        ({"id": "1", "verdict": "correct", "human_verdict": "correct"}, "line 1, field 'producer': missing"),
        ({"id": True, "producer": "p", "verdict": "correct", "human_verdict": "correct"}, "line 1, field 'id'"),
        ("[1, 2]", "line 1: expected a JSON object"),
    ],
)
def test_bad_agreement_input_names_file_line_and_field(write_jsonl, line, message):
    with pytest.raises(CommandError, match=r"in\.jsonl, " + message.replace("(", r"\(")):
        run_command("agreement", input=write_jsonl([line if isinstance(line, str) else json.dumps(line)]))


def test_duplicate_items_per_producer_are_refused(write_jsonl):
    row = {"id": "1", "producer": "p", "verdict": "correct", "human_verdict": "correct"}
    with pytest.raises(CommandError, match=r"line 2, field 'id': duplicate"):
        run_command("agreement", input=write_jsonl([row, row]))


def test_the_agreement_text_output_is_a_table(write_jsonl):
    text = run_command("agreement", input=write_jsonl(agreement_lines()))
    assert "lenient" in text and "false acc." in text


def test_no_usable_human_verdict_is_excluded_and_counted(write_jsonl):
    lines = [
        {"id": str(i), "producer": "p", "verdict": "correct", "human_verdict": None if i < 3 else "correct"}
        for i in range(10)
    ] + [{"id": "x", "producer": "p", "verdict": "timeout", "human_verdict": "correct"}]
    got = json.loads(run_command("agreement", input=write_jsonl(lines), json=True))["producers"]["p"]
    assert got["n"] == 7 and got["excluded"] == {"human_missing": 3, "producer_timeout": 1}
    assert got["cohen_kappa"] is None and "single category" in got["cohen_kappa_reason"]
    assert got["false_accept_rate"] is None and any("n = 7 < 30" in w for w in got["warnings"])


# ------------------------------------------------------------------------------------------------
# human verdicts and answers from final labels
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, answer, correctness, gold, choices, want",
    [
        ("option", "B", "", "B", ["a", "b"], ("correct", "B")),
        ("option", "(a)", "", "B", ["a", "b"], ("incorrect", "(a)")),
        ("text", " Weber ", "", "B", ["Durkheim", "weber"], ("correct", "B")),
        ("text", "Marx", "", "B", ["Durkheim", "Weber"], ("incorrect", "Marx")),
        ("text", "1/2", "", "\\frac{1}{2}", [], ("correct", "1/2")),
        ("text", "10001", "", "10000", [], ("incorrect", "10001")),
        ("text", "x", "correct", "y", [], ("correct", "x")),
        ("no_answer", "", "", "B", ["a", "b"], ("incorrect", NO_ANSWER)),
        ("ambiguous", "", "", "B", ["a", "b"], (None, None)),
    ],
)
def test_human_verdict_of_a_final_label(kind, answer, correctness, gold, choices, want):
    assert ag.human_verdict(kind, answer, correctness, gold, choices) == want


def test_answers_agree_uses_light_canonical_forms_then_equivalence():
    assert ag.answers_agree("(b)", "B") and ag.answers_agree(None, NO_ANSWER) and not ag.answers_agree("B", NO_ANSWER)
    assert ag.answers_agree("$\\dfrac{1}{2}$", "\\frac12") and ag.answers_agree("0.5", "\\frac{1}{2}")
    assert not ag.answers_agree("A", "B") and not ag.answers_agree(None, "B")


def world():
    """6 responses: 4 disputed (reviewed), 2 controls; reader r1 right on controls, wrong on disputes."""
    obs, human = [], {}
    for i in range(6):
        control = i >= 4
        human[str(i)] = HumanObs(str(i), "correct", "B", is_control=control, policy="p")
        obs.append(
            ReaderObs(
                str(i),
                "r1",
                "correct" if control else "incorrect",
                "B" if control else "C",
                model="m",
                checkpoint="base",
                benchmark="mmlu",
            )
        )
        obs.append(
            ReaderObs(str(i), "judge", "correct", None, kind="judge", model="m", checkpoint="base", benchmark="mmlu")
        )
    return obs, human


def test_the_selection_note_names_the_biased_estimates_and_prefers_controls():
    obs, human = world()
    rep = ag.report(obs, human, strata=[{"policy": "p", "n_disputed": 4, "n_undisputed": 96}])
    note = rep["selection"]
    assert note["routed_by_disagreement"] and note["preferred_scope"] == "controls"
    assert "judge bias, false-accept and false-reject rates" in note["biased_estimates"]
    assert rep["vs_human"]["disputed"]["r1"]["all"]["accuracy"] == 0.0
    assert rep["vs_human"]["controls"]["r1"]["all"]["accuracy"] == 1.0
    assert rep["producers"]["r1"]["scope"] == "controls"
    assert rep["vs_human"]["reviewed"]["judge"]["all"]["answer_agreement"] is None
    assert rep["vs_human"]["reviewed"]["r1"]["all"]["answer_agreement"]["k"] == 2
    # population: 4 % disputed (agreement 0) + 96 % undisputed (agreement 1) = 0.96
    pop = rep["population"][0]["readers"]["r1"]
    assert math.isclose(pop["accuracy"], 0.96) and pop["accuracy_ci"][0] <= 0.96 <= pop["accuracy_ci"][1]


def test_without_controls_there_is_no_population_estimate():
    obs, human = world()
    human = {k: v for k, v in human.items() if not v.is_control}
    rep = ag.report(obs, human, strata=[{"policy": "p", "n_disputed": 4, "n_undisputed": 96}])
    assert "No control items" in rep["selection"]["text"]
    assert "unobserved" in rep["population"][0]["readers"]["r1"]["error"]


def test_the_hint_to_route_controls_appears_only_when_none_were_routed():
    """issue 36 item 6: a queue whose controls are routed but not labelled yet is told so, not told
    to route with a control fraction > 0."""
    obs, human = world()
    human = {k: v for k, v in human.items() if not v.is_control}
    waiting = ag.report(obs, human, routed_controls=12)["selection"]["text"]
    assert "None of the 12 control items" in waiting and "labelled yet" in waiting
    assert "control fraction > 0" not in waiting and "control_fraction" not in waiting
    for nothing_routed in (0, None):
        text = ag.report(obs, human, routed_controls=nothing_routed)["selection"]["text"]
        assert "No control items were routed" in text and "control fraction > 0" in text


def test_human_human_agreement():
    ratings = {"ann": {"1": "A", "2": "B", "3": "C", "4": "A"}, "bob": {"1": "A", "2": "B", "3": "A"}, "cy": {"4": "A"}}
    hh = ag.human_human(ratings)
    assert hh["percent_agreement"]["k"] == 3 and hh["percent_agreement"]["n"] == 4
    pair = next(p for p in hh["pairwise"] if p["raters"] == ["ann", "bob"])
    assert pair["n"] == 3 and pair["agreement"]["k"] == 2


# ------------------------------------------------------------------------------------------------
# rankings
# ------------------------------------------------------------------------------------------------


def test_ranks_share_ties_and_flips_are_strict_reversals():
    tables = {
        "x": {"a": (60, 100), "b": (50, 100), "c": (50, 100), "d": (10, 100)},
        "y": {"a": (40, 100), "b": (55, 100), "c": (50, 100), "d": (12, 100)},
    }
    res = ranking.compare(tables)
    assert [(r["model"], r["rank"]) for r in res["rankings"]["x"]] == [("a", 1), ("b", 2), ("c", 2), ("d", 4)]
    flips = {tuple(f["models"]) for f in res["flips"]}
    assert flips == {("a", "b"), ("a", "c")}  # b vs c is a tie under x: not a flip
    tau = res["kendall_tau"][0]
    ref = kendalltau([0.6, 0.5, 0.5, 0.1], [0.4, 0.55, 0.5, 0.12])
    assert tau["tau"] == ref.statistic and tau["n_models"] == 4
    assert not any(f["separated"] for f in res["flips"] if f["models"] == ["a", "c"])


def test_flips_against_a_reference_reader_and_rank_changes():
    tables = {"ref": {"a": (900, 1000), "b": (100, 1000)}, "other": {"a": (100, 1000), "b": (900, 1000)}}
    res = ranking.compare(tables, reference="ref")
    assert res["flips"][0]["separated"] and res["rank_changes_vs_reference"] == {"other": ["a", "b"]}
    with pytest.raises(ValueError):
        ranking.compare(tables, reference="missing")


# ------------------------------------------------------------------------------------------------
# plots
# ------------------------------------------------------------------------------------------------

HOSTILE = '<script>alert(1)</script>&"'


def test_plots_are_well_formed_svg_and_escape_names():
    plots = [
        svg.interval_chart(
            [{"label": HOSTILE, "value": 0.5, "ci": [0.4, 0.6]}, {"label": "none", "value": None}], title=HOSTILE
        ),
        svg.gain_bars(
            [
                {
                    "model": HOSTILE,
                    "benchmark": "b",
                    "prompt": "",
                    "rl_checkpoint": "rl",
                    "reported_gain": 50.0,
                    "fixed_gain": -5.0,
                    "format_share": 1.1,
                    "eligible": True,
                },
                {
                    "model": "m",
                    "benchmark": "b",
                    "prompt": "p",
                    "rl_checkpoint": "rl",
                    "reported_gain": -2.0,
                    "fixed_gain": 1.0,
                    "format_share": None,
                    "eligible": False,
                },
            ]
        ),
        svg.heatmap([[5, 1], [2, 9]], title=HOSTILE),
        svg.slope_chart(
            {
                "x": [{"model": HOSTILE, "rank": 1}, {"model": "b", "rank": 2}],
                "y": [{"model": HOSTILE, "rank": 2}, {"model": "b", "rank": 1}],
            },
            flipped={HOSTILE, "b"},
        ),
        svg.slope_chart({}, flipped=set()),
    ]
    for plot in plots:
        root = ET.fromstring(plot)
        assert root.tag.endswith("svg") and "<script" not in plot
