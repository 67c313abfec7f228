"""Where users see the prediction-powered estimates: `manage.py estimate` (text and --json), the
stored analytics report, its page and report.json, on a dataset whose disagreement policy routed
its disputes and a share of the rest as controls, both partly labelled. The page, the command and
the stored report agree cell by cell; a withheld interval says why; a bad target, predictor or
policy names its field."""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from django.core.management.base import CommandError
from django.test import Client
from django.utils.html import escape

from adjudication.analytics.design import estimate_sample
from adjudication.analytics.estimates import estimate, producer_predictor
from adjudication.analytics.reports import EstimatesOptions, ReportError, report_compute
from adjudication.analytics.reports.render import estimate_cells
from adjudication.analytics.selectors import estimate_population
from adjudication.models import Dataset, ReaderSpec, Reading, Response, ReviewItem
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import jsonl_writer, run_command, world_transaction
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db

N = 30
CHOICES = ["Durkheim", "Weber", "Merton", "Parsons"]
# A checkpoint name a page must escape (names are data: whatever the imported file says).
RL = "rl<script>x</script>"


def answers(i: int) -> tuple[str, str, str]:
    """(gold, the base's answer, the RL answer): each wrong on a share of the questions."""
    gold = "ABCD"[i % 4]
    wrong = "ABCD"[(i + 1) % 4]
    return gold, gold if i % 3 else wrong, gold if i % 5 else wrong


def text(checkpoint: str, i: int) -> str:
    _, base, rl = answers(i)
    if checkpoint == "base":
        return f"Weighing each in turn. The answer is {base}. [{i}]"
    if i < 10:  # says one letter in prose and boxes another: boxed and strict-match dispute it
        return f"The answer is {'ABCD'[(i + 2) % 4]}. On reflection, \\boxed{{{rl}}} [{i}]"
    return f"Checked. \\boxed{{{rl}}} [{i}]"


def build(write_jsonl) -> Dataset:
    rows = [
        {
            "id": f"{ckpt}-{i}",
            "question": f"Who fits description {i}?",
            "choices": CHOICES,
            "gold": answers(i)[0],
            "response": text("base" if ckpt == "base" else "rl", i),
            "model": "orca-7b",
            "checkpoint": ckpt,
            "benchmark": "mmlu",
        }
        for i in range(N)
        for ckpt in ("base", RL)
    ]
    run_command("import_responses", str(write_jsonl(rows, name="est.jsonl")), dataset="est", no_progress=True)
    ds = Dataset.objects.get(name="est")
    ids = list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    readings_create(
        reader_specs=[reader_spec_by_name(name=n) for n in ("boxed", "strict-match", "fixed")], response_ids=ids
    )
    queue = queue_create(
        dataset=ds,
        spec=QueueSpec(
            name="est", overlap=1, routing=PolicySpec(panel=["boxed", "strict-match"], control_fraction=0.4, seed=3)
        ),
    )
    annotator = make_user("ann", "annotator")
    routed = ReviewItem.objects.filter(policy__dataset=ds)
    # Disputes are served by priority, each priority value a cell of its own: the cells with few
    # items are labelled in full (a cell needs two labels for an interval), every other one and
    # the controls only in part (a third is skipped, to be labelled later).
    sizes = Counter(routed.filter(is_control=False).values_list("priority", flat=True))
    while (lease := lease_claim_next(queue=queue, annotator=annotator).lease) is not None:
        item = lease.item.review_item
        i = int(item.response.external_id.rsplit("-", 1)[1])
        _, base, rl = answers(i)
        if i % 4 == 1 and (item.is_control or sizes[item.priority] > 4):
            label_submit(lease=lease, annotator=annotator, entry=LabelEntry(kind="skipped"), skip_reason="later")
            continue
        said = base if item.response.external_id.startswith("base-") else rl
        label_submit(lease=lease, annotator=annotator, entry=LabelEntry(kind="option", answer=said))
    return ds


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    with world_transaction(django_db_blocker), django_db_blocker.unblock():
        yield build(jsonl_writer(tmp_path_factory.mktemp("estimates")))


@pytest.fixture
def ds(world) -> Dataset:
    return Dataset.objects.get(pk=world.pk)


@pytest.fixture
def manager() -> Client:
    client = Client()
    client.force_login(make_user("boss", "manager"))
    return client


def printed(ds: Dataset, **options) -> dict:
    return json.loads(run_command("estimate", dataset=ds.name, json=True, **options))


