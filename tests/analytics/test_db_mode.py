"""Database mode: a dataset with base and RL runs, rule readers and an LLM judge, a queue routed by
disagreement with controls, two annotators and an adjudicator; then `agreement --dataset`,
`format_share --dataset` (including the human labels as the fixed reader) and the manager page."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.core.management.base import CommandError
from django.test import Client

from adjudication.models import Dataset, FinalLabel, QueueItem, Reading, Response

from ..conftest import run_command
from ..review.conftest import make_user
from .conftest import JUDGE_TEMPLATE, N

pytestmark = pytest.mark.django_db


def expected_vs_human(ds, reader, *, controls):
    """Independent of the analytics code: the reader's verdict against the gold check of the final label."""
    finals = {}
    for f in FinalLabel.objects.filter(item__queue__dataset=ds).select_related("item__review_item__response__question"):
        ri = f.item.review_item
        if ri.is_control == controls:
            finals[ri.response_id] = "correct" if f.answer == ri.response.question.gold else "incorrect"
    pairs = [
        (("incorrect" if r.verdict == "no_answer" else r.verdict), finals[r.response_id])
        for r in Reading.objects.filter(response_id__in=finals, reader_spec__name=reader)
    ]
    n = len(pairs)
    tp = sum(p == h == "correct" for p, h in pairs)
    tn = sum(p == h == "incorrect" for p, h in pairs)
    fp = sum(p == "correct" and h == "incorrect" for p, h in pairs)
    return n, (tp + tn) / n, fp


def test_agreement_on_the_database(labelled):
    ds, queue = labelled
    items = QueueItem.objects.filter(queue=queue)
    controls = items.filter(review_item__is_control=True).count()
    assert 0 < controls < items.count() and not items.filter(status="open").exists()
    out = json.loads(run_command("agreement", dataset="an", json=True))
    note = out["selection"]
    assert note["routed_by_disagreement"] and note["preferred_scope"] == "controls"
    assert note["labelled_controls"] == controls and note["labelled_disputed"] == items.count() - controls
    for scope, is_control in (("controls", True), ("disputed", False)):
        for reader in ("boxed", "strict-match", "fixed", "judge-x"):
            n, acc, fp = expected_vs_human(ds, reader, controls=is_control)
            got = out["vs_human"][scope][reader]["all"]
            assert (got["n"], got["accuracy"], got["fp"]) == (n, acc, fp), (scope, reader)
    assert out["producers"]["fixed"]["scope"] == "controls"
    # The judge accepts everything from RL: among the RL items the humans reject, it false-accepts all.
    judge_rl = out["vs_human_by"]["checkpoint"]["judge-x"]["rl"]
    assert judge_rl["fn"] == 0 and (judge_rl["fp"] == 0 or judge_rl["false_accept_rate"] == 1.0)
    assert out["vs_human"]["reviewed"]["judge-x"]["all"]["answer_agreement"] is None
    # readers alone, over all 24 responses
    assert out["readers"]["boxed"]["all"]["n"] == 2 * N
    assert out["readers"]["boxed"]["all"]["extraction_rate"]["k"] == N  # only RL boxes
    # one disagreement between the two annotators, on one item
    hh = out["human_human"]["reviewed"]
    assert hh["percent_agreement"]["n"] == items.count() and hh["percent_agreement"]["k"] == items.count() - 1
    assert hh["pairwise"][0]["raters"] == ["ann", "bob"] and hh["krippendorff_alpha"] is not None
    pop = out["population"][0]
    assert pop["policy"] == "queue:aq" and pop["n_disputed"] + pop["n_undisputed"] == 2 * N


def test_agreement_text_and_unknown_dataset(labelled):
    text = run_command("agreement", dataset="an")
    assert "Review items were routed by reader disagreement" in text and "judge-x" in text
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        run_command("agreement", dataset="nope")


