"""Judge calibration (issue 37 item 5): the expected calibration error and the reliability bins
recover a simulated judge's known calibration, and the analytics page shows each judge's."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from django.test import Client

from adjudication.analytics.calibration import calibration, expected_calibration_error

from ..review.conftest import make_user


def _true_binned_ece(agreement_of, low: float, high: float, n_bins: int = 10) -> float:
    """The population ECE with the estimator's own bins, for confidences uniform on [low, high]
    and P(agrees | c) = agreement_of(c): integrated on a fine grid."""
    grid = np.linspace(low, high, 200_001)[:-1] + (high - low) / 400_000
    bins = np.minimum((grid * n_bins).astype(int), n_bins - 1)
    gap = agreement_of(grid) - grid
    return float(sum(abs(gap[bins == b].sum()) for b in range(n_bins)) / len(grid))


JUDGES = {
    "calibrated": lambda c: c,
    "overconfident by 0.1": lambda c: c - 0.1,
    "overconfident when sure": lambda c: 0.5 + 0.6 * (c - 0.5) ** 1.5,
}


@pytest.mark.parametrize("name", sorted(JUDGES))
def test_the_ece_of_a_simulated_judge_is_within_two_points_of_its_known_calibration(name):
    agreement_of = JUDGES[name]
    truth = _true_binned_ece(agreement_of, 0.5, 1.0)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        confidence = rng.uniform(0.5, 1.0, size=10_000)
        agrees = rng.random(10_000) < agreement_of(confidence)
        result = calibration(confidence, agrees, n_boot=0, seed=seed)
        assert abs(result["ece"] - truth) <= 0.02, (name, seed, result["ece"], truth)
    assert name != "overconfident by 0.1" or truth == pytest.approx(0.1, abs=1e-3)


def test_the_bins_partition_the_items_and_each_says_its_confidence_agreement_and_interval():
    rng = np.random.default_rng(3)
    confidence = np.concatenate([rng.uniform(0.5, 1.0, 300), [1.0, 0.0]])
    agrees = rng.random(302) < 0.7
    result = calibration(confidence, agrees, n_boot=200, seed=1)
    assert result["n"] == 302 == sum(b["n"] for b in result["bins"])
    assert [b["lo"] for b in result["bins"]] == pytest.approx([i / 10 for i in range(10)])
    assert result["bins"][-1]["n"] >= 1 and result["bins"][0]["n"] == 1  # 1.0 in the top bin, 0.0 in the first
    top = result["bins"][-1]
    assert top["agreement"]["n"] == top["n"] and top["agreement"]["ci"][0] <= top["agreement"]["rate"]
    lo, hi = result["ece_ci"]
    assert lo <= result["ece"] <= hi
    assert result["ece"] == pytest.approx(expected_calibration_error(confidence, agrees))
    assert "biased upward" in result["note"]


def test_no_points_no_numbers_and_bad_confidences_are_refused():
    assert calibration([], [])["ece"] is None
    with pytest.raises(ValueError, match="probability"):
        calibration([0.5, 1.2], [True, False])
    with pytest.raises(ValueError, match="probability"):
        calibration([float("nan")], [True])


@pytest.mark.django_db
def test_the_analytics_page_shows_each_judges_reliability_and_ece_from_its_stored_confidences(labelled, computed):
    """The judges app stores a verdict's confidence in its reading's detail; the stored report
    pairs it with the final labels and the manager's page shows the judge's calibration, its bins
    in the download."""
    from adjudication.analytics.report import Params, report_body
    from adjudication.models import Reading

    ds, _queue = labelled
    judged = list(Reading.objects.filter(response__dataset=ds, reader_spec__name="judge-x").order_by("id"))
    for i, reading in enumerate(judged):
        reading.detail = {**(reading.detail or {}), "confidence": 0.95 if i % 2 else 0.65}
        reading.save(update_fields=["detail"])
    body = report_body(dataset=ds, params=Params())
    c = body["calibration"]["judge-x"]
    assert c["n"] > 0 and c["ece"] is not None
    assert {b["lo"] for b in c["bins"] if b["n"]} == {0.6, 0.9}
    rows = body["tables"]["judge-calibration"]["rows"]
    assert {r["reader"] for r in rows} == {"judge-x"} and sum(r["bin_n"] for r in rows) == c["n"]
    assert set(body["calibration"]) == {"judge-x"}  # the rule readers carry no confidence

    computed(ds)
    client = Client()
    client.force_login(make_user("boss", "manager"))
    html = client.get(f"/analytics/{ds.pk}/").content.decode()
    assert 'id="calibration"' in html
    section = html[html.index('id="calibration"') : html.index('id="consensus"')]
    svg = re.search(r"<svg .*?</svg>", section, flags=re.S)
    assert svg is not None and "judge-x: reliability" in svg.group(0)
    ET.fromstring(svg.group(0))
    assert f"n={c['n']}" in section and "ECE" in section
    download = client.get(f"/analytics/{ds.pk}/judge-calibration.csv").content.decode()
    assert sum(int(r["bin_n"]) for r in csv.DictReader(io.StringIO(download))) == c["n"]
