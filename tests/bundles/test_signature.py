"""Bundles are checksummed, not signed, unless BUNDLE_SIGNING_KEY is set: then `bundle` signs the
manifest (which holds every member's sha256) with HMAC-SHA256, and `replay --verify-signature`
refuses an unsigned bundle, one signed with another key, and one edited after it was signed."""

from __future__ import annotations

import pytest
from django.core.management import CommandError
from django.db import transaction

from adjudication.bundles.services import BundleError, bundle_open, bundle_replay, bundle_write
from adjudication.models import Dataset, Response

from ..conftest import run_command
from .conftest import build_small_dataset, edit_rows, rewrite

pytestmark = pytest.mark.django_db

RESPONSES = "tables/adjudication.Response.jsonl"


@pytest.fixture(scope="module")
def signed_bundle(django_db_setup, django_db_blocker, tmp_path_factory):
    """The small dataset's bundle, written with BUNDLE_SIGNING_KEY set to "k1" (no reports: the
    signature is the point)."""
    from django.test import override_settings

    tmp = tmp_path_factory.mktemp("signed")
    path = tmp / "signed.zip"
    with django_db_blocker.unblock(), transaction.atomic(), override_settings(BUNDLE_SIGNING_KEY="k1"):
        bundle_write(dataset=build_small_dataset(tmp), out=path, report_specs=[])
        transaction.set_rollback(True)
    return path


def _edited(source, target):
    """The bundle with one response's text changed and re-hashed into the manifest: what a
    checksum alone cannot tell from the original."""

    def change(rows):
        rows[0]["text"] = "an answer written later"

    return rewrite(source, target, {RESPONSES: edit_rows(change)})


def test_a_signed_bundle_replays_under_verify_signature(signed_bundle, settings):
    settings.BUNDLE_SIGNING_KEY = "k1"
    assert "manifest.sig" in bundle_open(signed_bundle).zf.namelist()
    assert bundle_replay(path=signed_bundle, verify_signature=True).ok


def test_an_edit_re_hashed_into_the_manifest_passes_the_checksums_but_not_the_signature(
    signed_bundle, tmp_path, settings
):
    settings.BUNDLE_SIGNING_KEY = "k1"
    edited = _edited(signed_bundle, tmp_path / "edited.zip")
    with pytest.raises(BundleError, match=r"edited.zip: manifest.sig: the signature does not match"):
        bundle_replay(path=edited, verify_signature=True)
    assert not Dataset.objects.exists()
    # Without the check the sha256s all match: the edit replays as reproduced.
    assert bundle_replay(path=edited).ok
    assert Response.objects.filter(text="an answer written later").exists()


def test_another_key_is_refused(signed_bundle, settings):
    settings.BUNDLE_SIGNING_KEY = "k2"
    with pytest.raises(BundleError, match="the signature does not match"):
        bundle_replay(path=signed_bundle, verify_signature=True)


def test_an_unsigned_bundle_is_refused_under_verify_signature(small_bundle, settings):
    settings.BUNDLE_SIGNING_KEY = "k1"
    assert "manifest.sig" not in bundle_open(small_bundle).zf.namelist()  # written with no key set
    with pytest.raises(BundleError, match=r"small.zip: not signed \(no manifest.sig\)"):
        bundle_replay(path=small_bundle, verify_signature=True)
    assert not Dataset.objects.exists()


def test_verify_signature_without_a_key_is_an_error_not_a_pass(signed_bundle, settings):
    settings.BUNDLE_SIGNING_KEY = ""
    with pytest.raises(BundleError, match="--verify-signature needs BUNDLE_SIGNING_KEY"):
        bundle_replay(path=signed_bundle, verify_signature=True)


def test_a_forged_signature_member_is_refused(signed_bundle, tmp_path, settings):
    settings.BUNDLE_SIGNING_KEY = "k1"
    forged = rewrite(signed_bundle, tmp_path / "forged.zip", {"manifest.sig": b'{"algorithm": "none"}'})
    with pytest.raises(BundleError, match=r"manifest\.sig: not an hmac-sha256 signature"):
        bundle_replay(path=forged, verify_signature=True)


def test_the_command_refuses_before_making_a_scratch_database(small_bundle, settings):
    settings.BUNDLE_SIGNING_KEY = "k1"
    with pytest.raises(CommandError, match="not signed"):
        run_command("replay", str(small_bundle), verify_signature=True)
