"""Reads of the audit pages and jobs."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from adjudication.models import AuditRun, Dataset
from readers import registry as reader_registry
from readers.audit.runner import SEED_READERS


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


def default_audit_readers() -> list[str]:
    known = set(reader_registry.names())
    return [n for n in SEED_READERS if n in known]


def audit_lease_seconds() -> float:
    return float(settings.AUDIT_LEASE_SECONDS)


def audit_last_seen(run: AuditRun) -> datetime | None:
    """The last sign of life of the worker holding the claim (rows claimed before heartbeats
    existed: the claim itself)."""
    return run.heartbeat_at or run.started_at


def audit_claim_is_stale(run: AuditRun, *, now: datetime) -> bool:
    """Running, and its worker has not been heard of for a lease (or never was)."""
    if run.status != AuditRun.Status.RUNNING:
        return False
    seen = audit_last_seen(run)
    return seen is None or (now - seen).total_seconds() > audit_lease_seconds()
