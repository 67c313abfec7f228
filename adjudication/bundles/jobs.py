"""The managers' bundle downloads as background jobs: a bundle of a large dataset takes seconds to
minutes to write (8.8 s for 812 responses), too long for a request (issue 36 item 15).

A job is files in BUNDLE_DOWNLOAD_DIR, named by the dataset, the report's parameters and the data
version, so that a label makes the next request build a new bundle and the old one is not served
as current:
    <name>.zip        the finished bundle (written under a temporary name, then renamed)
    <name>.building   the claim: created exclusively by the request that starts the build
    <name>.error      why the build failed (a report that cannot be computed on the dataset)
The build runs as the `build_bundle` Celery task, or on the embedded default after the response
(adjudication.after_response). No database row: a bundle is a file already, and the claim is the
file system's exclusive create.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from adjudication.analytics.reports import ReportSpec
from adjudication.bundles import reports
from adjudication.bundles.services import bundle_write
from adjudication.models import Dataset
from adjudication.revisions import dataset_version
from adjudication.task_names import BUILD_BUNDLE, task_send_after_response

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BundleJob:
    state: str  # "ready", "building" or "failed"
    path: Path  # the bundle's file (there when ready)
    error: str = ""


def _directory() -> Path:
    path = Path(settings.BUNDLE_DOWNLOAD_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _stem(dataset_id: int, spec: ReportSpec, version: int) -> str:
    return f"dataset-{dataset_id}-{hashlib.sha256(spec.key.encode()).hexdigest()[:16]}-v{version}"


def _files(stem: str) -> tuple[Path, Path, Path]:
    base = _directory() / stem
    return base.with_suffix(".zip"), base.with_suffix(".building"), base.with_suffix(".error")


def bundle_job(*, dataset: Dataset, spec: ReportSpec) -> BundleJob:
    """The download of this report's bundle for the dataset's current data: ready, failed, or being
    built (started here when nobody has, or when a build has been silent for a lease)."""
    version = dataset_version(dataset_id=dataset.pk)
    stem = _stem(dataset.pk, spec, version)
    done, building, failed = _files(stem)
    if done.exists():
        return BundleJob("ready", done)
    if failed.exists():
        return BundleJob("failed", done, failed.read_text(encoding="utf-8"))
    if building.exists() and time.time() - building.stat().st_mtime > settings.BUNDLE_BUILD_LEASE_SECONDS:
        building.unlink(missing_ok=True)  # its worker died: build it again
    try:
        os.close(os.open(building, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return BundleJob("building", done)
    task_send_after_response(BUILD_BUNDLE, dataset.pk, json.dumps(spec.canonical()), version, on_commit=False)
    return BundleJob("building", done)


def bundle_build(*, dataset_id: int, spec_json: str, version: int) -> str:
    """The job: write the bundle under a temporary name and rename it into place (or record why it
    could not be written), then drop this dataset's and report's bundles of older versions."""
    spec = ReportSpec.from_row(json.loads(spec_json))
    stem = _stem(dataset_id, spec, version)
    done, building, failed = _files(stem)
    partial = done.with_suffix(f".{os.getpid()}.partial")
    dataset = Dataset.objects.filter(pk=dataset_id).first()
    try:
        if dataset is None:
            failed.write_text(f"dataset {dataset_id} no longer exists", encoding="utf-8")
            return "failed"
        try:
            bundle_write(dataset=dataset, out=partial, report_specs=[spec])
        except reports.ReportError as exc:
            failed.write_text(str(exc), encoding="utf-8")
            return "failed"
        os.replace(partial, done)
    finally:
        partial.unlink(missing_ok=True)
        building.unlink(missing_ok=True)
    prefix = stem.rsplit("-v", 1)[0] + "-v"
    for old in _directory().glob(prefix + "*"):
        if old.name.rsplit("-v", 1)[1].split(".", 1)[0] != str(version):
            old.unlink(missing_ok=True)
    log.info("bundle %s written", done.name)
    return "done"
