"""Brute-force protection, token auth for scripts, server-side sessions, the Content-Security-Policy
and the health check's exemption from the HTTPS redirect (issue 12, items 13, 14, 15 and 24).

Each test builds its own Client after changing settings: a Client loads the middleware on its first
request, so SecurityMiddleware sees the setting the test chose."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import authenticate
from django.contrib.auth.hashers import get_hasher
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.test import Client, RequestFactory

from adjudication.auth_backends import RoleModelBackend

from .conftest import ROOT, run_command

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"


LIMIT = 4


@pytest.fixture(autouse=True)
def small_limit(settings) -> None:
    """A small lockout limit. (Failed logins cost milliseconds here: the test settings' hasher is
    MD5, not the production PBKDF2 whose ~0.7 s per attempt is exactly why they are throttled.)"""
    settings.AXES_FAILURE_LIMIT = LIMIT


def user_with_role(name: str, role: str = "manager") -> User:
    user = User.objects.create_user(name, password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def form_login(username: str, password: str, *, address: str = "127.0.0.1") -> tuple[int, Client]:
    client = Client(REMOTE_ADDR=address)
    response = client.post("/accounts/login/", {"username": username, "password": password})
    return response.status_code, client


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


# -- 13: brute force ---------------------------------------------------------------------------------


def test_production_stores_passwords_with_django_s_pbkdf2(settings):
    """The suite runs on config.settings.test (MD5, for speed); production keeps Django's default."""
    from django.conf import global_settings
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    import config.settings as production

    hashers = getattr(production, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS)
    assert hashers[0] == "django.contrib.auth.hashers.PBKDF2PasswordHasher"
    settings.PASSWORD_HASHERS = hashers
    stored = user_with_role("prod-hash").password
    algorithm, iterations, _salt, _hash = stored.split("$")
    assert (algorithm, int(iterations)) == ("pbkdf2_sha256", PBKDF2PasswordHasher.iterations)
    assert User.objects.get(username="prod-hash").check_password(PASSWORD)


def test_form_login_locks_an_account_after_repeated_failures_from_any_address():
    user_with_role("alice")
    statuses = [form_login("alice", f"guess-{i}", address=f"198.51.100.{i + 1}")[0] for i in range(LIMIT)]
    assert statuses == [200] * (LIMIT - 1) + [429]  # the form again with its error, then the lockout
    status, client = form_login("alice", PASSWORD, address="203.0.113.9")
    assert status == 429, "the right password must not get through a locked account"
    assert "_auth_user_id" not in client.session


def test_form_login_locks_an_address_that_tries_many_usernames():
    user_with_role("bob")
    for i in range(LIMIT):
        form_login(f"nobody-{i}", "guess", address="198.51.100.77")
    status, client = form_login("bob", PASSWORD, address="198.51.100.77")
    assert status == 429 and "_auth_user_id" not in client.session
    # Another address is not affected, and bob's own account is not locked.
    status, client = form_login("bob", PASSWORD, address="203.0.113.10")
    assert status == 302 and client.session["_auth_user_id"] == str(User.objects.get(username="bob").pk)


def test_behind_a_trusted_proxy_addresses_come_from_x_forwarded_for(settings):
    """Behind a TLS-terminating proxy every request comes from the proxy's address: counting failures
    by it would lock everybody out. The proxy appends the client's address to X-Forwarded-For."""
    settings.TRUSTED_PROXY_COUNT = 1
    user_with_role("bob")

    def via_proxy(username: str, password: str, forwarded_for: str) -> int:
        client = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded_for)
        return client.post("/accounts/login/", {"username": username, "password": password}).status_code

    for i in range(LIMIT):
        via_proxy(f"nobody-{i}", "guess", "198.51.100.20")
    assert via_proxy("bob", PASSWORD, "203.0.113.30") == 302  # another client behind the same proxy
    # A client cannot forge its way out: only the entry the proxy appended counts.
    assert via_proxy("bob", PASSWORD, "203.0.113.30, 198.51.100.20") == 429
    assert via_proxy("bob", PASSWORD, "not-an-address") == 302  # garbage falls back to REMOTE_ADDR


