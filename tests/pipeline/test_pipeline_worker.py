"""Readings land in PostgreSQL through a real Celery worker on Redis: one per (response, reader)."""

from __future__ import annotations

from collections import Counter

import pytest

from adjudication.models import Reading, Response

from ..conftest import math_row, mc_row, run_command, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

READERS = ["fixed", "boxed", "strict-match"]


def reading_keys() -> Counter:
    return Counter(Reading.objects.values_list("response_id", "reader_spec__name"))


def test_a_real_worker_writes_exactly_one_reading_per_response_and_reader(write_jsonl, celery_worker):
    rows = [mc_row(i, response=["The answer is (B).", "\\boxed{B}", "I cannot decide."][i % 3]) for i in range(12)]
    rows += [math_row(i) for i in range(6)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="w", no_progress=True)
    run_command("run_readers", dataset="w", readers=READERS, batch_size=5, no_wait=True)
    expected = Response.objects.count() * len(READERS)
    assert wait_until(lambda: Reading.objects.count() >= expected, timeout=180), (
        f"{Reading.objects.count()} of {expected} readings arrived"
    )
    keys = reading_keys()
    assert len(keys) == expected and max(keys.values()) == 1
    boxed = Reading.objects.filter(reader_spec__name="boxed", response__external_id="mc-1").get()
    assert (boxed.verdict, boxed.answer) == ("correct", "B")
    assert Reading.objects.filter(reader_spec__name="boxed", response__external_id="mc-0").get().verdict == "no_answer"

    # a second run finds nothing missing and enqueues nothing
    out = run_command("run_readers", dataset="w", readers=READERS, batch_size=5, no_wait=True)
    assert all(line.split()[1] == "0" for line in out.strip().splitlines())
    assert reading_keys() == keys
