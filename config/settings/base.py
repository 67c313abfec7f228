"""Django core: apps, middleware, templates, static files."""

from pathlib import Path

from .env import BASE_DIR, env_str

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served as static files (no CDN)
    "axes",
    "csp",
    "adjudication",
    "judges",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # Last: turns a login that django-axes refused into its lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "adjudication.permissions.roles_context",
            ],
        },
    },
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start when it is missing
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Manifest-less storage: the quickstart serves without running collectstatic first.
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# WhiteNoise finds files through the finders when collectstatic has not run (quickstart, tests).
WHITENOISE_USE_FINDERS = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "login"
# django-axes first: it refuses a locked-out user or address before any password is hashed.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "adjudication.auth_backends.RoleModelBackend"]
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# Reader isolation: every reading runs in a killable worker process under this budget.
READER_BUDGET_SECONDS = float(env_str("READER_BUDGET_SECONDS", default="5"))
READER_PROCESSES = int(env_str("READER_PROCESSES", default="2"))
READER_BATCH_SIZE = int(env_str("READER_BATCH_SIZE", default="200"))

# The verifier audit job: its worker beats every lease / 4; a running audit without a beat for a
# lease is reclaimed by the next delivery of its task, at most AUDIT_MAX_ATTEMPTS claims in all.
AUDIT_LEASE_SECONDS = float(env_str("AUDIT_LEASE_SECONDS", default="120"))
AUDIT_MAX_ATTEMPTS = int(env_str("AUDIT_MAX_ATTEMPTS", default="3"))
AUDIT_OUTPUT_DIR = BASE_DIR / env_str("AUDIT_OUTPUT_DIR", default="var/audit")  # an absolute path wins

# Stored analytics reports (adjudication.analytics.services): a computation still running after
# this long is taken to have lost its worker and is handed out again, at most
# ANALYTICS_MAX_ATTEMPTS times; a failed one is retried on the next view until then.
ANALYTICS_LEASE_SECONDS = float(env_str("ANALYTICS_LEASE_SECONDS", default="900"))
ANALYTICS_MAX_ATTEMPTS = int(env_str("ANALYTICS_MAX_ATTEMPTS", default="3"))
# Information routing (routing.services): a final label asks for a refit of its policy's priorities,
# run this many seconds later so that the labels of a burst share one refit; a request not claimed
# after INFORMATION_REFRESH_LEASE_SECONDS is taken as lost with its task and made again.
INFORMATION_REFRESH_DELAY_SECONDS = float(env_str("INFORMATION_REFRESH_DELAY_SECONDS", default="5"))
INFORMATION_REFRESH_LEASE_SECONDS = float(env_str("INFORMATION_REFRESH_LEASE_SECONDS", default="900"))
# The report's panel consensus (docs/consensus.md): bootstrap replicates of its accuracy intervals
# (each refits the model) when the fit covers at most ANALYTICS_CONSENSUS_BOOTSTRAP_MAX responses,
# none above (the page then points to `manage.py consensus --bootstrap N`). Each replicate is a full
# crowd-kit refit: ~0.2 s on 8,000 votes (320 responses x 26 readers), so 50 add ~10 s to a report.
ANALYTICS_CONSENSUS_BOOTSTRAP = int(env_str("ANALYTICS_CONSENSUS_BOOTSTRAP", default="50"))
ANALYTICS_CONSENSUS_BOOTSTRAP_MAX = int(env_str("ANALYTICS_CONSENSUS_BOOTSTRAP_MAX", default="5000"))

# Zip archives read from outside (reproducibility bundles, inspect-ai .eval logs; adjudication/archives.py):
# the most any one member, and all of them together, may expand to. Refused before reading when the
# archive declares more, and counted while reading (a declared size is the archive's own word).
ARCHIVE_MAX_MEMBER_BYTES = int(env_str("ARCHIVE_MAX_MEMBER_BYTES", default=str(256 << 20)))
ARCHIVE_MAX_TOTAL_BYTES = int(env_str("ARCHIVE_MAX_TOTAL_BYTES", default=str(2 << 30)))

# Reproducibility bundles (docs/bundles.md): the most bootstrap replicates a bundled report may ask
# for (a replay runs what the bundle says; each consensus replicate refits the model).
BUNDLE_MAX_BOOTSTRAP = int(env_str("BUNDLE_MAX_BOOTSTRAP", default="2000"))
# The HMAC-SHA256 key `bundle` signs with and `replay --verify-signature` checks against; unset, bundles
# are written unsigned (checksummed only: an edit re-hashed into the manifest goes unnoticed).
BUNDLE_SIGNING_KEY = env_str("BUNDLE_SIGNING_KEY", default="")
# Where the managers' bundle downloads are built (a background job: adjudication/bundles/jobs.py):
# a directory the web processes and the Celery workers share. One file per dataset, report and
# data version; a newer one replaces the older.
BUNDLE_DOWNLOAD_DIR = Path(env_str("BUNDLE_DOWNLOAD_DIR", default=str(BASE_DIR / "var" / "bundles")))
# A build not finished after this many seconds is taken as lost (its worker died) and started again.
BUNDLE_BUILD_LEASE_SECONDS = int(env_str("BUNDLE_BUILD_LEASE_SECONDS", default="1800"))
