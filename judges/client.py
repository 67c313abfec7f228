"""One HTTP attempt against an OpenAI-compatible endpoint, through the `openai` SDK, classified.

The SDK's own retries are off (`max_retries=0`): every retry is ours and leaves a persisted
LLMAttempt (see judges.services.calls). The reply is read as raw JSON rather than through the SDK's
typed models, so vLLM-only fields survive and a malformed body is our error to classify.

An attempt is bounded: `timeout_s` of wall-clock time for all of it, however slowly the bytes
trickle in, and at most `max_reply_bytes` of reply. Whatever text it returns (the body, an error)
has the endpoint's API key removed (judges.redaction).

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

import httpcore2
import httpx2
import openai

from adjudication.nesting import nesting_past
from adjudication.validators import is_plain_integer
from judges.redaction import redact, redact_bytes

OK = "ok"
RETRYABLE = "retryable_error"
FATAL = "fatal_error"
TIMEOUT = "timeout"

_ERROR_CHARS = 2000
_PATHS = {"chat": "/chat/completions", "completions": "/completions"}
# PostgreSQL's integer, the token-count columns: a larger count from a server is no count at all.
_MAX_TOKENS_STORED = 2**31 - 1
DEFAULT_MAX_REPLY_BYTES = 64 * 2**20
# The network-level byte budget also counts the status line, headers and chunk framing.
_HEADER_ALLOWANCE = 64 * 1024


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
    def from_model(cls, endpoint: Any) -> EndpointConfig:
        return cls(
            id=endpoint.pk,
            name=endpoint.name,
            base_url=endpoint.base_url,
            model=endpoint.model,
            api_key_env=endpoint.api_key_env,
            max_concurrency=max(1, endpoint.max_concurrency),
            requests_per_minute=endpoint.requests_per_minute,
            timeout_s=endpoint.timeout_s,
            flavour=endpoint.flavour,
            logprob_method=endpoint.logprob_method,
            top_logprobs=endpoint.top_logprobs,
            extra_body=dict(endpoint.extra_body or {}),
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

    def secrets(self) -> tuple[str, ...]:
        """What must never be stored or logged: the key's value, if there is one."""
        value = os.environ.get(self.api_key_env) if self.api_key_env else None
        return (value,) if value else ()


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


# -- the per-attempt budget: a wall-clock deadline and a byte cap, enforced on every socket read ----------------
#
# httpx2's timeouts are per operation: a server that sends a byte a second never trips the read
# timeout, headers included (encode/httpx#1450). So every read and write of the SDK's connections
# goes through _BudgetStream, which shortens its timeout to what is left of the current attempt's
# deadline and counts the bytes. The budget is the calling thread's (the SDK's sync client does its
# socket I/O in the calling thread); other threads' requests on the same pool have their own.

_local = threading.local()


class _Budget:
    __slots__ = ("deadline", "exceeded", "max_bytes", "received")

    def __init__(self, seconds: float, max_bytes: int) -> None:
        self.deadline = time.monotonic() + seconds
        self.max_bytes = max_bytes
        self.received = 0
        # why the attempt gave up, for its error: "deadline" or "size" (the transport), "parse" (the
        # deadline passed after the last read: _within_deadline)
        self.exceeded = ""


def _bounded(timeout: float | None, error: type[Exception]) -> tuple[float | None, _Budget | None, bool]:
    """(the timeout for this operation, the current budget, whether the deadline is what bounds it)."""
    budget: _Budget | None = getattr(_local, "budget", None)
    if budget is None:
        return timeout, None, False
    left = budget.deadline - time.monotonic()
    if left <= 0:
        budget.exceeded = "deadline"
        raise error("the attempt's deadline passed")
    if timeout is None or left < timeout:
        return left, budget, True
    return timeout, budget, False


