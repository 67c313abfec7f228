"""What the verifier audit stores: one AuditRun per audit started from the audit page."""

from __future__ import annotations

from django.db import models

from adjudication.ingest.models import Dataset


class AuditRun(models.Model):
    """A metamorphic verifier audit (seed 001) of some readers on a dataset's distinct golds, run as
    a Celery job. The report is kept in `summary` (readers.audit.runner's summary.json) so the page
    never depends on files; the full outputs (verdicts.jsonl, the CSVs) are written to `out_dir`."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="audit_runs")
    readers = models.JSONField(default=list, help_text="registry names of the audited readers")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    n_golds = models.PositiveIntegerField(default=0)
    out_dir = models.CharField(max_length=500, blank=True, default="")
    summary = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="when the current attempt claimed the run")
    finished_at = models.DateTimeField(null=True, blank=True)
    # The claim is a lease: the worker running the audit beats every AUDIT_LEASE_SECONDS / 4, and a
    # running row without a beat for a lease belongs to a dead worker and may be claimed again.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Claims so far; also the fencing token: a worker writes only while the row still carries its
    # attempt, so one that lost its claim (paused past the lease) cannot overwrite its successor.
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"audit #{self.pk} of {self.dataset.name} ({self.status})"
