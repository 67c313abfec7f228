"""The metamorphic verifier audit on a stored dataset's golds ("certify your readers on your
benchmark"): start it (a queued AuditRun, enqueued on commit) and execute it (the Celery task's
one service call)."""
from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from readers import registry as reader_registry
from readers.audit.runner import SEED_READERS, audit_reader_choices  # noqa: F401 (re-exported)

from ..models import AuditRun, Dataset

log = logging.getLogger(__name__)


def default_audit_readers() -> list[str]:
    known = set(reader_registry.names())
    return [n for n in SEED_READERS if n in known]


def dataset_golds(dataset: Dataset) -> tuple[list[str], int]:
    """(distinct open-ended golds in question order, number of multiple-choice questions skipped)."""
    golds: list[str] = []
    skipped = 0
    for gold, choices in dataset.questions.order_by("id").values_list("gold", "choices"):
        if choices:
            skipped += 1
            continue
        gold = (gold or "").strip()
        if gold:
            golds.append(gold)
    return list(dict.fromkeys(golds)), skipped


def audit_output_root() -> Path:
    return Path(getattr(settings, "AUDIT_OUTPUT_DIR", settings.BASE_DIR / "var" / "audit"))


def audit_run_start(*, dataset: Dataset, reader_names: list[str], user=None) -> AuditRun:
    """A queued AuditRun, handed to a worker once the transaction commits."""
    from ..tasks import run_audit

    known = set(reader_registry.names())
    unknown = [n for n in reader_names if n not in known]
    if unknown:
        raise ValueError(f"unknown reader(s): {', '.join(unknown)}")
    if not reader_names:
        raise ValueError("choose at least one reader")
    with transaction.atomic():
        run = AuditRun.objects.create(dataset=dataset, readers=list(dict.fromkeys(reader_names)),
                                      created_by=user if getattr(user, "is_authenticated", False) else None)
        # on_commit: a worker must never receive the id of a row it cannot see yet.
        transaction.on_commit(lambda run_id=run.pk: run_audit.delay(run_id))
    return run


def audit_run_execute(*, audit_run_id: int) -> str:
    """Run a queued audit. Claims the row (queued -> running) with one conditional UPDATE, so a
    redelivered or duplicated task never runs the same audit twice; returns the final status."""
    from readers.audit.runner import run_audit

    claimed = AuditRun.objects.filter(pk=audit_run_id, status=AuditRun.Status.QUEUED).update(
        status=AuditRun.Status.RUNNING, started_at=timezone.now())
    if not claimed:
        status = AuditRun.objects.filter(pk=audit_run_id).values_list("status", flat=True).first()
        log.info("audit %s not queued (status %s): nothing to do", audit_run_id, status)
        return status or "missing"
    run = AuditRun.objects.select_related("dataset").get(pk=audit_run_id)
    out_dir = audit_output_root() / f"run-{run.pk}"
    try:
        golds, skipped = dataset_golds(run.dataset)
        if not golds:
            raise ValueError(f"dataset {run.dataset.name!r} has no open-ended golds to audit")
        result = run_audit(golds, run.readers, out_dir, processes=settings.READER_PROCESSES,
                           budget_s=settings.READER_BUDGET_SECONDS)
        summary = dict(result.summary)
        summary["strata_rows"] = result.strata_rows
        summary["magnitude_rows"] = result.magnitude_rows
        summary["skipped_multiple_choice"] = skipped
    except Exception as exc:  # noqa: BLE001 - the run records its failure; the task does not retry
        log.exception("audit %s failed", audit_run_id)
        AuditRun.objects.filter(pk=audit_run_id).update(
            status=AuditRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now())
        return AuditRun.Status.FAILED
    AuditRun.objects.filter(pk=audit_run_id).update(
        status=AuditRun.Status.DONE, summary=summary, n_golds=len(golds), out_dir=str(out_dir),
        finished_at=timezone.now())
    return AuditRun.Status.DONE
