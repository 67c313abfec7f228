"""The analytics page: the rank flips summarised (per reader pair, the ten largest, the rest in
flips.csv), format share with the human labels as the fixed reader showing its values and reasons
in full, and charts that size themselves to their text."""

from __future__ import annotations

import csv
import html
import io
import random
import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from adjudication.analytics import svg
from adjudication.models import Dataset, Question, ReaderSpec, Reading, Response, Run

from ..review.conftest import make_user

pytestmark = pytest.mark.django_db


class Tables(HTMLParser):
    """The text of every cell of every table with an id: {id: [[cell, ...], ...]} (header rows too)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id"):
            self._table = attrs["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture
def manager() -> Client:
    client = Client()
    client.force_login(make_user("boss", "manager"))
    return client


@pytest.fixture
def many_flips() -> Dataset:
    """Six models, five readers that each score them differently: dozens of rank flips."""
    rnd = random.Random(3)
    ds = Dataset.objects.create(name="flips")
    specs = [ReaderSpec.objects.create(name=f"reader-{i}", version="1", config_hash=f"r{i}") for i in range(5)]
    readings = []
    for m in range(6):
        run = Run.objects.create(dataset=ds, model=f"model-{m}", checkpoint="base", benchmark="b")
        correct = {s.pk: rnd.randint(2, 18) for s in specs}
        for i in range(20):
            q = Question.objects.create(dataset=ds, benchmark="b", text=f"{m}-{i}", gold="A", fingerprint=f"{m}-{i}")
            r = Response.objects.create(
                dataset=ds, run=run, question=q, external_id=f"{m}-{i}", text="t", row_hash=f"{m}-{i}"
            )
            readings += [
                Reading(response=r, reader_spec=s, verdict="correct" if i < correct[s.pk] else "incorrect")
                for s in specs
            ]
    Reading.objects.bulk_create(readings)
    return ds


def test_the_rank_flips_are_summarised_per_pair_and_the_ten_largest_with_the_rest_downloadable(
    many_flips, computed, manager
):
    ds = many_flips
    computed(ds)
    page = manager.get(f"/analytics/{ds.pk}/").content.decode()
    flips = list(csv.DictReader(io.StringIO(manager.get(f"/analytics/{ds.pk}/flips.csv").content.decode())))
    assert len(flips) > 10
    assert f"Rank flips: <strong>{len(flips)}</strong>" in page
    tables = Tables(page).tables
    # Per reader pair: a symmetric matrix whose cells count the pair's flips in flips.csv.
    header, *rows = tables["flip-matrix"]
    readers = header[2:]
    per_pair: dict[frozenset, int] = {}
    for f in flips:
        key = frozenset((f["reader_x"], f["reader_y"]))
        per_pair[key] = per_pair.get(key, 0) + 1
    for row in rows:
        reader, total, cells = row[0], int(row[1]), row[2:]
        for other, cell in zip(readers, cells, strict=True):
            if other != reader:
                assert (int(cell) if cell else 0) == per_pair.get(frozenset((reader, other)), 0), (reader, other)
        assert total == sum(n for pair, n in per_pair.items() if reader in pair)
    # The ten largest flips by swing, largest first; the rest are a download away.
    _, *top = tables["top-flips"]
    sizes = sorted((float(f["size"]) for f in flips), reverse=True)
    assert [float(r[4]) for r in top] == pytest.approx([round(s, 1) for s in sizes[:10]], abs=0.051)
    assert f"<strong>{len(flips) - 10} more</strong> in" in page and "flips.csv" in page
    for f in flips:
        x_ahead = float(f["x_accuracy_a"]) - float(f["x_accuracy_b"])
        y_behind = float(f["y_accuracy_b"]) - float(f["y_accuracy_a"])
        assert x_ahead > 0 and y_behind > 0 and float(f["size"]) == pytest.approx(100 * (x_ahead + y_behind))


def test_format_share_against_the_human_labels_shows_its_values_and_reasons_in_full(labelled, computed, manager):
    ds, _ = labelled
    # strict-match reads the base's prose answers and none of RL's boxes: on the labelled
    # questions its gain is negative, so the share is undefined, and the page must say why in full.
    report = computed(ds, reported="strict-match", fixed="human")
    (c,) = report.body["format_share"]["comparisons"]
    assert c["reported_gain"] <= 0 and c["format_share"] is None and c["n_questions"] > 0
    page = manager.get(f"/analytics/{ds.pk}/?reported=strict-match&fixed=human").content.decode()
    text = html.unescape(page)
    section = text.split('<section id="format-share">', 1)[1].split("</section>", 1)[0]
    assert (
        c["format_share_error"] in section
    )  # "reported gain is -58.33 points (≤ 0): the format share ... is undefined"
    assert f"no: {c['ineligible_reason']}" in section
    for value in (c["reported_gain"], c["fixed_gain"]):
        assert f"{value:.2f}" in section
    chart = re.search(r"<svg .*?</svg>", section, flags=re.S).group(0)
    note = f"n={c['n_questions']} · share undefined: reported gain ≤ 0 · not eligible"
    assert note in chart
    # Nothing clipped: the note ends inside the chart.
    width = float(re.search(r'width="(\d+)"', chart).group(1))
    x = float(re.search(r'<text x="([\d.]+)"[^>]*>' + re.escape(note), chart).group(1))
    assert x + svg._text_width(note) <= width


def test_every_chart_is_as_wide_as_its_longest_text():
    long_note = (
        "n=3 · share undefined: reported gain ≤ 0 · not eligible (fixed-reader extraction rate 0.000 < threshold 0.5)"
    )
    comparisons = [
        {
            "model": "m" * 60,
            "benchmark": "b",
            "prompt": "",
            "rl_checkpoint": "rl",
            "reported_gain": -5.0,
            "fixed_gain": 1.0,
            "format_share": None,
            "eligible": False,
            "n_questions": 3,
            "ineligible_reason": "reported gain ≤ 0; fixed-reader extraction rate 0.000 < threshold 0.5",
        }
    ]
    chart = svg.gain_bars(comparisons)
    width = float(re.search(r'width="(\d+)"', chart).group(1))
    assert "not eligible (fixed-reader extraction rate 0.000 &lt; threshold 0.5)" in chart
    assert 250 + 360 + 10 + svg._text_width(long_note) <= width + 1
    assert f"<title>{'m' * 60} · b · - · rl</title>" in chart  # the clipped label keeps its full text
    rows = [{"label": "r", "value": 0.5, "ci": None, "note": "n=123456789 " * 5}]
    chart = svg.interval_chart(rows, title="t")
    assert float(re.search(r'width="(\d+)"', chart).group(1)) >= 230 + 380 + 10 + svg._text_width(
        "50.0%  " + rows[0]["note"]
    )
    many = {
        f"reader-{i:02d}-with-a-long-name": [{"model": "a", "rank": 1}, {"model": "b", "rank": 2}] for i in range(26)
    }
    chart = svg.slope_chart(many, flipped=set())
    assert float(re.search(r'width="(\d+)"', chart).group(1)) <= svg.SLOPE_MAX_WIDTH + 1
    assert "rotate(-50" in chart
