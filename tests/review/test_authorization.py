"""Authorization matrix: anonymous, annotator, adjudicator and manager against every URL."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from adjudication.models import AuditRun, Dataset
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec

from ..conftest import jsonl_writer, world_transaction
from .conftest import disputed_dataset, make_user

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "annotator", "adjudicator", "manager")
OK, DENIED, LOGIN = "ok", "denied", "login"
UNAUTHENTICATED = "401"  # the API: no credentials, so a challenge (WWW-Authenticate), not a login page

# route pattern -> (method, path template, {role: expected}); a role missing from the map is DENIED
MATRIX: dict[str, tuple[str, str, dict[str, str]]] = {
    "": ("get", "/", {"annotator": "redirect", "adjudicator": "redirect", "manager": OK}),
    "healthz": ("get", "/healthz", {"anonymous": OK, "annotator": OK, "adjudicator": OK, "manager": OK}),
    "accounts/login/": (
        "get",
        "/accounts/login/",
        {"anonymous": OK, "annotator": OK, "adjudicator": OK, "manager": OK},
    ),
    "accounts/logout/": ("post", "/accounts/logout/", {"annotator": LOGIN, "adjudicator": LOGIN, "manager": LOGIN}),
    "datasets/<int:dataset_id>/": ("get", "/datasets/{dataset}/", {"manager": OK}),
    "datasets/<int:dataset_id>/run/": ("post", "/datasets/{dataset}/run/", {"manager": "redirect"}),
    # No judge in this world: the empty form again (400), its refusal shown beside the judges.
    "datasets/<int:dataset_id>/judge/": ("post", "/datasets/{dataset}/judge/", {"manager": "client_error"}),
    "review/": ("get", "/review/", {"annotator": "redirect"}),
    "review/item/<int:lease_id>/": ("get", "/review/item/{lease}/", {"annotator": OK}),
    "review/queues/<int:queue_id>/mine/": ("get", "/review/queues/{queue}/mine/", {"annotator": OK}),
    "review/queues/<int:queue_id>/guidelines/": (
        "get",
        "/review/queues/{queue}/guidelines/",
        {"annotator": OK, "adjudicator": OK, "manager": OK},
    ),
    "queues/<int:queue_id>/guidelines/": ("get", "/queues/{queue}/guidelines/", {"manager": OK}),
    "adjudicate/": ("get", "/adjudicate/", {"adjudicator": OK}),
    "adjudicate/<int:item_id>/": ("get", "/adjudicate/{item}/", {"adjudicator": OK}),
    "queues/": ("get", "/queues/", {"manager": OK}),
    # An empty form: the page again (400), with the message naming the dataset field.
    "queues/new/": ("post", "/queues/new/", {"manager": "client_error"}),
    "queues/<int:queue_id>/": ("get", "/queues/{queue}/", {"manager": OK}),
    "queues/<int:queue_id>/state/": ("post", "/queues/{queue}/state/", {"manager": "redirect"}),
    "queues/<int:queue_id>/title/": ("post", "/queues/{queue}/title/", {"manager": "redirect"}),
    "queues/<int:queue_id>/annotators/": ("post", "/queues/{queue}/annotators/", {"manager": "redirect"}),
    "queues/<int:queue_id>/sync/": ("post", "/queues/{queue}/sync/", {"manager": "redirect"}),
    "queues/<int:queue_id>/reopen-skips/": ("post", "/queues/{queue}/reopen-skips/", {"manager": "redirect"}),
    "queues/<int:queue_id>/final-labels.<str:fmt>": ("get", "/queues/{queue}/final-labels.jsonl", {"manager": OK}),
    "items/": ("get", "/items/", {"manager": OK}),
    "items/<int:response_id>/": ("get", "/items/{response}/", {"manager": OK}),
    "queues/<int:queue_id>/labels.<str:fmt>": ("get", "/queues/{queue}/labels.parquet", {"manager": OK}),
    "api/schema/": ("get", "/api/schema/", {"annotator": OK, "adjudicator": OK, "manager": OK}),
    # A page for people: anonymous visitors are sent to the login form, like every other page.
    "api/docs/": ("get", "/api/docs/", {"anonymous": LOGIN, "annotator": OK, "adjudicator": OK, "manager": OK}),
    "api/datasets/": ("get", "/api/datasets/", {"manager": OK}),
    "api/datasets/<int:dataset_id>/progress/": ("get", "/api/datasets/{dataset}/progress/", {"manager": OK}),
    "api/datasets/<int:dataset_id>/run-readers/": ("post", "/api/datasets/{dataset}/run-readers/", {"manager": OK}),
    "api/queues/": ("get", "/api/queues/", {"annotator": OK, "manager": OK}),
    "api/queues/<int:queue_id>/": ("patch", "/api/queues/{queue}/", {"manager": OK}),
    "api/queues/<int:queue_id>/claim/": ("post", "/api/queues/{queue}/claim/", {"annotator": OK}),
    "api/queues/<int:queue_id>/status/": ("get", "/api/queues/{queue}/status/", {"manager": OK}),
    "api/queues/<int:queue_id>/final-labels/": ("get", "/api/queues/{queue}/final-labels/", {"manager": OK}),
    "api/queues/<int:queue_id>/labels/": ("get", "/api/queues/{queue}/labels/?fmt=csv", {"manager": OK}),
    "api/leases/<int:lease_id>/": ("get", "/api/leases/{lease}/", {"annotator": OK}),
    "api/leases/<int:lease_id>/label/": ("post", "/api/leases/{lease}/label/", {"annotator": "client_error"}),
    "api/labels/<int:label_id>/revise/": ("post", "/api/labels/{label}/revise/", {"annotator": "client_error"}),
    "analytics/<int:dataset_id>/": ("get", "/analytics/{dataset}/", {"manager": OK}),
    "analytics/<int:dataset_id>/judge-versions/": ("get", "/analytics/{dataset}/judge-versions/", {"manager": OK}),
    "analytics/<int:dataset_id>/<slug:table>.<slug:fmt>": (
        "get",
        "/analytics/{dataset}/agreement.csv",
        {"manager": "unavailable"},  # allowed in; no stored report yet (tests/analytics/test_stored_reports.py)
    ),
    # Every report kind's page, its JSON and its API: managers only; no stored report yet (not eager).
    "analytics/<int:dataset_id>/reports/<slug:kind>/": (
        "get",
        "/analytics/{dataset}/reports/agreement/",
        {"manager": OK},
    ),
    "analytics/<int:dataset_id>/reports/<slug:kind>.json": (
        "get",
        "/analytics/{dataset}/reports/consensus.json",
        {"manager": "unavailable"},
    ),
    **{
        f"api/datasets/<int:dataset_id>/reports/{kind}/": (
            "get",
            f"/api/datasets/{{dataset}}/reports/{kind}/" + ("?run={audit}" if kind == "audit_run" else ""),
            {"manager": "unavailable"},
        )
        for kind in (
            "format_share",
            "agreement",
            "consensus",
            "audit",
            "audit_run",
            "analytics",
            "estimates",
            "judge_card",
        )
    },
    "bundles/analytics/<int:dataset_id>/": ("get", "/bundles/analytics/{dataset}/", {"manager": OK}),
    # a job page (202): the bundle of a run not done fails after the response (bundles.jobs)
    "bundles/audit/<int:audit_id>/": ("get", "/bundles/audit/{audit}/", {"manager": OK}),
    "audit/": ("get", "/audit/", {"manager": OK}),
    "audit/<int:audit_id>/": ("get", "/audit/{audit}/", {"manager": OK}),
    "audit/<int:audit_id>/resume/": ("post", "/audit/{audit}/resume/", {"manager": "redirect"}),
}


def all_routes(resolver=None, prefix: str = "") -> list[str]:
    routes = []
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if str(entry.pattern).startswith("admin/"):
                continue  # Django admin: staff only, its own login
            routes += all_routes(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            routes.append(prefix + str(entry.pattern))
    return routes


def test_the_matrix_covers_every_url():
    missing = sorted(set(all_routes()) - set(MATRIX))
    assert not missing, f"add these URLs to the authorization matrix: {missing}"


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    """Users of every role and one of each object the URLs name, built once for the whole matrix
    (each case runs in a savepoint of the world's transaction: what a POST changes is undone)."""
    with world_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            built = build_world(jsonl_writer(tmp_path_factory.mktemp("authorization")))
        yield built


def build_world(write_jsonl) -> tuple[dict, dict]:
    queue = queue_create(
        dataset=disputed_dataset(write_jsonl, 6), spec=QueueSpec(name="q", overlap=2, lease_seconds=600)
    )
    users = {
        "annotator": make_user("ann", "annotator"),
        "adjudicator": make_user("adj", "adjudicator"),
        "manager": make_user("man", "manager"),
    }
    # An item in conflict (adjudicators see only those), labelled by two other annotators.
    for name, answer in (("x", "B"), ("y", "C")):
        other = make_user(name, "annotator")
        conflict = lease_claim_next(queue=queue, annotator=other).lease
        label_submit(lease=conflict, annotator=other, entry=LabelEntry(kind="option", answer=answer))
    # The annotator has labelled one item (their label can be revised) and holds the next.
    done = lease_claim_next(queue=queue, annotator=users["annotator"]).lease
    label = label_submit(lease=done, annotator=users["annotator"], entry=LabelEntry(kind="option", answer="A"))
    lease = lease_claim_next(queue=queue, annotator=users["annotator"]).lease
    ids = {"dataset": Dataset.objects.get().pk, "queue": queue.pk, "lease": lease.pk, "item": conflict.item_id}
    ids["label"] = label.pk
    ids["response"] = conflict.item.review_item.response_id
    ids["audit"] = AuditRun.objects.create(dataset_id=ids["dataset"], readers=["strip-string"]).pk
    return users, ids


def outcome(response, role: str) -> str:
    code = response.status_code
    if code == 401:
        assert response.get("WWW-Authenticate"), "a 401 without its challenge"
        return UNAUTHENTICATED
    if code == 403:
        return DENIED
    if code == 302 and "/accounts/login/" in response["Location"]:
        return LOGIN
    if code == 302:
        return "redirect"
    if code in (400, 409):
        return "client_error"  # allowed in, refused the (empty) payload
    if code in (200, 201, 202, 204):
        return OK
    if code == 503 and response.has_header("Retry-After"):
        return "unavailable"  # allowed in, asked to come back: what it serves is being computed
    return f"status {code}"


@pytest.fixture(autouse=True)
def _report_without_consensus_bootstrap(settings) -> None:
    """The analytics bundle's report without its consensus bootstrap (each replicate refits the
    model: ~10 s for the page's 50): the matrix checks who may download it, not its intervals."""
    settings.ANALYTICS_CONSENSUS_BOOTSTRAP = 0


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", list(MATRIX))
def test_authorization_matrix(world, route, role):
    users, ids = world
    method, template, expected = MATRIX[route]
    client = Client()
    if role != "anonymous":
        client.force_login(users[role])
    response = getattr(client, method)(template.format(**ids))
    # Anonymous: pages redirect to the login form; the API answers 401 with WWW-Authenticate.
    default = (UNAUTHENTICATED if route.startswith("api/") else LOGIN) if role == "anonymous" else DENIED
    want = expected.get(role, default)
    got = outcome(response, role)
    assert got == want, f"{role} {method.upper()} {template}: {got}, want {want}"
