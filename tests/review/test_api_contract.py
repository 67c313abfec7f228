"""The API's contract (issue 17, item 7): 401 with a challenge for missing or wrong credentials, 403
for a role that may not, token authentication for scripts, one error body for every status, and a
schema that documents every response of every operation."""

from __future__ import annotations

import base64
import re
import threading

import pytest
from django.core.cache import cache
from django.db import connections, transaction
from django.test import Client

from adjudication.models import QueueItem
from adjudication.review.queues.specs import QueueSpec

from ..conftest import run_command
from .conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db

PASSWORD = "pw-ann-123"  # make_user("ann", …)'s


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def error_of(response, status: int, code: str) -> dict:
    """The shared error body, checked: {"error": {"status", "code", "message", …}}."""
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert error["status"] == status and error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"], error
    assert set(error) <= {"status", "code", "message", "fields", "retry_after"}, error
    return error


def token_for(username: str) -> str:
    out = run_command("drf_create_token", username)
    return re.search(r"([0-9a-f]{40})", out).group(1)


# -- 401 with WWW-Authenticate, 403 for the wrong role ---------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, "Token " + "0" * 40, "Token", basic("ann", "wrong-password"), basic("nobody", "x")],
    ids=["anonymous", "wrong-token", "malformed-token", "wrong-password", "unknown-user"],
)
def test_missing_or_wrong_credentials_get_401_with_a_challenge(authorization):
    make_user("ann", "annotator")
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    reply = Client().get("/api/queues/", **headers)
    error = error_of(reply, 401, "not_authenticated" if authorization is None else "authentication_failed")
    assert reply["WWW-Authenticate"] == "Token"
    assert "fields" not in error


def test_an_authenticated_user_without_the_role_gets_403_not_401():
    make_user("ann", "annotator")
    key = token_for("ann")
    for headers in ({"HTTP_AUTHORIZATION": f"Token {key}"}, {"HTTP_AUTHORIZATION": basic("ann", PASSWORD)}):
        reply = Client().get("/api/datasets/", **headers)
        error_of(reply, 403, "permission_denied")
        assert "WWW-Authenticate" not in reply
    session = Client()
    session.force_login(make_user("adj", "adjudicator"))
    error_of(session.get("/api/queues/"), 403, "permission_denied")


def test_a_session_write_still_needs_its_csrf_token():
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("man", "manager"))
    refused = client.post("/api/queues/", {"dataset": "none", "name": "q"}, content_type="application/json")
    assert "CSRF" in error_of(refused, 403, "permission_denied")["message"]
    client.get("/queues/")  # a page sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    allowed = client.post(
        "/api/queues/", {"dataset": "none", "name": "q"}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert "dataset" in error_of(allowed, 400, "invalid")["fields"]  # past authentication: no such dataset


def test_a_token_needs_no_csrf_token_and_drives_the_whole_flow(write_jsonl):
    """The script path: a token from drf_create_token claims, labels and reads, with no session."""
    ds = disputed_dataset(write_jsonl, 1)
    make_user("man", "manager")
    make_user("ann", "annotator")
    manager = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {token_for('man')}")
    annotator = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Token {token_for('ann')}")
    created = manager.post("/api/queues/", {"dataset": ds.name, "name": "t", "overlap": 1}, "application/json")
    assert created.status_code == 201, created.content
    queue_id = created.json()["id"]
    item = annotator.post(f"/api/queues/{queue_id}/claim/")
    assert item.status_code == 200
    labelled = annotator.post(
        f"/api/leases/{item.json()['lease']}/label/", {"kind": "option", "answer": "C"}, "application/json"
    )
    assert labelled.status_code == 201 and isinstance(labelled.json()["label"], int)
    assert annotator.post(f"/api/queues/{queue_id}/claim/").status_code == 204
    assert manager.get(f"/api/queues/{queue_id}/status/").json()["one_label"] == 1


def test_basic_auth_lockout_answers_429_in_the_error_body(settings):
    settings.AXES_FAILURE_LIMIT = 3
    make_user("ann", "annotator")
    client = Client(REMOTE_ADDR="198.51.100.40")
    for i in range(3):
        client.get("/api/queues/", HTTP_AUTHORIZATION=basic("ann", f"guess-{i}"))
    locked = client.get("/api/queues/", HTTP_AUTHORIZATION=basic("ann", PASSWORD))
    error = error_of(locked, 429, "locked_out")
    assert error["retry_after"] > 0 and int(locked["Retry-After"]) == error["retry_after"]
    # The login form still shows its page, not JSON.
    page = Client(REMOTE_ADDR="198.51.100.40").post("/accounts/login/", {"username": "ann", "password": PASSWORD})
    assert page.status_code == 429 and "Too many failed log-in attempts" in page.content.decode()


