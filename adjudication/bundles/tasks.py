"""The bundle downloads' Celery task: build one bundle file (adjudication.bundles.jobs)."""

from __future__ import annotations

from celery import shared_task

from adjudication.bundles.jobs import bundle_build
from adjudication.task_names import BUILD_BUNDLE


@shared_task(name=BUILD_BUNDLE, acks_late=True)
def build_bundle(dataset_id: int, spec_json: str, version: int) -> str:
    """spec_json: the report's ReportSpec.canonical() as JSON text."""
    return bundle_build(dataset_id=dataset_id, spec_json=spec_json, version=version)
