from __future__ import annotations

import getpass
import os

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

from adjudication.accounts.services import user_upsert
from adjudication.management.base import ApplicationCommand
from adjudication.permissions import ROLES


class Command(ApplicationCommand):
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
        try:
            user = user_upsert(username=username, password=password, roles=role, email=email)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"user {username}: {', '.join(sorted(user.groups.values_list('name', flat=True)))}")
