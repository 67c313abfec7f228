"""The test suite's settings: production's, but for a fast password hasher.

Django's default PBKDF2 costs ~0.37 s per password on this machine kind; the suite creates over a
thousand users. Nothing else differs: a behaviour the suite checks is the one users run. The one
test that checks the production hasher (tests/test_security.py) sets it back locally.

Selected by pyproject.toml's DJANGO_SETTINGS_MODULE; child processes a test starts (manage.py,
Celery workers) inherit it through the environment.
"""

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
