"""The one application error base, mapped once per edge: a service's ApplicationError reaches the
user as one line (a command), a 400 with the API's error body (an endpoint) or a form error (a
page), with its message unchanged; a bare ValueError from a service is a bug and is never turned
into a user's error (a traceback from the command, a 500 from the API and the page). And the
settings that travel together: PolicySpec and QueueSpec refuse what their services would, naming
the input."""

from __future__ import annotations

import math
from typing import get_args

import pytest
from django import forms
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from rest_framework.response import Response as ApiResponse
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from adjudication.errors import ApplicationError
from adjudication.forms import form_error_add, form_errors
from adjudication.management.base import ApplicationCommand
from adjudication.models import ReviewQueue, RoutingPolicy
from adjudication.review.errors import ReviewError
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.rules import Compare, Priority
from adjudication.routing.specs import PolicySpec, RoutingError

from .review.conftest import disputed_dataset, make_user


class Failing(ApplicationCommand):
    """A command whose service raises what it is given."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def handle(self, *args, **options) -> None:
        raise self.error


# -- the commands -------------------------------------------------------------------------------


def test_a_commands_application_error_is_a_command_error_with_the_same_line():
    with pytest.raises(CommandError) as raised:
        call_command(
            Failing(RoutingError("seed: Ensure this value is less than or equal to 2147483647.", field="seed"))
        )
    assert str(raised.value) == "seed: Ensure this value is less than or equal to 2147483647."
    assert isinstance(raised.value.__cause__, RoutingError)


def test_on_the_command_line_it_is_one_line_and_exit_status_1(capsys):
    with pytest.raises(SystemExit) as ended:
        Failing(ReviewError("a queue named 'q' exists already")).run_from_argv(["manage.py", "failing"])
    assert ended.value.code == 1
    assert capsys.readouterr().err.strip().splitlines() == ["CommandError: a queue named 'q' exists already"]


@pytest.mark.parametrize("bug", [ValueError("x is not a number"), KeyError("x")], ids=["ValueError", "KeyError"])
def test_a_commands_bare_value_or_key_error_is_not_a_users_error(bug):
    with pytest.raises(type(bug)):
        call_command(Failing(bug))


@pytest.mark.django_db
def test_a_real_command_says_the_services_refusal(write_jsonl):
    disputed_dataset(write_jsonl, 2)
    with pytest.raises(CommandError, match=r"^title: must be one line of printable text \(found"):
        call_command("create_queue", dataset="rv", name="q", title="two\nlines")
    assert not ReviewQueue.objects.exists()


# -- the API ------------------------------------------------------------------------------------


class FailingApi(APIView):
    permission_classes: list = []
    authentication_classes: list = []
    error: Exception = ApplicationError("unused")

    def post(self, request):
        raise self.error

    def get(self, request):
        return ApiResponse({})


def _post(error: Exception):
    view = FailingApi.as_view(error=error)
    return view(APIRequestFactory().post("/api/failing/", {}, format="json"))


def test_an_api_application_error_is_a_400_with_the_one_error_body():
    reply = _post(ReviewError("a queue named 'q' exists already"))
    assert reply.status_code == 400
    assert reply.data == {"error": {"status": 400, "code": "invalid", "message": "a queue named 'q' exists already"}}


def test_an_api_application_error_names_its_field():
    reply = _post(ReviewError("title: at most 200 characters", field="title"))
    assert reply.status_code == 400
    assert reply.data["error"] == {
        "status": 400,
        "code": "invalid",
        "message": "title: at most 200 characters",
        "fields": {"title": ["at most 200 characters"]},
    }


def test_an_api_bare_value_error_is_not_a_400():
    # DRF re-raises what the handler does not answer; Django makes it a 500 (handler500).
    with pytest.raises(ValueError, match="a bug"):
        _post(ValueError("a bug"))


@pytest.mark.django_db
def test_the_queue_api_says_the_specs_refusal_under_its_field(write_jsonl):
    disputed_dataset(write_jsonl, 2)
    client = Client()
    client.force_login(make_user("man", "manager"))
    reply = client.post("/api/queues/", {"dataset": "rv", "name": "q", "title": "two\nlines"}, "application/json")
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["message"].startswith("title: must be one line of printable text")
    assert list(error["fields"]) == ["title"]
    assert not ReviewQueue.objects.exists()


@pytest.mark.django_db
def test_the_queue_api_lets_a_bare_value_error_through(write_jsonl, monkeypatch):
    disputed_dataset(write_jsonl, 2)
    client = Client()
    client.force_login(make_user("man", "manager"))

    def bug(**kwargs):
        raise ValueError("a bug in the service")

    monkeypatch.setattr("adjudication.review.queues.api.queue_create", bug)
    with pytest.raises(ValueError, match="a bug in the service"):
        client.post("/api/queues/", {"dataset": "rv", "name": "q"}, "application/json")


# -- the forms ----------------------------------------------------------------------------------


class TitleForm(forms.Form):
    title = forms.CharField(required=False)


def test_a_form_puts_the_reason_on_the_field_it_names():
    form = TitleForm({"title": "x"})
    assert form.is_valid()
    form_error_add(form, ReviewError("title: at most 200 characters", field="title"))
    assert form.errors == {"title": ["at most 200 characters"]}
    assert form_errors(form) == "title: at most 200 characters"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (ReviewError("a queue named 'q' exists already"), "a queue named 'q' exists already"),
        (ReviewError("annotators: ann do not hold the role", field="annotators"), "annotators: ann do not hold"),
    ],
    ids=["no field", "a field the form does not have"],
)
def test_a_form_says_any_other_refusal_whole_among_its_non_field_errors(error, line):
    form = TitleForm({"title": "x"})
    assert form.is_valid()
    form_error_add(form, error)
    assert form_errors(form).startswith(line) and list(form.errors) == ["__all__"]


@pytest.mark.django_db
def test_the_queue_page_says_the_services_refusal_and_lets_a_bug_through(write_jsonl, monkeypatch):
    ds = disputed_dataset(write_jsonl, 2)
    client = Client()
    client.force_login(make_user("man", "manager"))
    data = {"dataset": ds.pk, "name": "q", "compare": "either", "overlap": 2, "lease_seconds": 900, "action": "create"}
    data["panel"] = list(ds.responses.first().readings.values_list("reader_spec_id", flat=True))
    ReviewQueue.objects.create(name="q", dataset=ds, policy=RoutingPolicy.objects.create(dataset=ds, name="p"))
    page = client.post("/queues/new/", data)
    assert page.status_code == 200
    assert [str(m) for m in page.context["messages"]] == ["a queue named 'q' exists already"]

    def bug(**kwargs):
        raise ValueError("a bug in the service")

    monkeypatch.setattr("adjudication.review.queues.views.queue_create", bug)
    with pytest.raises(ValueError, match="a bug in the service"):
        client.post("/queues/new/", {**data, "name": "other"})


# -- the specs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "field", "line"),
    [
        ({"compare": "loudest"}, "compare", "compare: one of either, answer, verdict"),
        ({"priority": "loudest"}, "priority", "priority: one of disagreement, random, order, information"),
        ({"control_fraction": math.nan}, "control_fraction", "control fraction must be a number between 0 and 1"),
        ({"control_fraction": 1.5}, "control_fraction", "control fraction must be a number between 0 and 1"),
        ({"seed": 2**31}, "seed", "seed: Ensure this value is less than or equal to 2147483647."),
        (
            {"priority": "information", "budget": 0},
            "budget",
            "budget: Ensure this value is greater than or equal to 1.",
        ),
        ({"target": "accuracy"}, "target", "a target and a budget go with priority information only"),
    ],
)
def test_a_policy_spec_refuses_a_setting_naming_it(values, field, line):
    with pytest.raises(RoutingError) as raised:
        PolicySpec(**values)
    assert raised.value.field == field and str(raised.value).startswith(line)


def test_a_policy_spec_is_frozen_and_normalised():
    spec = PolicySpec(panel=["a", "b"], priority="information", target="  accuracy ")
    assert (spec.panel, spec.target) == (("a", "b"), "accuracy")
    with pytest.raises(AttributeError):
        spec.seed = 1  # type: ignore[misc]


def test_the_policy_specs_choices_are_the_models():
    assert list(get_args(Compare)) == RoutingPolicy.Compare.values
    assert list(get_args(Priority)) == RoutingPolicy.Priority.values


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"name": "x" * 201}, "name"),
        ({"name": "two\nlines"}, "name"),
        ({"name": "q", "overlap": 0}, "overlap"),
        ({"name": "q", "lease_seconds": 9}, "lease_seconds"),
        ({"name": "q", "title": "t" * 201}, "title"),
    ],
)
def test_a_queue_spec_refuses_what_its_columns_cannot_hold_naming_the_field(values, field):
    with pytest.raises(ReviewError) as raised:
        QueueSpec(**values)
    assert raised.value.field == field


def test_a_queue_spec_is_built_from_an_edges_values_blank_ones_left_at_their_defaults():
    spec = QueueSpec.from_values(
        {"name": "q", "overlap": 3, "title": " T ", "seed": None, "control_fraction": None, "panel": ["a", "b"]}
    )
    assert (spec.name, spec.overlap, spec.title, spec.routing) == ("q", 3, "T", PolicySpec(panel=("a", "b")))