# -- one error body for every status -------------------------------------------------------------------


@pytest.fixture
def manager() -> Client:
    client = Client()
    client.force_login(make_user("man", "manager"))
    return client


def test_a_validation_error_names_each_refused_field(manager, queue):
    reply = manager.post("/api/queues/", {"dataset": "rv", "name": "q2", "overlap": 0}, content_type="application/json")
    error = error_of(reply, 400, "invalid")
    assert list(error["fields"]) == ["overlap"] and error["message"].startswith("overlap: ")
    bad_fmt = manager.get(f"/api/queues/{queue.pk}/final-labels/?fmt=xlsx")
    assert error_of(bad_fmt, 400, "invalid")["fields"] == {"fmt": ["one of jsonl, csv, parquet"]}


def test_a_refusal_without_fields_is_one_message(write_jsonl):
    ds = disputed_dataset(write_jsonl, 1)
    client = Client()
    client.force_login(make_user("ann", "annotator"))
    from adjudication.review.queues.services import queue_create

    queue = queue_create(dataset=ds, spec=QueueSpec(name="q", overlap=1))
    lease = client.post(f"/api/queues/{queue.pk}/claim/").json()["lease"]
    reply = client.post(f"/api/leases/{lease}/label/", {"kind": "option", "answer": "Q"}, "application/json")
    error = error_of(reply, 400, "invalid")
    assert "fields" not in error and "one of A, B, C, D" in error["message"]
    unparsable = client.post(f"/api/leases/{lease}/label/", "{not json", content_type="application/json")
    error_of(unparsable, 400, "parse_error")
    wrong_type = client.post(f"/api/leases/{lease}/label/", "kind=option", content_type="text/plain")
    error_of(wrong_type, 415, "unsupported_media_type")


def test_missing_objects_and_missing_urls_are_404_in_the_same_body(manager):
    error_of(manager.get("/api/queues/999999/status/"), 404, "not_found")
    unknown = error_of(manager.get("/api/no-such-endpoint/"), 404, "not_found")
    assert "/api/no-such-endpoint/" in unknown["message"]
    # Pages keep Django's own 404 page.
    page = manager.get("/no-such-page/")
    assert page.status_code == 404 and not page["Content-Type"].startswith("application/json")


def test_a_wrong_method_is_405(manager):
    error_of(manager.delete("/api/queues/"), 405, "method_not_allowed")


def test_throttled_calls_get_429_with_retry_after(monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "2/min", "anon": "2/min"})
    user = make_user("man", "manager")
    cache.delete(f"throttle_user_{user.pk}")
    client = Client()
    client.force_login(user)
    replies = [client.get("/api/datasets/") for _ in range(3)]
    error = error_of(replies[-1], 429, "throttled")
    assert error["retry_after"] >= 1 and int(replies[-1]["Retry-After"]) >= 1
    cache.delete(f"throttle_user_{user.pk}")


