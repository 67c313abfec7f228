"""The bundle download is a background job (issue 36 item 15): the request answers with a job page
and builds nothing; the bundle is written after the response; the same link then gives the file."""

from __future__ import annotations

import zipfile
from io import BytesIO

import pytest

from adjudication import after_response
from adjudication.bundles import jobs
from adjudication.revisions import dataset_changed

from ..analytics.conftest import computed, labelled  # noqa: F401  (the fixtures)
from ..review.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(monkeypatch):
    """The jobs handed to the background thread, held until the test runs them."""
    handed: list = []
    monkeypatch.setattr(after_response, "submit", handed.append)
    return handed


@pytest.fixture
def writes(monkeypatch):
    calls: list[int] = []
    real = jobs.bundle_write

    def counting(**kwargs):
        calls.append(1)
        return real(**kwargs)

    monkeypatch.setattr(jobs, "bundle_write", counting)
    return calls


def test_the_bundle_link_answers_a_job_page_then_the_file(labelled, client, eager, held, writes, settings):  # noqa: F811
    """issue 36 item 15: nothing is written in the request; after the response the job writes the
    bundle; the same link then serves it, and a second request starts no second build."""
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = 0
    ds, _ = labelled
    client.force_login(make_user("mia", "manager"))
    url = f"/bundles/analytics/{ds.pk}/"

    first = client.get(url)
    assert first.status_code == 202
    page = first.content.decode()
    assert 'data-state="building"' in page and 'http-equiv="refresh"' in page and 'id="bundle-download"' in page
    assert writes == [] and len(held) == 1

    again = client.get(url)  # while it is being built: the same page, no second build
    assert again.status_code == 202 and len(held) == 1

    held.pop()()  # what the background thread runs after the response
    assert writes == [1]
    got = client.get(url)
    assert got.status_code == 200 and got["Content-Type"] == "application/zip"
    with zipfile.ZipFile(BytesIO(b"".join(got.streaming_content))) as zf:
        assert "manifest.json" in zf.namelist()
    assert held == [] and writes == [1]


def test_new_data_builds_a_new_bundle_and_drops_the_old(labelled, client, eager, held, settings):  # noqa: F811
    """issue 36 item 15: a bundle is of one data version; after a change the link builds again."""
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = 0
    ds, _ = labelled
    client.force_login(make_user("mia", "manager"))
    url = f"/bundles/analytics/{ds.pk}/"
    client.get(url)
    held.pop()()
    old = sorted(p.name for p in settings.BUNDLE_DOWNLOAD_DIR.glob(f"dataset-{ds.pk}-*.zip"))
    assert len(old) == 1
    dataset_changed(dataset_id=ds.pk)
    assert client.get(url).status_code == 202
    held.pop()()
    new = sorted(p.name for p in settings.BUNDLE_DOWNLOAD_DIR.glob(f"dataset-{ds.pk}-*.zip"))
    assert len(new) == 1 and new != old


def test_a_bundle_that_cannot_be_written_says_why(labelled, client, eager, held, monkeypatch):  # noqa: F811
    """A report the dataset cannot have: the job page says so (409), not a stack trace."""
    from adjudication.analytics.reports import ReportError

    def refuse(**_):
        raise ReportError("no base checkpoint")

    monkeypatch.setattr(jobs, "bundle_write", refuse)
    ds, _ = labelled
    client.force_login(make_user("mia", "manager"))
    url = f"/bundles/analytics/{ds.pk}/"
    client.get(url)
    held.pop()()
    got = client.get(url)
    assert got.status_code == 409 and "no base checkpoint" in got.content.decode()