def test_format_share_on_the_database(labelled):
    out = json.loads(run_command("format_share", dataset="an", json=True, bootstrap=200))
    (c,) = out["comparisons"]
    # boxed: base reads nothing (0 %), RL 8/12 right; fixed: base 7/12, RL 8/12.
    assert c["reported_gain"] == pytest.approx(100 * 8 / 12) and c["fixed_gain"] == pytest.approx(100 / 12)
    assert c["format_share"] == pytest.approx(7 / 8)
    assert c["rl"]["box_rate"]["rate"] == 1.0 and c["base"]["box_rate"]["rate"] == 0.0
    human = json.loads(run_command("format_share", dataset="an", fixed_reader="human", json=True, bootstrap=0))
    ch = human["comparisons"][0]
    # Only questions whose base and RL responses both carry a final label are paired.
    finals = {f.item.review_item.response_id: f for f in FinalLabel.objects.select_related("item__review_item")}
    by_q: dict[int, dict[str, Response]] = {}
    for r in Response.objects.filter(id__in=finals).select_related("run", "question"):
        by_q.setdefault(r.question_id, {})[r.run.checkpoint] = r
    paired = {q: pair for q, pair in by_q.items() if len(pair) == 2}
    assert ch["n_questions"] == len(paired) > 0

    def acc(ckpt, verdict_of):
        return sum(verdict_of(pair[ckpt]) == "correct" for pair in paired.values()) / len(paired)

    boxed = dict(Reading.objects.filter(reader_spec__name="boxed").values_list("response_id", "verdict"))
    human_v = {
        rid: "correct" if f.answer == Response.objects.get(id=rid).question.gold else "incorrect"
        for rid, f in finals.items()
    }
    assert ch["reported_gain"] == pytest.approx(
        100 * (acc("rl", lambda r: boxed[r.id]) - acc("base", lambda r: boxed[r.id]))
    )
    assert ch["fixed_gain"] == pytest.approx(
        100 * (acc("rl", lambda r: human_v[r.id]) - acc("base", lambda r: human_v[r.id]))
    )
    assert human["sources"]["human"].startswith("final human labels")
    with pytest.raises(CommandError, match="no readings by 'nobody'"):
        run_command("format_share", dataset="an", fixed_reader="nobody")


