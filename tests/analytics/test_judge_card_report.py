"""The judge-bias card through the stored report: computed by the report task on the labelled
fixture, shown per producer on the analytics page, downloadable, and printed by `manage.py
judge_card` with the same numbers."""

from __future__ import annotations

import json
import re
from collections import Counter
from html import escape

import pytest
from django.test import Client

from adjudication.analytics.agreement import HumanObs
from adjudication.analytics.selectors import human_observations
from adjudication.models import ReaderSpec, Reading, Response
from readers.strata import response_format

from ..conftest import run_command
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager() -> Client:
    client = Client()
    client.force_login(make_user("boss", "manager"))
    return client


def _in_scope(h: HumanObs, scope: str) -> bool:
    return h.verdict in ("correct", "incorrect") and (scope == "reviewed" or (scope == "controls") == h.is_control)


def _rate_text(s: dict, name: str, k: str, den: tuple[str, str]) -> str:
    lo, hi = s[f"{name}_ci"]
    return f"{s[name]:.3f} [{lo:.3f}, {hi:.3f}] ({s[k]}/{s[den[0]] + s[den[1]]})"


def test_the_stored_report_holds_each_producers_card_and_the_page_shows_it(
    labelled, computed, manager, django_capture_on_commit_callbacks
):
    ds, _ = labelled
    # The judge runs on a model of the answering model's family (orca-7b): a self-preference to flag.
    spec = ReaderSpec.objects.get(name="judge-x")
    spec.config = {**spec.config, "endpoint_model": "Orca-2-13B"}
    spec.save()
    # One reply no parser understood (the judging service stores it as an error so marked), on a
    # labelled response: a parse failure on the card, not a failed call and not a verdict.
    labels = human_observations(dataset=ds)
    # A control when there are any: the page's scope is then the controls.
    target = min(labels, key=lambda rid: (not labels[rid].is_control, labels[rid].verdict is None, rid))
    Reading.objects.filter(reader_spec=spec, response_id=int(target)).update(
        verdict="error", detail={"parse_status": "unparsed"}
    )
    report = computed(ds)
    block = report.body["judge_cards"]
    scope = block["scope"]
    assert block["cards"][0]["producer"] == "judge-x"  # judges first
    cards = {c["producer"]: c for c in block["cards"]}
    assert set(cards) == {"judge-x", "boxed", "strict-match", "fixed"}

    # The overall cells are the agreement table's on the same scope.
    judge = cards["judge-x"]
    row = next(
        r for r in report.body["tables"]["agreement"]["rows"] if r["reader"] == "judge-x" and r["scope"] == scope
    )
    assert [judge["overall"][k] for k in ("tp", "fp", "fn", "tn")] == [row[k] for k in ("tp", "fp", "fn", "tn")]

    # The format strata are readers.strata's reading of the labelled responses' texts.
    human = human_observations(dataset=ds)
    texts = dict(Response.objects.filter(dataset=ds).values_list("id", "text"))
    expected = Counter(
        response_format(texts[int(rid)]) for rid, h in human.items() if _in_scope(h, scope) and rid != target
    )
    assert {s["stratum"]: s["n"] for s in judge["breakdowns"]["format"]["strata"]} == dict(expected)
    assert sum(s["n"] for s in judge["breakdowns"]["length"]["strata"]) == judge["n"]
    assert judge["breakdowns"]["length"]["edges"] == block["length_edges"]

    assert _in_scope(human[target], scope)
    assert judge["parse_failures"] == 1
    assert judge["overall"]["excluded"] == {"producer_unparsed": 1}

    # Every labelled response is orca's: each one the judge graded is its own family's.
    sp = judge["self_preference"]
    assert sp["flagged"] and sp["family"] == "orca" and sp["n_own"] == judge["n"] > 0
    assert cards["boxed"]["self_preference"] is None

    page = manager.get(f"/analytics/{ds.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="judge-cards"' in html
    assert 'data-producer="judge-x" open' in html
    assert f"self-preference: judges {sp['n_own']} labelled item(s) of its own family (orca)" in html
    assert "Where the bias lives:" in html
    rate = judge["parse_failure_rate"]
    assert (rate["k"], rate["n"]) == (1, judge["judged"]) and rate["ci"][0] < 1 / judge["judged"] < rate["ci"][1]
    lo, hi = rate["ci"]
    assert (
        f"Unparsed replies: 1 of {judge['judged']} labelled items judged, {rate['rate']:.3f} [{lo:.3f}, {hi:.3f}]"
        in html
    )
    start = html.index('data-producer="judge-x"')
    card_html = html[start : html.index("</details>", start)]
    # In the card's order (the stored jsonb keeps no key order; the block says it).
    shown = re.findall(r'data-dimension="([a-z_]+)"', card_html)
    assert shown == [d for d in block["breakdown_order"] if d in judge["breakdowns"]]
    assert shown[:2] == ["length", "format"] and shown[-1] == "self_family"
    for dimension, b in judge["breakdowns"].items():
        assert f'data-dimension="{dimension}"' in html
        for s in b["strata"]:
            if s["false_accept_rate"] is not None:
                assert escape(_rate_text(s, "false_accept_rate", "fp", ("fp", "tn"))) in html, (dimension, s)
            if s["false_reject_rate"] is not None:
                assert escape(_rate_text(s, "false_reject_rate", "fn", ("fn", "tp"))) in html, (dimension, s)

    # A reader's card is on the page in brief (its overall rates and where the bias lives): its
    # breakdowns are in the download.
    start = html.index('data-producer="boxed"')
    boxed_html = html[start : html.index("</details>", start)]
    assert "data-dimension" not in boxed_html and "Where the bias lives:" in boxed_html
    assert f"judge_card --dataset {ds.name} --judge boxed" in boxed_html
    exported = json.loads(manager.get(f"/analytics/{ds.pk}/judge-card.json").content)
    assert exported["rows"] == report.body["tables"]["judge-card"]["rows"]
    assert {r["dimension"] for r in exported["rows"] if r["reader"] == "judge-x"} == {"overall", *judge["breakdowns"]}
    full = json.loads(manager.get(f"/analytics/{ds.pk}/report.json").content)
    assert full["judge_cards"] == block

    printed = json.loads(run_command("judge_card", dataset=ds.name, json=True))
    assert printed["scope"] == scope
    # The command computes no prediction-powered figures (the report's estimates do): the rest is equal.
    strip = [{k: v for k, v in c.items() if k != "prediction_powered"} for c in block["cards"]]
    assert [{k: v for k, v in c.items() if k != "prediction_powered"} for c in printed["cards"]] == strip
    text = run_command("judge_card", dataset=ds.name, judge=["judge-x"], by="format")
    assert "== judge-x (judge" in text and "-- by answer format" in text and "-- by checkpoint" not in text
    assert "self-preference (judge model 'Orca-2-13B'): FLAGGED" in text
    assert f"unparsed replies: 1 of {judge['judged']}, {rate['rate']:.3f} [{lo:.3f}, {hi:.3f}]" in text
    assert "== boxed" not in text

    # The report kind's own page shows the command's text (computed by the task, then served).
    url = f"/analytics/{ds.pk}/reports/judge_card/"
    with django_capture_on_commit_callbacks(execute=True):
        manager.get(url)
    kind_page = manager.get(url).content.decode()
    assert 'id="report-text"' in kind_page and "== judge-x (judge" in kind_page
    assert escape("self-preference (judge model 'Orca-2-13B'): FLAGGED") in kind_page
