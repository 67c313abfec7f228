"""Roles are Django groups: annotator, adjudicator, manager. Superusers count as managers."""
from __future__ import annotations

from rest_framework.permissions import BasePermission

ROLES = ("annotator", "adjudicator", "manager")


def has_role(user, role: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser:
        return True
    return user.groups.filter(name=role).exists()


def is_manager(user) -> bool:
    return has_role(user, "manager")


class IsManager(BasePermission):
    def has_permission(self, request, view) -> bool:
        return is_manager(request.user)
