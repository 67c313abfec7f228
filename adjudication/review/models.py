"""What human review stores: queues and their guidelines, the items in them, annotators' leases and
labels, and the final label each item ends with."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import CheckConstraint, Q, UniqueConstraint

from adjudication.fields import VerbatimTextField
from adjudication.ingest.models import Dataset
from adjudication.routing.models import ReviewItem, RoutingPolicy
from adjudication.validators import INT_MAX, INT_MIN, SMALLINT_MAX, validate_name


class ReviewQueue(models.Model):
    """Human review of a routing policy's items: each item labelled by `overlap` annotators."""

    class State(models.TextChoices):
        ACTIVE = "active", "active"
        PAUSED = "paused", "paused (no new claims)"
        CLOSED = "closed", "closed (hidden from annotators)"

    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="review_queues")
    policy = models.ForeignKey(RoutingPolicy, on_delete=models.PROTECT, related_name="queues")
    overlap = models.PositiveSmallIntegerField(
        default=2,
        help_text="labels wanted per item (k)",
        validators=[MinValueValidator(1), MaxValueValidator(SMALLINT_MAX)],
    )
    lease_seconds = models.PositiveIntegerField(
        default=900,
        help_text="how long a claimed item stays reserved",
        validators=[MinValueValidator(10), MaxValueValidator(INT_MAX)],
    )
    # Seeds the tie-break shuffle of equal priorities (QueueItem.tiebreak).
    seed = models.IntegerField(default=0, validators=[MinValueValidator(INT_MIN), MaxValueValidator(INT_MAX)])
    show_candidates = models.BooleanField(default=True, help_text="show the readers' distinct answers, anonymised")
    judge_correctness = models.BooleanField(
        default=False, help_text="annotators also judge correct / incorrect vs gold"
    )
    # What annotators see. The name is the managers' handle and is often built from reader or
    # model names, so it never reaches an annotator-facing page or API.
    title = models.CharField(
        max_length=200, blank=True, default="", help_text='shown to annotators (default "Queue N")'
    )
    state = models.CharField(max_length=8, choices=State.choices, default=State.ACTIVE)
    # Who may label it; nobody assigned means every annotator.
    annotators = models.ManyToManyField(
        "auth.User", blank=True, related_name="assigned_queues", help_text="empty: every annotator"
    )
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [CheckConstraint(condition=Q(overlap__gte=1), name="queue_overlap_positive")]

    def __str__(self) -> str:
        return self.name

    @property
    def display_title(self) -> str:
        return self.title.strip() or f"Queue {self.pk}"


class Guidelines(models.Model):
    """One version of a queue's annotation guidelines (Markdown). Editing adds a version; each label
    records the version its annotator labelled under."""

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="guidelines")
    version = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(INT_MAX)])
    text = models.TextField()
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["queue", "version"], name="guidelines_version_unique")]

    def __str__(self) -> str:
        return f"{self.queue_id} v{self.version}"


class QueueItem(models.Model):
    """A review item as it stands in one queue. `label_count` counts annotators who labelled it
    (not skips); it is only changed under this row's lock, together with the label itself."""

    class Status(models.TextChoices):
        OPEN = "open", "needs labels"
        AGREED = "agreed", "labels agree"
        CONFLICT = "conflict", "labels conflict"
        ADJUDICATED = "adjudicated", "adjudicated"

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="items")
    review_item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="queue_items")
    priority = models.FloatField(default=0.0)
    # Equal priorities are broken by a seeded per-queue shuffle, never by import order: rows are
    # imported run by run, so id order would hand out all base items before the RL items of the
    # same questions and tell the annotator which checkpoint they are reading.
    tiebreak = models.BigIntegerField(default=0)
    label_count = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)

    class Meta:
        constraints = [UniqueConstraint(fields=["queue", "review_item"], name="queue_item_once")]
        indexes = [
            models.Index(fields=["queue", "status", "-priority", "tiebreak", "id"], name="queueitem_claim_order")
        ]

    def __str__(self) -> str:
        return f"{self.queue.name} #{self.pk}"


class Lease(models.Model):
    """A claim on a queue item by an annotator, live until `expires_at` or until it is completed."""

    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="leases")
    annotator = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="leases")
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["item", "expires_at"]), models.Index(fields=["annotator", "completed_at"])]

    def __str__(self) -> str:
        return f"lease #{self.pk} of item #{self.item_id}"


