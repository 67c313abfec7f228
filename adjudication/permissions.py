"""Roles are Django groups: annotator, adjudicator, manager. Superusers count as managers."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.permissions import BasePermission

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_P = ParamSpec("_P")
_R = TypeVar("_R")

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


class AuthenticatedRequest(HttpRequest):
    """For type checking only: the request a view under role_required is given, whose user is
    signed in (has_role is false for an anonymous one). No request is of this class."""

    user: User


def role_required(
    *roles: str,
) -> Callable[[Callable[Concatenate[AuthenticatedRequest, _P], _R]], Callable[Concatenate[HttpRequest, _P], _R]]:
    """Page views: 403 unless the user holds one of `roles` (superusers hold every role). Put it
    below the method decorators, so that a wrong method is refused before the role is looked up."""

    def decorator(
        view: Callable[Concatenate[AuthenticatedRequest, _P], _R],
    ) -> Callable[Concatenate[HttpRequest, _P], _R]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            if not any(has_role(request.user, role) for role in roles):
                raise PermissionDenied(" and ".join(f"{role}s" for role in roles) + " only")
            # Holding a role, the user is signed in.
            return view(cast(AuthenticatedRequest, request), *args, **kwargs)

        return wrapped

    return decorator


class _HasRole(BasePermission):
    role = ""

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, self.role)


class IsManager(_HasRole):
    role = "manager"


class IsAnnotator(_HasRole):
    role = "annotator"


ROLES = ("annotator", "adjudicator", "manager")


def roles_context(request: Any) -> dict[str, Any]:
    """Template context: which roles the user holds, so that navigation offers only what they may use."""
    return {"roles": {role: has_role(request.user, role) for role in ROLES}}
