"""One body for every API error, whatever raised it:

    {"error": {"status": 400, "code": "invalid", "message": "overlap: Ensure this value is ...",
               "fields": {"overlap": ["Ensure this value is ..."]}}}

`status` repeats the HTTP status; `code` is a stable machine word (invalid, parse_error,
not_authenticated, authentication_failed, permission_denied, not_found, method_not_allowed,
not_acceptable, unsupported_media_type, busy, throttled, locked_out, server_error); `message` is
one readable sentence; `fields` (validation errors only) maps each refused field to its messages,
nested as the request was; `retry_after` (seconds; 409 busy, 429) repeats the Retry-After header.

DRF's exceptions come through `exception_handler` (REST_FRAMEWORK["EXCEPTION_HANDLER"]); a URL under
/api/ that matches no endpoint and a crash (500) through `not_found` and `server_error` (the root
URLconf's handler404 / handler500, which leave pages to Django's own). A Basic-auth lockout
(django-axes) is a 429 "locked_out" (config/api_auth.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, serializers, status
from rest_framework.views import exception_handler as drf_exception_handler

from adjudication.errors import ApplicationError

API_PREFIX = "/api/"


class Busy(exceptions.APIException):
    """Every item left is momentarily leased to other annotators (409): try again shortly."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "every remaining item is claimed by another annotator right now; try again in a few seconds"
    default_code = "busy"
    retry_after = 2


class ErrorBodySerializer(serializers.Serializer):
    status = serializers.IntegerField(help_text="the HTTP status, repeated")
    code = serializers.CharField(help_text="a stable machine word: invalid, not_authenticated, busy, throttled, …")
    message = serializers.CharField(help_text="one readable sentence")
    # A field named "fields": DRF's serializer metaclass takes declared fields out of the class, so
    # Serializer.fields (the property) is not shadowed at run time; mypy sees only the class body.
    fields = serializers.DictField(  # type: ignore[assignment]
        required=False, help_text="validation errors only: each refused field and its messages"
    )
    retry_after = serializers.IntegerField(required=False, help_text="409 busy and 429: seconds to wait")


class ErrorSerializer(serializers.Serializer):
    """The body of every API error response."""

    error = ErrorBodySerializer()


def error_body(
    *, status_code: int, code: str, message: str, fields: Any = None, retry_after: int | None = None
) -> dict:
    body: dict[str, Any] = {"status": status_code, "code": code, "message": message}
    if fields:
        body["fields"] = fields
    if retry_after is not None:
        body["retry_after"] = retry_after
    return {"error": body}


def _messages(detail: Any, prefix: str = "") -> list[str]:
    """Every message of a (nested) DRF error detail, each led by the field path it belongs to."""
    if isinstance(detail, Mapping):
        out = []
        for key, value in detail.items():
            name = "" if key in ("non_field_errors", "detail") else str(key)
            out += _messages(value, f"{prefix}.{name}" if prefix and name else prefix or name)
        return out
    if isinstance(detail, (list, tuple)):
        return [m for item in detail for m in _messages(item, prefix)]
    return [f"{prefix}: {detail}" if prefix else str(detail)]


def _plain(detail: Any) -> Any:
    """ErrorDetail strings as plain strings (the renderer would do it; tests compare them)."""
    if isinstance(detail, Mapping):
        return {str(k): _plain(v) for k, v in detail.items()}
    if isinstance(detail, (list, tuple)):
        return [_plain(v) for v in detail]
    return str(detail)


def _code(exc: exceptions.APIException) -> str:
    if isinstance(exc, exceptions.ValidationError):
        return "invalid"
    detail_code = getattr(exc.detail, "code", None)
    return str(detail_code or exc.default_code)


def exception_handler(exc: Exception, context: dict) -> HttpResponse | None:
    """DRF's handler (headers such as WWW-Authenticate and Retry-After, the rollback), then the
    shared body. A service's ApplicationError is a 400 "invalid" like a refused field: its message
    the body's, and the input it names, if any, under `fields`. Anything DRF does not handle
    is a crash: left to Django (logged, handler500)."""
    if isinstance(exc, ApplicationError):
        return _application_error(exc, context)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if not isinstance(exc, exceptions.APIException):
        # Django's Http404 / PermissionDenied, which DRF turned into its own.
        exc = exceptions.NotFound() if response.status_code == 404 else exceptions.PermissionDenied()
    fields = None
    if isinstance(exc, exceptions.ValidationError) and isinstance(exc.detail, Mapping):
        fields = {k: v for k, v in _plain(exc.detail).items() if k != "non_field_errors"} or None
    retry_after = None
    if isinstance(exc, exceptions.Throttled):
        # djangorestframework-stubs do not declare Throttled.wait, which Throttled.__init__ sets.
        wait: float | None = exc.wait  # type: ignore[attr-defined]
        if wait is not None:
            retry_after = math.ceil(wait)
    elif isinstance(exc, Busy):
        retry_after = exc.retry_after
        response["Retry-After"] = str(exc.retry_after)
    if _code(exc) == "throttled":
        message = f"request was throttled; try again in {retry_after} seconds" if retry_after else "request throttled"
    else:
        message = "; ".join(_messages(exc.detail)) or str(exc.default_detail)
    response.data = error_body(
        status_code=response.status_code, code=_code(exc), message=message, fields=fields, retry_after=retry_after
    )
    return response


def _application_error(exc: ApplicationError, context: dict) -> HttpResponse:
    # Through DRF's handler for what it does to every error it handles: the transaction's rollback.
    response = drf_exception_handler(exceptions.ValidationError(exc.message), context)
    assert response is not None  # DRF handles every APIException
    fields = {exc.field: [exc.field_error]} if exc.field else None
    response.data = error_body(status_code=response.status_code, code="invalid", message=exc.message, fields=fields)
    return response


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: under /api/, the error body (a URL no endpoint has); elsewhere Django's page."""
    if not _is_api(request):
        return defaults.page_not_found(request, exception)
    message = f"no API endpoint at {request.path}"
    if not request.path.endswith("/"):
        message += " (endpoints end with a slash)"
    return JsonResponse(error_body(status_code=404, code="not_found", message=message), status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: under /api/, the error body (no detail of the crash: it is in the server log)."""
    if not _is_api(request):
        return defaults.server_error(request)
    body = error_body(status_code=500, code="server_error", message="internal error; the server log has the details")
    return JsonResponse(body, status=500)
