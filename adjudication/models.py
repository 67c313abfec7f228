"""The response store: datasets of generation runs, questions, raw responses, and the readings
that named, versioned, configured readers made of them."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import CheckConstraint, Q, UniqueConstraint

from adjudication.fields import VerbatimTextField
from adjudication.validators import INT_MAX, INT_MIN, SMALLINT_MAX, validate_name


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[validate_name])
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DatasetRevision(models.Model):
    """A counter per dataset, raised by every write that changes what the analytics read (responses,
    readings, routing, labels, final labels): a stored report is current while it carries the
    dataset's number. A row of its own, not a column of Dataset: an import holds the dataset row
    for its whole transaction, and labelling must not wait for that."""

    dataset = models.OneToOneField(Dataset, primary_key=True, on_delete=models.CASCADE, related_name="revision")
    number = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.dataset_id} r{self.number}"


class Run(models.Model):
    """One generation run: a model checkpoint answering one benchmark with one prompt."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="runs")
    model = models.CharField(max_length=200)
    checkpoint = models.CharField(max_length=100, help_text="e.g. base, rl, sft")
    benchmark = models.CharField(max_length=100)
    prompt = models.CharField(max_length=200, blank=True, default="", help_text="prompt id")
    generation_params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "model", "checkpoint", "benchmark", "prompt"]
        constraints = [
            UniqueConstraint(fields=["dataset", "model", "checkpoint", "benchmark", "prompt"], name="run_identity"),
        ]

    def __str__(self) -> str:
        return f"{self.model}@{self.checkpoint} on {self.benchmark}" + (f" [{self.prompt}]" if self.prompt else "")


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


class Reading(models.Model):
    """One reader's reading of one response. Timeouts, crashes and no-answer are verdict classes
    of their own, never folded into "incorrect"."""

    # No single-column indexes of their own: one_reading_per_reader leads with response and the
    # (reader_spec, verdict) index with reader_spec, and every index costs each stored reading.
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="readings", db_index=False)
    reader_spec = models.ForeignKey(ReaderSpec, on_delete=models.PROTECT, related_name="readings", db_index=False)
    answer = VerbatimTextField(null=True, blank=True)  # raw: what the reader extracted, as written
    normalized = VerbatimTextField(null=True, blank=True)  # the reader's own compared form
    # The platform's one form of the answer, whoever read it (readers.canonical: the option letter,
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


class RoutingPolicy(models.Model):
    """Which responses of a dataset go to human review: the ones a panel of readers disputes,
    plus an optional random share of undisputed ones as controls (for unbiased accuracy estimates).
    With priority "information": instead, the `budget` responses whose labels most narrow the
    uncertainty of `target` under the panel consensus, disputed or not, and a random share of all
    responses as controls (docs/consensus.md, "Budgeted adjudication")."""

    class Compare(models.TextChoices):
        EITHER = "either", "answer or verdict"
        ANSWER = "answer", "normalised answer"
        VERDICT = "verdict", "verdict"

    class Priority(models.TextChoices):
        DISAGREEMENT = "disagreement", "strongest disagreement first"
        RANDOM = "random", "random order"
        ORDER = "order", "import order"
        INFORMATION = "information", "most informative for a target first"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="routing_policies")
    name = models.CharField(max_length=200, validators=[validate_name])
    panel = models.ManyToManyField(ReaderSpec, related_name="+")
    compare = models.CharField(max_length=10, choices=Compare.choices, default=Compare.EITHER)
    missing_is_disagreement = models.BooleanField(
        default=False, help_text="count no_answer / timeout / error against a reader that found an answer"
    )
    control_fraction = models.FloatField(
        default=0.0,
        help_text="share of undisputed responses sent as controls",
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    seed = models.IntegerField(default=0, validators=[MinValueValidator(INT_MIN), MaxValueValidator(INT_MAX)])
    priority = models.CharField(max_length=16, choices=Priority.choices, default=Priority.DISAGREEMENT)
    # Priority "information" only: the target whose uncertainty the labels should narrow, in the
    # text form of analytics.allocation.Target ("reader:strict-match", "accuracy:rl", ...), and how
    # many items the policy routes at most (null: every item whose label tells something).
    target = models.CharField(max_length=200, blank=True, default="")
    budget = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(INT_MAX)]
    )
    # Set when a final label asked for the priorities to be refitted and no refit has claimed the
    # request yet (routing.services.information_refresh_request): a burst of labels causes one refit.
    refresh_requested_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            UniqueConstraint(fields=["dataset", "name"], name="routing_policy_name"),
            CheckConstraint(
                condition=Q(control_fraction__gte=0) & Q(control_fraction__lte=1), name="control_fraction_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.name}"


class ReviewItem(models.Model):
    """A response routed to review by a policy: exactly once per (policy, response)."""

    policy = models.ForeignKey(RoutingPolicy, on_delete=models.CASCADE, related_name="items")
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="review_items")
    is_control = models.BooleanField(default=False, help_text="undisputed, sampled at random as a control")
    priority = models.FloatField(default=0.0, help_text="higher is reviewed first")
    # Which readers said what: manager-facing provenance, never shown to annotators.
    reason = models.JSONField(default=dict, blank=True)
    # When the response's text was last replaced (import --replace) after this item was routed: the
    # labels made on the old text were invalidated then and the item re-opened. Null: never.
    replaced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [UniqueConstraint(fields=["policy", "response"], name="review_item_once")]
        indexes = [models.Index(fields=["policy", "-priority", "id"])]

    def __str__(self) -> str:
        return f"{self.policy}: {self.response.external_id}" + (" (control)" if self.is_control else "")


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
