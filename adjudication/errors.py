"""The one base of the errors a user can act on, after HackSoft's `core/exceptions.py`.

A service raises a subclass of ApplicationError (one per capability: ReviewError, RoutingError,
ReportError, ...) with a sentence a user can read; each edge maps the base once: the API to its one
error body (400, api_errors.exception_handler), a command to CommandError (one line, exit 1,
management.base.ApplicationCommand), a form to a form error (forms.form_error_add). Anything
else a service raises (ValueError, KeyError, TypeError) is a bug and keeps its traceback: an edge
never catches a bare ValueError around a service call.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A request the application refuses, with the sentence to show and, where one input is at
    fault, the name of that input (a form field, an API field, a command option)."""

    def __init__(self, message: str, *, field: str | None = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = dict(extra or {})

    def __str__(self) -> str:
        return self.message

    @property
    def field_error(self) -> str:
        """The message without its field's name in front ("title: at most 200 characters" -> "at
        most 200 characters"), for an edge that shows it beside the field: a form's field error, the
        API's `fields`."""
        return self.message.removeprefix(f"{self.field}: ") if self.field else self.message