def test_the_fixture_is_a_partly_labelled_probability_design(ds):
    """What the other tests rest on: disputes and controls, each with labels and with items left."""
    cells = printed(ds)["design"]["cells"]
    disputed = [c for c in cells if "/disputed" in c["cell"]]
    controls = [c for c in cells if c["cell"].endswith("/control")]
    assert disputed and controls
    assert sum(c["labels"] for c in disputed) > 0 and sum(c["labels"] for c in controls) > 0
    routed = Response.objects.filter(dataset=ds, review_items__isnull=False).count()
    labelled = sum(c["labels"] for c in cells)
    assert 0 < labelled < routed


def test_the_command_prints_the_three_columns_the_design_and_why_an_interval_is_withheld(ds):
    result = printed(ds)
    out = run_command("estimate", dataset=ds.name)
    lines = out.splitlines()
    assert lines[0] == "predictor: fixed (the default: the analytics' fixed reader, 'fixed')"
    assert f"design: policy {result['design']['policy']!r}, {result['design']['labels']} labels" in out
    for cell in result["design"]["cells"]:
        assert f"  {cell['cell']}: {cell['labels']} labels of {cell['responses']} responses" in out
    withheld = [r for r in result["estimates"] if r["withheld"]]
    shown = [r for r in result["estimates"] if not r["withheld"]]
    assert withheld and shown, "the fixture should give both"
    for r in result["estimates"]:
        row = next(n for n, line in enumerate(lines) if line.startswith(r["target"] + " "))
        cells = estimate_cells(r)
        for key in ("machine", "human", "ppi", "labels", "effective", "headline"):
            assert cells[key] in lines[row], (r["target"], key)
        if r["withheld"]:
            assert lines[row + 1].strip() == f"interval withheld: {r['withheld']}"
    # A withheld interval shows the figure alone; a shown one its bounds.
    assert "(no interval)" in estimate_cells(withheld[0])["human"]
    assert "[" in estimate_cells(shown[0])["ppi"]
    assert "it inherits fixed's errors" in out


def test_the_json_is_the_estimator_s_numbers_on_the_design_s_labels(ds):
    """The command adds no arithmetic: its accuracy is the estimator's on the population, the fixed
    reader's verdicts and the labels of the routing design."""
    result = printed(ds, target="accuracy")
    assert [r["target"] for r in result["estimates"]] == ["accuracy"]
    population = estimate_population(dataset=ds)
    sample = estimate_sample(dataset=ds)
    direct = estimate(
        population,
        labels=sample.labels,
        design=sample.design,
        target="accuracy",
        predictor=producer_predictor(population, "fixed"),
        predictor_name="fixed",
    )
    row = result["estimates"][0]
    assert {k: v for k, v in row.items() if k != "kind"} == json.loads(json.dumps(direct.as_dict()))
    assert result["design"]["labels"] == len(sample.labels)


def test_a_target_of_a_group_and_another_predictor(ds):
    result = printed(ds, target=f"gain:base,{RL}", predictor="strict-match")
    assert result["predictor"] == {"name": "strict-match", "why": "named"}
    [row] = result["estimates"]
    assert row["target"] == f"gain:base,{RL}" and row["predictor"] == "strict-match"
    assert row["kind"] == "gain"


def test_groups_by_another_field_leave_the_checkpoint_gains_out_and_say_so(ds):
    result = printed(ds, by="model")
    groups = [r["target"] for r in result["estimates"] if r["kind"] == "accuracy"]
    assert groups == ["accuracy", "accuracy:orca-7b"]
    assert not [r for r in result["estimates"] if r["kind"] in ("gain", "format-share")]
    assert result["notes"] == ["gains and format shares compare checkpoints: they are listed with by=checkpoint"]


def test_the_default_predictor_falls_back_to_the_vote_and_says_so(ds):
    Reading.objects.filter(response__dataset=ds, reader_spec__name="fixed").delete()
    result = printed(ds)
    assert result["predictor"]["name"] == "vote"
    assert "'fixed', gave no verdicts on this dataset" in result["predictor"]["why"]
    assert run_command("estimate", dataset=ds.name).startswith("predictor: vote (the default")
    assert not [r for r in result["estimates"] if r["target"].endswith(":fixed")]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("target", "accuracy:nope", "target accuracy:nope: no checkpoint 'nope'"),
        ("target", "precision", "target: unknown target 'precision'"),
        ("predictor", "oracle", "predictor: no producer 'oracle'"),
        ("policy", "elsewhere", "policy: dataset 'est' has no routing policy 'elsewhere'"),
    ],
)
def test_a_bad_target_predictor_or_policy_names_the_field(ds, option, value, message):
    with pytest.raises(CommandError, match="^" + message.replace("(", r"\(")):
        run_command("estimate", dataset=ds.name, **{option: value})
    with pytest.raises(ReportError) as refused:
        report_compute("estimates", source=ds, options=EstimatesOptions(**{option: value}))
    assert refused.value.field == option


