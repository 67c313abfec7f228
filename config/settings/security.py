"""Secrets and transport security. Production defaults are strict; DEBUG or the embedded default
(a local quickstart) relaxes only what a localhost runserver cannot satisfy."""
from django.core.exceptions import ImproperlyConfigured

from .env import DEBUG, EMBEDDED, env_bool, env_list, env_str

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
# Signed-cookie sessions: no session-table read and write on every request of every annotator
# (a session holds only the login); signed with SECRET_KEY, HttpOnly, Secure in production.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
X_FRAME_OPTIONS = "DENY"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
