"""What analytics stores: the analytics page's computed reports, one per dataset, parameters and data
version."""

from __future__ import annotations

from django.db import models
from django.db.models import UniqueConstraint

from adjudication.ingest.models import Dataset


class AnalyticsReport(models.Model):
    """The analytics page's whole report for one dataset, one set of parameters and one data version
    (DatasetRevision.number), computed once by a Celery task and read by the page and its downloads.
    Claimed by compare-and-set on `attempts` like an AuditRun."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="analytics_reports")
    params = models.JSONField(default=dict, help_text="the report parameters (analytics.report.Params)")
    params_key = models.CharField(max_length=64, help_text="sha256 of the canonical parameters")
    data_version = models.BigIntegerField(help_text="DatasetRevision.number the report was computed for")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    body = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    elapsed_s = models.FloatField(null=True, blank=True, help_text="seconds the computation took")

    class Meta:
        ordering = ["-data_version", "-id"]
        constraints = [
            UniqueConstraint(fields=["dataset", "params_key", "data_version"], name="analytics_report_once"),
        ]
        indexes = [models.Index(fields=["dataset", "params_key", "status", "-data_version"])]

    def __str__(self) -> str:
        return f"analytics report #{self.pk} of dataset {self.dataset_id} r{self.data_version} ({self.status})"


class AnalyticsChoice(models.Model):
    """The readers and base checkpoint a dataset's analytics page was last set to: what the page
    shows without parameters, what the managers' landing card shows and what `format_share
    --dataset` defaults to, so that all three name the same readers. Without a row the defaults
    follow the dataset's benchmarks (analytics.selectors.analytics_params)."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, related_name="analytics_choice")
    reported = models.CharField(max_length=200)
    fixed = models.CharField(max_length=200)
    base = models.CharField(max_length=100)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"analytics of dataset {self.dataset_id}: {self.reported} vs {self.fixed} over {self.base}"


class JudgeSplit(models.Model):
    """A dataset's human-labelled responses split once, for one judge family and seed, into a pool
    whose labels may feed a new version's few-shot examples and a held-out set whose labels may only
    measure (docs/judges.md, "Judge versions"). A response's side is a function of the seed and its
    external id alone (analytics.versions.held_out_side), so a later refresh adds newly labelled
    responses without moving any earlier one, and the same ids split the same way in any database."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="judge_splits")
    family = models.CharField(max_length=100, help_text="the name of the family's first judge")
    seed = models.IntegerField()
    held_out_fraction = models.FloatField()
    # {response id: the human verdict, correct / incorrect}: what a new version's examples are drawn from.
    pool = models.JSONField(default=dict, blank=True)
    held_out = models.JSONField(default=list, blank=True, help_text="response ids that may only measure")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [UniqueConstraint(fields=["dataset", "family", "seed"], name="judge_split_once")]

    def __str__(self) -> str:
        return f"split of {self.family} on dataset {self.dataset_id} (seed {self.seed})"