def test_a_crash_is_a_500_in_the_error_body_without_its_details(manager, monkeypatch, queue):
    from adjudication.review.queues import api

    def crash(**kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(api, "queue_status", crash)
    client = Client(raise_request_exception=False)
    client.cookies = manager.cookies
    reply = client.get(f"/api/queues/{queue.pk}/status/")
    error = error_of(reply, 500, "server_error")
    assert "secret" not in reply.content.decode() and "log" in error["message"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_claim_while_every_item_is_locked_is_409_busy_and_when_none_is_left_204(write_jsonl):
    if connections["default"].vendor != "postgresql":
        pytest.skip("busy comes from SKIP LOCKED row locks (PostgreSQL)")
    from adjudication.review.queues.services import queue_create

    queue = queue_create(dataset=disputed_dataset(write_jsonl, 1), spec=QueueSpec(name="q", overlap=1))
    client = Client()
    client.force_login(make_user("ann", "annotator"))
    locked, release = threading.Event(), threading.Event()

    def hold_the_only_item() -> None:
        try:
            with transaction.atomic():
                list(QueueItem.objects.select_for_update().filter(queue=queue))
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_only_item)
    holder.start()
    try:
        assert locked.wait(30)
        reply = client.post(f"/api/queues/{queue.pk}/claim/")
        error = error_of(reply, 409, "busy")
        assert error["retry_after"] >= 1 and reply["Retry-After"] == str(error["retry_after"])
    finally:
        release.set()
        holder.join(30)
    claimed = client.post(f"/api/queues/{queue.pk}/claim/")
    assert claimed.status_code == 200
    client.post(f"/api/leases/{claimed.json()['lease']}/label/", {"kind": "option", "answer": "B"}, "application/json")
    done = client.post(f"/api/queues/{queue.pk}/claim/")
    assert done.status_code == 204 and done.content == b""


# -- the schema documents every response ------------------------------------------------------------------


@pytest.fixture
def schema(manager) -> dict:
    reply = manager.get("/api/schema/?format=json")
    assert reply.status_code == 200
    return reply.json()


def _operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, operation


def _ref(response: dict) -> str | None:
    return response.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")


def test_every_operation_documents_its_success_and_its_errors(schema):
    error_ref = "#/components/schemas/Error"
    assert set(schema["components"]["schemas"]["Error"]["properties"]) == {"error"}
    operations = list(_operations(schema))
    documented = {path for path, _, _ in operations}
    from adjudication.api_urls import urlpatterns

    routes = {"/api/" + re.sub(r"<int:(\w+)>", r"{\1}", str(p.pattern)) for p in urlpatterns}
    assert routes - documented == {"/api/schema/", "/api/docs/"}, routes - documented
    for path, method, operation in operations:
        where = f"{method.upper()} {path}"
        responses = operation["responses"]
        successes = [code for code in responses if code.startswith("2")]
        assert successes, f"{where} documents no success"
        for code in successes:
            if code != "204":
                assert responses[code].get("content"), f"{where} {code} has no body documented"
        wanted = {"401", "403", "429", "500", "default"}
        if "{" in path:
            wanted.add("404")
        if operation.get("requestBody") or any(p["in"] == "query" for p in operation.get("parameters", [])):
            wanted.add("400")
        for code in wanted:
            assert code in responses, f"{where} does not document {code}"
            assert _ref(responses[code]) == error_ref, f"{where} {code} is not the shared error body"
            assert responses[code]["description"], f"{where} {code} has no description"
        assert operation.get("security"), f"{where} documents no authentication"


def test_the_schema_names_the_downloads_the_busy_claim_and_the_token(schema):
    paths = schema["paths"]
    claim = paths["/api/queues/{queue_id}/claim/"]["post"]["responses"]
    assert set(claim) >= {"200", "204", "409"} and "busy" in claim["409"]["description"]
    assert _ref(claim["200"]) == "#/components/schemas/BlindedItem"
    for table in ("final-labels", "labels"):
        get = paths[f"/api/queues/{{queue_id}}/{table}/"]["get"]
        assert set(get["responses"]["200"]["content"]) == {
            "application/x-ndjson",
            "text/csv",
            "application/vnd.apache.parquet",
        }
        fmt = next(p for p in get["parameters"] if p["name"] == "fmt")
        assert set(fmt["schema"]["enum"]) == {"jsonl", "csv", "parquet"}
    status = paths["/api/queues/{queue_id}/status/"]["get"]["responses"]["200"]
    assert _ref(status) == "#/components/schemas/QueueStatus"
    final_row = schema["components"]["schemas"]["FinalLabelRow"]["properties"]
    assert {"final_kind", "final_notes", "decided_by", "decided_at", "labels", "decision_history"} <= set(final_row)
    label_row = schema["components"]["schemas"]["LabelRow"]["properties"]
    assert {"skip_reason", "guidelines_version", "seconds_spent", "revises", "invalidated_at"} <= set(label_row)
    assert paths["/api/leases/{lease_id}/label/"]["post"]["responses"]["201"]["content"]
    schemes = schema["components"]["securitySchemes"]
    assert set(schemes) == {"tokenAuth", "cookieAuth", "basicAuth"}
    assert "drf_create_token" in schemes["tokenAuth"]["description"]
    assert "error" in schema["info"]["description"] and "Token" in schema["info"]["description"]


def test_the_docs_page_is_for_logged_in_users_and_loads_nothing_from_elsewhere(manager):
    anonymous = Client().get("/api/docs/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    page = manager.get("/api/docs/")
    html = page.content.decode()
    assert page.status_code == 200 and "swagger-ui-bundle.js" in html
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("/") for s in sources), sources
    assert "<style" not in html and re.search(r"<script>", html) is None  # nothing inline
    script = manager.get(next(s for s in sources if "script" in s))
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()
    policy = page["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe" not in policy
