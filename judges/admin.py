"""Endpoints and judges are edited here; judgements and attempts are evidence, read-only."""

from django.contrib import admin

from adjudication.admin import ManagerAdmin, ReadOnlyAdmin
from judges import prompts
from judges.models import Endpoint, Judge, Judgement, LLMAttempt


@admin.register(Endpoint)
class EndpointAdmin(ManagerAdmin):
    list_display = (
        "name",
        "model",
        "base_url",
        "max_concurrency",
        "requests_per_minute",
        "timeout_s",
        "flavour",
        "logprob_method",
        "api_key_env",
    )
    search_fields = ("name", "model", "base_url")
    fieldsets = (
        (None, {"fields": ("name", "base_url", "model", "api_key_env")}),
        ("Limits", {"fields": ("max_concurrency", "requests_per_minute", "timeout_s")}),
        ("Server", {"fields": ("flavour", "logprob_method", "top_logprobs", "extra_body")}),
    )


VERSION_FIELDS = ("family", "family_version", "split_dataset", "split_seed", "few_shot_examples", "few_shot_text")


@admin.register(Judge)
class JudgeAdmin(ManagerAdmin):
    list_display = ("name", "family", "family_version", "endpoint", "template", "parser", "temperature", "max_tokens")
    list_filter = ("template", "parser")
    search_fields = ("name",)
    fields = (
        "name",
        "endpoint",
        "template",
        "custom_template",
        "upstream_text",
        "parser",
        "temperature",
        "max_tokens",
        *VERSION_FIELDS,
    )
    # A version's examples are drawn from its split's pool by `add_judge --from`; edited by hand they
    # could be held-out labels (docs/judges.md, "Judge versions").
    readonly_fields = ("upstream_text", *VERSION_FIELDS)

    @admin.display(description="upstream text")
    def upstream_text(self, judge: Judge) -> str:
        # Whether a supplied upstream prompt is the pinned upstream text: a bias measured with an
        # edited copy is not comparable with a published one.
        if judge.template not in prompts.UPSTREAM or not judge.custom_template:
            return "-"
        return prompts.verbatim_note(judge.template, judge.custom_template)


@admin.register(Judgement)
class JudgementAdmin(ReadOnlyAdmin):
    list_display = ("reading", "judge", "label", "parse_status", "parser", "served_model", "created_at")
    list_filter = ("parse_status", "label", "judge")
    raw_id_fields = ("reading",)
    list_select_related = ("judge", "reading__reader_spec")


@admin.register(LLMAttempt)
class LLMAttemptAdmin(ReadOnlyAdmin):
    list_display = (
        "started_at",
        "endpoint",
        "purpose",
        "response",
        "attempt",
        "status",
        "http_status",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
    )
    list_filter = ("status", "endpoint", "purpose")
    raw_id_fields = ("response", "reader_spec")
    list_select_related = ("endpoint", "response")