class _BudgetStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        timeout, budget, by_deadline = _bounded(timeout, httpcore2.ReadTimeout)
        try:
            data = self._inner.read(max_bytes, timeout)
        except httpcore2.ReadTimeout:
            if by_deadline and budget is not None:
                budget.exceeded = "deadline"
            raise
        if budget is not None:
            budget.received += len(data)
            if budget.received > budget.max_bytes:
                budget.exceeded = "size"
                raise httpcore2.ReadError("the reply exceeds the size cap")
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        timeout, budget, by_deadline = _bounded(timeout, httpcore2.WriteTimeout)
        try:
            self._inner.write(buffer, timeout)
        except httpcore2.WriteTimeout:
            if by_deadline and budget is not None:
                budget.exceeded = "deadline"
            raise

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        timeout, _, _ = _bounded(timeout, httpcore2.ConnectTimeout)
        return _BudgetStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BudgetBackend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore2.NetworkStream:
        timeout, _, _ = _bounded(timeout, httpcore2.ConnectTimeout)
        return _BudgetStream(
            self._inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore2.NetworkStream:
        timeout, _, _ = _bounded(timeout, httpcore2.ConnectTimeout)
        return _BudgetStream(self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _with_budget(transport: Any) -> Any:
    # HTTPTransport takes no network backend, its connection pool does: swap the pool's backend
    # before the first connection is made. Fail loudly if httpx2 moved it: no silent loss of the deadline.
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if pool is None or backend is None:
        raise RuntimeError(
            f"cannot enforce the per-attempt deadline on {type(transport).__name__}: "
            "httpx2's transport has no connection pool where judges/client.py expects one"
        )
    if not isinstance(backend, _BudgetBackend):
        pool._network_backend = _BudgetBackend(backend)
    return transport


class _BudgetedHttpClient(openai.DefaultHttpxClient):
    """The SDK's default HTTP client (same timeouts, limits, redirects, proxies from the
    environment), whose connections read and write within the current attempt's budget."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> Any:
        return _with_budget(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> Any:
        return _with_budget(super()._init_proxy_transport(*args, **kwargs))


_clients: dict[tuple, openai.OpenAI] = {}
_clients_lock = threading.Lock()


def client_for(cfg: EndpointConfig) -> openai.OpenAI:
    """One SDK client (one connection pool) per endpoint configuration and process."""
    key = (cfg.base_url, cfg.api_key_env, cfg.api_key(), cfg.timeout_s, os.getpid())
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            # identity: a compressed body can expand a thousandfold past the byte cap, and an error
            # body is decoded by the SDK, where only the transport's byte budget bounds it.
            client = openai.OpenAI(
                base_url=cfg.base_url,
                api_key=cfg.api_key(),
                max_retries=0,
                timeout=cfg.timeout_s,
                default_headers={"Accept-Encoding": "identity"},
                http_client=_BudgetedHttpClient(timeout=cfg.timeout_s),
            )
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


class _TooLarge(Exception):
    pass


def _read_capped(raw: httpx2.Response, max_bytes: int) -> bytes:
    """The body, decoded (gzip and the like), refused past `max_bytes`: a compressed body is
    counted as it expands, so a small bomb is no way around the cap."""
    declared = raw.headers.get("content-length", "")
    # httpx reads headers as Latin-1: a "²" (0xB2) passes isdigit() and fails int().
    if is_plain_integer(declared) and int(declared) > max_bytes:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    for chunk in raw.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def attempt(
    cfg: EndpointConfig, api: str, params: dict, *, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
) -> AttemptResult:
    """One request: `api` is "chat" or "completions"; `params` the request body without `model`.

    The whole attempt (connect, send, wait, read) has `cfg.timeout_s` of wall-clock time, and the
    reply at most `max_reply_bytes`. Never raises for anything the server or the network does; the
    result says what happened. No text in it holds the endpoint's API key.
    """
    started_wall = time.time()
    t0 = time.perf_counter()
    secrets = cfg.secrets()

    def done(status: str, error: str = "", **kw: Any) -> AttemptResult:
        return AttemptResult(
            status=status,
            latency_ms=(time.perf_counter() - t0) * 1000,
            started_at=started_wall,
            error=_short(redact(error, secrets)) if error else "",
            **kw,
        )

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
    budget = _Budget(cfg.timeout_s, max_reply_bytes + _HEADER_ALLOWANCE)
    too_large = f"reply larger than {max_reply_bytes} bytes (LLM_MAX_REPLY_BYTES); not read further"
    _local.budget = budget
    try:
        try:
            # The SDK's generic POST (what its typed `create` ends in, minus the client-side transform
            # of the parameters, measurable CPU at hundreds of calls per second): same base URL, auth,
            # timeout and error mapping. Streamed: the body is read here, within the cap, as raw JSON
            # so that vLLM-only fields survive. (An error status's body is read by the SDK, within the
            # transport's byte budget.)
            raw = client.post(_PATHS[api], body=body, cast_to=httpx2.Response, stream=True)
        except (openai.APITimeoutError, httpx2.TimeoutException) as exc:
            return done(TIMEOUT, error=_timeout_error(cfg, budget, exc))
        except (openai.APIConnectionError, httpx2.TransportError) as exc:
            if budget.exceeded == "size":  # an error status whose body never ends
                return done(FATAL, error=too_large)
            if budget.exceeded == "deadline":
                return done(TIMEOUT, error=_timeout_error(cfg, budget, exc))
            return done(RETRYABLE, error=f"connection error: {exc}")
        except openai.APIStatusError as exc:
            code = exc.status_code
            # The SDK's message quotes a JSON error's `message` only; a plain-text body (a proxy's
            # page) is often the only clue, so its beginning is kept too.
            text = f": {redact(exc.body, secrets)[:300]}" if isinstance(exc.body, str) and exc.body else ""
            return done(
                classify_status(code),
                http_status=code,
                error=f"HTTP {code}: {exc.message}{text}",
                retry_after_s=_retry_after(getattr(exc.response, "headers", None)),
            )
        except Exception as exc:  # noqa: BLE001 - an SDK-side surprise is recorded, never raised into the pool
            return done(FATAL, error=f"{type(exc).__name__}: {exc}")
        try:
            data = _read_capped(raw, max_reply_bytes)
        except _TooLarge:
            # Final, not retried: the same request would fetch the same flood again.
            return done(FATAL, http_status=raw.status_code, error=too_large)
        except httpx2.TimeoutException as exc:
            return done(TIMEOUT, http_status=raw.status_code, error=_timeout_error(cfg, budget, exc))
        except httpx2.HTTPError as exc:
            if budget.exceeded == "size":
                return done(FATAL, http_status=raw.status_code, error=too_large)
            return done(
                RETRYABLE, http_status=raw.status_code, error=f"connection error while reading the reply: {exc}"
            )
        finally:
            raw.close()
    finally:
        _local.budget = None
    if secrets:
        data = redact_bytes(data, secrets)
    try:
        text = data.decode(raw.encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = data.decode("utf-8", errors="replace")
    try:
        try:
            parsed = parse_reply(text)
        finally:  # parsed or refused, past the deadline is a timeout
            _within_deadline(budget)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("choices"), list) or not parsed["choices"]:
            raise ValueError("no choices in the reply")
    except _PastDeadline:
        return done(TIMEOUT, http_status=raw.status_code, error=_timeout_error(cfg, budget, None))
    except UnreadableReply as exc:
        # Its own class beside "malformed": valid or not, no parser should be asked to read it.
        # Retried like a malformed reply (a proxy's or server's hiccup as far as we can tell).
        return done(RETRYABLE, http_status=raw.status_code, error=f"unreadable reply: {exc}: {text[:300]!r}")
    except ValueError as exc:
        # A 200 with a body that is not a completion: a proxy or server hiccup; worth retrying.
        return done(RETRYABLE, http_status=raw.status_code, error=f"malformed reply: {exc}: {text[:300]!r}")
    usage = parsed.get("usage")
    usage = usage if isinstance(usage, dict) else {}  # a server's odd `usage` is no count, not a crash
    return done(
        OK,
        http_status=raw.status_code,
        body=parsed,
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
    )


# -- reading a reply's JSON within a depth bound ---------------------------------------------------------------
#
# json.loads recurses once per nesting level: a reply nested 100,000 deep raises RecursionError
# (not ValueError), and one just under the interpreter's limit parses but breaks whatever walks it
# next (json_safe, jsonb encoding). A completion is a handful of levels deep; a document nested
# past MAX_REPLY_DEPTH is refused whole. (The C decoder stops such a document within its first
# thousand levels; the depth of what it did parse is then checked by adjudication.nesting, which
# stops at the first container past the bound.)

MAX_REPLY_DEPTH = 64


class UnreadableReply(ValueError):
    """A reply no parser is asked to read: JSON nested deeper than MAX_REPLY_DEPTH."""


def parse_reply(text: str, *, max_depth: int = MAX_REPLY_DEPTH) -> Any:
    """`json.loads(text)`, refusing (UnreadableReply) a document nested deeper than `max_depth`;
    other invalid JSON raises ValueError as json.loads does. The one way this app parses a
    server's reply."""
    unreadable = UnreadableReply(f"nested deeper than {max_depth} levels; not parsed")
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise unreadable from None
    if nesting_past(parsed, max_depth) is not None:
        raise unreadable
    return parsed


class _PastDeadline(Exception):
    pass


def _within_deadline(budget: _Budget) -> None:
    """The deadline also bounds what follows the last read: decoding and parsing a reply of up to
    LLM_MAX_REPLY_BYTES takes a while, and under load longer (the thread waits for the GIL while
    another parses its own large reply: json.loads holds it throughout). The socket timeouts cannot
    see that time; this can. A reply parsed past the deadline is a timeout, as if cut off."""
    if time.monotonic() > budget.deadline:
        budget.exceeded = "parse"
        raise _PastDeadline


def _timeout_error(cfg: EndpointConfig, budget: _Budget, exc: BaseException | None) -> str:
    if budget.exceeded in ("deadline", "parse"):
        how = "; read whole, then parsed past the deadline" if budget.exceeded == "parse" else ""
        return (
            f"deadline of {cfg.timeout_s:g}s exceeded (the endpoint's timeout_s, for the whole attempt; "
            f"{budget.received} bytes received{how})"
        )
    return f"timeout after {cfg.timeout_s:g}s: {exc}"


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and 0 <= value <= _MAX_TOKENS_STORED else None
