"""The OpenAPI schema's shared parts and the browsable API docs page.

* `AutoSchema` (REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]): drf-spectacular's, plus the error responses
  every operation can give, each with the shared `Error` body (adjudication.api_errors): 400 where
  the operation takes a body or query parameters, 401 and 403 (every endpoint needs a login), 404
  where the path names an object, 429, 500, and `default` for the rest (405, 406, 415). An
  operation's own `@extend_schema` responses win (the claim documents its 409 "busy").
* The security schemes say how to authenticate (token, session, Basic).

The docs page is adjudication/api_docs.py (drf_spectacular.views imports this module's AutoSchema).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from adjudication.api_errors import ErrorSerializer
from adjudication.exports import CONTENT_TYPES, Column

_ERRORS = {
    "400": "Invalid request: `fields` names each refused field (or `message` the refused query parameter).",
    "401": "No credentials, or wrong ones: the `WWW-Authenticate` header names the scheme to use.",
    "403": "Authenticated, but this role may not do it (or a session request without its CSRF token).",
    "404": "No such object (or not one of yours).",
    "429": "Throttled (per user or address), or Basic auth locked out after failed attempts: "
    "`Retry-After` says when to try again.",
    "500": "Internal error; the server log has the details.",
    "default": "Any other error (405 method not allowed, 406, 415), in the same shape.",
}


class AutoSchema(SpectacularAutoSchema):
    def get_operation(self, path: str, path_regex: str, path_prefix: str, method: str, registry: Any) -> Any:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        parameters = operation.get("parameters", [])
        wanted = ["401", "403", "429", "500", "default"]
        if operation.get("requestBody") or any(p.get("in") == "query" for p in parameters):
            wanted.append("400")
        if any(p.get("in") == "path" for p in parameters):
            wanted.append("404")
        responses = operation["responses"]
        for code in sorted(wanted, key=lambda c: (c == "default", c)):
            if code not in responses:
                responses[code] = {
                    **self._get_response_for_code(ErrorSerializer, code),
                    "description": _ERRORS[code],
                }
        return operation


_FIELDS = {
    "text": lambda: serializers.CharField(allow_null=True),
    "int": lambda: serializers.IntegerField(allow_null=True),
    "float": lambda: serializers.FloatField(allow_null=True),
    "bool": lambda: serializers.BooleanField(allow_null=True),
    "time": lambda: serializers.DateTimeField(allow_null=True),
}


def rows_serializer(
    name: str, columns: Any, extra: dict[str, serializers.Field] | None = None
) -> type[serializers.Serializer]:
    """A serializer describing one row of an export table (for the schema only): each column typed
    as the export types it, plus `extra` nested fields."""
    fields: dict[str, Any] = {c.name: _FIELDS[c.type]() for c in columns if isinstance(c, Column)}
    fields.update(extra or {})
    return type(name + "Serializer", (serializers.Serializer,), fields)


def _media(fmt: str) -> str:
    return CONTENT_TYPES[fmt].split(";")[0]


def download_responses(*, jsonl: type[serializers.Serializer], columns: Any) -> dict:
    """The 200 of an export endpoint in its three formats (chosen by `fmt`)."""
    names = ", ".join(c.name for c in columns)
    description = (
        f"An attachment. fmt=jsonl: one JSON object per line, each a {jsonl.__name__.removesuffix('Serializer')} "
        f"(nested values stay nested). fmt=csv: a header and one row per object with the flat columns {names}; "
        "text escaped as docs/api.md says, formula cells prefixed with an apostrophe. fmt=parquet: the same "
        "columns, typed (int64, float64, bool, UTC timestamps, strings)."
    )
    return {
        (200, _media("jsonl")): OpenApiResponse(jsonl, description=description),
        (200, _media("csv")): OpenApiResponse(OpenApiTypes.STR, description=description),
        (200, _media("parquet")): OpenApiResponse(OpenApiTypes.BINARY, description=description),
    }


class TokenScheme(OpenApiAuthenticationExtension):
    target_class = "rest_framework.authentication.TokenAuthentication"
    name = "tokenAuth"
    priority = 1

    def get_security_definition(self, auto_schema: Any) -> dict:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "For scripts. The header is `Authorization: Token <key>`; a key is made (or shown again) with "
                "`python manage.py drf_create_token USERNAME` and carries that user's roles. In Swagger UI's "
                "Authorize dialog, enter `Token <key>`."
            ),
        }


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "rest_framework.authentication.SessionAuthentication"
    name = "cookieAuth"
    priority = 1

    def get_security_definition(self, auto_schema: Any) -> dict:
        from django.conf import settings

        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": (
                "The browser's login session (/accounts/login/). Writes also need the CSRF token in the "
                f"`{settings.CSRF_HEADER_NAME.removeprefix('HTTP_').replace('_', '-')}` header."
            ),
        }
