"""Fan-out of LLM calls: keep each endpoint's concurrency in flight, retry what is worth retrying,
and hand every attempt and every finished job to the caller's thread for writing.

Threads do HTTP only; the database is touched by the calling thread alone (one connection, one
transaction per flush), so this works the same in a Celery child, in `manage.py` and inside a test
transaction. Per endpoint there is a thread pool of 2 × max_concurrency threads whose requests pass
the endpoint's limiter (semaphore + rate, shared through Redis across processes when a broker is
configured): while some threads sleep in backoff, others keep the slots busy.

Each attempt has the endpoint's `timeout_s` as a wall-clock deadline and reads at most
LLM_MAX_REPLY_BYTES of reply (judges.client); a reply over the cap is final, not retried.

Retry policy: 429, 5xx, timeouts, connection errors and malformed replies are retried with
exponential backoff (base × 2^(n-1), halved by random jitter, at most `backoff_max_s`, at least
a 429's Retry-After up to that cap) for at most `max_attempts` attempts and `budget_s` seconds of
sleeping per call; any other 4xx is final at once. An HTTP 500 whose error text is the same as the
previous attempt's, for the same request, is final too: a server that fails one request the same
way twice (llama-cpp-python's assertion on a list `prompt`) is refusing it, not failing over, and
that attempt is recorded as a `fatal_error` saying so. Every attempt is reported, whatever its
outcome.
"""

from __future__ import annotations

import os
import queue
import random
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings

from judges import client as llm
from judges.client import AttemptResult, EndpointConfig
from judges.fit import Fit, context_overflow
from judges.limits import limiter_for
from judges.redaction import redact


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    budget_s: float = 30.0

    def delay(self, n: int, retry_after_s: float | None) -> float:
        """Sleep before attempt n + 1 (n = attempts made so far)."""
        base = min(self.backoff_max_s, self.backoff_base_s * 2 ** (n - 1))
        delay = base * random.uniform(0.5, 1.0)
        if retry_after_s:
            delay = max(delay, min(retry_after_s, self.backoff_max_s))
        return delay


def _setting(name: str, default: str) -> str:
    value = getattr(settings, name, None)
    return str(value) if value is not None else os.environ.get(name, default)


def retry_policy() -> RetryPolicy:
    """From Django settings or the environment: LLM_RETRY_MAX_ATTEMPTS, LLM_BACKOFF_BASE_S,
    LLM_BACKOFF_MAX_S, LLM_RETRY_BUDGET_S."""
    return RetryPolicy(
        max_attempts=max(1, int(_setting("LLM_RETRY_MAX_ATTEMPTS", "4"))),
        backoff_base_s=float(_setting("LLM_BACKOFF_BASE_S", "0.5")),
        backoff_max_s=float(_setting("LLM_BACKOFF_MAX_S", "8")),
        budget_s=float(_setting("LLM_RETRY_BUDGET_S", "30")),
    )


def max_reply_bytes() -> int:
    """LLM_MAX_REPLY_BYTES (setting or environment): the largest reply body read, and so stored."""
    raw = _setting("LLM_MAX_REPLY_BYTES", str(llm.DEFAULT_MAX_REPLY_BYTES))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"LLM_MAX_REPLY_BYTES must be a positive number of bytes, not {raw!r}")
    return value


def shared_limits_url() -> str | None:
    """Redis for cross-process limits: the broker, when there is a real one."""
    if getattr(settings, "CELERY_TASK_ALWAYS_EAGER", True):
        return None
    url = getattr(settings, "CELERY_BROKER_URL", "") or ""
    return url if url.startswith(("redis://", "rediss://")) else None


def _namespace() -> str:
    from django.db import connection

    return f"adjudication:llm:{connection.settings_dict.get('NAME')}"


@dataclass
class AttemptEvent:
    key: Hashable
    endpoint_id: int
    purpose: str
    number: int
    request_hash: str
    result: AttemptResult


@dataclass
class CallOutcome:
    ok: bool
    body: dict | None
    attempts: int
    status: str  # of the last attempt
    error: str = ""
    http_status: int | None = None


@dataclass
class Job:
    """One unit of work for one (response, reader spec): `run(caller)` may make several calls and
    returns whatever the writer needs; an exception becomes `failure(exc)`'s return value."""

    key: Hashable
    endpoint: EndpointConfig
    run: Callable[[Caller], Any]
    failure: Callable[[BaseException], Any]


@dataclass
class Finished:
    key: Hashable
    result: Any
    elapsed_ms: float


REPEATED_500 = "(the same HTTP 500 as attempt %d of this request: the server refuses it; not retried)"


def deterministic_500(previous: AttemptResult | None, res: AttemptResult) -> bool:
    """The second identical HTTP 500 on one request: a refusal, not an outage. Gateways' 502-504
    (an outage looks the same every time) and a first 500 are still retried."""
    return (
        previous is not None
        and res.status == llm.RETRYABLE
        and res.http_status == 500
        and previous.http_status == 500
        and previous.error == res.error
    )


def _attempt(cfg: EndpointConfig, api: str, params: dict, reply_cap: int) -> AttemptResult:
    """`llm.attempt`, which promises never to raise. Should our own code raise anyway (a reply of a
    shape nobody foresaw), the attempt is still one the caller records, a `fatal_error` naming the
    exception: an attempt that ends in an exception would vanish with its job into an "internal"
    error reading, with no attempt row and no retry."""
    started, t0 = time.time(), time.perf_counter()
    try:
        return llm.attempt(cfg, api, params, max_reply_bytes=reply_cap)
    except Exception as exc:  # noqa: BLE001 - recorded as the attempt's outcome
        error = redact(f"internal error in the attempt: {type(exc).__name__}: {exc}", cfg.secrets())
        return AttemptResult(
            status=llm.FATAL, latency_ms=(time.perf_counter() - t0) * 1000, started_at=started, error=error[:2000]
        )


