"""One HTTP attempt against an OpenAI-compatible endpoint, through the `openai` SDK, classified.

The SDK's own retries are off (`max_retries=0`): every retry is ours and leaves a persisted
LLMAttempt (see judges.services.calls). The reply is read as raw JSON rather than through the SDK's
typed models, so vLLM-only fields survive and a malformed body is our error to classify.

No Django imports here: this runs in worker threads that never touch the database.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

OK = "ok"
RETRYABLE = "retryable_error"
FATAL = "fatal_error"
TIMEOUT = "timeout"

_ERROR_CHARS = 2000
_PATHS = {"chat": "/chat/completions", "completions": "/completions"}


@dataclass(frozen=True)
class EndpointConfig:
    """What a worker thread needs to know about an endpoint (a plain copy of the model row)."""

    id: int
    name: str
    base_url: str
    model: str
    api_key_env: str = ""
    max_concurrency: int = 8
    requests_per_minute: int = 0
    timeout_s: float = 60.0
    flavour: str = "vllm"
    logprob_method: str = "completions_echo"
    top_logprobs: int = 20
    extra_body: dict = field(default_factory=dict)

    @classmethod
    def from_model(cls, endpoint: Any) -> "EndpointConfig":
        return cls(
            id=endpoint.pk, name=endpoint.name, base_url=endpoint.base_url, model=endpoint.model,
            api_key_env=endpoint.api_key_env, max_concurrency=max(1, endpoint.max_concurrency),
            requests_per_minute=endpoint.requests_per_minute, timeout_s=endpoint.timeout_s,
            flavour=endpoint.flavour, logprob_method=endpoint.logprob_method,
            top_logprobs=endpoint.top_logprobs, extra_body=dict(endpoint.extra_body or {}),
        )

    def api_key(self) -> str:
        """The key from the named environment variable. vLLM without --api-key accepts any token,
        and the SDK insists on one, so an endpoint without a key variable sends a placeholder."""
        if not self.api_key_env:
            return "EMPTY"
        value = os.environ.get(self.api_key_env)
        if not value:
            raise MissingApiKey(f"endpoint {self.name!r}: environment variable {self.api_key_env} is not set")
        return value


class MissingApiKey(RuntimeError):
    pass


@dataclass
class AttemptResult:
    status: str
    latency_ms: float
    started_at: float  # time.time()
    http_status: int | None = None
    body: dict | None = None
    error: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    retry_after_s: float | None = None


def request_hash(api: str, params: dict) -> str:
    data = json.dumps([api, params], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


_clients: dict[tuple, openai.OpenAI] = {}
_clients_lock = threading.Lock()


def client_for(cfg: EndpointConfig) -> openai.OpenAI:
    """One SDK client (one connection pool) per endpoint configuration and process."""
    key = (cfg.base_url, cfg.api_key_env, cfg.api_key(), cfg.timeout_s, os.getpid())
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key(), max_retries=0,
                                   timeout=cfg.timeout_s)
            _clients[key] = client
        return client


def _short(text: str) -> str:
    return text if len(text) <= _ERROR_CHARS else text[:_ERROR_CHARS] + "…"


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def classify_status(code: int) -> str:
    """429 and 5xx are worth another try; any other 4xx will fail the same way again."""
    if code == 429 or code >= 500:
        return RETRYABLE
    if code == 408:
        return TIMEOUT
    return FATAL


def attempt(cfg: EndpointConfig, api: str, params: dict) -> AttemptResult:
    """One request: `api` is "chat" or "completions"; `params` the request body without `model`.

    Never raises for anything the server or the network does; the result says what happened.
    """
    started_wall = time.time()
    t0 = time.perf_counter()

    def done(status: str, **kw: Any) -> AttemptResult:
        return AttemptResult(status=status, latency_ms=(time.perf_counter() - t0) * 1000, started_at=started_wall, **kw)

    try:
        client = client_for(cfg)
    except MissingApiKey as exc:
        return done(FATAL, error=str(exc))
    # The request body as the server will see it: our fields, the endpoint's extra fields (vLLM's
    # chat_template_kwargs, ...) and the call's own extras (continue_final_message, ...).
    body = dict(params)
    extra = dict(cfg.extra_body)
    extra.update(body.pop("extra_body", None) or {})
    body.update(extra)
    body["model"] = cfg.model
    try:
        # The SDK's generic POST (what its typed `create` ends in, minus the client-side transform
        # of the parameters, measurable CPU at hundreds of calls per second): same base URL, auth,
        # timeout and error mapping; the reply is read as raw JSON so vLLM-only fields survive.
        raw = client.post(_PATHS[api], body=body, cast_to=httpx2.Response)
    except openai.APITimeoutError as exc:
        return done(TIMEOUT, error=_short(f"timeout after {cfg.timeout_s:g}s: {exc}"))
    except openai.APIConnectionError as exc:
        return done(RETRYABLE, error=_short(f"connection error: {exc}"))
    except openai.APIStatusError as exc:
        code = exc.status_code
        return done(classify_status(code), http_status=code, error=_short(f"HTTP {code}: {exc.message}"),
                    retry_after_s=_retry_after(getattr(exc.response, "headers", None)))
    except Exception as exc:  # noqa: BLE001 - an SDK-side surprise is recorded, never raised into the pool
        return done(FATAL, error=_short(f"{type(exc).__name__}: {exc}"))
    text = raw.text
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise ValueError("no choices in the reply")
    except ValueError as exc:
        # A 200 with a body that is not a completion: a proxy or server hiccup; worth retrying.
        return done(RETRYABLE, http_status=raw.status_code, error=_short(f"malformed reply: {exc}: {text[:300]!r}"))
    usage = data.get("usage") or {}
    return done(OK, http_status=raw.status_code, body=data,
                prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
                completion_tokens=_int_or_none(usage.get("completion_tokens")))


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None
