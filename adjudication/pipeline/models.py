"""What the reading pipeline stores: the identity of each reader (ReaderSpec), the readings it made
of responses, and the TaskBatch rows that track its fan-out of Celery tasks."""

from __future__ import annotations

from django.db import models
from django.db.models import CheckConstraint, Q, UniqueConstraint

from adjudication.fields import VerbatimTextField
from adjudication.ingest.models import Dataset, Response


class ReaderSpec(models.Model):
    """The identity of what produced a verdict: reader name, version and config (hashed)."""

    # "harness": what an evaluation harness (lighteval, inspect-ai) itself extracted and scored, imported
    # with its log (adjudication.ingest.harnesses), so that the harness is one more reader in the panel.
    KIND_CHOICES = [
        ("rule", "rule reader"),
        ("regeneration", "answer regeneration"),
        ("judge", "LLM judge"),
        ("harness", "harness scoring"),
    ]

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50)
    kind = models.CharField(max_length=20, choices=KIND_CHOICES, default="rule")
    config = models.JSONField(default=dict, blank=True)
    config_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [UniqueConstraint(fields=["name", "version", "config_hash"], name="reader_spec_identity")]

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.config_hash[:8]})"


class Verdict(models.TextChoices):
    CORRECT = "correct"
    INCORRECT = "incorrect"
    NO_ANSWER = "no_answer", "no answer"
    ERROR = "error"
    TIMEOUT = "timeout"
    # The reader does not apply to the item's task type and did not run (readers.tasks).
    NOT_APPLICABLE = "not_applicable", "not applicable"


class Reading(models.Model):
    """One reader's reading of one response. Timeouts, crashes and no-answer are verdict classes
    of their own, never folded into "incorrect"."""

    # No single-column indexes of their own: one_reading_per_reader leads with response and the
    # (reader_spec, verdict) index with reader_spec, and every index costs each stored reading.
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="readings", db_index=False)
    reader_spec = models.ForeignKey(ReaderSpec, on_delete=models.PROTECT, related_name="readings", db_index=False)
    answer = VerbatimTextField(null=True, blank=True)  # raw: what the reader extracted, as written
    normalized = VerbatimTextField(null=True, blank=True)  # the reader's own compared form
    # The platform's one form of the answer, whoever read it (readers.answer.canonical: the option letter,
    # or a normal form for maths): what exports, routing and the review candidates compare.
    canonical = VerbatimTextField(null=True, blank=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    span_start = models.PositiveIntegerField(null=True, blank=True)
    span_end = models.PositiveIntegerField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    elapsed_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["response_id", "reader_spec_id"]
        constraints = [
            UniqueConstraint(fields=["response", "reader_spec"], name="one_reading_per_reader"),
            CheckConstraint(
                condition=(Q(span_start__isnull=True) & Q(span_end__isnull=True))
                | (Q(span_start__isnull=False) & Q(span_end__isnull=False) & Q(span_start__lte=models.F("span_end"))),
                name="reading_span_well_formed",
            ),
        ]
        indexes = [models.Index(fields=["reader_spec", "verdict"])]

    def __str__(self) -> str:
        return f"{self.reader_spec.name}: {self.verdict}"


class TaskBatch(models.Model):
    """One Celery task of a fan-out: a batch of responses for every selected rule reader
    (`read_batch`), judge (`judge_batch`) or for one regenerating endpoint (`regenerate_batch`).
    Tasks keep no results (there is no result backend) and a failed task is acknowledged, not
    redelivered, so this row is how a waiting command learns that a batch failed instead of
    waiting forever for its readings (adjudication.pipeline.batches)."""

    class Kind(models.TextChoices):
        READ = "read"
        JUDGE = "judge"
        REGENERATE = "regenerate"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running", "running (or its worker died and the task waits for redelivery)"
        DONE = "done"
        FAILED = "failed"

    run = models.UUIDField(help_text="the command run that enqueued it")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="task_batches")
    responses = models.PositiveIntegerField(help_text="responses in the batch")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    deliveries = models.PositiveIntegerField(default=0, help_text="times a worker started it")
    claimed_by = models.CharField(
        max_length=255, blank=True, default="", help_text="the Celery node (name@host) that last started it"
    )
    error = VerbatimTextField(blank=True, default="", help_text="why it failed; secrets redacted")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["run", "status"]), models.Index(fields=["dataset", "status"])]

    def __str__(self) -> str:
        return f"{self.kind} batch {self.pk} ({self.status})"