class Caller:
    """What a job uses to call its endpoint: retries and reporting included."""

    def __init__(
        self,
        job: Job,
        policy: RetryPolicy,
        emit: Callable[[Any], None],
        limiter: Any,
        *,
        reply_cap: int = llm.DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self.job = job
        self.policy = policy
        self.emit = emit
        self.limiter = limiter
        self.reply_cap = reply_cap

    @property
    def endpoint(self) -> EndpointConfig:
        return self.job.endpoint

    def call(self, api: str, params: dict, *, purpose: str) -> CallOutcome:
        rh = llm.request_hash(api, params)
        slept = 0.0
        n = 0
        previous: AttemptResult | None = None
        while True:
            n += 1
            with self.limiter.slot():
                res = _attempt(self.job.endpoint, api, params, self.reply_cap)
            if deterministic_500(previous, res):
                res = replace(res, status=llm.FATAL, error=f"{res.error} {REPEATED_500 % (n - 1)}")
            previous = res
            self.emit(AttemptEvent(self.job.key, self.job.endpoint.id, purpose, n, rh, res))
            if res.status == llm.OK:
                return CallOutcome(True, res.body, n, res.status, http_status=res.http_status)
            if res.status == llm.FATAL or n >= self.policy.max_attempts:
                return CallOutcome(False, None, n, res.status, res.error, res.http_status)
            delay = self.policy.delay(n, res.retry_after_s)
            if slept + delay > self.policy.budget_s:
                return CallOutcome(False, None, n, res.status, res.error + " (retry budget spent)", res.http_status)
            time.sleep(delay)
            slept += delay


def fan_out(
    jobs: Sequence[Job],
    *,
    write: Callable[[list[AttemptEvent], list[Finished]], None],
    policy: RetryPolicy | None = None,
    flush_interval_s: float = 0.25,
    flush_size: int = 250,
) -> None:
    """Run every job, calling `write(attempts, finished)` in this thread as results come in (every
    `flush_interval_s` or `flush_size` events, and at the end). Returns when all jobs finished."""
    if not jobs:
        return
    policy = policy or retry_policy()
    reply_cap = max_reply_bytes()
    events: queue.Queue = queue.Queue()
    redis_url = shared_limits_url()
    namespace = _namespace() if redis_url else ""
    pools: dict[int, ThreadPoolExecutor] = {}
    stop = threading.Event()

    def execute(job: Job, limiter: Any) -> None:
        started = time.perf_counter()
        try:
            if stop.is_set():
                raise RuntimeError("cancelled")
            result = job.run(Caller(job, policy, events.put, limiter, reply_cap=reply_cap))
        except BaseException as exc:  # noqa: BLE001 - a job always finishes with a result
            result = job.failure(exc)
        events.put(Finished(job.key, result, (time.perf_counter() - started) * 1000))

    try:
        for job in jobs:
            cfg = job.endpoint
            pool = pools.get(cfg.id)
            if pool is None:
                pool = pools[cfg.id] = ThreadPoolExecutor(
                    max_workers=min(256, 2 * cfg.max_concurrency), thread_name_prefix=f"llm-{cfg.name}"
                )
            limiter = limiter_for(
                endpoint_id=cfg.id,
                limit=cfg.max_concurrency,
                rpm=cfg.requests_per_minute,
                timeout_s=cfg.timeout_s,
                redis_url=redis_url,
                namespace=namespace,
            )
            pool.submit(execute, job, limiter)
        pending = len(jobs)
        attempts: list[AttemptEvent] = []
        finished: list[Finished] = []
        last_flush = time.monotonic()
        while pending:
            try:
                event = events.get(timeout=flush_interval_s)
            except queue.Empty:
                event = None
            if isinstance(event, AttemptEvent):
                attempts.append(event)
            elif isinstance(event, Finished):
                finished.append(event)
                pending -= 1
            now = time.monotonic()
            if (attempts or finished) and (
                not pending or len(attempts) + len(finished) >= flush_size or now - last_flush >= flush_interval_s
            ):
                write(attempts, finished)
                attempts, finished = [], []
                last_flush = now
    finally:
        stop.set()
        for pool in pools.values():
            pool.shutdown(wait=True, cancel_futures=True)


def call_fitted(
    caller: Caller,
    fit: Fit,
    build: Callable[[str], tuple[str, dict, int]],
    *,
    purpose: str,
    completion_tokens: int,
) -> CallOutcome:
    """`caller.call` of the request `build(response_text)` returns (api, params, characters sent),
    shortening the response (judges.fit) and sending again while the server refuses the request as
    longer than its context. Each try is its own request, and so its own recorded attempts; the
    outcome's `attempts` counts them all."""
    attempts = 0
    while True:
        api, params, sent_chars = build(fit.text)
        out = caller.call(api, params, purpose=purpose)
        attempts += out.attempts
        overflow = (
            context_overflow(out.error) if not out.ok and out.http_status and 400 <= out.http_status < 500 else None
        )
        if overflow is None or not fit.shrink(overflow, sent_chars=sent_chars, completion_tokens=completion_tokens):
            return replace(out, attempts=attempts)
