"""`manage.py consensus`: on a dataset in the database (the `labelled` fixture: base and RL runs,
three rule readers and an LLM judge, a labelled queue) and on a JSONL file without a database."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.core.management.base import CommandError

from adjudication.models import FinalLabel, Reading, Response

from ..conftest import run_command
from .conftest import N


def final_verdicts(ds) -> dict[str, str]:
    """Independent of the analytics code: each labelled response's final answer against its gold."""
    out = {}
    for f in FinalLabel.objects.filter(item__queue__dataset=ds).select_related("item__review_item__response__question"):
        response = f.item.review_item.response
        out[str(response.id)] = "correct" if f.answer == response.question.gold else "incorrect"
    return out


@pytest.mark.django_db
def test_consensus_on_the_database(labelled):
    ds, _queue = labelled
    out = json.loads(run_command("consensus", dataset="an", json=True, bootstrap=3, seed=1))
    assert out["dataset"] == "an" and out["model"] == "dawid-skene" and out["accuracy_by"] == "checkpoint"
    human = final_verdicts(ds)
    for row in out["producers"]:
        readings = Reading.objects.filter(response__dataset=ds, reader_spec__name=row["producer"])
        verdicts = Counter(readings.values_list("verdict", flat=True))
        assert row["n_votes"] == verdicts["correct"] + verdicts["incorrect"]
        assert row["abstentions"] == {k: v for k, v in sorted(verdicts.items()) if k not in ("correct", "incorrect")}
        said = {str(rid): v for rid, v in readings.values_list("response_id", "verdict")}
        positives = [said[r] for r, h in human.items() if h == "correct" and said.get(r) in ("correct", "incorrect")]
        assert row["human_sensitivity"]["n"] == len(positives)
        assert row["human_sensitivity"]["k"] == positives.count("correct")
    assert {r["producer"] for r in out["producers"]} == {"boxed", "strict-match", "fixed", "judge-x"}
    groups = {g["group"]: g for g in out["accuracy"]}
    assert set(groups) == {"base", "rl"} and all(g["n_items"] == N for g in groups.values())
    for ckpt, g in groups.items():
        labelled_here = [h for r, h in human.items() if Response.objects.get(id=int(r)).run.checkpoint == ckpt]
        assert g["human"]["n"] == len(labelled_here) and g["human"]["k"] == labelled_here.count("correct")
        assert 0 <= g["accuracy"] <= 1 and g["ci"][0] <= g["ci"][1]
    posteriors = {i["item"]: i for i in out["items"]}
    assert len(posteriors) == 2 * N
    for r, h in human.items():  # the human labels are clamped
        assert posteriors[r]["human"] == h and posteriors[r]["p_correct"] == (1.0 if h == "correct" else 0.0)

    per = json.loads(run_command("consensus", dataset="an", json=True, bootstrap=0, by="checkpoint"))
    assert {(r["producer"], r["stratum"]) for r in per["producers"]} >= {("judge-x", "base"), ("judge-x", "rl")}

    text = run_command("consensus", dataset="an", bootstrap=0)
    assert "judge-x" in text and "human sens." in text and "accuracy (consensus)" in text


@pytest.mark.django_db
def test_consensus_unknown_dataset():
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        run_command("consensus", dataset="nope")


def panel_rows(n: int = 40) -> list[dict]:
    rows = []
    for i in range(n):
        truth = "correct" if i % 3 else "incorrect"
        wrong = "incorrect" if truth == "correct" else "correct"
        for k, producer in enumerate(("rule", "judge", "other")):
            verdict = wrong if (i + k) % 7 == 0 else truth
            if producer == "rule" and i % 5 == 0:
                verdict = "timeout"
            rows.append(
                {
                    "id": f"q{i}",
                    "producer": producer,
                    "verdict": verdict,
                    "human_verdict": truth if i < 12 else None,
                    "checkpoint": "rl" if i % 2 else "base",
                }
            )
    return rows


