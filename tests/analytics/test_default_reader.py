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
from readers.harness import harness_reader

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
    printed = json.loads(
        run_command("format_share", dataset=mmlu_pro.name, reported_reader="boxed", by="benchmark", json=True)
    )
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


# --- One default for every report command (issue 36 item 13) ----------------------------------


@pytest.mark.django_db
def test_format_share_on_a_dataset_defaults_to_its_harness_reader_and_says_why(mmlu_pro):
    """issue 36 item 13: `format_share --dataset` still defaulted to `boxed` (a 0-point gain and no
    share on MMLU-Pro) while the page used the harness reader."""
    import json

    text = run_command("format_share", dataset=mmlu_pro.name, by="benchmark", bootstrap=0)
    assert text.splitlines()[0] == (
        "reported reader: mmlu-pro-released (mmlu-pro-released reproduces the released harness of MMLU-Pro)"
    )
    printed = json.loads(run_command("format_share", dataset=mmlu_pro.name, bootstrap=0, json=True))
    assert printed["reported_reader"] == "mmlu-pro-released"
    assert printed["pooled"]["reported_gain"] == pytest.approx(100 * 5 / 12)


@pytest.mark.django_db
def test_a_reader_named_on_the_command_line_is_kept_and_said_to_be_named(mmlu_pro):
    """issue 36 item 13: the default resolves only what the user leaves out."""
    text = run_command("format_share", dataset=mmlu_pro.name, reported_reader="boxed", bootstrap=0)
    assert text.splitlines()[0] == "reported reader: boxed (named with --reported-reader)"


@pytest.mark.django_db
def test_the_commands_follow_the_analytics_page_s_last_setting(mmlu_pro, boss):
    """issue 36 item 13: one default for the page, its landing card and the command line."""
    import json

    assert boss.get(f"/analytics/{mmlu_pro.pk}/?reported=multi-choice-regex").status_code == 200
    text = run_command("format_share", dataset=mmlu_pro.name, bootstrap=0)
    assert text.splitlines()[0] == "reported reader: multi-choice-regex (as the analytics page was last set)"
    printed = json.loads(run_command("report", "analytics n_boot=0", dataset=mmlu_pro.name, json=True))
    assert printed["params"]["reported"] == "multi-choice-regex"


@pytest.mark.django_db
def test_report_and_estimate_default_to_the_harness_reader(mmlu_pro):
    """issue 36 item 13: `report "format_share"`, `report "analytics"` and `estimate` defaulted to
    `boxed` through their options' own defaults."""
    import json

    out = run_command("report", "format_share --bootstrap 0", dataset=mmlu_pro.name)
    assert out.startswith("reported reader: mmlu-pro-released (")
    printed = json.loads(run_command("report", "format_share --bootstrap 0", dataset=mmlu_pro.name, json=True))
    assert printed["reported_reader"] == "mmlu-pro-released"
    named = json.loads(
        run_command("report", "format_share --bootstrap 0 --reported-reader boxed", dataset=mmlu_pro.name, json=True)
    )
    assert named["reported_reader"] == "boxed"
    analytics = json.loads(run_command("report", "analytics n_boot=0", dataset=mmlu_pro.name, json=True))
    assert analytics["params"]["reported"] == "mmlu-pro-released"
    lines = run_command("estimate", dataset=mmlu_pro.name).splitlines()
    assert lines[0].startswith("predictor: ")
    assert lines[1].startswith("reported reader: mmlu-pro-released (")


@pytest.mark.django_db
def test_a_default_reader_is_stored_under_the_key_of_the_same_reader_named(mmlu_pro):
    """issue 36 item 13: defaults resolve before the key is built, so a report asked for without
    readers is the report asked for with them; an older bundle's option words that name none still
    replay the options' own default (`boxed`), as they were written."""
    from adjudication.analytics.reports import FormatShareOptions, ReportSpec, default_spec
    from adjudication.bundles.reports import spec_from_stored

    named = ReportSpec("format_share", FormatShareOptions(reported_reader="mmlu-pro-released"))
    resolved = default_spec("format_share", dataset=mmlu_pro)
    assert resolved.options == named.options and resolved.key == named.key
    old = spec_from_stored({"kind": "format_share", "options": ["--bootstrap", "0"], "result": {}}, where="old")
    assert old.options.reported_reader == "boxed"


