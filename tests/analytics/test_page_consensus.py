"""The consensus section of the analytics page: the numbers of `manage.py consensus --json` with
the report's bootstrap and seed, hostile names escaped, a dataset with nothing to fit saying so,
and the consensus in report.json."""

from __future__ import annotations

import html
import json

import pytest

from adjudication.models import Dataset, Question, ReaderSpec, Reading, Response, Run

from ..conftest import run_command
from .test_page import Tables, manager  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def section(page: str) -> str:
    return page.split('<section id="consensus">', 1)[1].split("</section>", 1)[0]


def r3(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def ci3(x: float | None, ci: list[float] | None) -> str:
    return r3(x) + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if x is not None and ci else "")


def measured(p: dict) -> str:
    return "–" if p["rate"] is None else f"{p['rate']:.3f} (n={p['n']})"


BOOT = 10  # bootstrap replicates in these tests (each refits the model); the default is 100


def test_the_page_shows_the_consensus_of_the_command(labelled, computed, manager, settings):  # noqa: F811
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = BOOT
    ds, _ = labelled
    report = computed(ds)
    assert report.body["consensus_error"] == "" and report.body["consensus"]["n_boot"] == BOOT
    cli = json.loads(run_command("consensus", dataset=ds.name, json=True, bootstrap=BOOT, seed=0))
    page = manager.get(f"/analytics/{ds.pk}/").content.decode()
    assert "<h2>Panel consensus</h2>" in page
    tables = Tables(section(page)).tables
    _, *rows = tables["consensus-producers"]
    got = {r[0].split(" (degenerate)")[0]: r for r in rows}
    assert set(got) == {p["producer"] for p in cli["producers"]} == {"boxed", "strict-match", "fixed", "judge-x"}
    for p in cli["producers"]:
        row = got[p["producer"]]
        assert row[1:] == [
            str(p["n_votes"]),
            str(sum(p["abstentions"].values())),
            r3(p["sensitivity"]),
            r3(p["specificity"]),
            r3(p["false_accept_rate"]),
            r3(p["false_reject_rate"]),
            measured(p["human_sensitivity"]),
            measured(p["human_specificity"]),
        ], p["producer"]
    assert any(p["human_sensitivity"]["n"] for p in cli["producers"])  # the human-measured column is not all "–"
    header, *rows = tables["consensus-accuracy"]
    assert header[0] == "checkpoint" and cli["accuracy_by"] == "checkpoint"
    assert [r[0] for r in rows] == [g["group"] for g in cli["accuracy"]] == ["base", "rl"]
    for row, g in zip(rows, cli["accuracy"], strict=True):
        assert g["ci"] is not None
        h = g["human"]
        assert row[1:] == [str(g["n_items"]), ci3(g["accuracy"], g["ci"]), ci3(h["rate"], h["ci"]), str(h["n"])]
    text = html.unescape(section(page))
    for w in cli["warnings"]:
        assert f"warning: {w}" in text
    assert f"{BOOT} replicates" in text and "manage.py consensus --dataset an" in text

    data = manager.get(f"/analytics/{ds.pk}/report.json").json()
    assert data["consensus_error"] is None
    assert data["consensus"] == report.body["consensus"]
    assert [p["producer"] for p in data["consensus"]["producers"]] == [p["producer"] for p in cli["producers"]]
    assert data["consensus"]["accuracy"] == cli["accuracy"]


HOSTILE_READER = '<script>alert("r")</script>'
HOSTILE_CHECKPOINT = "<img src=x onerror=alert(1)>"


def small_dataset(name: str, verdict) -> Dataset:
    """Two checkpoints of one model, 16 questions each, three readers; verdict(reader, i) says what
    each reader said on question i."""
    ds = Dataset.objects.create(name=name)
    specs = [
        ReaderSpec.objects.create(name=n, version="1", config_hash=f"h{k}")
        for k, n in enumerate((HOSTILE_READER, "plain", "other"))
    ]
    readings = []
    for ckpt in ("base", HOSTILE_CHECKPOINT):
        run = Run.objects.create(dataset=ds, model="m", checkpoint=ckpt, benchmark="b")
        for i in range(16):
            q, _ = Question.objects.get_or_create(
                dataset=ds, benchmark="b", fingerprint=str(i), defaults={"text": f"q{i}", "gold": "A"}
            )
            r = Response.objects.create(
                dataset=ds, run=run, question=q, external_id=f"{ckpt}-{i}", text="t", row_hash=f"{ckpt}-{i}"
            )
            readings += [Reading(response=r, reader_spec=s, verdict=verdict(k, i)) for k, s in enumerate(specs)]
    Reading.objects.bulk_create(readings)
    return ds


def test_hostile_producer_and_checkpoint_names_are_escaped(computed, manager, settings):  # noqa: F811
    # Past the size limit of the page's bootstrap (32 responses here): no interval, and the page says so.
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP, settings.ANALYTICS_CONSENSUS_BOOTSTRAP_MAX = BOOT, 31
    ds = small_dataset("hostile", lambda k, i: "correct" if (i + k) % 4 else "incorrect")
    report = computed(ds)
    assert report.body["consensus"] is not None, report.body["consensus_error"]
    assert report.body["consensus"]["n_boot"] == 0 and report.body["consensus"]["n_items"] == 32
    page = manager.get(f"/analytics/{ds.pk}/").content.decode()
    part = section(page)
    assert "the fit covers 32 responses (more than 31)" in part and "--bootstrap 200" in part
    assert all(g["ci"] is None for g in report.body["consensus"]["accuracy"])
    assert HOSTILE_READER not in page and HOSTILE_CHECKPOINT not in page
    assert html.escape(HOSTILE_READER) in part and html.escape(HOSTILE_CHECKPOINT) in part
    tables = Tables(part).tables
    assert HOSTILE_READER in [r[0].split(" (degenerate)")[0] for r in tables["consensus-producers"][1:]]
    assert HOSTILE_CHECKPOINT in [r[0] for r in tables["consensus-accuracy"][1:]]


def test_a_dataset_with_no_correct_or_incorrect_reading_says_so_instead_of_failing(computed, manager):  # noqa: F811
    ds = small_dataset("abstains", lambda k, i: ("no_answer", "timeout", "error")[k])
    report = computed(ds)
    assert report.body["consensus"] is None and "no correct/incorrect readings" in report.body["consensus_error"]
    response = manager.get(f"/analytics/{ds.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert '<p class="warn" id="consensus-error">No consensus: no correct/incorrect readings' in page
    assert 'id="consensus-producers"' not in page and '<section id="ranking">' in page
    data = manager.get(f"/analytics/{ds.pk}/report.json").json()
    assert data["consensus"] is None and data["consensus_error"] == report.body["consensus_error"]
