from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser

from adjudication.management.base import ApplicationCommand
from judges.models import Endpoint
from judges.services.setup import endpoint_upsert


class Command(ApplicationCommand):
    help = (
        "Add an OpenAI-compatible endpoint (vLLM, OpenAI, ...), or update the one with this name. "
        "Options not given keep their current (or default) value."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--base-url", required=True, help="e.g. http://localhost:8001/v1")
        parser.add_argument("--model", required=True, help="the model name the server expects")
        parser.add_argument(
            "--api-key-env",
            default=None,
            help="name of the environment variable holding the API key (never the key itself)",
        )
        parser.add_argument("--concurrency", type=int, default=None, help="requests in flight at most (default 8)")
        parser.add_argument("--rpm", type=int, default=None, help="requests per minute, 0 = unlimited (default 0)")
        parser.add_argument(
            "--timeout",
            type=float,
            default=None,
            help="seconds per attempt, all of it: a wall-clock deadline (default 60)",
        )
        parser.add_argument(
            "--flavour",
            choices=Endpoint.Flavour.values,
            default=None,
            help="server kind: vllm (default), openai, other",
        )
        parser.add_argument(
            "--logprob-method",
            choices=Endpoint.LogprobMethod.values,
            default=None,
            help="how Answer Regeneration scores options (default completions_echo)",
        )
        parser.add_argument("--top-logprobs", type=int, default=None, help="alternatives per position (chat method)")
        parser.add_argument(
            "--extra-body",
            default=None,
            help='JSON object sent with every request, e.g. \'{"chat_template_kwargs": {"enable_thinking": false}}\'',
        )

    def handle(
        self,
        *args,
        name: str,
        base_url: str,
        model: str,
        api_key_env: str | None,
        concurrency: int | None,
        rpm: int | None,
        timeout: float | None,
        flavour: str | None,
        logprob_method: str | None,
        top_logprobs: int | None,
        extra_body: str | None,
        **options,
    ) -> None:
        body = None
        if extra_body is not None:
            try:
                body = json.loads(extra_body)
            except ValueError as exc:
                raise CommandError(f"--extra-body is not JSON: {exc}") from None
            if not isinstance(body, dict):
                raise CommandError("--extra-body must be a JSON object")
        endpoint, created = endpoint_upsert(
            name=name,
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            concurrency=concurrency,
            rpm=rpm,
            timeout=timeout,
            flavour=flavour,
            logprob_method=logprob_method,
            top_logprobs=top_logprobs,
            extra_body=body,
        )
        self.stdout.write(
            f"{'added' if created else 'updated'} endpoint {endpoint.name}: {endpoint.model} at "
            f"{endpoint.base_url}, concurrency {endpoint.max_concurrency}, "
            f"rpm {endpoint.requests_per_minute or 'unlimited'}, timeout {endpoint.timeout_s:g}s, "
            f"key from {endpoint.api_key_env or '(none)'}"
        )
