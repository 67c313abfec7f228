"""Reproducibility bundles: a labelled dataset (two annotators, an adjudicator, a judge, a routing
policy with a seed) is bundled with its reports, the database is emptied, and the replay must
bring back every row and every number; what it cannot reproduce it must name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError

from adjudication.analytics.reports import FormatShareOptions, ReportError, parse_report
from adjudication.bundles import contents
from adjudication.bundles.compare import differences
from adjudication.bundles.services import BundleError, bundle_open, bundle_replay, bundle_write
from adjudication.models import (
    AnalyticsReport,
    Dataset,
    FinalLabel,
    Label,
    Lease,
    ReaderSpec,
    Reading,
    Response,
    TaskBatch,
)
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from judges.models import LLMAttempt
from readers import registry
from readers.base import Reading as ReaderReading
from readers.mc.boxed import BoxedReader

from ..analytics.conftest import computed, labelled  # noqa: F401  (the fixtures)
from ..conftest import run_command

pytestmark = pytest.mark.django_db

REPORTS = ["format_share --bootstrap 50 --seed 3", "agreement --seed 2", "consensus --bootstrap 5 --seed 1"]


def wipe() -> None:
    """Empty every table a bundle fills (and those that point at them): a fresh database."""
    for model in (LLMAttempt, Lease, AnalyticsReport, TaskBatch):
        model._base_manager.all().delete()
    for table in reversed(contents.TABLES):
        if not table.model._meta.auto_created:
            table.model._base_manager.all().delete()


def snapshot() -> dict[str, list[dict]]:
    return {t.key: list(t.model._base_manager.order_by("pk").values(*contents.columns(t))) for t in contents.TABLES}


@pytest.fixture
def bundled(labelled, tmp_path):  # noqa: F811
    ds, _queue = labelled
    path = tmp_path / "an.zip"
    summary = bundle_write(dataset=ds, out=path, report_specs=[parse_report(r) for r in REPORTS])
    return path, summary


def test_a_replay_on_a_fresh_database_brings_back_every_row_and_every_number(bundled):
    path, summary = bundled
    before = snapshot()
    assert summary.rows["adjudication.Label"] == Label.all_objects.count() > 0
    assert summary.rows["adjudication.FinalLabel"] > 0 and summary.rows["judges.Judgement"] == 0
    wipe()
    assert not Dataset.objects.exists()
    result = bundle_replay(path=path)
    assert [r.describe for r in result.reports] == REPORTS
    assert all(r.ok for r in result.reports), [str(d) for r in result.reports for d in r.differences]
    assert result.ok
    after = snapshot()
    users = get_user_model()
    # Users come back with their names and no credentials.
    assert all(not u.has_usable_password() for u in users.objects.all())
    assert after == before


def test_the_stored_numbers_are_the_ones_the_commands_print(bundled):
    path, _ = bundled
    bundle = bundle_open(path)
    report = bundle.member_json(bundle.manifest["reports"][0]["member"])
    # The options canonical (every field, typed), not the words the user typed.
    assert (
        report["kind"] == "format_share" and report["options"] == FormatShareOptions(bootstrap=50, seed=3).canonical()
    )
    printed = json.loads(run_command("format_share", dataset="an", json=True, bootstrap=50, seed=3))
    assert differences(report["result"], printed) == []
    env = bundle.member_json("environment.json")
    assert env["packages"]["math-verify"] and env["packages"]["crowd-kit"] and env["python"]
    readers = bundle.member_json("readers.json")
    boxed = next(r for r in readers if r["name"] == "boxed")
    assert boxed["config_hash"] == ReaderSpec.objects.get(name="boxed").config_hash
    assert {r["name"] for r in readers} == set(
        ReaderSpec.objects.filter(readings__response__dataset__name="an").values_list("name", flat=True)
    )


def test_a_changed_number_is_named_with_its_place_in_the_report(bundled, tmp_path):
    path, _ = bundled
    # A reading edited after the bundle was written: the replayed database has the bundle's rows,
    # so edit the bundle itself (re-hashing the member, as a careless hand would not).
    altered = tmp_path / "altered.zip"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(altered, "w") as dst:
        manifest = json.loads(src.read("manifest.json"))
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.startswith("reports/") and "consensus" in info.filename:
                report = json.loads(data)
                report["result"]["accuracy"][0]["accuracy"] += 0.01
                data = json.dumps(report).encode("ascii")
                import hashlib

                manifest["members"][info.filename]["sha256"] = hashlib.sha256(data).hexdigest()
            if info.filename != "manifest.json":
                dst.writestr(info.filename, data)
        dst.writestr("manifest.json", json.dumps(manifest))
    wipe()
    result = bundle_replay(path=altered)
    assert not result.ok
    bad = [r for r in result.reports if not r.ok]
    assert [r.describe for r in bad] == [REPORTS[2]]
    assert [d.path for d in bad[0].differences] == ["accuracy[0].accuracy"]


class ChangedBoxed(BoxedReader):
    """boxed, "upgraded": it no longer reads a box on the responses numbered [1] and [2]."""

    version = "1.0-changed"

    def read(self, item):
        if item.response.endswith(("[1]", "[2]")):
            return ReaderReading("no_answer", detail={"reason": "changed"})
        return super().read(item)


def test_reread_names_the_reader_whose_verdicts_moved_and_the_items(bundled):
    path, _ = bundled
    moved = set(
        Reading.objects.filter(reader_spec__name="boxed", response__text__regex=r"\[[12]\]$")
        .exclude(verdict="no_answer")
        .values_list("response__external_id", flat=True)
    )
    assert moved  # the fixture boxes in the RL responses
    wipe()
    with registry.scoped({"boxed": ChangedBoxed}):
        result = bundle_replay(path=path, reread=True)
    assert all(r.ok for r in result.reports)  # the reports are recomputed from the stored readings
    assert not result.ok  # but the readers no longer say what they said
    by_name = {r.name: r for r in result.reread}
    boxed = by_name["boxed"]
    assert boxed.here == {"version": "1.0-changed", "config_hash": ChangedBoxed().config_hash}
    assert boxed.stored["version"] == "1.0"
    assert {c["response"] for c in boxed.changes} == moved
    assert all(c["now"]["verdict"] == "no_answer" for c in boxed.changes)
    assert boxed.compared == Response.objects.count()
    for name in ("strict-match", "fixed"):
        assert by_name[name].changed == 0 and by_name[name].compared == boxed.compared
    assert by_name["judge-x"].skipped and by_name["judge-x"].compared == 0


def test_reread_with_the_same_readers_changes_nothing(bundled):
    path, _ = bundled
    wipe()
    result = bundle_replay(path=path, reread=True)
    assert result.ok
    assert sum(r.compared for r in result.reread) == 3 * Response.objects.count()


def test_no_text_keeps_hashes_and_still_reproduces_the_numbers(labelled, tmp_path):  # noqa: F811
    ds, _ = labelled
    texts = dict(Response.objects.values_list("external_id", "text"))
    path = tmp_path / "private.zip"
    bundle_write(dataset=ds, out=path, report_specs=[parse_report(REPORTS[0])], text=False)
    raw = zipfile.ZipFile(path).read("tables/adjudication.Response.jsonl").decode("ascii")
    assert "Considering each sociologist" not in raw
    wipe()
    result = bundle_replay(path=path)
    assert result.ok
    # Format share's box rate reads the texts: said, not failed; every other number reproduced.
    textual = [d.path for d in result.reports[0].needs_text]
    assert textual and all("box_rate" in p for p in textual)
    stored = dict(Response.objects.values_list("external_id", "text"))
    assert stored == {k: contents.text_hash(v) for k, v in texts.items()}
    with pytest.raises(BundleError, match="--no-text: there are no texts to re-read"):
        wipe()
        bundle_replay(path=path, reread=True)


def test_hostile_texts_survive_the_round_trip_exactly(write_jsonl, tmp_path):
    hostile = ["nul \x00 inside", "lone \ud800 surrogate", "x" * 300_000, "\\boxed{A} \u202e rtl", ""]
    rows = [
        {
            "id": f"h{i}",
            "question": f"q{i} \x00",
            "choices": ["yes", "no"],
            "gold": "A",
            "response": text,
            "model": "m",
            "checkpoint": "base",
            "benchmark": "b",
        }
        for i, text in enumerate(hostile)
    ]
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    run_command("import_responses", str(path), dataset="hostile", no_progress=True)
    ds = Dataset.objects.get(name="hostile")
    readings_create(
        reader_specs=[reader_spec_by_name(name=n) for n in ("boxed", "fixed")],
        response_ids=list(Response.objects.filter(dataset=ds).values_list("id", flat=True)),
    )
    before = snapshot()
    out = tmp_path / "h.zip"
    bundle_write(dataset=ds, out=out, report_specs=[])
    wipe()
    bundle_replay(path=out)
    assert snapshot() == before
    assert sorted(Response.objects.values_list("text", flat=True), key=len) == sorted(hostile, key=len)


def test_a_load_that_fails_half_way_leaves_nothing(bundled, tmp_path):
    path, _ = bundled
    broken = tmp_path / "broken.zip"
    member = "tables/adjudication.Label.jsonl"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(broken, "w") as dst:
        manifest = json.loads(src.read("manifest.json"))
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == member:
                lines = data.decode("ascii").splitlines()
                row = json.loads(lines[2])
                row["mood"] = "tired"
                lines[2] = json.dumps(row)
                data = ("\n".join(lines) + "\n").encode("ascii")
                import hashlib

                manifest["members"][member]["sha256"] = hashlib.sha256(data).hexdigest()
            if info.filename != "manifest.json":
                dst.writestr(info.filename, data)
        dst.writestr("manifest.json", json.dumps(manifest))
    wipe()
    with pytest.raises(BundleError, match=rf"{broken}: {member} line 3: field 'mood' is not a column of"):
        bundle_replay(path=broken)
    assert not Dataset.objects.exists() and not Response.objects.exists() and not ReaderSpec.objects.exists()


def test_bad_bundles_are_refused_with_file_and_member(tmp_path, bundled):
    path, _ = bundled
    not_zip = tmp_path / "a.zip"
    not_zip.write_bytes(b"PK\x03\x04 but not really")
    with pytest.raises(BundleError, match=rf"{not_zip}: not a bundle \(not a zip archive"):
        bundle_open(not_zip)
    empty = tmp_path / "b.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(BundleError, match=r"no manifest\.json"):
        bundle_open(empty)
    other = tmp_path / "c.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "adjudication-bundle", "version": 99}))
    with pytest.raises(BundleError, match="field 'version' is 99; this platform reads version 1"):
        bundle_open(other)
    tampered = tmp_path / "d.zip"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "tables/adjudication.Reading.jsonl":
                data = data.replace(b'"verdict":"correct"', b'"verdict":"incorrect"', 1)
            dst.writestr(info.filename, data)
    wipe()
    with pytest.raises(BundleError, match=r"tables/adjudication.Reading.jsonl: sha256 differs from the manifest"):
        bundle_replay(path=tampered)


def test_replay_refuses_a_database_that_is_not_fresh(bundled):
    path, _ = bundled
    with pytest.raises(BundleError, match=r"fresh database .* holds rows of auth.User, adjudication.Dataset"):
        bundle_replay(path=path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ranking", "the kind must be one of"),
        ("consensus --dataset other", "--dataset is set by the bundle"),
        ("format_share --json", "--json is set by the bundle"),
        ("analytics n_boot=many", "n_boot must be an integer"),
        ("analytics colour=blue", "'colour=blue' is not KEY=VALUE"),
        ("consensus 'unclosed", "No closing quotation"),
        ("audit_run run=²", "write audit_run run=ID"),  # "²".isdigit(), and int() refuses it
        ("audit_run run=３", "write audit_run run=ID"),
    ],
)
def test_a_bad_report_is_refused_before_anything_is_written(text, message):
    with pytest.raises(ReportError, match=message):
        parse_report(text)


def test_the_command_writes_the_defaults_and_names_what_it_left_out(labelled, tmp_path):  # noqa: F811
    out = tmp_path / "cmd.zip"
    text = run_command("bundle", dataset="an", out=str(out))
    assert f"wrote {out}" in text and "8 Label" not in text
    names = [m["describe"] for m in bundle_open(out).manifest["reports"]]
    assert names == ["format_share", "agreement", "consensus"]
    with pytest.raises(CommandError, match="report 'format_share --base-checkpoint nope'"):
        run_command(
            "bundle", dataset="an", out=str(tmp_path / "x.zip"), reports=["format_share --base-checkpoint nope"]
        )
    assert not (tmp_path / "x.zip").exists() and not list(tmp_path.glob(".x.zip*"))


def test_the_analytics_report_replays(labelled, tmp_path, settings):  # noqa: F811
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = 0
    ds, _ = labelled
    path = tmp_path / "page.zip"
    bundle_write(dataset=ds, out=path, report_specs=[parse_report("analytics n_boot=40 seed=5 reported=boxed")])
    wipe()
    result = bundle_replay(path=path)
    assert result.reports[0].describe.startswith("analytics ") and result.ok


@pytest.mark.system  # a child process
@pytest.mark.django_db(transaction=True)
def test_replay_command_uses_a_scratch_database_and_leaves_this_one_alone(labelled, tmp_path):  # noqa: F811
    """The user's path: `manage.py replay FILE` in a child process, on a new SQLite database."""
    ds, _ = labelled
    path = tmp_path / "cli.zip"
    bundle_write(dataset=ds, out=path, report_specs=[parse_report(REPORTS[0])])
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    done = subprocess.run(
        [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "replay", str(path)],
        env={**env, "SECRET_KEY": "test-only"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "same     format_share --bootstrap 50 --seed 3" in done.stdout and "reproduced" in done.stdout
    assert Dataset.objects.filter(name="an").exists()  # this database untouched
    assert FinalLabel.objects.count() > 0


def test_the_analytics_page_links_the_bundle_of_its_report_and_the_download_replays(
    labelled,  # noqa: F811
    computed,  # noqa: F811
    client,
    settings,
):
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = 0
    from ..review.conftest import make_user

    ds, _ = labelled
    client.force_login(make_user("mia", "manager"))
    query = "reported=boxed&fixed=fixed&min_gain=1.5"
    computed(ds, reported="boxed", fixed="fixed", min_gain="1.5")
    page = client.get(f"/analytics/{ds.pk}/?{query}").content.decode()
    assert f'id="analytics-bundle" href="/bundles/analytics/{ds.pk}/?{query.replace("&", "&amp;")}"' in page
    # issue 36 item 15: a job page first (the bundle is built after the response), then the file.
    job = client.get(f"/bundles/analytics/{ds.pk}/?{query}")
    assert job.status_code == 202 and 'data-state="building"' in job.content.decode()
    got = client.get(f"/bundles/analytics/{ds.pk}/?{query}")
    assert got.status_code == 200 and got["Content-Type"] == "application/zip"
    assert f'filename="bundle-{ds.pk}-analytics.zip"' in got["Content-Disposition"]
    path = Path(settings.BASE_DIR) / "var" / f"test-download-{os.getpid()}.zip"
    path.parent.mkdir(exist_ok=True)
    try:
        path.write_bytes(b"".join(got.streaming_content))
        report = bundle_open(path).manifest["reports"][0]["describe"]
        assert report.startswith("analytics ") and "min_gain=1.5" in report
        wipe()
        assert bundle_replay(path=path).ok
    finally:
        path.unlink(missing_ok=True)


def test_an_audit_runs_again_from_its_bundle_with_the_same_numbers(
    write_jsonl, tmp_path, eager, django_capture_on_commit_callbacks, client
):
    from adjudication.audit.services import audit_run_start

    from ..review.conftest import make_user

    golds = ["\\frac{1}{2}", "3\\sqrt{2}", "0.25", "\\{1, 2\\}", "x^2+1"]
    rows = [
        {
            "id": f"m{i}",
            "question": f"q{i}",
            "gold": g,
            "response": f"so \\boxed{{{g}}}",
            "model": "m",
            "checkpoint": "rl",
            "benchmark": "math",
        }
        for i, g in enumerate(golds)
    ]
    run_command("import_responses", str(write_jsonl(rows, name="m.jsonl")), dataset="maths", no_progress=True)
    ds = Dataset.objects.get(name="maths")
    boss = make_user("boss", "manager")
    with django_capture_on_commit_callbacks(execute=True):
        run = audit_run_start(dataset=ds, reader_names=["strip-string", "sympy-cascade"], user=boss)
    run.refresh_from_db()
    assert run.status == "done", run.error
    client.force_login(boss)
    page = client.get(f"/audit/{run.pk}/").content.decode()
    assert f'id="audit-bundle" href="/bundles/audit/{run.pk}/"' in page
    path = tmp_path / "audit.zip"
    bundle_write(dataset=ds, out=path, report_specs=[parse_report(f"audit_run run={run.pk}")])
    stored = bundle_open(path)
    member = stored.member_json(stored.manifest["reports"][0]["member"])
    assert member["result"]["readers"] == run.summary["readers"]
    wipe()
    result = bundle_replay(path=path)
    assert result.ok, [str(d) for r in result.reports for d in r.differences]
    assert result.reports[0].describe == f"audit_run run={run.pk}"
