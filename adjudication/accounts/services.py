"""Users and their roles (Django groups: annotator, adjudicator, manager)."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from adjudication.permissions import ROLES


def user_upsert(*, username: str, password: str, roles: Sequence[str], email: str = "") -> User:
    """Create the user, or set an existing one's password, and add `roles` to theirs. Raises
    django's ValidationError when the password fails the validators (nothing is written then)."""
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ValueError(f"unknown role(s): {', '.join(unknown)}; roles: {', '.join(ROLES)}")
    user = User.objects.filter(username=username).first() or User(username=username, email=email)
    validate_password(password, user)
    with transaction.atomic():
        user.set_password(password)
        user.save()
        for name in roles:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
        # Roles only accumulate here, so staff status (the admin) follows the roles the user ends up
        # with: adding "annotator" to a manager must not take the admin away.
        held = set(user.groups.values_list("name", flat=True))
        staff = "manager" in held or user.is_superuser
        if user.is_staff != staff:
            user.is_staff = staff
            user.save(update_fields=["is_staff"])
    return user


def demo_users_ensure(*, accounts: Sequence[tuple[str, str, Sequence[str]]]) -> list[str]:
    """The quickstart's demo accounts, (username, password, roles) each: made when missing, with a
    known password that skips the validators, so call it only on the embedded local default. An
    existing user is left as it is (its password is never reset). Returns the usernames made."""
    made = []
    with transaction.atomic():
        for username, password, roles in accounts:
            if User.objects.filter(username=username).exists():
                continue
            user = User.objects.create_user(username, password=password, is_staff="manager" in roles)
            for name in roles:
                user.groups.add(Group.objects.get_or_create(name=name)[0])
            made.append(username)
    return made
