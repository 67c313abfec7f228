"""HTTP Basic auth that says so when django-axes has locked the account or address out (429, not a
plain 401)."""

from __future__ import annotations

from drf_spectacular.authentication import BasicScheme
from rest_framework import exceptions
from rest_framework.authentication import BasicAuthentication


class BoundedBasicAuthentication(BasicAuthentication):
    """A username no account can have (a NUL, over-long) is refused by the login backend
    (adjudication.auth_backends) before any lookup or hash, and counted by django-axes like any
    failure: it is not refused here first, where django-axes would never see it.

    django-axes refuses a locked-out attempt before any password is hashed, and marks the request it
    was given: DRF's Request, which the axes middleware never sees. So the lockout is turned into its
    answer here: 429 with Retry-After (the cool-off), code "locked_out"."""

    def authenticate_credentials(self, userid, password, request=None):
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            if request is not None and getattr(request, "axes_locked_out", False):
                from axes.helpers import get_cool_off, get_lockout_message

                cool_off = get_cool_off(request)
                raise exceptions.Throttled(
                    wait=cool_off.total_seconds() if cool_off else None,
                    detail=str(get_lockout_message()),
                    code="locked_out",
                ) from None
            raise


class BoundedBasicScheme(BasicScheme):
    """The OpenAPI schema describes it as plain HTTP Basic (drf-spectacular matches exact classes)."""

    target_class = "config.api_auth.BoundedBasicAuthentication"
