"""Roles are Django groups: annotator, adjudicator, manager. Superusers count as managers."""
from __future__ import annotations

from rest_framework.permissions import BasePermission

ROLES = ("annotator", "adjudicator", "manager")


def has_role(user, role: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser:
        return True
    # One query per request, not one per check: the user object lives as long as the request.
    names = getattr(user, "_role_names", None)
    if names is None:
        names = frozenset(user.groups.values_list("name", flat=True))
        user._role_names = names
    return role in names


def is_manager(user) -> bool:
    return has_role(user, "manager")


class IsManager(BasePermission):
    def has_permission(self, request, view) -> bool:
        return is_manager(request.user)
