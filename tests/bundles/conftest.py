"""Fixtures of the bundle tests: a small labelled dataset's bundle, written once per module with its
rows rolled back (each test starts from an empty database and the file), and `rewrite`, which
makes a hostile copy of a bundle member by member."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from adjudication.analytics.reports import parse_report
from adjudication.bundles.services import bundle_write
from adjudication.models import Dataset, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import jsonl_writer, mc_row, run_command
from ..review.conftest import make_user

# A member's new bytes, or a function of its old ones; None drops the member.
Change = bytes | Callable[[bytes], bytes] | None


def build_small_dataset(tmp: Path, *, name: str = "small") -> Dataset:
    """Four questions at two checkpoints, read by two rule readers, every item labelled once (with
    a confidence) by one annotator: a row in every table a replay checks the most."""
    rows = [
        mc_row(i, id=f"{ckpt}-{i}", checkpoint=ckpt, response=f"The answer is B. \\boxed{{{'BC'[i % 2]}}} [{i}]")
        for i in range(4)
        for ckpt in ("base", "rl")
    ]
    run_command("import_responses", str(jsonl_writer(tmp)(rows, name=f"{name}.jsonl")), dataset=name, no_progress=True)
    ds = Dataset.objects.get(name=name)
    specs = [reader_spec_by_name(name=n) for n in ("boxed", "strict-match")]
    readings_create(
        reader_specs=specs, response_ids=list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    )
    queue = queue_create(
        dataset=ds,
        spec=QueueSpec(name=f"{name}-q", overlap=1, routing=PolicySpec(panel=["boxed", "strict-match"], seed=1)),
    )
    ann = make_user(f"{name}-ann", "annotator")
    while (lease := lease_claim_next(queue=queue, annotator=ann).lease) is not None:
        label_submit(lease=lease, annotator=ann, entry=LabelEntry(kind="option", answer="B", confidence=4))
    return ds


@pytest.fixture(scope="module")
def small_bundle(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    """The bundle of build_small_dataset with an agreement report; the rows are gone again."""
    tmp = tmp_path_factory.mktemp("small-bundle")
    path = tmp / "small.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        ds = build_small_dataset(tmp)
        bundle_write(dataset=ds, out=path, report_specs=[parse_report("agreement --seed 2")])
        transaction.set_rollback(True)
    return path


def rewrite(
    source: Path,
    target: Path,
    members: dict[str, Change] | None = None,
    *,
    manifest: Callable[[dict[str, Any]], Any] | None = None,
    manifest_bytes: bytes | None = None,
    rehash: bool = True,
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    """A copy of a bundle with members replaced (or added, or dropped) and, with rehash, their
    sha256 and row counts put in the manifest, as a careful forger would; then `manifest` may edit
    the manifest (or `manifest_bytes` replace it whole)."""
    members = dict(members or {})
    with zipfile.ZipFile(source) as src:
        data = {name: src.read(name) for name in src.namelist()}
    doc = json.loads(data.pop("manifest.json"))
    for name, change in members.items():
        if change is None:
            data.pop(name, None)
            continue
        data[name] = change(data.get(name, b"")) if callable(change) else change
        if rehash:
            entry = doc["members"].setdefault(name, {})
            entry["sha256"] = hashlib.sha256(data[name]).hexdigest()
            if name.endswith(".jsonl"):
                entry["rows"] = data[name].count(b"\n")
    if manifest is not None:
        doc = manifest(doc)
    with zipfile.ZipFile(target, "w", compression=compression) as dst:
        for name, blob in data.items():
            dst.writestr(name, blob)
        dst.writestr("manifest.json", manifest_bytes if manifest_bytes is not None else json.dumps(doc))
    return target


def lines_of(blob: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in blob.decode("ascii").splitlines()]


def jsonl(rows: list[Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode("ascii")


def edit_rows(change: Callable[[list[dict[str, Any]]], Any]) -> Callable[[bytes], bytes]:
    """A rewrite() change that edits a table member's rows in place."""

    def edit(blob: bytes) -> bytes:
        rows = lines_of(blob)
        change(rows)
        return jsonl(rows)

    return edit


def member(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as zf:
        return zf.read(name)
