"""Bounded reading of zip archives that come from outside: reproducibility bundles and inspect-ai
`.eval` logs. A few kilobytes of deflate can expand to gigabytes, so every member is held to
ARCHIVE_MAX_MEMBER_BYTES and the archive to ARCHIVE_MAX_TOTAL_BYTES, uncompressed:

* refused before anything is decompressed when the central directory declares more;
* and counted while the bytes stream, stopping at the cap, because the declared sizes are the
  archive's own word (CPython's deflate reader stops at the declared size, but a reader plugged in
  for another method, such as zipfile-zstd's, need not).

What is read whole (`read`) or line by line (`open(...).readline`) is thus never more than one
member's cap in memory.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from adjudication.errors import ApplicationError

CHUNK = 1 << 20
DEFAULT_MEMBER_BYTES = 256 << 20
DEFAULT_TOTAL_BYTES = 2 << 30


class ArchiveError(ApplicationError, zipfile.BadZipFile):
    """An archive this platform will not read: a member over a cap, or one that cannot be
    decompressed. A BadZipFile, so that a caller that already says "not a readable archive" for a
    broken zip says it for this too; the message names the member."""


@dataclass(frozen=True)
class Limits:
    member_bytes: int
    total_bytes: int

    @classmethod
    def from_settings(cls) -> Limits:
        # Read at each open (not import) so that a test or a deployment's settings take effect; a
        # process without Django settings (a parser child) gets the defaults.
        from django.conf import settings

        if not settings.configured:
            return cls(DEFAULT_MEMBER_BYTES, DEFAULT_TOTAL_BYTES)
        return cls(
            int(getattr(settings, "ARCHIVE_MAX_MEMBER_BYTES", DEFAULT_MEMBER_BYTES)),
            int(getattr(settings, "ARCHIVE_MAX_TOTAL_BYTES", DEFAULT_TOTAL_BYTES)),
        )


class BoundedZip:
    """A read-only zip with the caps above; the subset of ZipFile's interface the readers use
    (namelist, infolist, read, open, close, a context manager)."""

    def __init__(self, path: Path | str | IO[bytes], *, limits: Limits | None = None) -> None:
        self.limits = limits or Limits.from_settings()
        self.zf = zipfile.ZipFile(path)
        self.read_bytes = 0  # uncompressed bytes handed out so far, every member together
        try:
            self._check_declared()
        except ArchiveError:
            self.zf.close()
            raise

    def _check_declared(self) -> None:
        total = 0
        for info in self.zf.infolist():
            if info.file_size > self.limits.member_bytes:
                raise ArchiveError(
                    f"member {info.filename} expands to {info.file_size} bytes, over the cap of "
                    f"{self.limits.member_bytes} (ARCHIVE_MAX_MEMBER_BYTES)"
                )
            total += info.file_size
            if total > self.limits.total_bytes:
                raise ArchiveError(
                    f"the members expand to more than {self.limits.total_bytes} bytes together "
                    f"(ARCHIVE_MAX_TOTAL_BYTES), at member {info.filename}"
                )

    def namelist(self) -> list[str]:
        return self.zf.namelist()

    def infolist(self) -> list[zipfile.ZipInfo]:
        return self.zf.infolist()

    def open(self, name: str) -> BoundedMember:
        """The member as a stream of at most the caps' bytes; KeyError when there is no such member."""
        return BoundedMember(self, name, self.zf.open(name))

    def read(self, name: str) -> bytes:
        with self.open(name) as member:
            return member.read()

    def close(self) -> None:
        self.zf.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _count(self, name: str, member_total: int, n: int) -> None:
        self.read_bytes += n
        if member_total > self.limits.member_bytes:
            raise ArchiveError(
                f"member {name} expands to more than {self.limits.member_bytes} bytes "
                f"(ARCHIVE_MAX_MEMBER_BYTES; more than its header declared); not read further"
            )
        if self.read_bytes > self.limits.total_bytes:
            raise ArchiveError(
                f"the members expand to more than {self.limits.total_bytes} bytes together "
                f"(ARCHIVE_MAX_TOTAL_BYTES), at member {name}; not read further"
            )


class BoundedMember:
    """One member's bytes, counted as they are decompressed. read() and readline() never ask the
    decompressor for more than one byte past what the caps still allow."""

    def __init__(self, archive: BoundedZip, name: str, handle: IO[bytes]) -> None:
        self.archive = archive
        self.name = name
        self.handle = handle
        self.total = 0

    def _allowed(self) -> int:
        limits = self.archive.limits
        return max(0, min(limits.member_bytes - self.total, limits.total_bytes - self.archive.read_bytes))

    def _take(self, data: bytes) -> bytes:
        self.total += len(data)
        self.archive._count(self.name, self.total, len(data))
        return data

    def _guarded(self, size: int, *, line: bool) -> bytes:
        try:
            return self.handle.readline(size) if line else self.handle.read(size)
        except ArchiveError:
            raise
        except Exception as exc:  # noqa: BLE001 - zipfile, zlib, zstandard and EOFError each raise their own
            raise ArchiveError(f"member {self.name} cannot be read ({type(exc).__name__}: {exc})") from exc

    def read(self, size: int = -1) -> bytes:
        if 0 <= size <= self._allowed():
            return self._take(self._guarded(size, line=False))
        parts: list[bytes] = []
        wanted = size
        while wanted != 0:
            step = min(CHUNK, self._allowed() + 1) if wanted < 0 else min(wanted, CHUNK, self._allowed() + 1)
            data = self._take(self._guarded(step, line=False))
            if not data:
                break
            parts.append(data)
            if wanted > 0:
                wanted -= len(data)
        return b"".join(parts)

    def readline(self, size: int = -1) -> bytes:
        allowed = self._allowed() + 1
        return self._take(self._guarded(allowed if size < 0 else min(size, allowed), line=True))

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
