"""One report, one number: for every report kind, the report page's JSON, the command's --json,
the API and a bundle (stored, then replayed on a fresh database) give the same JSON on the
labelled fixture (audits on a maths dataset: the labelled one is multiple choice, which an audit
skips). Then the options' own checks, as the page, the API and bundles meet them."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any
from urllib.parse import urlencode

import pytest
from django.utils.html import escape

from adjudication.analytics.report import Params
from adjudication.analytics.reports import (
    KINDS,
    OPTIONS,
    AnalyticsOptions,
    ConsensusOptions,
    FormatShareOptions,
    ReportError,
    ReportSpec,
    parse_report,
)
from adjudication.bundles.reports import VOLATILE
from adjudication.bundles.services import bundle_open, bundle_replay, bundle_write
from adjudication.models import Dataset

from ..bundles.conftest import member, rewrite, small_bundle  # noqa: F401, F811  (small_bundle: the fixture)
from ..bundles.test_bundle import wipe
from ..conftest import run_command
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db

# (kind, the options as a query string has them, the kind's own command: `manage.py report` serves all)
CASES = [
    ("format_share", {"bootstrap": "50", "seed": "3"}, "format_share"),
    ("agreement", {"seed": "2"}, "agreement"),
    ("consensus", {"bootstrap": "5", "seed": "1", "by": "checkpoint"}, "consensus"),
    ("analytics", {"n_boot": "40", "seed": "5", "reported": "boxed"}, None),
    ("audit", {"readers": "strip-string"}, "audit_verifiers"),
    # The labelled fixture's queue routes the disputes and a half of the rest as controls: a probability design.
    ("estimates", {"seed": "1", "predictor": "judge-x", "base": "base"}, "estimate"),
    ("judge_card", {"seed": "4", "scope": "reviewed"}, "judge_card"),
]
GOLDS = ["\\frac{1}{2}", "3\\sqrt{2}", "0.25"]


def maths(write_jsonl) -> Dataset:
    rows = [
        {"id": f"m{i}", "question": f"q{i}", "gold": g, "response": f"so \\boxed{{{g}}}", "model": "m"}
        | {"checkpoint": "rl", "benchmark": "math"}
        for i, g in enumerate(GOLDS)
    ]
    run_command("import_responses", str(write_jsonl(rows, name="m.jsonl")), dataset="maths", no_progress=True)
    return Dataset.objects.get(name="maths")


def without(kind: str, report: Any) -> Any:
    """The report less the keys that vary from run to run (bundles.reports.VOLATILE)."""
    volatile = VOLATILE.get(kind, frozenset())
    if isinstance(report, dict):
        return {k: without(kind, v) for k, v in report.items() if k not in volatile}
    if isinstance(report, list):
        return [without(kind, v) for v in report]
    return report


def served(client, url: str, capture) -> Any:
    """A report URL's JSON: the first request has the report computed (eager, its callbacks run by
    hand inside the test's transaction), the second serves it."""
    with capture(execute=True):
        client.get(url)
    reply = client.get(url)
    assert reply.status_code == 200, reply.content[:500]
    assert reply["X-Report-Current"] == "true"
    return json.loads(reply.content)


@pytest.mark.parametrize(("kind", "query", "command"), CASES, ids=[c[0] for c in CASES])
def test_page_command_api_and_replayed_bundle_give_the_same_json(
    kind,
    query,
    command,
    labelled,
    write_jsonl,
    client,
    eager,
    django_capture_on_commit_callbacks,
    settings,
    tmp_path,
):
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = 0
    ds = maths(write_jsonl) if kind == "audit" else labelled[0]
    spec = ReportSpec(kind, OPTIONS[kind].from_query(query))
    client.force_login(make_user("mia", "manager"))
    qs = urlencode(query)
    page = served(client, f"/analytics/{ds.pk}/reports/{kind}.json?{qs}", django_capture_on_commit_callbacks)
    api = served(client, f"/api/datasets/{ds.pk}/reports/{kind}/?{qs}", django_capture_on_commit_callbacks)
    printed = [json.loads(run_command("report", spec.describe(), dataset=ds.name, json=True))]
    if command:
        extra = {"out": str(tmp_path / "audit"), "no_progress": True} if kind == "audit" else {}
        printed.append(json.loads(run_command(command, dataset=ds.name, json=True, **spec.arguments(), **extra)))
    path = tmp_path / "one.zip"
    bundle_write(dataset=ds, out=path, report_specs=[spec])
    bundle = bundle_open(path)
    stored = bundle.member_json(bundle.manifest["reports"][0]["member"])
    assert stored["options"] == spec.options.canonical()
    expected = without(kind, page)
    assert expected and without(kind, api) == expected
    for one in printed:
        assert without(kind, one) == expected
    assert without(kind, stored["result"]) == expected
    wipe()
    replayed = bundle_replay(path=path)
    assert replayed.ok and replayed.reports[0].describe == spec.describe(), [
        (str(d), r.error) for r in replayed.reports for d in r.differences
    ]


