"""Per-endpoint limits: requests in flight (max_concurrency) and requests per minute.

Within a process a semaphore bounds the requests in flight and a token bucket (capacity 1, so
requests are spaced 60/rpm seconds apart) bounds the rate. When several processes call the same
endpoint (two Celery children on the `llm` queue), the same two limits are also kept in Redis, so
the endpoint's numbers hold for the whole deployment and not per process:

* in flight: a sorted set of leases (member = one request, score = its expiry). A lease outlives
  its request by a margin only if the process died mid-request, and then expires by itself.
* rate: the earliest time the next request may start, advanced atomically by 60/rpm.

Redis is used only with a real broker (not in eager mode); if it becomes unreachable, the
process-local limits still hold and a warning is logged.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1]) * 1000) + 1000)
  return 1
end
return 0
"""

_RATE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local interval = tonumber(ARGV[1])
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
local at = math.max(now, nxt)
redis.call('SET', KEYS[1], tostring(at + interval), 'PX', math.ceil((at + interval - now) * 1000) + 1000)
return tostring(at - now)
"""


class TokenBucket:
    """`rate_per_s` tokens per second, at most `capacity` banked."""

    def __init__(self, rate_per_s: float, capacity: float = 1.0) -> None:
        self.rate = rate_per_s
        self.capacity = capacity
        self.tokens = capacity
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> None:
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.rate
            time.sleep(wait)


class _RedisLimits:
    def __init__(self, url: str, namespace: str, limit: int, rpm: int, lease_s: float) -> None:
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self.acquire_script = self.client.register_script(_ACQUIRE)
        self.rate_script = self.client.register_script(_RATE)
        self.inflight_key = f"{namespace}:inflight"
        self.rate_key = f"{namespace}:next"
        self.limit = limit
        self.rpm = rpm
        self.lease_s = lease_s

    def acquire(self) -> str:
        member = uuid.uuid4().hex
        delay = 0.002
        while not self.acquire_script(keys=[self.inflight_key], args=[self.lease_s, self.limit, member]):
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        if self.rpm:
            wait = float(self.rate_script(keys=[self.rate_key], args=[60.0 / self.rpm]))
            if wait > 0:
                time.sleep(wait)
        return member

    def release(self, member: str) -> None:
        self.client.zrem(self.inflight_key, member)


class EndpointLimiter:
    def __init__(
        self, limit: int, rpm: int, *, redis_url: str | None = None, namespace: str = "", lease_s: float = 90.0
    ) -> None:
        self.limit = limit
        self.rpm = rpm
        self.semaphore = threading.BoundedSemaphore(limit)
        self.bucket = TokenBucket(rpm / 60.0) if rpm else None
        self.shared: _RedisLimits | None = None
        if redis_url:
            try:
                self.shared = _RedisLimits(redis_url, namespace, limit, rpm, lease_s)
            except Exception as exc:  # noqa: BLE001 - limits degrade to per-process, calls go on
                log.warning("shared LLM limits unavailable (%s); using per-process limits", exc)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the endpoint's in-flight slots for the duration of one request."""
        with self.semaphore:
            member = None
            if self.shared is not None:
                try:
                    member = self.shared.acquire()
                except Exception as exc:  # noqa: BLE001
                    log.warning("shared LLM limits failed (%s); using per-process limits", exc)
                    self.shared = None
            if member is None and self.bucket is not None:
                self.bucket.take()
            try:
                yield
            finally:
                if member is not None and self.shared is not None:
                    # Any failure to release is harmless: the lease expires on its own.
                    with contextlib.suppress(Exception):
                        self.shared.release(member)


_limiters: dict[tuple, EndpointLimiter] = {}
_lock = threading.Lock()


def limiter_for(
    *, endpoint_id: int, limit: int, rpm: int, timeout_s: float, redis_url: str | None, namespace: str
) -> EndpointLimiter:
    """The process's limiter of an endpoint (a new one when its limits were edited)."""
    key = (endpoint_id, limit, rpm, timeout_s, redis_url, namespace)
    with _lock:
        limiter = _limiters.get(key)
        if limiter is None:
            limiter = EndpointLimiter(
                limit, rpm, redis_url=redis_url, namespace=f"{namespace}:{endpoint_id}", lease_s=timeout_s + 10.0
            )
            _limiters[key] = limiter
        return limiter
