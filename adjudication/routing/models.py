"""What routing stores: a dataset's routing policies and the responses each routed to review."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import CheckConstraint, Q, UniqueConstraint

from adjudication.ingest.models import Dataset, Response
from adjudication.pipeline.models import ReaderSpec
from adjudication.validators import INT_MAX, INT_MIN, validate_name


class RoutingPolicy(models.Model):
    """Which responses of a dataset go to human review: the ones a panel of readers disputes,
    plus an optional random share of undisputed ones as controls (for unbiased accuracy estimates).
    With priority "information": instead, responses drawn with probabilities that grow with how
    much their labels narrow the uncertainty of `target` under the panel consensus, disputed or not,
    about `budget` of them, every response with a known probability (sampling "randomized"); or
    (sampling "greedy", unfit for estimates) the `budget` highest label values and a random share of
    all responses as controls (docs/consensus.md, "Budgeted adjudication")."""

    class Compare(models.TextChoices):
        EITHER = "either", "answer or verdict"
        ANSWER = "answer", "normalised answer"
        VERDICT = "verdict", "verdict"

    class Priority(models.TextChoices):
        DISAGREEMENT = "disagreement", "strongest disagreement first"
        RANDOM = "random", "random order"
        ORDER = "order", "import order"
        INFORMATION = "information", "most informative for a target first"

    class Sampling(models.TextChoices):
        RANDOMIZED = "randomized", "drawn with known probabilities (fit for estimates)"
        GREEDY = "greedy", "highest label values first (unfit for estimates)"

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
    # Responses no reader of the panel can read (each says no_answer, error, timeout or
    # not_applicable: loops, truncations) are a stratum of their own: a label on one settles no
    # reader's dispute, so only this share of them is routed, drawn at random.
    unreadable_fraction = models.FloatField(
        default=0.1,
        help_text="share of the responses no panel reader can read that is routed (their own stratum)",
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
    # Priority "information" only: how the items are chosen. "randomized" is a probability design
    # (every response has a known inclusion probability, so labels support population estimates);
    # "greedy" is the top label values, which no estimate can weigh.
    sampling = models.CharField(
        max_length=12,
        choices=Sampling.choices,
        default=Sampling.RANDOMIZED,
        help_text="with priority information: randomized (fit for estimates) or greedy (unfit for estimates)",
    )
    # What the last routing run saw, for the estimates' cell sizes and for the record: disagreement
    # policies {"population", "disputed", "undisputed", "unreadable", "pending"}; a randomized
    # information policy {"population", "floor", "expected", "pi_min", "drawn", "unreadable"}
    # ("unreadable": the responses no panel reader could read, the unreadable stratum's size); a
    # greedy one {"unreadable"}. Empty: never routed since recorded.
    design = models.JSONField(default=dict, blank=True)
    # Set when a final label asked for the priorities to be refitted and no refit has claimed the
    # request yet (routing.refresh.information_refresh_request): a burst of labels causes one refit.
    refresh_requested_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            UniqueConstraint(fields=["dataset", "name"], name="routing_policy_name"),
            CheckConstraint(
                condition=Q(control_fraction__gte=0) & Q(control_fraction__lte=1), name="control_fraction_0_1"
            ),
            CheckConstraint(
                condition=Q(unreadable_fraction__gte=0) & Q(unreadable_fraction__lte=1),
                name="unreadable_fraction_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.name}"


class ReviewItem(models.Model):
    """A response routed to review by a policy: exactly once per (policy, response)."""

    policy = models.ForeignKey(RoutingPolicy, on_delete=models.CASCADE, related_name="items")
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="review_items")

    class Stratum(models.TextChoices):
        DISPUTED = "disputed", "disputed by the panel (always routed)"
        CONTROL = "control", "control (drawn at random)"
        INFORMATION = "information", "drawn with a known probability for a target"
        GREEDY = "greedy", "picked by label value (no known probability)"
        UNREADABLE = "unreadable", "no panel reader could read it (drawn at random)"

    is_control = models.BooleanField(default=False, help_text="undisputed, sampled at random as a control")
    # The sampling design, recorded when the item is routed: which part of the policy's design it
    # came from and the probability it had of being routed (null: not drawn by a probability design,
    # i.e. greedy information routing). Blank: routed before the design was recorded.
    stratum = models.CharField(max_length=16, choices=Stratum.choices, blank=True, default="")
    inclusion_probability = models.FloatField(
        null=True, blank=True, help_text="the probability this response had of being routed; null: not by a design"
    )
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
