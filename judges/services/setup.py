"""Writes of the judges' configuration: endpoints and judges, created or updated by name.
Options left None keep their current (or default) value; every row is validated before it is saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from adjudication.errors import ApplicationError
from judges import prompts
from judges.models import Endpoint, Judge
from readers import registry as reader_registry


class SetupError(ApplicationError, ValueError):
    """A refused endpoint or judge: the message names the option or field at fault."""


def _save_validated(instance: models.Model) -> None:
    try:
        instance.full_clean()
    except ValidationError as exc:
        raise SetupError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
    instance.save()


def endpoint_upsert(
    *,
    name: str,
    base_url: str,
    model: str,
    api_key_env: str | None = None,
    concurrency: int | None = None,
    rpm: int | None = None,
    timeout: float | None = None,
    flavour: str | None = None,
    logprob_method: str | None = None,
    top_logprobs: int | None = None,
    extra_body: dict[str, Any] | None = None,
) -> tuple[Endpoint, bool]:
    """(the endpoint, whether it was created)."""
    endpoint = Endpoint.objects.filter(name=name).first()
    created = endpoint is None
    if endpoint is None:
        endpoint = Endpoint(name=name)
    endpoint.base_url = base_url.rstrip("/")
    endpoint.model = model
    if api_key_env is not None:
        # The key itself must never be stored: only the name of the variable that holds it.
        if api_key_env.startswith(("sk-", "Bearer ")) or len(api_key_env) > 100:
            raise SetupError("--api-key-env takes the NAME of an environment variable, not the key")
        endpoint.api_key_env = api_key_env
    if concurrency is not None:
        if concurrency < 1:
            raise SetupError("--concurrency must be at least 1")
        endpoint.max_concurrency = concurrency
    if rpm is not None:
        if rpm < 0:
            raise SetupError("--rpm must be 0 (unlimited) or more")
        endpoint.requests_per_minute = rpm
    if timeout is not None:
        if timeout <= 0:
            raise SetupError("--timeout must be positive")
        endpoint.timeout_s = timeout
    if flavour is not None:
        endpoint.flavour = flavour
    if logprob_method is not None:
        endpoint.logprob_method = logprob_method
    if top_logprobs is not None:
        endpoint.top_logprobs = top_logprobs
    if extra_body is not None:
        endpoint.extra_body = extra_body
    _save_validated(endpoint)
    return endpoint, created


def judge_upsert(
    *,
    name: str,
    endpoint_name: str,
    template: str,
    template_file: Path | None = None,
    parser: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    logprobs: bool | None = None,
) -> tuple[Judge, bool]:
    """(the judge, whether it was created). `template` is a built-in template, an upstream one
    (its text in `template_file`, which the user supplies) or the path of a custom template."""
    if name == "regeneration" or name in reader_registry.names():
        raise SetupError(f"{name!r} is already the name of a reader; choose another judge name")
    endpoint = Endpoint.objects.filter(name=endpoint_name).first()
    if endpoint is None:
        raise SetupError(f"no endpoint named {endpoint_name!r}; add it with `manage.py add_endpoint`")
    judge = Judge.objects.filter(name=name).first()
    created = judge is None
    if judge is None:
        judge = Judge(name=name)
    judge.endpoint = endpoint
    upstream = prompts.UPSTREAM.get(template)
    if template_file is not None and upstream is None:
        raise SetupError(
            f"--template-file is for the upstream templates the user supplies ({', '.join(prompts.UPSTREAM)})"
        )
    if upstream is not None:
        if template_file is None:
            raise SetupError(f"--template {template} needs --template-file. {upstream.how_to_get}")
        try:
            text = prompts.load_upstream(template, template_file)
        except ValueError as exc:  # the user's file does not read as the upstream template: the message says where
            raise SetupError(str(exc)) from None
        judge.template, judge.custom_template = template, text
    elif template in prompts.BUILTIN:
        judge.template, judge.custom_template = template, ""
    else:
        path = Path(template)
        if not path.is_file():
            raise SetupError(
                f"--template must be one of {', '.join(sorted({*prompts.BUILTIN, *prompts.UPSTREAM}))} "
                f"or a file; {template!r} is neither"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SetupError(str(exc)) from None
        try:
            prompts.check_custom(text)
        except ValueError as exc:
            raise SetupError(f"{path}: {exc}") from None
        judge.template, judge.custom_template = Judge.Template.CUSTOM, text
    if parser is not None:
        judge.parser = parser
    if temperature is not None:
        judge.temperature = temperature
    if max_tokens is not None:
        if max_tokens < 1:
            raise SetupError("--max-tokens must be at least 1")
        judge.max_tokens = max_tokens
    if logprobs is not None:
        judge.logprobs = logprobs
    _save_validated(judge)
    return judge, created