def test_consensus_on_a_file(write_jsonl):
    rows = panel_rows()
    path = write_jsonl(rows)
    out = json.loads(run_command("consensus", input=str(path), json=True, bootstrap=2, model="mace"))
    assert out["input"] == str(path) and out["model"] == "mace"
    rule = next(p for p in out["producers"] if p["producer"] == "rule")
    assert rule["abstentions"] == {"timeout": sum(r["verdict"] == "timeout" for r in rows)}
    assert rule["n_votes"] == sum(r["producer"] == "rule" and r["verdict"] != "timeout" for r in rows)
    assert [g["group"] for g in out["accuracy"]] == ["base", "rl"]
    assert sum(g["human"]["n"] for g in out["accuracy"]) == 12
    text = run_command("consensus", input=str(path), bootstrap=0, items=True)
    assert "q39" in text and "rule" in text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"id": "q1", "producer": "a", "verdict": "maybe", "human_verdict": None}, r"line 3, field 'verdict'"),
        ({"id": "q1", "producer": "a", "verdict": "correct"}, r"line 3, field 'human_verdict': missing"),
        (
            {"id": "q0", "producer": "c", "verdict": "correct", "human_verdict": "incorrect"},
            r"line 3, field 'human_verdict': 'incorrect' contradicts 'correct' given for item 'q0' on line 1",
        ),
        (
            {"id": "q0", "producer": "c", "verdict": "correct", "human_verdict": None, "checkpoint": "rl"},
            r"line 3, field 'checkpoint': 'rl' contradicts 'base'",
        ),
    ],
)
def test_bad_consensus_input_names_file_line_and_field(write_jsonl, line, message):
    good = [
        {"id": "q0", "producer": "a", "verdict": "correct", "human_verdict": "correct", "checkpoint": "base"},
        {"id": "q0", "producer": "b", "verdict": "correct", "human_verdict": None, "checkpoint": "base"},
    ]
    path = write_jsonl([*good, line], name="bad.jsonl")
    with pytest.raises(CommandError, match=rf"bad\.jsonl, {message}"):
        run_command("consensus", input=str(path), bootstrap=0)


def test_consensus_refuses_bad_options(write_jsonl):
    path = write_jsonl(panel_rows(5))
    with pytest.raises(CommandError, match="--group-duplicates must be in"):
        run_command("consensus", input=str(path), group_duplicates=0.3)
    with pytest.raises(CommandError, match="--bootstrap must be 0 or more"):
        run_command("consensus", input=str(path), bootstrap=-1)
    only_abstentions = write_jsonl(
        [{"id": "q0", "producer": "a", "verdict": "error", "human_verdict": None}], name="abst.jsonl"
    )
    with pytest.raises(CommandError, match=r"abst\.jsonl: no correct/incorrect votes"):
        run_command("consensus", input=str(only_abstentions), bootstrap=0)


@pytest.mark.django_db
def test_format_share_with_the_consensus_as_fixed_reader(labelled):
    ds, _queue = labelled
    out = json.loads(run_command("format_share", dataset="an", fixed_reader="consensus", json=True, bootstrap=20))
    assert out["fixed_reader"] == "consensus" and "consensus" in out["sources"]["consensus"]
    # The same fit through the consensus command: one per checkpoint, most likely truth per response.
    fit = json.loads(run_command("consensus", dataset="an", json=True, bootstrap=0, by="checkpoint"))
    says_correct = {int(i["item"]): i["p_correct"] >= 0.5 for i in fit["items"]}
    runs = {r.id: (r.run.model, r.run.benchmark, r.run.checkpoint) for r in Response.objects.filter(dataset=ds)}
    assert out["comparisons"]
    for c in out["comparisons"]:
        for side in ("base", "rl"):
            ckpt = c[f"{side}_checkpoint"]
            members = [rid for rid, key in runs.items() if key == (c["model"], c["benchmark"], ckpt)]
            assert c[side]["n_responses"] == len(members)
            expected = sum(says_correct.get(rid, False) for rid in members) / len(members)
            assert c[side]["fixed_accuracy"] == pytest.approx(expected)
    # Clamped: on every labelled response the consensus reader says what the humans said.
    for rid, verdict in final_verdicts(ds).items():
        assert says_correct[int(rid)] == (verdict == "correct")


def test_format_share_consensus_needs_a_dataset(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "model": "m", "checkpoint": "base", "question": "q", "response": "r"}\n')
    with pytest.raises(CommandError, match="use --dataset"):
        run_command("format_share", input=str(path), fixed_reader="consensus")


def test_human_weight_reaches_the_fit_and_is_said(write_jsonl):
    from adjudication.analytics.consensus import consensus
    from adjudication.analytics.files import consensus_file_inputs

    path = write_jsonl(panel_rows())
    out = json.loads(run_command("consensus", input=str(path), json=True, bootstrap=0, human_weight=5))
    direct = consensus(consensus_file_inputs(path), n_boot=0, human_weight=5).as_dict()
    plain = json.loads(run_command("consensus", input=str(path), json=True, bootstrap=0))
    assert out["human_weight"] == 5 and plain["human_weight"] == 1
    assert [p["sensitivity"] for p in out["producers"]] == [p["sensitivity"] for p in direct["producers"]]
    assert "human labels weighted x5" in run_command("consensus", input=str(path), bootstrap=0, human_weight=5)
    with pytest.raises(CommandError, match="--human-weight must be 1 or more"):
        run_command("consensus", input=str(path), bootstrap=0, human_weight=0)
    with pytest.raises(CommandError, match="--human-weight needs --model dawid-skene"):
        run_command("consensus", input=str(path), bootstrap=0, human_weight=3, model="mace")
