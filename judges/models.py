"""LLM endpoints, judges, judgements and the record of every call.

Verdicts themselves are `adjudication.Reading` rows (a judge is a ReaderSpec of kind "judge",
Answer Regeneration one of kind "regeneration"), so exports, summaries and routing treat them like
any reader. This app keeps what only LLM readers have: where to call, what was asked, what came
back, and every attempt it took.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import CheckConstraint, Q

from adjudication.fields import VerbatimTextField
from adjudication.validators import validate_name


def validate_base_url(value: str) -> None:
    """http(s) with a host; unlike URLField, a bare service name (http://vllm:8000/v1) is fine."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("enter an http:// or https:// URL with a host, e.g. http://localhost:8001/v1")


class Endpoint(models.Model):
    """An OpenAI-compatible server (vLLM's `vllm serve`, OpenAI, any proxy speaking the API)."""

    class Flavour(models.TextChoices):
        VLLM = "vllm", "vLLM (accepts continue_final_message, echo, prompt logprobs)"
        OPENAI = "openai", "OpenAI (standard fields only)"
        OTHER = "other", "other OpenAI-compatible server (standard fields only)"

    class LogprobMethod(models.TextChoices):
        COMPLETIONS_ECHO = "completions_echo", "completions: echo + logprobs (score each option)"
        CHAT_TOP_LOGPROBS = "chat_top_logprobs", "chat: logprobs + top_logprobs over option letters"
        NONE = "none", "no log-probabilities: parse a short generation"

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    base_url = models.CharField(
        max_length=500,
        validators=[validate_base_url],
        help_text="e.g. http://localhost:8001/v1, http://vllm:8000/v1 (compose) or https://api.openai.com/v1",
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="name of the environment variable holding the API key (the key itself is never stored); "
        "empty = no key (vLLM without --api-key)",
    )
    model = models.CharField(max_length=200, help_text="model name the server expects")
    max_concurrency = models.PositiveIntegerField(default=8, help_text="requests in flight at most")
    requests_per_minute = models.PositiveIntegerField(default=0, help_text="0 = unlimited")
    timeout_s = models.FloatField(
        default=60.0,
        help_text="seconds per attempt, all of it: connect, send, wait and read, however slowly the reply trickles in",
    )
    flavour = models.CharField(max_length=10, choices=Flavour.choices, default=Flavour.VLLM)
    logprob_method = models.CharField(
        max_length=20,
        choices=LogprobMethod.choices,
        default=LogprobMethod.COMPLETIONS_ECHO,
        help_text="how Answer Regeneration scores multiple-choice options",
    )
    top_logprobs = models.PositiveIntegerField(default=20, help_text="alternatives per position (chat method)")
    extra_body = models.JSONField(
        default=dict,
        blank=True,
        help_text="extra request fields sent with every call, "
        'e.g. {"chat_template_kwargs": {"enable_thinking": false}}',
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            CheckConstraint(condition=Q(max_concurrency__gte=1), name="endpoint_concurrency_positive"),
            CheckConstraint(condition=Q(timeout_s__gt=0), name="endpoint_timeout_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.model} @ {self.base_url})"


class Judge(models.Model):
    """An LLM judge: an endpoint, a prompt template and the parser that reads its reply."""

    class Template(models.TextChoices):
        SIMPLEQA = (
            "simpleqa",
            "ours: SimpleQA-style three-way grader (a paraphrase; CORRECT / INCORRECT / NOT_ATTEMPTED)",
        )
        XVERIFY = "xverify", "ours: xVerify-style grader (a paraphrase; Correct / Incorrect)"
        SIMPLEQA_UPSTREAM = (
            "simpleqa-upstream",
            "upstream: simple-evals' SimpleQA grader, verbatim, from a file the user supplies (seed 002's GPTGrader)",
        )
        XVERIFY_UPSTREAM = (
            "xverify-upstream",
            "upstream: xVerify's judge prompt, verbatim, from a file the user supplies",
        )
        CUSTOM = "custom", "custom template"

    # Templates whose text is stored on the judge (custom_template) rather than shipped with the code.
    STORED_TEXT = (Template.CUSTOM, Template.SIMPLEQA_UPSTREAM, Template.XVERIFY_UPSTREAM)

    class Parser(models.TextChoices):
        AUTO = "auto", "ours, chosen by template"
        SIMPLEQA = "simpleqa", "ours: SimpleQA letters or labels, unambiguous only"
        XVERIFY = "xverify", "ours: xVerify label, unambiguous only"
        LABELS = "labels", "ours: any label vocabulary (custom templates)"
        SIMPLEQA_FIRST_CAPITAL = "simpleqa_first_capital", "upstream simple-evals: first capital A/B/C"
        INSPECT_LAST_GRADE = "inspect_last_grade", "upstream inspect-ai: last GRADE: C/I"
        XVERIFY_EXACT_LABEL = "xverify_exact_label", "upstream xVerify package: exact label"

    name = models.CharField(
        max_length=100, unique=True, validators=[validate_name], help_text="the reader name its verdicts carry"
    )
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="judges")
    template = models.CharField(max_length=30, choices=Template.choices, default=Template.SIMPLEQA)
    custom_template = models.TextField(
        blank=True,
        default="",
        help_text="for template=custom: placeholders {question} {choices} {target} {response}; for "
        "template=simpleqa-upstream or xverify-upstream: the upstream prompt as supplied by the user",
    )
    parser = models.CharField(max_length=30, choices=Parser.choices, default=Parser.AUTO)
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=256)
    logprobs = models.BooleanField(
        default=False,
        help_text="ask the server for the reply's log-probabilities (top 20 a position) and store the "
        "verdict's confidence, for calibration; off by default: some servers refuse the parameter",
    )
    # Versions (docs/judges.md, "Judge versions"): a family is its first judge and the judges made
    # from it; version k+1 is the template plus few-shot examples of version k's disagreements with
    # the human labels of the family's split pool, so a judge's examples are part of its identity.
    family = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="versions",
        help_text="the family's first judge; empty for a first judge itself",
    )
    family_version = models.PositiveIntegerField(default=1)
    few_shot_examples = models.JSONField(
        default=list,
        blank=True,
        help_text="[{response_id, external_id, human, reply}]: the labelled responses shown as examples",
    )
    few_shot_text = models.TextField(
        blank=True, default="", help_text="the examples as sent, before the filled template (a snapshot)"
    )
    # By name, not a key: a version made from one dataset's labels may judge (and be bundled with)
    # another dataset.
    split_dataset = models.CharField(
        max_length=200, blank=True, default="", help_text="the dataset whose split pool the examples came from"
    )
    split_seed = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            CheckConstraint(
                condition=~Q(template__in=["custom", "simpleqa-upstream", "xverify-upstream"]) | ~Q(custom_template=""),
                name="judge_custom_has_text",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.template} on {self.endpoint.name})"

    def clean(self) -> None:
        # The admin edits the stored text too: a user-supplied upstream prompt must stay one that
        # upstream's str.format would accept, or the judge would fail at its first call.
        from judges import prompts

        if self.template in prompts.UPSTREAM:
            try:
                prompts.check_upstream(self.template, self.custom_template, origin="custom_template")
            except ValueError as exc:
                raise ValidationError({"custom_template": str(exc)}) from None


