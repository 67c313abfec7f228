"""The queue form's panel follows the dataset's task types (issue 36 item 4): it starts with the
dataset's default panel ticked, not every reader; it offers a preset per task type present and
"none" / "all"; and a preview that routes most of the dataset is a warning naming why, not a green
success."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adjudication.models import Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name

from ..conftest import mc_row, run_command
from .conftest import make_user
from .test_queue_management import form_data

pytestmark = pytest.mark.django_db

N_MC = 10


def build(write_jsonl, *, maths: int = 0):
    """N_MC multiple-choice responses (and `maths` open maths ones), read by two multiple-choice
    readers that agree (strict-match, fixed) and a maths reader (sympy-cascade) that reads a number
    off every multiple-choice response: it disputes them all."""
    rows = [mc_row(i) for i in range(N_MC)]
    rows += [mc_row(100 + i, choices=None, gold="42", response="So x = 42.") for i in range(maths)]
    for row in rows:
        if row["choices"] is None:
            del row["choices"]
    run_command("import_responses", str(write_jsonl(rows)), dataset="tt", no_progress=True)
    specs = {name: reader_spec_by_name(name=name) for name in ("strict-match", "fixed", "sympy-cascade")}
    readings = []
    for response in Response.objects.filter(dataset__name="tt"):
        mc = response.external_id.startswith("mc-") and int(response.external_id[3:]) < 100
        answers = (
            {"strict-match": "B", "fixed": "B", "sympy-cascade": "7"} if mc else {"fixed": "42", "sympy-cascade": "42"}
        )
        for name, spec in specs.items():
            answer = answers.get(name)
            verdict = "no_answer" if answer is None else "correct" if answer in ("B", "42") else "incorrect"
            readings.append(
                Reading(response=response, reader_spec=spec, answer=answer, canonical=answer, verdict=verdict)
            )
    Reading.objects.bulk_create(readings)
    return response.dataset, specs


def ticked(body: str) -> set[int]:
    return {int(pk) for pk in re.findall(r'name="panel" value="(\d+)" checked>', body)}


def manager() -> Client:
    client = Client()
    client.force_login(make_user("man", "manager"))
    return client


def form(dataset, panel, **overrides) -> dict:
    """test_queue_management's form, with a 0.3 control share."""
    return form_data(dataset, panel, **{"control_fraction": "0.3", **overrides})


def test_the_form_ticks_the_default_panel_of_the_datasets_task_type_not_every_reader(write_jsonl):
    dataset, specs = build(write_jsonl)
    body = manager().get(f"/queues/new/?dataset={dataset.pk}").content.decode()
    assert f'name="panel" value="{specs["sympy-cascade"].pk}"' in body  # offered
    assert ticked(body) == {specs["strict-match"].pk, specs["fixed"].pk}


def test_presets_per_task_type_and_none_and_all_retick_the_panel_and_keep_the_rest(write_jsonl):
    dataset, specs = build(write_jsonl, maths=2)
    client = manager()
    body = client.get(f"/queues/new/?dataset={dataset.pk}").content.decode()
    for key in ("default", "multiple_choice", "maths", "none", "all"):
        assert f'name="preset" value="{key}"' in body, key
    assert "(10 questions)" in body and "(2 questions)" in body
    everything = {s.pk for s in specs.values()}
    want = {
        "none": set(),
        "all": everything,
        "multiple_choice": {specs["strict-match"].pk, specs["fixed"].pk},
        "maths": {specs["fixed"].pk, specs["sympy-cascade"].pk},
        "default": everything,
    }
    for key, panel in want.items():
        page = client.post("/queues/new/", form(dataset, [specs["fixed"]], preset=key, title="Round 7"))
        assert page.status_code == 200
        text = page.content.decode()
        assert ticked(text) == panel, key
        # only the panel changes: what was typed stays, and a preset routes nothing
        assert 'value="Round 7"' in text and 'value="0.3"' in text and 'id="preview"' not in text


def test_a_panel_that_routes_most_of_the_dataset_is_a_warning_with_its_reason(write_jsonl):
    dataset, specs = build(write_jsonl)
    client = manager()
    everything = client.post("/queues/new/", form(dataset, list(specs.values())))
    text = everything.content.decode()
    assert 'id="preview-routed">10<' in text
    assert 'class="preview preview-warning"' in text
    warning = re.search(r'<p class="warning" id="preview-warning">(.*?)</p>', text, re.S).group(1)
    assert "10 of 10 responses (100%)" in warning and "sympy-cascade does not apply" in warning
    assert "multiple choice" in warning
    fitting = client.post("/queues/new/", form(dataset, [specs["strict-match"], specs["fixed"]])).content.decode()
    assert 'class="preview"' in fitting and "preview-warning" not in fitting


def test_a_queue_made_without_a_panel_routes_by_the_default_panel_of_the_task_type(write_jsonl):
    """issue 36 item 4 (the command and API side of the form's default): create_queue without
    --panel leaves out the maths reader that disputes every multiple-choice response."""
    from adjudication.models import ReviewQueue

    dataset, _specs = build(write_jsonl)
    run_command("create_queue", dataset=dataset.name, name="q", overlap=1)
    queue = ReviewQueue.objects.get(name="q")
    assert sorted(queue.policy.panel.values_list("name", flat=True)) == ["fixed", "strict-match"]
    assert queue.items.count() == 0  # the two multiple-choice readers agree everywhere
