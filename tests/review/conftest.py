"""Fixture base for the review tests: a dataset whose readers disagree, a queue, and users."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from adjudication.models import Dataset, Label, Reading, Response, ReviewQueue
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.review.annotate.services import label_submit, lease_claim_next
from adjudication.review.labels import LabelEntry
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec

from ..conftest import mc_row, reading_at, run_command


def make_user(name: str, *roles: str) -> User:
    user = User.objects.create_user(name, password="pw-" + name + "-123")
    for role in roles:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def label_next(queue: ReviewQueue, user: User, answer: str = "B", kind: str = "option", skip_reason: str = "") -> Label:
    """`user` claims the next item of `queue` and labels it."""
    lease = lease_claim_next(queue=queue, annotator=user).lease
    assert lease is not None
    return label_submit(
        lease=lease, annotator=user, entry=LabelEntry(kind=kind, answer=answer), skip_reason=skip_reason
    )


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


def panel_dataset_build(write_jsonl, name: str, *, with_judge: bool = False) -> tuple[Dataset, dict]:
    """12 MC responses; strict-match reads B everywhere, fixed disputes it on 0-3 (C), boxed on 4-6
    (D) and has not read 11 yet; `with_judge`: a judge reads A on 0 and 7. Returns the dataset and
    the specs by short name (strict, fixed, boxed, judge)."""
    from adjudication.pipeline.readings import reader_spec_get_or_create

    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(12)])), dataset=name, no_progress=True)
    names = {"strict": "strict-match", "fixed": "fixed", "boxed": "boxed"}
    specs = {short: reader_spec_by_name(name=reader) for short, reader in names.items()}
    if with_judge:
        specs["judge"] = reader_spec_get_or_create(
            name="judge-qwen", version="1", config={}, config_hash="j" * 64, kind="judge"
        )
    readings = []
    for i, response in enumerate(Response.objects.filter(dataset__name=name).order_by("id")):
        boxed = None if i == 11 else "D" if 4 <= i < 7 else "B"
        answers = {"strict": "B", "fixed": "C" if i < 4 else "B", "boxed": boxed}
        if with_judge:
            answers["judge"] = "A" if i in (0, 7) else "B"
        readings += [
            Reading(response=response, reader_spec=specs[short], answer=answer, verdict="correct")
            for short, answer in answers.items()
            if answer is not None
        ]
    Reading.objects.bulk_create(readings)
    return Dataset.objects.get(name=name), specs


@pytest.fixture
def queue(db, write_jsonl):
    ds = disputed_dataset(write_jsonl, 6)
    return queue_create(dataset=ds, spec=QueueSpec(name="q", overlap=2, lease_seconds=600))
