from __future__ import annotations

import getpass
import os

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from adjudication.permissions import ROLES


class Command(BaseCommand):
    help = "Create a user (or update an existing one) with a role: annotator, adjudicator or manager."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--role",
            choices=ROLES,
            action="append",
            required=True,
            help="role (repeatable); managers may also use the admin",
        )
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, role: list[str], email: str, **options) -> None:
        password = os.environ.get("ADJ_PASSWORD")
        if password is None:
            password = getpass.getpass(f"password for {username}: ")
            if password != getpass.getpass("again: "):
                raise CommandError("the passwords differ")
        user = User.objects.filter(username=username).first() or User(username=username, email=email)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        user.set_password(password)
        user.save()
        for name in role:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
        # Roles only accumulate here, so staff status (the admin) follows the roles the user ends up
        # with: adding "annotator" to a manager must not take the admin away.
        roles = set(user.groups.values_list("name", flat=True))
        if user.is_staff != ("manager" in roles or user.is_superuser):
            user.is_staff = "manager" in roles or user.is_superuser
            user.save(update_fields=["is_staff"])
        self.stdout.write(f"user {username}: {', '.join(sorted(user.groups.values_list('name', flat=True)))}")