def test_the_manager_page_has_plots_tables_and_downloads(labelled, computed):
    ds, _ = labelled
    for query in ({}, {"fixed": "human"}, {"reported": "strict-match", "fixed": "human"}):
        computed(ds, **query)
    client = Client()
    client.force_login(make_user("boss", "manager"))
    page = client.get(f"/analytics/{ds.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    svgs = re.findall(r"<svg .*?</svg>", html, flags=re.S)
    assert len(svgs) >= 5  # accuracy, agreement, heat maps, format share, ranking
    for s in svgs:
        ET.fromstring(s)
    for title in (
        "Accuracy by reader",
        "Judge confusion",
        "Format share",
        "Model ranking per reader",
        "Human–human agreement",
        "routed by reader disagreement",
    ):
        assert title in html
    rows = list(csv.DictReader(io.StringIO(client.get(f"/analytics/{ds.pk}/agreement.csv").content.decode())))
    assert {r["reader"] for r in rows} >= {"boxed", "fixed", "judge-x"} and {r["scope"] for r in rows} >= {"controls"}
    data = client.get(f"/analytics/{ds.pk}/format-share.json?fixed=human").json()
    assert data["table"] == "format-share" and data["rows"][0]["model"] == "orca-7b"
    report = client.get(f"/analytics/{ds.pk}/report.json").json()
    assert report["format_share"]["comparisons"][0]["format_share"] == pytest.approx(7 / 8)
    assert client.get(f"/analytics/{ds.pk}/nothing.csv").status_code == 404
    assert client.get(f"/analytics/{ds.pk}/report.csv").status_code == 404
    with_params = client.get(f"/analytics/{ds.pk}/?reported=strict-match&fixed=human&by=checkpoint")
    assert with_params.status_code == 200 and b"strict-match" in with_params.content


def test_the_page_is_for_managers_only(labelled):
    ds, _ = labelled
    client = Client()
    client.force_login(make_user("carl", "annotator", "adjudicator"))
    assert client.get(f"/analytics/{ds.pk}/").status_code == 403
    assert client.get(f"/analytics/{ds.pk}/readers.csv").status_code == 403


def test_the_page_works_before_any_label_or_reading(write_jsonl, computed):
    run_command(
        "import_responses",
        str(
            write_jsonl(
                [{"id": "1", "question": "q?", "gold": "4", "response": "4", "model": "m", "checkpoint": "base"}]
            )
        ),
        dataset="empty",
        no_progress=True,
    )
    computed(Dataset.objects.get(name="empty"))
    client = Client()
    client.force_login(make_user("boss", "manager"))
    page = client.get(f"/analytics/{Dataset.objects.get(name='empty').pk}/")
    assert page.status_code == 200 and b"No final human labels yet" in page.content


def test_format_share_on_the_database_pools_by_task_type_and_warns_on_zero_thresholds(labelled, computed):
    ds, _ = labelled
    for query in ({}, {"pool_by": "task_type"}, {"min_gain": 80, "min_extraction": 0.5}):
        computed(ds, **query)
    out = json.loads(run_command("format_share", dataset="an", json=True, bootstrap=0, by="task_type"))
    assert out["task_types"]["mmlu"] == {**out["task_types"]["mmlu"], "task_type": "multiple_choice", "source": "items"}
    group = out["groups"]["multiple_choice"]
    assert group["pooled"]["format_share"] == pytest.approx(7 / 8)
    assert group["box_rate"]["base"]["rate"] == 0.0 and group["box_rate"]["rl"]["rate"] == 1.0
    assert group["pair_contributions"][0]["cumulative_share"] == 1.0
    assert any("--min-reported-gain is 0" in w for w in out["warnings"])
    client = Client()
    client.force_login(make_user("boss2", "manager"))
    warned = client.get(f"/analytics/{ds.pk}/?pool_by=task_type").content.decode()
    assert "--min-reported-gain is 0" in warned and "task_type: multiple_choice" in warned
    assert "our reading of the seed" in warned
    chosen = client.get(f"/analytics/{ds.pk}/?min_gain=80&min_extraction=0.5").content.decode()
    assert "--min-reported-gain is 0" not in chosen and "no eligible comparison" in chosen
    pairs = client.get(f"/analytics/{ds.pk}/format-share-pairs.json").json()
    assert pairs["rows"][0]["model"] == "orca-7b" and pairs["rows"][0]["pool"] == "all"


def test_every_judge_bias_figure_names_the_judges_template(labelled, computed):
    ds, _ = labelled
    computed(ds)  # one stored report serves every breakdown (`by` only changes what the page shows)
    client = Client()
    client.force_login(make_user("boss", "manager"))
    page = client.get(f"/analytics/{ds.pk}/?by=checkpoint").content.decode()
    # The agreement section holds every bias figure (overall, by checkpoint, population): the
    # judge's rows carry its template hash; a rule reader's do not.
    html = page.split('<section id="agreement">', 1)[1].split("</section>", 1)[0]
    cells = re.findall(r"<tr[^>]*><td>(judge-x|boxed)</td>.*?</tr>", html, flags=re.S)
    assert cells.count("judge-x") >= 2
    for row in re.findall(r"<tr[^>]*><td>judge-x</td>.*?</tr>", html, flags=re.S):
        assert f"template {JUDGE_TEMPLATE}" in row
    for row in re.findall(r"<tr[^>]*><td>boxed</td>.*?</tr>", html, flags=re.S):
        assert "template " not in row
    for table in ("agreement", "agreement-by"):
        rows = list(csv.DictReader(io.StringIO(client.get(f"/analytics/{ds.pk}/{table}.csv").content.decode())))
        assert {r["template_hash"] for r in rows if r["reader"] == "judge-x"} == {JUDGE_TEMPLATE}
        assert {r["template_hash"] for r in rows if r["reader"] == "boxed"} == {""}
    text = run_command("agreement", dataset="an")
    judge_block = text.split("judge-x", 1)[1].split("\n")[1]
    assert judge_block.strip() == f"judge template sha256 {JUDGE_TEMPLATE}"
