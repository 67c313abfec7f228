"""A bundle's report options are data, not a command line: each is parsed against its kind's
allow-list into a typed, bounded value. None names a path (the replay writes only to its scratch
directory) and none takes this machine's resources (--processes, --budget; bootstrap replicates
and synthetic golds are capped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import transaction

from adjudication.analytics.reports import ReportError, parse_report
from adjudication.bundles.services import BundleError, bundle_replay, bundle_write
from adjudication.models import Dataset

from ..conftest import jsonl_writer, run_command
from .conftest import member, rewrite

pytestmark = pytest.mark.django_db

GOLDS = ["\\frac{1}{2}", "3\\sqrt{2}", "0.25"]


@pytest.fixture(scope="module")
def audit_bundle(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    """A maths dataset's bundle with an `audit` report (open-ended golds: the audit runs)."""
    tmp = tmp_path_factory.mktemp("audit-bundle")
    rows = [
        {"id": f"m{i}", "question": f"q{i}", "gold": g, "response": f"so \\boxed{{{g}}}", "model": "m"}
        | {"checkpoint": "rl", "benchmark": "math"}
        for i, g in enumerate(GOLDS)
    ]
    path = tmp / "audit.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        run_command("import_responses", str(jsonl_writer(tmp)(rows, name="m.jsonl")), dataset="maths", no_progress=True)
        ds = Dataset.objects.get(name="maths")
        bundle_write(dataset=ds, out=path, report_specs=[parse_report("audit --readers strip-string")])
        transaction.set_rollback(True)
    return path


def _with_report(source: Path, target: Path, **fields: object) -> Path:
    """A copy of the bundle whose first report carries `fields` instead (re-hashed: a careful forger)."""
    name = json.loads(member(source, "manifest.json"))["reports"][0]["member"]

    def change(blob: bytes) -> bytes:
        return json.dumps({**json.loads(blob), **fields}).encode("ascii")

    return rewrite(source, target, {name: change})


def test_an_audit_report_replays_with_its_options_and_writes_nothing_outside_scratch(audit_bundle, tmp_path):
    result = bundle_replay(path=audit_bundle)
    assert result.ok, [str(d) for r in result.reports for d in r.differences] + [r.error for r in result.reports]
    assert result.reports[0].describe == "audit --readers strip-string"


def test_a_bundle_cannot_make_the_replay_write_into_a_directory_it_names(audit_bundle, tmp_path):
    outside = tmp_path / "outside"
    hostile = _with_report(
        audit_bundle, tmp_path / "out.zip", options=["--readers", "strip-string", "--out", str(outside)]
    )
    with pytest.raises(
        BundleError, match=r"out.zip: reports/00-audit.json: field 'options': --out is set by the bundle"
    ):
        bundle_replay(path=hostile)
    assert not outside.exists()
    assert not Dataset.objects.exists()  # refused before a row was loaded


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("audit", ["--processes", "24"], "--processes is not taken from a bundle"),
        ("audit", ["--budget=100000"], "--budget is not taken from a bundle"),
        ("audit", ["--synthetic", "100000"], "--synthetic must be between 0 and 500"),
        ("consensus", ["--bootstrap", "100000"], "--bootstrap must be between 0 and 2000"),
        ("format_share", ["--input", "/etc/passwd"], "--input is set by the bundle"),
        ("audit", ["--golds=/etc/passwd"], "--golds is set by the bundle"),
        ("consensus", ["--seed", "-1"], "--seed must be between 0 and 4294967295"),
        ("agreement", ["--no-answer", "maybe"], "--no-answer must be one of incorrect, exclude"),
        ("consensus", ["--items"], "--items is set by the bundle"),
        ("agreement", ["--settings", "x"], "'--settings' is not an option a bundled agreement report may carry"),
        ("consensus", ["--bootstrap", "5", "--bootstrap", "6"], "--bootstrap is given twice"),
        ("consensus", [5], "field 'options' must be a list of strings"),
    ],
)
def test_report_options_outside_the_allow_list_or_its_bounds_are_refused_before_loading(
    small_bundle, tmp_path, kind, options, message
):
    hostile = _with_report(small_bundle, tmp_path / "opts.zip", kind=kind, options=options)
    with pytest.raises(BundleError, match=rf"opts.zip: reports/00-agreement.json: field 'options'.*{message}"):
        bundle_replay(path=hostile)
    assert not Dataset.objects.exists()


def test_analytics_parameters_are_bounded_like_the_options(small_bundle, tmp_path):
    hostile = _with_report(small_bundle, tmp_path / "a.zip", kind="analytics", options=[], params={"n_boot": 100000})
    with pytest.raises(BundleError, match=r"field 'params'.*n_boot must be between 0 and 2000, not 100000"):
        bundle_replay(path=hostile)
    assert not Dataset.objects.exists()


def test_the_bootstrap_cap_is_a_setting(small_bundle, tmp_path, settings):
    settings.BUNDLE_MAX_BOOTSTRAP = 10
    with pytest.raises(ReportError, match="--bootstrap must be between 0 and 10, not 11"):
        parse_report("consensus --bootstrap 11")
    assert parse_report("consensus --bootstrap=10").arguments() == {"bootstrap": 10}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("audit --processes 24", "--processes is not taken from a bundle"),
        ("audit --out /tmp/elsewhere", "--out is set by the bundle"),
        ("consensus --bootstrap 100000", "--bootstrap must be between 0 and 2000"),
        ("analytics n_boot=100000", "n_boot must be between 0 and 2000"),
        ("format_share --reported-rader boxed", "'--reported-rader' is not an option a bundled format_share report"),
    ],
)
def test_the_bundle_command_refuses_what_a_replay_would(text, message):
    with pytest.raises(ReportError, match=message):
        parse_report(text)


def test_options_become_typed_keyword_arguments():
    spec = parse_report("format_share --bootstrap 50 --seed=3 --task-type mmlu=multiple_choice --require-thresholds")
    assert spec.arguments() == {
        "bootstrap": 50,
        "seed": 3,
        "task_type": ["mmlu=multiple_choice"],
        "require_thresholds": True,
    }
    assert parse_report("audit --reader strip-string --synthetic 3").arguments() == {
        "readers": ["strip-string"],
        "synthetic": 3,
    }
