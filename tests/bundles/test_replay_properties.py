"""Generated malformed bundles (members replaced by random JSON of random depth, rows edited with
values of random types, report options drawn from hostile words, members dropped, expanded past
the caps) fed to the replay service: it either loads the bundle or refuses it with BundleError,
never another exception; it writes nothing outside its scratch directory; and a member that
expands past the cap is refused whatever else is wrong (memory is bounded by the caps, checked by
the sizes generated, never by timing)."""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from adjudication.bundles.services import BundleError, bundle_replay

from .conftest import member, rewrite

pytestmark = pytest.mark.django_db

MEMBER_CAP = 32 * 1024
TOTAL_CAP = 8 * MEMBER_CAP

# Audit hook: the files a replay opens for writing, and the directories it makes, while `_watching`
# is set (a hook cannot be removed; outside a replay it returns at once).
_watching: list[list[str]] = []
_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000  # O_WRONLY, O_RDWR, O_CREAT, O_TRUNC


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _watching:
        return
    if event == "open" and args and isinstance(args[0], (str, bytes, Path)):
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        ):
            _watching[-1].append(str(args[0]))
    elif event in ("os.mkdir", "os.rename", "os.replace", "os.symlink", "shutil.copyfile") and args:
        _watching[-1].append(str(args[0] if event == "os.mkdir" else args[-1]))


_hook_installed: list[bool] = []


def _install_hook() -> None:
    if not _hook_installed:
        sys.addaudithook(_hook)
        _hook_installed.append(True)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)
OPTION_WORDS = st.sampled_from(
    ["--out", "OUTSIDE", "--processes", "24", "--bootstrap", "2", "100000", "--seed", "-1", "1", "--by", "model",
     "--synthetic", "--input", "/etc/passwd", "--readers", "boxed", "--budget=9", "--model", "mace", "--json", "x"]
)  # fmt: skip


@st.composite
def mutations(draw: st.DrawFn, base: dict[str, bytes]) -> tuple[dict[str, Any], bool, int]:
    """(members to change for rewrite(), whether to re-hash, the largest member size generated)."""
    names = sorted(base)
    tables = [n for n in names if n.startswith("tables/") and base[n]]
    report = next(n for n in names if n.startswith("reports/"))
    changes: dict[str, Any] = {}
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["json", "nested", "row", "options", "drop", "big", "bytes"]))
        name = draw(st.sampled_from([*names, "manifest.sig", "tables/auth.Group.jsonl"]))
        if kind == "json":
            data = json.dumps(draw(json_values)).encode("ascii")
        elif kind == "nested":
            depth = draw(st.integers(1, 400))
            data = b"[" * depth + b"]" * depth
        elif kind == "bytes":
            data = draw(st.binary(max_size=64))
        elif kind == "big":  # a member that expands to just under or just over the cap
            data = b'{"python": "3"' + b" " * (draw(st.integers(MEMBER_CAP - 64, MEMBER_CAP + 64))) + b"}"
        elif kind == "drop":
            changes[name] = None
            continue
        elif kind == "options":
            name = report
            stored = json.loads(base[report])
            stored["options"] = draw(st.lists(OPTION_WORDS, max_size=6))
            stored["kind"] = draw(st.sampled_from([stored["kind"], "consensus", "audit", "format_share"]))
            data = json.dumps(stored).encode("ascii")
        else:  # one value of one row of a table
            name = draw(st.sampled_from(tables))
            rows = [json.loads(line) for line in base[name].splitlines()]
            row = rows[draw(st.integers(0, len(rows) - 1))]
            key = draw(st.sampled_from([*row, "bogus"]))
            row[key] = draw(json_values)
            data = "".join(json.dumps(r) + "\n" for r in rows).encode("ascii")
        changes[name] = data
    largest = max((len(data) for data in changes.values() if data is not None), default=0)
    return changes, draw(st.booleans() | st.just(True)), largest


def test_generated_malformed_bundles_load_or_are_refused_never_a_traceback_or_a_write_outside_scratch(
    small_bundle, tmp_path, settings, monkeypatch
):
    settings.ARCHIVE_MAX_MEMBER_BYTES = MEMBER_CAP
    settings.ARCHIVE_MAX_TOTAL_BYTES = TOTAL_CAP
    settings.BUNDLE_MAX_BOOTSTRAP = 3  # a generated report stays quick to recompute
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # the replay's scratch directory
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    with zipfile.ZipFile(small_bundle) as zf:
        base = {name: zf.read(name) for name in zf.namelist() if name != "manifest.json"}
    assert json.loads(member(small_bundle, "manifest.json"))["reports"]
    _install_hook()
    counter = iter(range(10**6))

    @hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(mutation=mutations(base))
    def replay_one(mutation: tuple[dict[str, Any], bool, int]) -> None:
        changes, rehash, largest = mutation
        path = rewrite(small_bundle, inputs / f"b{next(counter)}.zip", changes, rehash=rehash)
        writes: list[str] = []
        _watching.append(writes)
        outcome: BaseException | None = None
        try:
            with transaction.atomic():
                try:
                    bundle_replay(path=path)
                except BundleError as exc:
                    outcome = exc
                transaction.set_rollback(True)  # the next example starts from an empty database
        finally:
            _watching.pop()
        outside = [
            w for w in writes if not Path(w).resolve().is_relative_to(scratch.resolve()) and "__pycache__" not in w
        ]
        assert outside == [], f"the replay wrote outside its scratch directory: {outside}"
        if largest > MEMBER_CAP:
            # Refused for its size before it was read (or for a graver fault found first, which
            # the size check precedes for every member: the caps are checked when the zip opens).
            assert outcome is not None and "ARCHIVE_MAX_MEMBER_BYTES" in str(outcome), outcome

    replay_one()
    assert not (Path.cwd() / "OUTSIDE").exists()
