"""Zip bombs: a bundle whose members expand past ARCHIVE_MAX_MEMBER_BYTES or, together, past
ARCHIVE_MAX_TOTAL_BYTES is refused before a byte of them is decompressed; one whose header
understates a member's size is stopped while it streams. The caps are lowered here, so the bombs
are a few hundred kilobytes, never a real gibibyte."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from adjudication.bundles.services import BundleError, bundle_replay
from adjudication.models import Dataset

from .conftest import rewrite

pytestmark = pytest.mark.django_db

CAP = 64 * 1024


@pytest.fixture
def low_caps(settings) -> None:
    settings.ARCHIVE_MAX_MEMBER_BYTES = CAP
    settings.ARCHIVE_MAX_TOTAL_BYTES = 4 * CAP


def padded_environment(size: int) -> bytes:
    """A valid environment.json that expands to `size` bytes (JSON whitespace compresses ~1000:1)."""
    body = b'{"python": "3"}'
    return body[:-1] + b" " * (size - len(body)) + b"}"


def test_a_member_declared_larger_than_the_cap_is_refused_before_it_is_decompressed(
    small_bundle, tmp_path, low_caps, monkeypatch
):
    bomb = rewrite(small_bundle, tmp_path / "bomb.zip", {"environment.json": padded_environment(CAP + 1)})
    assert bomb.stat().st_size < CAP  # a small file that expands past the cap
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):
        opened.append(name if isinstance(name, str) else name.filename)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    with pytest.raises(
        BundleError, match=rf"bomb.zip: member environment.json expands to {CAP + 1} bytes, over the cap"
    ):
        bundle_replay(path=bomb)
    assert opened == []  # refused from the central directory alone
    assert not Dataset.objects.exists()


def test_members_together_over_the_total_cap_are_refused(small_bundle, tmp_path, low_caps):
    extra = {f"padding/{i}.json": padded_environment(CAP - 100) for i in range(5)}
    bomb = rewrite(small_bundle, tmp_path / "many.zip", extra)
    with pytest.raises(BundleError, match=r"many.zip: the members expand to more than 262144 bytes together"):
        bundle_replay(path=bomb)
    assert not Dataset.objects.exists()


def _understate(path: Path, name: str, declared: int) -> None:
    """Rewrite the sizes the zip records for `name` (local header and central directory) to `declared`."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    struct.pack_into("<I", raw, info.header_offset + 22, declared)  # local header: uncompressed size
    offset = 0
    while (offset := raw.find(b"PK\x01\x02", offset)) >= 0:
        name_len = struct.unpack_from("<H", raw, offset + 28)[0]
        if raw[offset + 46 : offset + 46 + name_len] == name.encode():
            struct.pack_into("<I", raw, offset + 24, declared)  # central directory: uncompressed size
        offset += 4
    path.write_bytes(bytes(raw))


def test_a_member_whose_header_understates_its_size_is_refused_with_its_name(small_bundle, tmp_path, low_caps):
    bomb = rewrite(small_bundle, tmp_path / "liar.zip", {"environment.json": padded_environment(3 * CAP)})
    _understate(bomb, "environment.json", 100)
    with pytest.raises(BundleError, match=r"liar.zip: member environment.json cannot be read \(BadZipFile: Bad CRC-32"):
        bundle_replay(path=bomb)
    assert not Dataset.objects.exists()


def test_a_table_member_over_the_cap_is_refused_and_nothing_is_loaded(small_bundle, tmp_path, low_caps):
    def pad(rows: bytes) -> bytes:
        return rows + b"\n" * (CAP + 1 - len(rows))

    bomb = rewrite(small_bundle, tmp_path / "rows.zip", {"tables/adjudication.Response.jsonl": pad})
    with pytest.raises(BundleError, match=r"member tables/adjudication.Response.jsonl expands to 65537 bytes"):
        bundle_replay(path=bomb)
    assert not Dataset.objects.exists()
