"""What an import stores: datasets of generation runs, the questions they answered and the raw
responses, verbatim."""

from __future__ import annotations

from django.db import models
from django.db.models import UniqueConstraint

from adjudication.fields import VerbatimTextField
from adjudication.validators import validate_name


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """One generation run: a model checkpoint answering one benchmark with one prompt."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="runs")
    model = models.CharField(max_length=200)
    checkpoint = models.CharField(max_length=100, help_text="e.g. base, rl, sft")
    benchmark = models.CharField(max_length=100)
    prompt = models.CharField(max_length=200, blank=True, default="", help_text="prompt id")
    # Base and RL checkpoints of one model usually carry different model names (Yi-6B, Yi-6B-Chat):
    # comparisons pair runs by family, declared at import (`--pair base=Yi-6B,rl=Yi-6B-Chat`).
    family = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="the family its base and RL runs are compared within; empty: the model's own name",
    )
    generation_params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "model", "checkpoint", "benchmark", "prompt"]
        constraints = [
            UniqueConstraint(fields=["dataset", "model", "checkpoint", "benchmark", "prompt"], name="run_identity"),
        ]

    def __str__(self) -> str:
        return f"{self.model}@{self.checkpoint} on {self.benchmark}" + (f" [{self.prompt}]" if self.prompt else "")

    @property
    def comparison_family(self) -> str:
        """The key base and RL runs are paired on: the declared family, else the model's name."""
        return self.family or self.model


class Question(models.Model):
    """A benchmark item. Shared by every run of the dataset that answered it (base and RL answer
    the same question), identified by a fingerprint of its content."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="questions")
    benchmark = models.CharField(max_length=100)
    text = VerbatimTextField()
    choices = models.JSONField(default=list, blank=True, help_text="ordered option texts; empty if open-ended")
    gold = VerbatimTextField()
    meta = models.JSONField(default=dict, blank=True)
    fingerprint = models.CharField(max_length=64)

    class Meta:
        constraints = [UniqueConstraint(fields=["dataset", "fingerprint"], name="question_identity")]

    def __str__(self) -> str:
        return self.text[:80]

    @property
    def is_multiple_choice(self) -> bool:
        return bool(self.choices)


class Response(models.Model):
    """A model's raw output for a question, stored verbatim (any length, any characters)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="responses")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="responses")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="responses")
    external_id = models.CharField(max_length=500)
    text = VerbatimTextField()
    # The rendered prompt the text was generated from (chat template and few-shot examples
    # included), when the import carried it; Answer Regeneration continues it verbatim.
    prompt_text = VerbatimTextField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, help_text="sha256 of the response text")
    row_hash = models.CharField(max_length=64, help_text="sha256 of the whole imported row; detects changes")
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [UniqueConstraint(fields=["dataset", "external_id"], name="response_external_id")]
        indexes = [models.Index(fields=["run"])]

    def __str__(self) -> str:
        return self.external_id
