"""Django REST framework and the OpenAPI schema."""

from .env import env_str
from .security import TRUSTED_PROXY_COUNT

REST_FRAMEWORK = {
    # Scripts should use a token (`manage.py drf_create_token USER`): Basic auth hashes the password
    # on every request (~0.7 s of CPU). Failed Basic attempts are locked out by django-axes.
    # The first class names the challenge of a 401 (WWW-Authenticate: Token): with the session
    # first, DRF has no challenge to send and answers 403 to missing or wrong credentials. The order
    # changes nothing else: each class answers only to its own credentials, and a session request
    # still needs its CSRF token.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
        "config.api_auth.BoundedBasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Rates per user (and per address for anonymous calls). DRF throttles only run after
    # authentication succeeded, so they bound a runaway script, not a password guesser: failed
    # credentials are django-axes's job (config/settings/security.py).
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_THROTTLE_ANON", default="60/minute"),
        "user": env_str("API_THROTTLE_USER", default="1200/minute"),
    },
    # The client address of an anonymous call behind TLS-terminating proxies (X-Forwarded-For).
    "NUM_PROXIES": TRUSTED_PROXY_COUNT or None,
    # Every error in one body: {"error": {"status", "code", "message", "fields"?, "retry_after"?}}.
    "EXCEPTION_HANDLER": "adjudication.api_errors.exception_handler",
    # drf-spectacular's, plus the shared error responses on every operation.
    "DEFAULT_SCHEMA_CLASS": "adjudication.api_schema.AutoSchema",
    # Model text may hold lone surrogates: escaped in JSON rather than a 500 (adjudication/renderers.py).
    "DEFAULT_RENDERER_CLASSES": [
        "adjudication.renderers.VerbatimJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Adjudication platform API",
    "VERSION": "0.1.0",
    "DESCRIPTION": (
        "Review queues, labels and final labels, datasets and their readers.\n\n"
        "**Authentication.** Scripts send `Authorization: Token <key>` (a key from "
        "`python manage.py drf_create_token USERNAME`); the browser's login session works too (writes need "
        "the CSRF token), and HTTP Basic (locked out after repeated failures). Missing or wrong credentials "
        "get 401 with `WWW-Authenticate: Token`; a role that may not do something gets 403.\n\n"
        "**Errors.** Every error has one body: "
        '`{"error": {"status": 400, "code": "invalid", "message": "…", "fields": {"overlap": ["…"]}}}` '
        "(`fields` for validation errors only; `retry_after`, in seconds, on 409 busy and 429).\n\n"
        "**Example.** `docs/api_example.py` lists queues, claims an item, labels it, reads the queue's status "
        "and downloads its final labels; `docs/api.md` is the guide."
    ),
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI's files come from drf-spectacular-sidecar (this site's static files, no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # validatorUrl: None keeps Swagger UI from sending the schema to an online validator.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "persistAuthorization": False, "validatorUrl": None},
}
