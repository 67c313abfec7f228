"""HTTP Basic auth that refuses impossible usernames before they reach the database, and says so
when django-axes has locked the account or address out (429, not a plain 401)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import models
from drf_spectacular.authentication import BasicScheme
from rest_framework import exceptions
from rest_framework.authentication import BasicAuthentication

_USERNAME_FIELD = get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD)
# The username is a column of its own (not a relation) with a bound: the check below compares with it.
assert isinstance(_USERNAME_FIELD, models.Field) and _USERNAME_FIELD.max_length is not None
_USERNAME_MAX: int = _USERNAME_FIELD.max_length


class BoundedBasicAuthentication(BasicAuthentication):
    """A NUL in a Basic username made PostgreSQL refuse the lookup (a 500), and django-axes would
    store any length in its 255-character column: no account can have such a name anyway.

    django-axes refuses a locked-out attempt before any password is hashed, and marks the request it
    was given: DRF's Request, which the axes middleware never sees. So the lockout is turned into its
    answer here: 429 with Retry-After (the cool-off), code "locked_out"."""

    def authenticate_credentials(self, userid, password, request=None):
        if "\x00" in userid or len(userid) > _USERNAME_MAX:
            raise exceptions.AuthenticationFailed("Invalid username/password.")
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