def test_a_bundle_written_before_options_were_canonical_still_opens_and_replays(small_bundle, tmp_path):  # noqa: F811
    """The older form: the options as command-line words (and the analytics and audit_run
    parameters apart); parsed through the same options classes."""
    name = json.loads(member(small_bundle, "manifest.json"))["reports"][0]["member"]
    report = json.loads(member(small_bundle, name))
    assert report["kind"] == "agreement" and report["options"]["seed"] == 2
    old = rewrite(
        small_bundle,
        tmp_path / "old.zip",
        {name: json.dumps({**report, "options": ["--seed", "2"], "params": {}}).encode("ascii")},
    )
    result = bundle_replay(path=old)
    assert result.ok and [r.describe for r in result.reports] == ["agreement --seed 2"]


def test_the_page_shows_the_text_the_command_prints(labelled, client, eager, django_capture_on_commit_callbacks):
    ds, _ = labelled
    client.force_login(make_user("mia", "manager"))
    url = f"/analytics/{ds.pk}/reports/agreement/?seed=2"
    with django_capture_on_commit_callbacks(execute=True):
        client.get(url)
    page = client.get(url).content.decode()
    assert escape(run_command("agreement", dataset=ds.name, seed=2).rstrip("\n")) in page
    assert f'href="/analytics/{ds.pk}/reports/agreement.json?seed=2"' in page


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"bootstrap": "100000"}, "bootstrap", "bootstrap must be between 0 and 2000, not 100000"),
        ({"seed": "x"}, "seed", "seed must be an integer"),
        ({"by": "colour"}, "by", "by must be one of checkpoint, model, benchmark, not 'colour'"),
        ({"bootstap": "5"}, "bootstap", "'bootstap' is not an option of a consensus report"),
        ({"group_duplicates": "0.2"}, "group_duplicates", r"--group-duplicates must be in \(0.5, 1\]"),
    ],
)
def test_a_bad_option_is_a_400_naming_the_field(labelled, client, query, field, message):
    ds, _ = labelled
    client.force_login(make_user("mia", "manager"))
    reply = client.get(f"/api/datasets/{ds.pk}/reports/consensus/?{urlencode(query)}")
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert list(error["fields"]) == [field]
    assert re.search(message, error["fields"][field][0]), error
    page = client.get(f"/analytics/{ds.pk}/reports/consensus/?{urlencode(query)}")
    assert page.status_code == 400 and re.search(message, unescape(page.content.decode()))


def test_annotators_are_refused_and_an_unknown_kind_is_404(labelled, client):
    ds, _ = labelled
    client.force_login(make_user("ann2", "annotator"))
    assert client.get(f"/analytics/{ds.pk}/reports/agreement/").status_code == 403
    assert client.get(f"/api/datasets/{ds.pk}/reports/agreement/").status_code == 403
    client.force_login(make_user("mia", "manager"))
    assert client.get(f"/analytics/{ds.pk}/reports/ranking/").status_code == 404
    assert client.get(f"/api/datasets/{ds.pk}/reports/ranking/").status_code == 404


def test_canonical_options_round_trip_and_are_refused_out_of_bounds():
    for kind in KINDS:
        cls = OPTIONS[kind]
        options = cls(run=3) if kind == "audit_run" else cls()
        assert cls.from_canonical(options.canonical()) == options
    options = ConsensusOptions(by="checkpoint", bootstrap=5, group_duplicates=0.9)
    assert ConsensusOptions.from_canonical(json.loads(json.dumps(options.canonical()))) == options
    assert options.describe() == "consensus --by checkpoint --bootstrap 5 --group-duplicates 0.9"
    assert parse_report(options.describe()).options == options
    with pytest.raises(ReportError, match="bootstrap must be an integer") as refused:
        FormatShareOptions.from_canonical({"bootstrap": True})
    assert refused.value.field == "bootstrap"
    with pytest.raises(ReportError, match="'colour' is not an option"):
        FormatShareOptions.from_canonical({"colour": "blue"})


def test_the_analytics_options_are_the_page_parameters():
    """One canonical form: a stored page report and the analytics report kind share their key."""
    params = Params.from_query({"reported": "boxed", "min_gain": "1.5", "by": "checkpoint"})
    options = AnalyticsOptions.from_canonical(params.canonical())
    assert options.canonical() == params.canonical()
    assert ReportSpec("analytics", options).key == params.key
