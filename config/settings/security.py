"""Secrets and transport security. Production defaults are strict; DEBUG or the embedded default
(a local quickstart) relaxes only what a localhost runserver cannot satisfy."""

from datetime import timedelta

from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from .env import BROKER_URL, DEBUG, EMBEDDED, env_bool, env_list, env_str

LOCAL = DEBUG or EMBEDDED

SECRET_KEY = env_str("SECRET_KEY", "DJANGO_SECRET_KEY")
if SECRET_KEY is None:
    if not LOCAL:
        raise ImproperlyConfigured("SECRET_KEY must be set when DATABASE_URL is set and DEBUG is off")
    SECRET_KEY = "insecure-local-only-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", "DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"] if LOCAL else []
)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not LOCAL)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not LOCAL)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not LOCAL)
SECURE_HSTS_SECONDS = int(env_str("SECURE_HSTS_SECONDS", default="0" if LOCAL else "3600"))
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
# The health check answers over plain HTTP even where everything else redirects to HTTPS: a load
# balancer or the container's own health check probes it without TLS or X-Forwarded-Proto.
SECURE_REDIRECT_EXEMPT = [r"^healthz/?$"]
X_FRAME_OPTIONS = "DENY"

# The Redis that carries Celery's queues, when there is one, also holds the cache: sessions (below),
# DRF's throttle counters (shared by every gunicorn worker, unlike a per-process memory cache).
REDIS_CACHE = BROKER_URL is not None and BROKER_URL.startswith(("redis://", "rediss://"))
if REDIS_CACHE:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": BROKER_URL,
            "KEY_PREFIX": "adjudication",
            "OPTIONS": {"socket_timeout": 5, "socket_connect_timeout": 5},
        }
    }

# Server-side sessions, so that logging out revokes the session (a signed-cookie session stayed
# valid for its whole lifetime after logout). With Redis the review loop's per-request session read
# is a cache hit; the embedded default (no Redis) reads the session table.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db" if REDIS_CACHE else "django.contrib.sessions.backends.db"

# Failed logins (the login form, the admin and the API's Basic auth alike: django-axes watches every
# authenticate() call) lock out the account and, separately, the client address for a cool-off
# period. A locked-out attempt is refused before any password is hashed (~0.7 s of CPU each).
AXES_FAILURE_LIMIT = int(env_str("AXES_FAILURE_LIMIT", default="10"))
AXES_COOLOFF_TIME = timedelta(minutes=int(env_str("AXES_COOLOFF_MINUTES", default="15")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
# Attempts during a lockout neither extend it nor cost a database write each.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "registration/login.html"
# Behind TRUSTED_PROXY_COUNT proxies the client address comes from X-Forwarded-For (see there).
TRUSTED_PROXY_COUNT = int(env_str("TRUSTED_PROXY_COUNT", default="0"))
AXES_CLIENT_IP_CALLABLE = "config.client_address.client_address"
# A username no account can have is counted under a bounded stand-in (its column holds 255
# characters; PostgreSQL takes no NUL): recording it as given was a 500 that counted nothing.
AXES_USERNAME_CALLABLE = "adjudication.auth_backends.axes_username"

# Every script, style, font and image is served by this site (KaTeX included, from static/vendor):
# nothing inline, nothing from elsewhere. Templates carry no <style> block, style attribute or
# inline script; JavaScript sets styles through the CSSOM, which style-src does not restrict.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
