"""The audit a stored run describes, computed (its files into `out_dir`, its summary returned)
and stored by nobody here: audit.services stores it for a run, a report replays it. Apart from the
services so that a report can compute it without importing what enqueues work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from adjudication.audit.selectors import dataset_golds
from adjudication.models import AuditRun


def audit_summary(*, run: AuditRun, out_dir: Path) -> dict[str, Any]:
    """The summary the run's audit computes (what audit_run_execute stores), without storing it:
    a bundle's replay recomputes a stored audit with it."""
    return audit_summary_counted(run=run, out_dir=out_dir)[0]


def audit_summary_counted(*, run: AuditRun, out_dir: Path) -> tuple[dict[str, Any], int]:
    """The summary and the number of golds audited."""
    from readers.audit.runner import run_audit

    golds, skipped = dataset_golds(run.dataset)
    if not golds:
        raise ValueError(f"dataset {run.dataset.name!r} has no open-ended golds to audit")
    result = run_audit(
        golds, run.readers, out_dir, processes=settings.READER_PROCESSES, budget_s=settings.READER_BUDGET_SECONDS
    )
    summary = dict(result.summary)
    summary["strata_rows"] = result.strata_rows
    summary["magnitude_rows"] = result.magnitude_rows
    summary["skipped_multiple_choice"] = skipped
    return summary, len(golds)
