"""The item page collapses a reader's long raw answer (issue 36 item 17: a maths reader's raw answer
is often the whole response, which made a 20,730 px page)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adjudication.models import Dataset, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create

from ..conftest import math_row, run_command
from .conftest import make_user

pytestmark = pytest.mark.django_db


def test_a_long_raw_answer_is_collapsed_and_a_short_one_is_not(write_jsonl):
    """issue 36 item 17: each long raw answer sits in a closed <details>, its length in the summary."""
    long_text = "We compute step by step. " * 40 + "So the result is 7"
    run_command("import_responses", str(write_jsonl([math_row(0, gold="7", response=long_text)])), dataset="long")
    response = Response.objects.get(dataset=Dataset.objects.get(name="long"))
    specs = [reader_spec_by_name(name=n) for n in ("strip-string", "boxed")]
    readings_create(reader_specs=specs, response_ids=[response.pk])
    client = Client()
    client.force_login(make_user("boss-long", "manager"))
    html = client.get(f"/items/{response.pk}/").content.decode()
    table = html.split("raw answer", 1)[1]
    collapsed = re.findall(r'<details class="long-answer"><summary><code>(.*?)</code> \((\d+) characters\)', table)
    assert collapsed, "no long raw answer collapsed"
    assert all(int(n) > 120 and len(summary) <= 80 for summary, n in collapsed)
    assert "<details open" not in table