class ValidManager(models.Manager):
    """Rows that still stand: labels made on a response text that was later replaced are kept as
    history (`invalidated_at` set) but count nowhere. Reverse relations (item.labels) use this
    manager too, so every ORM reader of labels sees only valid ones; `all_objects` sees all."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(invalidated_at__isnull=True)


class Invalidatable(models.Model):
    """A row kept as history once it no longer stands (the response text it was made on was replaced,
    a manager re-opened a skip, or a revised label undid the agreement a unanimous final label
    recorded): `objects` (the default manager, so reverse relations too) sees
    the valid rows, `all_objects` every row."""

    invalidated_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="set when the row no longer stands: its response text was replaced, or its skip re-opened",
    )

    objects = ValidManager()
    # DJ012 is silenced: the order is Django's migration state (the first manager is the default one); ruff
    # takes a models.Manager() call for a field.
    all_objects = models.Manager()  # noqa: DJ012

    class Meta:
        abstract = True
        default_manager_name = "objects"
        base_manager_name = "all_objects"


class Label(Invalidatable):
    """One annotator's label of one item. Append-only: a revision is a new row pointing at the
    one it revises; the newest row per (item, annotator) is the current one."""

    class Kind(models.TextChoices):
        OPTION = "option", "an option letter"
        TEXT = "text", "free text"
        NO_ANSWER = "no_answer", "no answer"
        AMBIGUOUS = "ambiguous", "ambiguous"
        SKIPPED = "skipped", "skipped"

    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="labels")
    # The item's queue, copied: an annotator's progress ("done", "remaining") is counted on every
    # item page, and without it that count joins each of their labels to its item.
    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey("auth.User", on_delete=models.PROTECT, related_name="labels")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    answer = VerbatimTextField(blank=True, default="")
    correctness = models.CharField(
        max_length=10,
        blank=True,
        default="",
        choices=[("", "not judged"), ("correct", "correct"), ("incorrect", "incorrect")],
    )
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    skip_reason = models.TextField(blank=True, default="")
    note = models.TextField(blank=True, default="")
    guidelines_version = models.PositiveIntegerField(null=True, blank=True, help_text="the queue's guidelines then")
    seconds_spent = models.FloatField(null=True, blank=True)
    revises = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="revisions")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Invalidatable.Meta):
        indexes = [
            models.Index(fields=["item", "annotator", "-created_at"]),
            models.Index(fields=["queue", "annotator", "item"]),
        ]
        constraints = [
            CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=1, confidence__lte=5),
                name="label_confidence_1_5",
            )
        ]

    def __str__(self) -> str:
        return f"label #{self.pk} of item #{self.item_id}: {self.kind} {self.answer}"

    def save(self, *args, **kwargs) -> None:
        if self.queue_id is None and self.item_id is not None:
            self.queue_id = self.item.queue_id
        super().save(*args, **kwargs)


class FinalLabel(Invalidatable):
    """The label an item ends with, and how it got there. Append-only like Label."""

    class Provenance(models.TextChoices):
        UNANIMOUS = "unanimous"
        ADJUDICATED = "adjudicated"
        UNRESOLVED = "unresolved"

    class ErrorType(models.TextChoices):
        NONE = "", "—"
        READER_BUG = "reader_bug", "reader bug"
        AMBIGUOUS_RESPONSE = "ambiguous_response", "ambiguous response"
        GUIDELINE_GAP = "guideline_gap", "guideline gap"
        ANNOTATOR_ERROR = "annotator_error", "annotator error"

    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="final_labels")
    kind = models.CharField(max_length=12, choices=Label.Kind.choices)
    answer = VerbatimTextField(blank=True, default="")
    correctness = models.CharField(max_length=10, blank=True, default="")
    provenance = models.CharField(max_length=12, choices=Provenance.choices)
    error_type = models.CharField(max_length=24, choices=ErrorType.choices, blank=True, default="")
    notes = models.TextField(blank=True, default="")
    decided_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Invalidatable.Meta):
        indexes = [models.Index(fields=["item", "-created_at"])]

    def __str__(self) -> str:
        return f"final label #{self.pk} of item #{self.item_id}: {self.kind} {self.answer}"
