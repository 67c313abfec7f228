"""Django REST framework and the OpenAPI schema."""

from .env import env_str
from .security import TRUSTED_PROXY_COUNT

REST_FRAMEWORK = {
    # Scripts should use a token (`manage.py drf_create_token USER`): Basic auth hashes the password
    # on every request (~0.7 s of CPU). Failed Basic attempts are locked out by django-axes.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
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
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
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
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}
