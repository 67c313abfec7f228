"""The login backend: Django's ModelBackend, loading the user and the user's role names in one
plain statement.

Every request of a logged-in user loads the user (LoginRequiredMiddleware asks) and every page
checks a role. Through the ORM, with the groups, that cost ~3 ms of CPU of the ~4 ms a trivial
page takes (bench/review_bench.py's setting); written out it costs a fifth. Roles are read on
every request, never cached in the session, so a role taken away applies at once.

A username no account can have (longer than the column, a NUL, a lone surrogate) is refused here,
before the lookup and before the password hasher runs; `authenticate()` still reports the failure,
and django-axes counts it under `axes_username`'s bounded stand-in. Every way in (the login form,
the admin's, the API's Basic auth) reaches this backend, so all of them get the same."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.db import connections, router
from django.db.models import Field
from django.http import HttpRequest

from adjudication.rawsql import convert_row, raw_all
from adjudication.validators import free_text_problem


def _column(field: Field) -> str:
    assert field.column is not None  # a concrete field has a column
    return field.column


_FIELDS = list(User._meta.concrete_fields)
_ATTNAMES = [f.attname for f in _FIELDS]
_COLUMNS = [_column(f) for f in _FIELDS]
_USERNAME_FIELD = User._meta.get_field(User.USERNAME_FIELD)
assert isinstance(_USERNAME_FIELD, Field) and _USERNAME_FIELD.max_length is not None  # a bounded column
USERNAME_MAX: int = _USERNAME_FIELD.max_length


def username_problem(username: object) -> str | None:
    """Why no account can have this username, or None."""
    if not isinstance(username, str):
        return "not text"
    if len(username) > USERNAME_MAX:
        return f"longer than {USERNAME_MAX} characters"
    return free_text_problem(username)


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """The username django-axes records and counts failures by (AXES_USERNAME_CALLABLE): the one
    given, or for a name no account can have, a stand-in its 255-character column holds and
    PostgreSQL takes (no NUL, no lone surrogate). The stand-in is the name's start, escaped, and a
    digest of the whole: each such name counts on its own, as an unknown name does, and the client
    address counts them all, so repeating one never escapes the lockout."""
    field = getattr(settings, "AXES_USERNAME_FORM_FIELD", User.USERNAME_FIELD)
    if credentials:
        username = credentials.get(field)
    else:
        username = getattr(request, "data", request.POST).get(field)
    if username is None or not username_problem(username):
        return username
    text = username if isinstance(username, str) else repr(username)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{ascii(text[:64])[1:-1][:64]}…{digest}"


class RoleModelBackend(ModelBackend):
    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> User | None:
        name = kwargs.get(User.USERNAME_FIELD) if username is None else username
        if name is not None and username_problem(name):
            # Refused before the lookup (PostgreSQL refuses a NUL: a 500) and before ModelBackend
            # hashes the password for an unknown name (~0.7 s of CPU, for nothing: no account can
            # match). The caller's authenticate() then reports the failure and django-axes counts it.
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id) -> User | None:
        try:
            user_id = int(user_id)
        except (TypeError, ValueError):
            return None
        alias = router.db_for_read(User)
        quote = connections[alias].ops.quote_name
        columns = ", ".join(f"u.{quote(column)}" for column in _COLUMNS)
        # One row per group (or one row with a NULL name for a user without any).
        rows = raw_all(
            f"SELECT {columns}, g.name FROM auth_user u "
            "LEFT JOIN auth_user_groups ug ON ug.user_id = u.id "
            "LEFT JOIN auth_group g ON g.id = ug.group_id WHERE u.id = %s",
            [user_id],
            alias,
        )
        if not rows:
            return None
        user = User.from_db(alias, _ATTNAMES, convert_row(rows[0][:-1], _FIELDS, alias))
        if not self.user_can_authenticate(user):
            return None
        # Read by has_role: a per-request cache that User does not declare.
        user._role_names = frozenset(row[-1] for row in rows if row[-1] is not None)  # type: ignore[attr-defined]
        return user
