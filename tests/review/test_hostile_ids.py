"""Issue 32: an id from a query string or a form is plain ASCII digits within the column, or the
request is a 400; never a 500 ("²" passes str.isdigit() and fails int()), never another id ("３" is
3 to int()). An id in a URL path that no row can have is a 404: the URL names nothing."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adjudication.validators import ID_MAX, parse_id

from ..conftest import jsonl_writer, world_transaction
from .test_authorization import MATRIX, build_world

pytestmark = pytest.mark.django_db

HOSTILE = {
    "superscript": "²",
    "trailing-superscript": "1²",
    "full-width": "１",
    "arabic-indic": "٣",
    "negative": "-1",
    "plus": "+1",
    "zero": "0",
    "leading-space": " 1",
    "trailing-space": "1 ",
    "decimal": "1.0",
    "hex": "0x1",
    "column-max-plus-one": str(ID_MAX + 1),
    "2**70": str(2**70),
    "5000-digits": "9" * 5000,
    "nul": "1\x00",
    "word": "one",
}

# (role, method, path, the parameter that carries the id, other parameters)
QUERY_IDS = [
    ("annotator", "get", "/review/", "queue", {}),
    ("manager", "get", "/audit/", "dataset", {}),
    ("manager", "post", "/audit/", "dataset", {"reader": "strip-string"}),
    ("manager", "get", "/queues/", "dataset", {}),
    ("manager", "get", "/queues/new/", "dataset", {}),
    ("manager", "post", "/queues/new/", "dataset", {}),
    ("manager", "get", "/items/", "dataset", {}),
    ("manager", "get", "/items/", "queue", {}),
]


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    with world_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            built = build_world(jsonl_writer(tmp_path_factory.mktemp("hostile_ids")))
        yield built


def client_of(users: dict, role: str) -> Client:
    client = Client()
    client.force_login(users[role])
    return client


@pytest.mark.parametrize("value", list(HOSTILE.values()), ids=list(HOSTILE))
def test_the_id_parser_takes_only_plain_ascii_digits_within_the_column(value):
    with pytest.raises(Exception, match="must be an id"):
        parse_id(value)


def test_the_id_parser_reads_a_plain_id():
    assert (parse_id("1"), parse_id("007"), parse_id(str(ID_MAX))) == (1, 7, ID_MAX)


@pytest.mark.parametrize("value", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize(("role", "method", "path", "param", "extra"), QUERY_IDS, ids=lambda v: str(v))
def test_a_hostile_id_in_a_query_string_or_form_is_a_400(world, role, method, path, param, extra, value):
    users, _ = world
    response = getattr(client_of(users, role), method)(path, {param: value, **extra})
    assert response.status_code == 400, (role, method, path, param, value)


@pytest.mark.parametrize(("role", "method", "path", "param", "extra"), QUERY_IDS, ids=lambda v: str(v))
def test_a_plain_id_in_a_query_string_or_form_is_still_read(world, role, method, path, param, extra):
    users, ids = world
    response = getattr(client_of(users, role), method)(path, {param: str(ids[param]), **extra})
    assert response.status_code in (200, 302), (role, method, path, response.status_code)


# Every URL whose path carries an id, as the role the authorization matrix lets in.
PATH_IDS = [
    (route, method, template, role)
    for route, (method, template, expected) in MATRIX.items()
    if "<int:" in route
    for role in sorted(expected)
    if role != "anonymous" and expected[role] not in ("denied", "login")
]


@pytest.mark.parametrize("value", [str(ID_MAX + 1), str(2**70)], ids=["column-max-plus-one", "2**70"])
@pytest.mark.parametrize(("route", "method", "template", "role"), PATH_IDS, ids=lambda v: str(v))
def test_an_id_in_a_url_path_that_no_row_can_have_is_a_404(world, route, method, template, role, value):
    users, _ = world
    path = re.sub(r"\{\w+\}", value, template)
    response = getattr(client_of(users, role), method)(path)
    assert response.status_code == 404, (role, method, path, response.status_code)
