"""Comparing a base and an RL run that carry different model names (issue 36 item 1): `--pair`
declares them one family, every comparison pairs by it, and the import says when responses under
different ids share one question."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from adjudication.analytics.format_share import compute
from adjudication.analytics.selectors import format_share_observations
from adjudication.ingest.formats import PairingError, parse_pairing
from adjudication.models import Dataset, Run
from adjudication.pipeline.readings import reader_spec_by_name, readings_create

from ..conftest import mc_row, project_table_counts, run_command

pytestmark = pytest.mark.django_db

BASE, CHAT = "Yi-6B", "Yi-6B-Chat"


def yi_rows(*, n: int = 4) -> list[dict]:
    """The base answers unboxed, the chat model boxed: two models' own names, no checkpoint field."""
    rows = []
    for i in range(n):
        rows.append(mc_row(i, id=f"base-{i}", model=BASE, checkpoint=None, response="The answer is (B)."))
        rows.append(mc_row(i, id=f"chat-{i}", model=CHAT, checkpoint=None, response="\\boxed{B}"))
    return rows


def import_file(path, dataset: str = "yi", **options) -> str:
    return run_command("import_responses", str(path), dataset=dataset, no_progress=True, **options)


def comparisons(name: str) -> dict:
    """Format share's comparisons of a dataset under boxed (reported) and fixed."""
    dataset = Dataset.objects.get(name=name)
    ids = list(dataset.responses.values_list("id", flat=True))
    readings_create(reader_specs=[reader_spec_by_name(name=n) for n in ("boxed", "fixed")], response_ids=ids)
    observations = format_share_observations(dataset=dataset, reported="boxed", fixed="fixed")
    return compute(observations, n_boot=10)


def test_pair_gives_each_model_its_checkpoint_and_one_family(write_jsonl):
    out = import_file(write_jsonl(yi_rows()), pair=[f"base={BASE},rl={CHAT}"])
    runs = set(Run.objects.values_list("model", "checkpoint", "family"))
    assert runs == {(BASE, "base", BASE), (CHAT, "rl", BASE)}
    assert f"compared as family {BASE!r}: {BASE} (base), {CHAT} (rl)" in out


def test_without_a_pair_the_two_model_names_give_no_comparison_and_with_it_one(write_jsonl):
    rows = yi_rows()
    unpaired = [{**row, "checkpoint": "base" if row["model"] == BASE else "rl"} for row in rows]
    import_file(write_jsonl(unpaired), dataset="unpaired")
    assert comparisons("unpaired")["comparisons"] == []  # keyed by model: Yi-6B and Yi-6B-Chat never meet
    import_file(write_jsonl(rows, name="again.jsonl"), dataset="paired", pair=[f"base={BASE},rl={CHAT}"])
    (comparison,) = comparisons("paired")["comparisons"]
    assert (comparison["model"], comparison["rl_checkpoint"]) == (BASE, "rl")
    # boxed reads only the chat model's boxes: the whole reported gain is format
    assert comparison["reported_gain"] == pytest.approx(100.0) and comparison["fixed_gain"] == pytest.approx(0.0)


def test_a_row_naming_another_checkpoint_for_a_paired_model_is_an_error(write_jsonl):
    rows = yi_rows()
    rows[1]["checkpoint"] = "sft"
    before = project_table_counts()
    with pytest.raises(CommandError, match=r"line 2, field 'checkpoint'.*--pair declares model 'Yi-6B-Chat'"):
        import_file(write_jsonl(rows), pair=[f"base={BASE},rl={CHAT}"])
    assert project_table_counts() == before


def test_a_pair_naming_a_model_the_file_lacks_is_refused_and_nothing_is_written(write_jsonl):
    before = project_table_counts()
    with pytest.raises(CommandError, match=r"no response of model 'Yi-6B-chat' .*'Yi-6B', 'Yi-6B-Chat'"):
        import_file(write_jsonl(yi_rows()), pair=[f"base={BASE},rl=Yi-6B-chat"])
    assert project_table_counts() == before


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("base=Yi-6B", "at least two checkpoints"),
        ("base=Yi-6B;rl=Yi-6B-Chat", "at least two"),
        ("base=Yi-6B,Yi-6B-Chat", "is not CHECKPOINT=MODEL"),
        ("base=Yi-6B,base=Yi-6B-Chat", "checkpoint 'base' is named twice"),
        ("base=Yi-6B,rl=Yi-6B", "model 'Yi-6B' is named twice"),
    ],
)
def test_a_pair_that_cannot_be_read_says_why(text, reason):
    with pytest.raises(PairingError, match=reason):
        parse_pairing(text)


def test_the_summary_says_when_responses_under_different_ids_share_one_question(write_jsonl):
    # MMLU-Pro holds the same question under two ids: one Question, and the import says so.
    rows = [
        mc_row(0, id="q-100", question="Which sociologist?"),
        mc_row(1, id="q-101", question="Which sociologist?"),
        mc_row(2, id="q-102", question="Another question?"),
    ]
    out = import_file(write_jsonl(rows))
    assert Dataset.objects.get(name="yi").questions.count() == 2
    assert "questions merged: orca-7b@base on mmlu [cot-v1] has 3 responses to 2 distinct questions" in out


def test_no_merge_line_when_every_response_has_its_own_question(write_jsonl):
    assert "merged" not in import_file(write_jsonl([mc_row(0), mc_row(1)]))