def test_the_lockout_page_says_why():
    user_with_role("carol")
    for i in range(LIMIT):
        form_login("carol", f"guess-{i}")
    response = Client().post("/accounts/login/", {"username": "carol", "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many failed log-in attempts" in response.content.decode()


def test_a_successful_login_resets_the_failure_count():
    user_with_role("dave")
    for _ in range(2):
        for i in range(LIMIT - 1):
            assert form_login("dave", f"guess-{i}")[0] == 200
        assert form_login("dave", PASSWORD)[0] == 302


def test_basic_auth_failures_lock_out_before_any_password_is_checked():
    """DRF's BasicAuthentication calls django.contrib.auth.authenticate, so axes sees every attempt:
    after the limit, even the right password is refused and no password hash is computed."""
    user_with_role("erin")
    client = Client(REMOTE_ADDR="198.51.100.5")
    statuses = [
        client.get("/api/queues/", HTTP_AUTHORIZATION=basic("erin", f"guess-{i}")).status_code for i in range(LIMIT)
    ]
    # Wrong passwords are 401; the one that reaches the limit already answers "locked out".
    assert statuses == [401] * (LIMIT - 1) + [429]
    with mock.patch.object(
        RoleModelBackend, "authenticate", autospec=True, side_effect=RoleModelBackend.authenticate
    ) as password_check:
        locked = client.get("/api/queues/", HTTP_AUTHORIZATION=basic("erin", PASSWORD))
        assert locked.status_code == 429 and locked.json()["error"]["code"] == "locked_out"
        assert password_check.call_count == 0
        # From another address erin is still locked (per user), and a fresh user from there is fine.
        elsewhere = Client(REMOTE_ADDR="203.0.113.5")
        assert elsewhere.get("/api/queues/", HTTP_AUTHORIZATION=basic("erin", PASSWORD)).status_code == 429
        user_with_role("frank")
        assert elsewhere.get("/api/queues/", HTTP_AUTHORIZATION=basic("frank", PASSWORD)).status_code == 200


@pytest.mark.parametrize("username", ["nul\x00name", "x" * 300, "surrogate\udcff"])
def test_basic_auth_with_an_impossible_username_is_refused_cleanly(username):
    client = Client()
    header = "Basic " + base64.b64encode(f"{username}:pw".encode("utf-8", "surrogateescape")).decode()
    assert client.get("/api/queues/", HTTP_AUTHORIZATION=header).status_code == 401


HOSTILE_USERNAMES = ["u" * 151, "u" * 300, "u" * 5000, "nul\x00name"]


@contextmanager
def no_password_hashed() -> Iterator[None]:
    """Fails the test if the password hasher runs (production's costs ~0.7 s of CPU a call)."""
    hasher = type(get_hasher())
    with mock.patch.object(hasher, "encode", autospec=True, side_effect=hasher.encode) as encode:
        yield
    assert encode.call_count == 0


@pytest.mark.parametrize("username", HOSTILE_USERNAMES, ids=["151", "300", "5000", "nul"])
def test_a_hostile_login_username_is_the_ordinary_failure_without_a_hash_and_counts_toward_the_lockout(username):
    user_with_role("olga")
    address = "198.51.100.60"
    wrong = Client(REMOTE_ADDR="203.0.113.60").post("/accounts/login/", {"username": "olga", "password": "guess"})
    with no_password_hashed():
        replies = [
            Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": "guess"})
            for _ in range(LIMIT)
        ]
    assert [r.status_code for r in replies] == [200] * (LIMIT - 1) + [429]
    assert replies[0].context["form"].errors == wrong.context["form"].errors
    assert AccessAttempt.objects.filter(ip_address=address).count() == 1
    # The address is locked out, even for an existing account with its right password.
    status, client = form_login("olga", PASSWORD, address=address)
    assert status == 429 and "_auth_user_id" not in client.session


@pytest.mark.parametrize("username", HOSTILE_USERNAMES, ids=["151", "300", "5000", "nul"])
def test_a_hostile_basic_auth_username_is_refused_without_a_hash_and_counts_toward_the_lockout(username):
    user_with_role("pavel")
    client = Client(REMOTE_ADDR="198.51.100.61")
    with no_password_hashed():
        statuses = [
            client.get("/api/queues/", HTTP_AUTHORIZATION=basic(username, "guess")).status_code for _ in range(LIMIT)
        ]
    assert statuses == [401] * (LIMIT - 1) + [429]
    assert client.get("/api/queues/", HTTP_AUTHORIZATION=basic("pavel", PASSWORD)).status_code == 429


def test_the_admin_login_counts_a_hostile_username_toward_the_lockout():
    client = Client(REMOTE_ADDR="198.51.100.62")
    replies = [
        client.post("/admin/login/?next=/admin/", {"username": "a\x00" * 100, "password": "guess"})
        for _ in range(LIMIT)
    ]
    assert [r.status_code for r in replies] == [200] * (LIMIT - 1) + [429]


def test_a_lone_surrogate_username_is_refused_by_the_backend_and_counted():
    """A form or Basic header cannot carry one (both decode bytes), a direct authenticate() call can."""
    request = RequestFactory().post("/accounts/login/", REMOTE_ADDR="198.51.100.63")
    with no_password_hashed():
        assert authenticate(request=request, username="surrogate\udcff", password="guess") is None
    (attempt,) = AccessAttempt.objects.filter(ip_address="198.51.100.63")
    assert attempt.username.startswith("surrogate\\udcff") and len(attempt.username) <= 255


def test_api_requests_beyond_the_user_rate_are_throttled(monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    # The class reads its rates once at import; a small rate keeps the test short.
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/min", "anon": "3/min"})
    user = user_with_role("gina")
    cache.delete(f"throttle_user_{user.pk}")  # a persistent cache may remember an earlier run's pk
    client = Client()
    client.force_login(user)
    statuses = [client.get("/api/queues/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    cache.delete(f"throttle_user_{user.pk}")


def test_scripts_authenticate_with_a_token_from_drf_create_token():
    user_with_role("script-owner")
    out = run_command("drf_create_token", "script-owner")
    key = re.search(r"([0-9a-f]{40})", out).group(1)
    client = Client()
    assert client.get("/api/queues/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    assert client.get("/api/queues/", HTTP_AUTHORIZATION="Token " + "0" * 40).status_code == 401


# -- 14: logout revokes the session ------------------------------------------------------------------


def test_logout_revokes_the_session_cookie():
    user_with_role("henry")
    status, client = form_login("henry", PASSWORD)
    assert status == 302
    from django.conf import settings

    stolen = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.get("/queues/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302

    replay = Client()
    replay.cookies[settings.SESSION_COOKIE_NAME] = stolen
    response = replay.get("/queues/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_sessions_live_on_the_server():
    from django.conf import settings

    assert settings.SESSION_ENGINE in (
        "django.contrib.sessions.backends.db",
        "django.contrib.sessions.backends.cached_db",
    )


# -- 15: Content-Security-Policy -------------------------------------------------------------------------


def csp_directives(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy", "")
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def test_pages_carry_a_strict_content_security_policy():
    user_with_role("ivy")
    client = Client()
    client.force_login(User.objects.get(username="ivy"))
    for path in ("/accounts/login/", "/", "/queues/"):
        policy = csp_directives(client.get(path))
        assert policy.get("default-src") == ["'self'"], (path, policy)
        for directive in ("script-src", "style-src"):
            assert policy.get(directive, policy["default-src"]) == ["'self'"], (path, directive, policy)
        assert policy.get("object-src") == ["'none'"] and policy.get("base-uri") == ["'none'"]
        assert policy.get("frame-ancestors") == ["'none'"]
        assert not any("unsafe" in source for sources in policy.values() for source in sources)


def test_no_template_carries_an_inline_style_or_script():
    """A strict policy blocks <style> blocks, style attributes and inline scripts: none may remain."""
    offenders = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for pattern in (
            r"<style\b",
            r"\sstyle\s*=",
            r"<script\b(?![^>]*\bsrc=)(?![^>]*application/json)",
            r"\son[a-z]+\s*=",
        ):
            for match in re.finditer(pattern, text, flags=re.I):
                offenders.append(f"{path.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}: {pattern}")
    assert offenders == []


def test_the_analytics_plots_carry_no_style_attributes():
    from adjudication.analytics import svg

    source = Path(svg.__file__).read_text()
    assert not re.search(r"style\s*=", source)


# -- 24: the health check is exempt from the HTTPS redirect ---------------------------------------------


def test_with_the_https_redirect_on_the_health_check_answers_over_plain_http(settings):
    settings.SECURE_SSL_REDIRECT = True
    client = Client()
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json() == {"ok": True}
    login = client.get("/accounts/login/")
    assert login.status_code == 301 and login["Location"] == "https://testserver/accounts/login/"
    # Behind a TLS-terminating proxy that says so, the same page is served.
    assert client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https").status_code == 200
