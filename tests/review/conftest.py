"""Fixture base for the review tests: a dataset whose readers disagree, a queue, and users."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from adjudication.models import Dataset, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.review.services import queue_create

from ..conftest import mc_row, reading_at, run_command


def make_user(name: str, *roles: str) -> User:
    user = User.objects.create_user(name, password="pw-" + name + "-123")
    for role in roles:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def disputed_dataset(write_jsonl, n: int, name: str = "rv") -> Dataset:
    """n MC responses, each read by two readers that disagree (B vs C), without running readers."""
    rows = [mc_row(i, response=f"Reasoning {i}. The answer is B. Then again \\boxed{{C}}") for i in range(n)]
    run_command("import_responses", str(write_jsonl(rows, name=f"{name}.jsonl")), dataset=name, no_progress=True)
    a, b = reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="boxed")
    readings = []
    for response in Response.objects.filter(dataset__name=name):
        readings += [
            reading_at(response, a, "B", at=response.text.index("B."), verdict="correct"),
            reading_at(response, b, "C", at=response.text.index("{C}") + 1, verdict="incorrect"),
        ]
    Reading.objects.bulk_create(readings)
    return Dataset.objects.get(name=name)


@pytest.fixture
def queue(db, write_jsonl):
    ds = disputed_dataset(write_jsonl, 6)
    return queue_create(dataset=ds, name="q", overlap=2, lease_seconds=600)