@pytest.mark.django_db
def test_a_bundle_stores_the_dataset_s_reader_and_replays_it(mmlu_pro, tmp_path):
    """issue 36 item 13: `bundle` (its default reports and a --report naming no reader) carries the
    harness reader by name; the replay on a fresh database gives the same numbers."""
    from adjudication.bundles.services import bundle_open, bundle_replay

    from ..bundles.test_bundle import wipe

    path = tmp_path / "pair.zip"
    run_command("bundle", dataset=mmlu_pro.name, reports=["format_share --bootstrap 0"], out=str(path))
    default = tmp_path / "default.zip"
    run_command("bundle", dataset=mmlu_pro.name, out=str(default))
    for one in (path, default):
        bundle = bundle_open(one)
        members = [bundle.member_json(m["member"]) for m in bundle.manifest["reports"]]
        (fs,) = [m for m in members if m["kind"] == "format_share"]
        assert fs["options"]["reported_reader"] == "mmlu-pro-released"
        assert fs["result"]["pooled"]["reported_gain"] == pytest.approx(100 * 5 / 12)
    wipe()
    result = bundle_replay(path=path)
    assert result.ok, [str(d) for r in result.reports for d in r.differences]


@pytest.mark.django_db
def test_the_report_api_defaults_to_the_dataset_s_reader(mmlu_pro, boss, eager, django_capture_on_commit_callbacks):
    """issue 36 item 13: the format_share report's page and API defaulted to `boxed` too."""
    import json

    for url in (
        f"/api/datasets/{mmlu_pro.pk}/reports/format_share/?bootstrap=0",
        f"/analytics/{mmlu_pro.pk}/reports/format_share.json?bootstrap=0",
    ):
        with django_capture_on_commit_callbacks(execute=True):
            boss.get(url)
        reply = boss.get(url)
        assert reply.status_code == 200, reply.content[:300]
        assert json.loads(reply.content)["reported_reader"] == "mmlu-pro-released"
    page = boss.get(f"/analytics/{mmlu_pro.pk}/reports/format_share/?bootstrap=0").content.decode()
    assert 'value="mmlu-pro-released"' in page


# --- The landing card and the page count the same disputes (issue 36 item 13) -------------------


@pytest.mark.django_db
def test_the_landing_card_s_disputed_count_is_the_analytics_page_s(mmlu_pro, computed, boss):
    """issue 36 item 13: the card said "disputed 54" where the page said 0 for the same readers. A
    queue routed by another panel (boxed against fixed: every response, boxed reads no option)."""
    from adjudication.review.queues.services import queue_create
    from adjudication.review.queues.specs import QueueSpec
    from adjudication.routing.specs import PolicySpec

    queue_create(
        dataset=mmlu_pro,
        spec=QueueSpec(
            name="pair-q", overlap=1, routing=PolicySpec(panel=["boxed", "fixed"], missing_is_disagreement=True)
        ),
    )
    computed(mmlu_pro, reported="mmlu-pro-released")
    home = boss.get("/").content.decode()
    card = re.search(r'data-count="disputed">(\d+)<', home)
    page = boss.get(f"/analytics/{mmlu_pro.pk}/").content.decode()
    overall = re.search(r'<tr data-benchmark="\(all\)" class="overall">.*?data-key="disputed">(\d*)<', page, re.S)
    assert card and overall, (home, page)
    assert int(card.group(1)) == int(overall.group(1)) > 0


# --- The harness reader without reading every question (issue 36 item 13) -----------------------


@pytest.mark.django_db
def test_the_harness_reader_reads_a_bounded_sample_of_golds(write_jsonl, monkeypatch):
    """issue 36 item 13: harness_reader_of read every question's gold on each landing-page request.
    Questions with options are counted in SQL; those without are typed on a bounded sample."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from adjudication.analytics import selectors
    from adjudication.models import Question

    from ..conftest import math_row

    rows = [math_row(i, id=f"m-{i}", benchmark="gsm8k") for i in range(6)]
    rows += [math_row(i, id=f"t-{i}", benchmark="triviaqa", gold=f"George Washington {i}") for i in range(4)]
    rows += [mc_row(i, id=f"c-{i}", benchmark="arc") for i in range(3)]
    run_command("import_responses", str(write_jsonl(rows)), dataset="typed", no_progress=True)
    ds = Dataset.objects.get(name="typed")
    monkeypatch.setattr(selectors, "TASK_TYPE_SAMPLE", 2)
    with CaptureQueriesContext(connection) as queries:
        types, sizes = selectors._benchmark_task_types(dataset=ds)
    assert {b: dict(c) for b, c in types.items()} == {
        "gsm8k": {"maths": 6},
        "triviaqa": {"free_form": 4},
        "arc": {"multiple_choice": 3},
    }
    assert sizes == {"gsm8k": 6, "triviaqa": 4, "arc": 3}
    gold = f'"{Question._meta.db_table}"."gold"'
    reading_golds = [q["sql"] for q in queries.captured_queries if gold in q["sql"]]
    assert reading_golds and all("LIMIT 2" in sql for sql in reading_golds), reading_golds
    assert selectors.harness_reader_of(dataset=ds)[0] == "boxed"  # nothing read: the last resort
