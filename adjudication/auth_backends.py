"""The login backend: Django's ModelBackend, loading the user and the user's role names in one
plain statement.

Every request of a logged-in user loads the user (LoginRequiredMiddleware asks) and every page
checks a role. Through the ORM, with the groups, that cost ~3 ms of CPU of the ~4 ms a trivial
page takes (bench/review_bench.py's setting); written out it costs a fifth. Roles are read on
every request, never cached in the session, so a role taken away applies at once."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.db import connections, router
from django.db.models import Field

from adjudication.rawsql import convert_row, raw_all


def _column(field: Field) -> str:
    assert field.column is not None  # a concrete field has a column
    return field.column


_FIELDS = list(User._meta.concrete_fields)
_ATTNAMES = [f.attname for f in _FIELDS]
_COLUMNS = [_column(f) for f in _FIELDS]


class RoleModelBackend(ModelBackend):
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
