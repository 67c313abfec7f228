"""The one base of the errors a user can act on, after HackSoft's `core/exceptions.py`.

A service raises a subclass of ApplicationError (one per capability: ReviewError, RoutingError,
ReportError, ...) with a sentence a user can read; each edge maps the base once: the API to its one
error body (400, adjudication.api_errors), a command to CommandError (one line, exit 1,
adjudication.management.base), a form to a form error (adjudication.forms.form_error_add). Anything
else a service raises (ValueError, KeyError, TypeError) is a bug and keeps its traceback: an edge
never catches a bare ValueError around a service call.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A request the application refuses, with the sentence to show and, where one input is at
    fault, the name of that input (a form field, an API field, a command option).

    With a field, `message` is the reason alone and the line a user reads is "field: message", the
    shape of a form's or the API's own validation errors, so that a form can put the reason on
    its field and the API list it under `fields`. str() is that line, whatever the edge."""

    def __init__(self, message: str, *, field: str | None = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = dict(extra or {})

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message
