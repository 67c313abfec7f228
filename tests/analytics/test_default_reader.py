"""The reported reader follows the dataset's benchmarks, one reason and one disputed count for the
command line, the analytics page and the landing card (issue 36 item 13)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from adjudication.analytics.headline import format_share_headline
from adjudication.analytics.selectors import report_readers
from adjudication.models import Dataset, Response
from adjudication.pipeline.readings import reader_spec_by_name, readings_create
from readers.tasks import harness_reader

from ..conftest import mc_row, run_command
from ..review.conftest import make_user

LETTERS = "ABCDEFGHIJ"
OPTIONS = [f"option {c}" for c in LETTERS]


def _mmlu_pro_rows() -> list[dict]:
    """Ten-option questions, two differently named models standing in for base and RL: the base
    answers right on 4 of 12, the RL one on 9, both as MMLU-Pro's harness reads them, never boxed."""
    rows = []
    for i in range(12):
        gold = LETTERS[i % 10]
        for checkpoint, right in (("base", i < 4), ("rl", i < 9)):
            said = gold if right else LETTERS[(i + 3) % 10]
            rows.append(
                mc_row(
                    i,
                    id=f"{checkpoint}-{i}",
                    question=f"Question {i}?",
                    choices=OPTIONS,
                    gold=gold,
                    response=f"Let me think. The answer is ({said}).",
                    model="yi-6b",  # paired by name here; the pairing itself is item 1's
                    checkpoint=checkpoint,
                    benchmark="MMLU-Pro",
                )
            )
    return rows


@pytest.fixture
def mmlu_pro(write_jsonl) -> Dataset:
    run_command("import_responses", str(write_jsonl(_mmlu_pro_rows())), dataset="mmlu-pro-pair", no_progress=True)
    ds = Dataset.objects.get(name="mmlu-pro-pair")
    ids = list(Response.objects.filter(dataset=ds).values_list("id", flat=True))
    specs = [reader_spec_by_name(name=n) for n in ("boxed", "mmlu-pro-released", "multi-choice-regex", "fixed")]
    readings_create(reader_specs=specs, response_ids=ids)
    return ds


@pytest.fixture
def boss() -> Client:
    client = Client()
    client.force_login(make_user("boss-13", "manager"))
    return client


def test_readers_declare_the_benchmarks_whose_released_harness_they_reproduce():
    """issue 36 item 13: the harness reader for that benchmark, else a per-task-type default."""
    assert harness_reader("MMLU-Pro", "multiple_choice")[0] == "mmlu-pro-released"
    assert harness_reader("mmlu_pro", "multiple_choice")[0] == "mmlu-pro-released"
    assert harness_reader("gsm8k", "maths")[0] == "gsm8k-strict-match"
    assert harness_reader("MATH", "maths")[0] == "boxed"
    assert harness_reader("arc-challenge", "multiple_choice")[0] == "multi-choice-regex"
    assert harness_reader("triviaqa", "free_form")[0] == "qa-exact-match"


@pytest.mark.django_db
def test_a_multiple_choice_dataset_defaults_to_its_harness_reader_and_shows_numbers(mmlu_pro, computed, boss):
    """issue 36 item 13: on MMLU-Pro the page defaulted to `boxed` and showed dashes."""
    assert report_readers(dataset=mmlu_pro).reported == "mmlu-pro-released"
    report = computed(mmlu_pro, reported="mmlu-pro-released")
    assert report.body["headline"]["overall"]["reported_gain"] == pytest.approx(100 * 5 / 12)
    page = boss.get(f"/analytics/{mmlu_pro.pk}/").content.decode()
    assert "Format share per benchmark (mmlu-pro-released → fixed" in page
    gains = re.findall(r'data-key="reported_gain" data-value="([^"]*)"', page)
    assert gains and all(g not in ("", "None") for g in gains)
    assert "mmlu-pro-released reproduces the released harness of MMLU-Pro" in page


@pytest.mark.django_db
def test_no_eligible_comparison_gives_the_comparisons_reason_as_the_command_line_does(mmlu_pro, computed):
    """issue 36 item 13: `boxed` reads no box here, so its gain is 0: the headline says so (as
    `format_share` does), not "no eligible comparison (a base checkpoint beside an RL one…)"."""
    import json

    head = computed(mmlu_pro, reported="boxed").body["headline"]
    printed = json.loads(run_command("format_share", dataset=mmlu_pro.name, by="benchmark", json=True))
    cli_reason = printed["comparisons"][0]["format_share_error"]
    assert cli_reason.startswith("reported gain is 0 points")
    assert cli_reason in head["overall"]["error"] and cli_reason in head["by_benchmark"][0]["error"]
    assert "a base checkpoint beside" not in head["overall"]["error"]
    # The gains stand beside the reason (no dashes): the comparison's own, 0 and the fixed one.
    assert head["overall"]["reported_gain"] == 0 and head["overall"]["fixed_gain"] == pytest.approx(100 * 5 / 12)
    assert (
        format_share_headline(printed, reported="boxed", fixed="fixed")["overall"]["error"] == head["overall"]["error"]
    )


@pytest.mark.django_db
def test_the_landing_card_shows_the_readers_the_page_was_last_set_to(mmlu_pro, computed, boss):
    """issue 36 item 13: the landing card kept `boxed` whatever the page was set to."""
    computed(mmlu_pro, reported="mmlu-pro-released")
    computed(mmlu_pro, reported="multi-choice-regex")

    def card_reader() -> str:
        home = boss.get("/").content.decode()
        found = re.search(r'data-reader="reported">([^<]+)<', home)
        assert found, home
        return found.group(1)

    assert card_reader() == "mmlu-pro-released"
    assert boss.get(f"/analytics/{mmlu_pro.pk}/?reported=multi-choice-regex").status_code == 200
    assert card_reader() == "multi-choice-regex"
    # And the page without parameters follows the same choice.
    assert (
        "Format share per benchmark (multi-choice-regex → fixed"
        in boss.get(f"/analytics/{mmlu_pro.pk}/").content.decode()
    )