class Judgement(models.Model):
    """What a judge was asked and said about one response; its verdict is the linked Reading."""

    class ParseStatus(models.TextChoices):
        PARSED = "parsed"
        UNPARSED = "unparsed", "reply understood by no parser of ours"
        CALL_FAILED = "call_failed", "no reply: every attempt failed"

    reading = models.OneToOneField("adjudication.Reading", on_delete=models.CASCADE, related_name="judgement")
    judge = models.ForeignKey(Judge, on_delete=models.SET_NULL, null=True, blank=True, related_name="judgements")
    prompt_hash = models.CharField(max_length=64, help_text="sha256 of the messages sent")
    # The JSON text whose sha256 is prompt_hash (the last request's messages: the shortened prompt
    # when the response was cut to fit), kept so that a trace shows the prompt as sent, not one
    # rebuilt from a template that may have changed since. Null for judgements made before it was
    # kept, and for a call our own code failed before sending.
    messages_sent = VerbatimTextField(
        null=True, blank=True, help_text="the messages sent, as the JSON text whose sha256 is prompt_hash"
    )
    template_hash = models.CharField(max_length=64)
    raw_reply = VerbatimTextField(null=True, blank=True)
    label = models.CharField(
        max_length=20,
        blank=True,
        default="",
        help_text="parsed label: correct / incorrect / not_attempted, empty if none",
    )
    parse_status = models.CharField(max_length=12, choices=ParseStatus.choices)
    parser = models.CharField(max_length=30)
    reparses = models.JSONField(
        default=dict, blank=True, help_text="the same reply read by each upstream parser: name -> label or null"
    )
    # Server-provided: stored verbatim-safely (a NUL or a lone surrogate must not fail the batch's
    # write); cut to 200 and 40 characters by the judging service, however long their escaped form.
    served_model = VerbatimTextField(blank=True, default="")
    finish_reason = VerbatimTextField(blank=True, default="")
    confidence = models.FloatField(
        null=True,
        blank=True,
        help_text="probability of the parsed label among the labels' alternatives at the verdict token "
        "(judges.confidence); null without log-probabilities or without a verdict token",
    )
    verdict_alternatives = models.JSONField(
        default=dict, blank=True, help_text="label -> probability mass at the verdict token, as the server sent it"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["parse_status"])]

    def __str__(self) -> str:
        return f"judgement {self.reading_id}: {self.label or self.parse_status}"


class LLMAttempt(models.Model):
    """One HTTP request to an endpoint, whatever came of it. Nothing here is ever updated."""

    class Status(models.TextChoices):
        OK = "ok"
        RETRYABLE_ERROR = "retryable_error", "retryable error (429, 5xx, connection, malformed reply)"
        FATAL_ERROR = "fatal_error", "fatal error (4xx other than 429)"
        TIMEOUT = "timeout"

    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="attempts")
    reader_spec = models.ForeignKey("adjudication.ReaderSpec", on_delete=models.PROTECT, related_name="llm_attempts")
    response = models.ForeignKey("adjudication.Response", on_delete=models.CASCADE, related_name="llm_attempts")
    purpose = models.CharField(max_length=30, help_text="judge, regen_logprobs or regen_generate")
    attempt = models.PositiveIntegerField(help_text="1 for the first try of this call")
    status = models.CharField(max_length=16, choices=Status.choices)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.FloatField()
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    error = VerbatimTextField(blank=True, default="", help_text="server-provided text; API keys redacted")
    request_hash = models.CharField(max_length=64)
    started_at = models.DateTimeField()

    class Meta:
        ordering = ["response_id", "reader_spec_id", "started_at", "attempt"]
        indexes = [
            models.Index(fields=["response", "reader_spec"]),
            models.Index(fields=["endpoint", "status"]),
        ]
        constraints = [CheckConstraint(condition=Q(attempt__gte=1), name="llm_attempt_number_positive")]

    def __str__(self) -> str:
        return f"{self.endpoint.name} #{self.attempt} {self.status}"
