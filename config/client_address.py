"""The client's address as django-axes should count failed logins by it (AXES_CLIENT_IP_CALLABLE).

Behind a TLS-terminating proxy REMOTE_ADDR is the proxy's address, the same for everybody: counting
failures by it would let ten typos anywhere lock every user out. Each trusted proxy appends the
address it received the request from to X-Forwarded-For, so with TRUSTED_PROXY_COUNT = n the client
is the n-th entry from the right; anything further left was written by the client and may be forged.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    remote = request.META.get("REMOTE_ADDR")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < hops:
        return remote  # not through the proxies (e.g. the health check from inside the container)
    candidate = forwarded[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        # Only a request that bypassed the proxy can carry garbage there; axes stores an inet column.
        return remote