def test_the_api_refuses_a_target_that_does_not_parse_naming_it(ds, manager):
    reply = manager.get(f"/api/datasets/{ds.pk}/reports/estimates/?{urlencode({'target': 'gain:base'})}")
    assert reply.status_code == 400
    assert list(reply.json()["error"]["fields"]) == ["target"]


class Cells(HTMLParser):
    """{table id: {data-target: {data-key: data-value}}} of the tables with an id."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, dict[str, str]]] = {}
        self.table: str | None = None
        self.row: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self.table = a["id"]
            self.tables[self.table] = {}
        elif tag == "tr" and self.table and a.get("data-target") is not None:
            self.row = a["data-target"]
            self.tables[self.table][self.row] = {}
        elif tag == "td" and self.table and self.row is not None and a.get("data-key"):
            self.tables[self.table][self.row][a["data-key"]] = a.get("data-value") or ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None
        elif tag == "tr":
            self.row = None


def _same(shown: str, value) -> bool:
    if value is None:
        return shown == ""
    return float(shown) == pytest.approx(value, abs=1e-12)


def test_the_page_the_command_and_the_stored_report_agree_cell_by_cell(ds, computed, manager):
    report = computed(ds)
    command = printed(ds)
    assert report.body["estimates"]["estimates"] == command["estimates"]
    assert report.body["estimates"]["design"] == command["design"]
    page = manager.get(f"/analytics/{ds.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    tables = Cells(html).tables
    rows = {**tables["estimates-groups"], **tables["estimates-producers"]}
    # The parser gives attributes unescaped: the targets as the command names them.
    assert set(rows) == {r["target"] for r in command["estimates"]}
    for r in command["estimates"]:
        shown = rows[r["target"]]
        assert _same(shown["machine"], r["machine"]), r["target"]
        assert _same(shown["human"], (r["human"] or {}).get("estimate")), r["target"]
        assert _same(shown["ppi"], (r["prediction_powered"] or {}).get("estimate")), r["target"]
        assert int(shown["labels"]) == r["labels"]
        assert _same(shown["effective_labels"], r["effective_labels"]), r["target"]
        assert _same(shown["headline"], r["headline_value"]), r["target"]
        cells = estimate_cells(r)
        for key in ("machine", "human", "ppi"):
            assert escape(cells[key]) in html
    headline = tables["headline-estimates"]
    for r in command["estimates"]:
        if r["kind"] in ("accuracy", "gain", "format-share"):
            assert _same(headline[r["target"]]["headline_value"], r["headline_value"])
    withheld = next(r for r in command["estimates"] if r["withheld"])
    assert escape(f"interval withheld: {withheld['withheld']}") in html
    full = json.loads(manager.get(f"/analytics/{ds.pk}/report.json").content)
    assert full["estimates"]["estimates"] == command["estimates"] and full["estimates_error"] is None


def _numbers(cell: str) -> list[float]:
    """ "0.123 [0.050, 0.200]" → [0.123, 0.05, 0.2]; "–" → []."""
    return [float(x) for x in re.findall(r"[+-]?\d+\.\d+", cell)]


def test_the_page_shows_each_producers_rates_over_every_response_as_the_report_stores_them(ds, computed, manager):
    report = computed(ds)
    rows = report.body["tables"]["judge-bias-estimates"]["rows"]
    assert {r["reader"] for r in rows} >= {"boxed", "strict-match"}
    html = manager.get(f"/analytics/{ds.pk}/").content.decode()
    assert 'id="judge-bias-estimates-table"' in html
    for r in rows:
        found = re.search(
            rf'<tr data-reader="{re.escape(escape(r["reader"]))}" data-rate="{re.escape(r["rate"])}">(.*?)</tr>',
            html,
            re.S,
        )
        assert found, (r["reader"], r["rate"])
        cells = re.findall(r"<td[^>]*>(.*?)</td>", found.group(1), re.S)
        assert _numbers(cells[2])[:1] == pytest.approx(
            [r["labelled_subset"]] if r["labelled_subset"] is not None else [], abs=5e-4
        )
        if r["error"]:
            assert escape(r["error"]) in cells[3]
            continue
        assert _numbers(cells[3]) == pytest.approx([r["machine"]], abs=5e-4)
        for cell, key in ((cells[4], "human"), (cells[5], "prediction_powered")):
            expected = [r[key], r[f"{key}_lo"], r[f"{key}_hi"]]
            assert _numbers(cell) == pytest.approx([x for x in expected if x is not None], abs=5e-4), (r["reader"], key)
        assert int(cells[6]) == r["labels"] and cells[8] == r["headline"]
        assert escape(r["withheld"]) == cells[9]
    # The table downloads as the report stores it.
    exported = json.loads(manager.get(f"/analytics/{ds.pk}/judge-bias-estimates.json").content)
    assert exported["rows"] == rows if isinstance(exported, dict) else exported == rows


def test_the_page_escapes_the_names_it_shows(ds, computed, manager):
    computed(ds)
    html = manager.get(f"/analytics/{ds.pk}/").content.decode()
    assert "<script>x</script>" not in html
    assert "rl&lt;script&gt;x&lt;/script&gt;" in html


def test_annotators_see_no_estimate(ds, computed):
    computed(ds)
    client = Client()
    client.force_login(make_user("ann2", "annotator"))
    for url in (
        f"/analytics/{ds.pk}/",
        f"/analytics/{ds.pk}/reports/estimates/",
        f"/analytics/{ds.pk}/reports/estimates.json",
        f"/analytics/{ds.pk}/report.json",
    ):
        assert client.get(url).status_code == 403, url
    assert client.get(f"/api/datasets/{ds.pk}/reports/estimates/").status_code == 403


def test_a_dataset_without_labels_shows_the_machine_column_alone(write_jsonl):
    rows = [
        {"id": f"b-{i}", "question": f"q{i}", "choices": CHOICES, "gold": "A", "response": "\\boxed{A}"}
        | {"model": "m", "checkpoint": "base", "benchmark": "mmlu"}
        for i in range(4)
    ]
    run_command("import_responses", str(write_jsonl(rows, name="bare.jsonl")), dataset="bare", no_progress=True)
    bare = Dataset.objects.get(name="bare")
    ids = list(Response.objects.filter(dataset=bare).values_list("id", flat=True))
    readings_create(reader_specs=[reader_spec_by_name(name="boxed")], response_ids=ids)
    result = printed(bare, target="accuracy")
    [row] = result["estimates"]
    assert row["machine"] == 1.0 and row["labels"] == 0 and row["withheld"]
    cells = estimate_cells(row)
    assert (cells["human"], cells["ppi"]) == ("–", "–")
    out = run_command("estimate", dataset=bare.name)
    assert "predictor: vote" in out and "design: no labels from a probability design" in out
    assert ReaderSpec.objects.filter(name="fixed", readings__response__dataset=bare).count() == 0


def test_the_population_holds_every_response_its_groups_and_every_reading(ds):
    population = estimate_population(dataset=ds)
    responses = Response.objects.filter(dataset=ds).select_related("run")
    assert population.items == [str(r.pk) for r in responses.order_by("id")]
    for r in responses:
        group = population.groups[str(r.pk)]
        assert (group["model"], group["checkpoint"], group["benchmark"]) == (r.run.model, r.run.checkpoint, "mmlu")
        assert group["task_type"] == "multiple_choice"
    readings = Reading.objects.filter(response__dataset=ds).values_list("reader_spec__name", "response_id", "verdict")
    expected: dict[str, dict[str, str]] = {}
    for name, rid, verdict in readings:
        expected.setdefault(name, {})[str(rid)] = verdict
    assert population.verdicts == expected


def test_the_readings_aggregated_by_postgresql_are_the_orm_s(ds):
    from adjudication.analytics.selectors import _verdicts_per_reader, _verdicts_per_reader_orm

    def pairs(rows) -> dict[int, set[tuple[int, str]]]:
        return {sid: set(zip(rids, said, strict=True)) for sid, rids, said in rows}

    assert pairs(_verdicts_per_reader(ds)) == pairs(_verdicts_per_reader_orm(ds))
