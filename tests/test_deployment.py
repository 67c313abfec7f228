"""The deployment as documented: docker-compose.yml's guarantees (parsed: Docker does not run here),
and the README's "by hand" steps followed literally, in both of its setups, against a real gunicorn.

The README test reads the section's shell blocks and runs their `export` lines in bash, so the
environment is exactly the one the README gives; only DATABASE_URL and CELERY_BROKER_URL are pointed
at this test's services, and gunicorn binds a free loopback port with one worker (GUNICORN_BIND /
GUNICORN_WORKERS, which the README names). `createdb` is skipped: the test database exists.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml

from .conftest import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
APP_SERVICES = [name for name, spec in COMPOSE["services"].items() if spec.get("build")]
SECTION_TITLE = "## Running with PostgreSQL, Redis and workers"
PASSWORD = "deploy-test-pw-5521"


# -- docker-compose.yml (item 25) ------------------------------------------------------------------------


class MissingVariable(Exception):
    pass


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's variable substitution for the forms the file uses: $$, ${X}, ${X:-default}, ${X:?error}."""

    def substitute(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        current = env.get(name) or ""
        if op == ":?" and not current:
            raise MissingVariable(f"{name}: {arg}")
        if op == ":-" and not current:
            return arg
        return current

    return re.sub(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:[?-])(?P<arg>[^}]*))?\}", substitute, value)


def test_compose_has_the_app_services():
    assert {"migrate", "web", "worker", "worker-llm"} <= set(APP_SERVICES)


@pytest.mark.parametrize("service", ["migrate", "web", "worker", "worker-llm"])
def test_compose_refuses_to_start_without_a_secret_key(service):
    environment = COMPOSE["services"][service]["environment"]
    with pytest.raises(MissingVariable, match="SECRET_KEY"):
        interpolate(environment["SECRET_KEY"], {})
    assert interpolate(environment["SECRET_KEY"], {"SECRET_KEY": "k3y"}) == "k3y"
    assert "change-me" not in (ROOT / "docker-compose.yml").read_text()


