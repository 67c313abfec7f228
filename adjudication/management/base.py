"""The one base of every management command: an ApplicationError a service raises is the
command's error, said in one line (CommandError: exit status 1, no traceback), with the message the
service gave. A bare ValueError or KeyError is a bug and keeps its traceback."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from adjudication.errors import ApplicationError


class ApplicationCommand(BaseCommand):
    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
