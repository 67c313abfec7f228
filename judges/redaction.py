"""An endpoint's API key never reaches the database or a log line, even when a server echoes it.

Proxies and misconfigured gateways do echo it ("Incorrect API key provided: sk-…", a login page
quoting the bearer token, a debug header copied into the body). Every text that comes from a server
passes through here before it is stored or logged. Only the value of the endpoint's own key
variable is known to be secret, so that value, whole, is what is removed.

No Django imports: the HTTP client uses this in worker threads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

REDACTED = "[redacted API key]"


def secrets_from_env(names: Iterable[str]) -> tuple[str, ...]:
    """The values of those environment variables that are set, longest first (so that a key that
    contains another is removed whole)."""
    values = {os.environ.get(name) or "" for name in names if name}
    return tuple(sorted((v for v in values if v), key=len, reverse=True))


def _forms(secret: str) -> list[str]:
    # A key echoed inside a JSON body may arrive escaped ("\/" or "\u00e9"): remove that form too.
    escaped = {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    return [secret, *sorted(escaped - {secret}, key=len, reverse=True)]


def redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        for form in _forms(secret):
            if form in text:
                text = text.replace(form, REDACTED)
    return text


def redact_bytes(data: bytes, secrets: Sequence[str]) -> bytes:
    """The same on a raw reply body, before it is parsed: one substring search per key on the hot path."""
    for secret in secrets:
        for form in _forms(secret):
            encoded = form.encode("utf-8", "surrogatepass")
            if encoded in data:
                data = data.replace(encoded, REDACTED.encode())
    return data