@pytest.mark.parametrize("service", ["web", "worker", "worker-llm"])
def test_compose_web_and_workers_wait_for_a_one_shot_migration(service):
    spec = COMPOSE["services"][service]
    assert spec["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert "migrate" not in spec["command"]  # nobody else migrates concurrently
    migrate = COMPOSE["services"]["migrate"]
    assert shlex.split(migrate["command"])[:3] == ["python", "manage.py", "migrate"]
    assert migrate["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert "migrate" not in migrate["depends_on"] and migrate.get("restart", "no") == "no"


def compose_health_probe(port: int) -> list[str]:
    """The web service's health check command, pointed at `port` instead of the container's 8000."""
    test = COMPOSE["services"]["web"]["healthcheck"]["test"]
    assert test[0] == "CMD" and test[1:3] == ["python", "-c"], test  # no shell and no curl in the slim image
    code = interpolate(test[3], {})
    assert "http://127.0.0.1:8000/healthz" in code
    return [sys.executable, "-c", code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")]


def test_compose_web_has_a_health_check():
    check = COMPOSE["services"]["web"]["healthcheck"]
    assert compose_health_probe(8000)
    assert check.get("start_period") and check.get("interval") and check.get("retries")


# -- the README's "by hand" section (item 24) -----------------------------------------------------------


def readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION_TITLE)
    end = text.find("\n## ", start + len(SECTION_TITLE))
    return text[start : end if end != -1 else len(text)]


def sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", readme_section(), flags=re.S)


def block_with(*needles: str) -> str:
    found = [b for b in sh_blocks() if all(n in b for n in needles)]
    assert len(found) == 1, f"the README's deployment section should have one sh block with {needles}: {found}"
    return found[0]


def readme_environment(*blocks: str) -> dict[str, str]:
    """Run the blocks' `export` lines in bash (as a reader would) and return the environment."""
    exports = [line for block in blocks for line in block.splitlines() if line.startswith("export ")]
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    out = subprocess.run(
        ["bash", "-c", "set -e\n" + "\n".join(exports) + "\nenv -0"],
        env=base,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    return {k: v for k, v in env.items() if k not in base and k not in ("PWD", "SHLVL", "_", "OLDPWD")}


def steps() -> list[list[str]]:
    commands = []
    for line in block_with("manage.py migrate").splitlines():
        line = line.split("  #")[0].strip()
        if line:
            commands.append(shlex.split(line))
    return commands


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Site:
    """Plain HTTP to the gunicorn, with the Host header browsers would send and a cookie jar."""

    def __init__(self, port: int, host: str, headers: dict[str, str] | None = None) -> None:
        self.port, self.host, self.headers = port, host, headers or {}
        self.cookies: dict[str, str] = {}
        self.set_cookie_lines: list[str] = []

    def request(
        self, method: str, path: str, body: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        all_headers = {"Host": self.host, **self.headers, **(headers or {})}
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        data = None
        if body is not None:
            data = urlencode(body)
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=data, headers=all_headers)
        response = conn.getresponse()
        response.text = response.read().decode("utf-8", "replace")
        for line in response.headers.get_all("Set-Cookie") or []:
            self.set_cookie_lines.append(line)
            name, value = line.split(";", 1)[0].split("=", 1)
            self.cookies[name.strip()] = value
        conn.close()
        return response

    def cookie_line(self, name: str) -> str:
        return [line for line in self.set_cookie_lines if line.startswith(name + "=")][-1]

    def log_in(self, username: str, password: str, extra: dict[str, str] | None = None) -> http.client.HTTPResponse:
        page = self.request("GET", "/accounts/login/")
        assert page.status == 200, (page.status, page.getheader("Location"))
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return self.request(
            "POST",
            "/accounts/login/",
            {"csrfmiddlewaretoken": token, "username": username, "password": password},
            headers=extra,
        )


@pytest.fixture
def by_hand(transactional_db, service_env) -> Iterator:
    """follow(setup_block) -> (env, check --deploy output, port): every README step but createdb run
    with the README's environment, gunicorn left running for the test."""
    servers: list[subprocess.Popen] = []

    def follow(*setup_blocks: str):
        env = readme_environment(block_with("export DATABASE_URL", "export ALLOWED_HOSTS"), *setup_blocks)
        env.update(
            PATH=os.environ["PATH"],
            HOME=os.environ.get("HOME", "/tmp"),
            PYTHONPATH=str(ROOT),
            DATABASE_URL=service_env["DATABASE_URL"],
        )
        if os.environ.get("CELERY_BROKER_URL"):
            env["CELERY_BROKER_URL"] = os.environ["CELERY_BROKER_URL"]
        else:
            env.pop("CELERY_BROKER_URL", None)
        port = free_port()
        deploy_check = ""
        for command in steps():
            program = Path(command[0]).name
            if program == "createdb" or program == "celery":
                continue  # the test database exists; workers are tested in test_pipeline_worker
            if program == "python":
                done = subprocess.run(
                    [sys.executable, *command[1:]], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
                )
                assert done.returncode == 0, (command, done.stderr[-3000:])
                if command[1:3] == ["manage.py", "check"]:
                    deploy_check = done.stderr + done.stdout
            elif program == "gunicorn":
                server_env = dict(env, GUNICORN_BIND=f"127.0.0.1:{port}", GUNICORN_WORKERS="1", GUNICORN_THREADS="2")
                servers.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "gunicorn", *command[1:]],
                        env=server_env,
                        cwd=ROOT,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                        start_new_session=True,
                    )
                )
            else:
                raise AssertionError(f"a README step this test does not know how to follow: {command}")
        assert servers, "the README's steps start no web server"
        wait_for_health(port, servers[-1])
        return env, deploy_check, port

    try:
        yield follow
    finally:
        for server in servers:
            try:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(server.pid, signal.SIGKILL)


