"""HTTP Basic auth that refuses impossible usernames before they reach the database."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from drf_spectacular.authentication import BasicScheme
from rest_framework import exceptions
from rest_framework.authentication import BasicAuthentication

_USERNAME_MAX = get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD).max_length


class BoundedBasicAuthentication(BasicAuthentication):
    """A NUL in a Basic username made PostgreSQL refuse the lookup (a 500), and django-axes would
    store any length in its 255-character column: no account can have such a name anyway."""

    def authenticate_credentials(self, userid, password, request=None):
        if "\x00" in userid or len(userid) > _USERNAME_MAX:
            raise exceptions.AuthenticationFailed("Invalid username/password.")
        return super().authenticate_credentials(userid, password, request)


class BoundedBasicScheme(BasicScheme):
    """The OpenAPI schema describes it as plain HTTP Basic (drf-spectacular matches exact classes)."""

    target_class = "config.api_auth.BoundedBasicAuthentication"