def wait_for_health(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"gunicorn exited: {server.stderr.read().decode()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("gunicorn did not listen within 90 s")


def security_warnings(check_output: str) -> set[str]:
    return set(re.findall(r"\(security\.(W\d+)\)", check_output))


def documented_warnings() -> set[str]:
    return set(re.findall(r"`(?:security\.)?(W\d{3})`", readme_section()))


def add_user(env: dict[str, str], name: str, role: str) -> None:
    """As the README's review section says: ADJ_PASSWORD=… python manage.py add_user NAME --role ROLE."""
    done = subprocess.run(
        [sys.executable, "manage.py", "add_user", name, "--role", role],
        cwd=ROOT,
        timeout=120,
        env=dict(env, ADJ_PASSWORD=PASSWORD),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def token_for(env: dict[str, str], name: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "drf_create_token", name],
        cwd=ROOT,
        env=env,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return re.search(r"\b([0-9a-f]{40})\b", done.stdout).group(1)


def test_readme_plain_http_setup_serves_over_http_without_redirects(by_hand):
    env, deploy_check, port = by_hand(block_with("SECURE_SSL_REDIRECT=0"))
    assert env["DEBUG"] == "0" and env["SECURE_SSL_REDIRECT"] == "0"
    host = env["ALLOWED_HOSTS"].split(",")[0]
    assert {"W008", "W012", "W016"} <= security_warnings(deploy_check) <= documented_warnings(), deploy_check

    site = Site(port, host)
    health = site.request("GET", "/healthz")
    assert health.status == 200 and json.loads(health.text) == {"ok": True}
    # Anonymous: to the login page over plain HTTP and no further (no redirect loop, no https://).
    path, seen = "/", []
    for _ in range(5):
        response = site.request("GET", path)
        seen.append((path, response.status))
        if response.status not in (301, 302):
            break
        path = response.getheader("Location")
        assert not path.startswith("https:"), seen
    assert response.status == 200 and path.startswith("/accounts/login/"), seen
    assert "content-security-policy" in {k.lower() for k in response.headers}

    add_user(env, "alice", "manager")
    login = site.log_in("alice", PASSWORD)
    assert login.status == 302 and login.getheader("Location") == "/", login.text[:500]
    assert "Secure" not in site.cookie_line("sessionid") and "Secure" not in site.cookie_line("csrftoken")
    assert site.request("GET", "/queues/").status == 200

    api = Site(port, host, {"Authorization": f"Token {token_for(env, 'alice')}"})
    assert api.request("GET", "/api/queues/").status == 200
    # The compose health probe, run against this server with this environment, passes.
    assert subprocess.run(compose_health_probe(port), env=env, timeout=60).returncode == 0


def test_readme_tls_proxy_setup_redirects_all_but_the_health_check(by_hand):
    env, deploy_check, port = by_hand(block_with("TRUSTED_PROXY_COUNT"))
    assert env["DEBUG"] == "0" and "SECURE_SSL_REDIRECT" not in env and env["TRUSTED_PROXY_COUNT"] == "1"
    host = env["ALLOWED_HOSTS"].split(",")[0]
    assert security_warnings(deploy_check) <= documented_warnings() - {"W008", "W012", "W016"}, deploy_check

    # The load balancer's probe, plain HTTP and no X-Forwarded-Proto: answered, not redirected.
    direct = Site(port, host)
    health = direct.request("GET", "/healthz")
    assert health.status == 200 and json.loads(health.text) == {"ok": True}
    assert subprocess.run(compose_health_probe(port), env=env, timeout=60).returncode == 0
    # Anything else that bypasses the proxy is sent to HTTPS.
    login = direct.request("GET", "/accounts/login/")
    assert login.status == 301 and login.getheader("Location") == f"https://{host}/accounts/login/"

    # Through the proxy (the headers of the README's nginx example).
    proxied = Site(port, host, {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7"})
    add_user(env, "bob", "manager")
    response = proxied.log_in("bob", PASSWORD, extra={"Origin": f"https://{host}"})
    assert response.status == 302 and response.getheader("Location") == "/", response.text[:500]
    assert "Secure" in proxied.cookie_line("sessionid") and "Secure" in proxied.cookie_line("csrftoken")
    page = proxied.request("GET", "/queues/")
    assert page.status == 200 and page.getheader("Strict-Transport-Security")
