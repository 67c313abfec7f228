"""Judge versions: the seeded split of human labels, few-shot examples drawn from the pool's
disagreements, each version judged through the loopback server as a reader of its own, and its
agreement measured on the held-out labels only."""

from __future__ import annotations

import json
import random
import re

import pytest
from django.test import Client

from adjudication.analytics.bias import judge_bias
from adjudication.analytics.selectors import judge_template_hashes
from adjudication.analytics.versions.compare import (
    VersionReadings,
    compare_versions,
    held_out_side,
    paired_test,
    split_sides,
)
from adjudication.models import (
    Dataset,
    FinalLabel,
    JudgeSplit,
    QueueItem,
    ReaderSpec,
    Reading,
    ReviewItem,
    ReviewQueue,
    RoutingPolicy,
)
from judges.models import Judge, Judgement
from judges.services.judging import judge_config, judge_spec_for, judgements_create, prompt_template_hash
from judges.services.setup import SetupError
from judges.services.versions import pool_disagreements

from ..conftest import mc_row, run_command
from ..review.conftest import make_user
from .conftest import response_ids

pytestmark = pytest.mark.django_db

N = 40
_MARKER = re.compile(r"\[(\d+)\]")


def human_truth(i: int) -> str:
    """The human verdict of response mc-i: every third one is wrong."""
    return "incorrect" if i % 3 == 0 else "correct"


def label_all(ds: Dataset, labelled=lambda i: True) -> None:
    """A queue item for every response, and a final label with its correctness (as a queue that
    asked for it records) for the `labelled` ones."""
    policy = RoutingPolicy.objects.create(dataset=ds, name=f"p-{ds.name}")
    queue = ReviewQueue.objects.create(name=f"q-{ds.name}", dataset=ds, policy=policy)
    for response in ds.responses.all():
        item = QueueItem.objects.create(
            queue=queue, review_item=ReviewItem.objects.create(policy=policy, response=response)
        )
        i = int(response.external_id.split("-")[1])
        if labelled(i):
            FinalLabel.objects.create(
                item=item, kind="option", answer="B", correctness=human_truth(i), provenance="adjudicated"
            )


def judged_index(body: dict) -> int:
    """Which response a judge request is about: the marker after the examples (each example
    carries its own response's marker too)."""
    content = body["messages"][-1]["content"]
    return int(_MARKER.findall(content.split("--- End of examples ---")[-1])[0])


def replying(by_judge: dict[str, object]):
    """A loopback reply function: per prompt kind (with or without examples), a function of i."""

    def reply(body: dict, path: str) -> str:
        kind = "v2" if "--- End of examples ---" in body["messages"][-1]["content"] else "v1"
        return by_judge[kind](judged_index(body))  # type: ignore[operator]

    return reply


def judge(dataset: Dataset, *judges: Judge) -> None:
    judgements_create(judges=list(judges), response_ids=response_ids(dataset))


@pytest.fixture
def family(loopback, make_judge, make_dataset):
    """sq (version 1, always "correct") has judged 40 labelled responses; the family's split is made."""
    ds = make_dataset([mc_row(i) for i in range(N)], name="d")
    label_all(ds)
    v1 = make_judge("sq", template="simpleqa")
    loopback.reply = replying({"v1": lambda i: "A"})
    judge(ds, v1)
    run_command("judge_versions", dataset="d", judge="sq", seed=7)
    return ds, v1


def sides(ds: Dataset) -> tuple[set[str], set[str]]:
    split = JudgeSplit.objects.get(dataset=ds, family="sq")
    ext = dict(ds.responses.values_list("id", "external_id"))
    return {ext[int(k)] for k in split.pool}, {ext[k] for k in split.held_out}


def test_the_split_depends_on_the_seed_and_external_ids_only(make_dataset, make_judge):
    rows = [mc_row(i) for i in range(N)]
    a = make_dataset(rows, name="a")
    b = make_dataset(list(reversed(rows)), name="b")  # other database ids, other order
    label_all(a)
    label_all(b)
    spec = judge_spec_for(make_judge("sq", template="simpleqa"))
    assert spec.name == "sq"
    for ds in (a, b):
        run_command("judge_versions", dataset=ds.name, judge="sq", seed=3)
    split_a = JudgeSplit.objects.get(dataset=a)
    ext = dict(a.responses.values_list("id", "external_id")) | dict(b.responses.values_list("id", "external_id"))
    held = [{ext[r] for r in s.held_out} for s in JudgeSplit.objects.order_by("id")]
    assert held[0] == held[1] and 0 < len(held[0]) < N
    assert {ext[int(k)] for k in split_a.pool} | held[0] == {f"mc-{i}" for i in range(N)}
    # The same rule, as a pure function: a shuffled input splits the same; another seed differently.
    labelled = {f"k{i}": f"mc-{i}" for i in range(N)}
    shuffled = dict(random.Random(1).sample(sorted(labelled.items()), N))
    assert split_sides(labelled, seed=3, held_out_fraction=0.5) == split_sides(shuffled, seed=3, held_out_fraction=0.5)
    assert {v for v in labelled.values() if held_out_side(seed=3, external_id=v, held_out_fraction=0.5)} == held[0]
    assert (
        split_sides(labelled, seed=4, held_out_fraction=0.5)[1]
        != split_sides(labelled, seed=3, held_out_fraction=0.5)[1]
    )


def test_a_later_label_joins_its_side_without_moving_earlier_ones(loopback, make_judge, make_dataset):
    ds = make_dataset([mc_row(i) for i in range(N)], name="d")
    label_all(ds, labelled=lambda i: i < 30)
    judge_spec_for(make_judge("sq", template="simpleqa"))
    run_command("judge_versions", dataset="d", judge="sq", seed=7)
    pool_before, held_before = sides(ds)
    assert len(pool_before | held_before) == 30
    item = QueueItem.objects.filter(review_item__response__external_id="mc-35").get()
    FinalLabel.objects.create(item=item, kind="option", answer="B", correctness="correct", provenance="adjudicated")
    run_command("judge_versions", dataset="d", judge="sq")  # the seed the split was made with
    pool_after, held_after = sides(ds)
    assert pool_before <= pool_after and held_before <= held_after
    assert (pool_after | held_after) - (pool_before | held_before) == {"mc-35"}
    with pytest.raises(Exception, match=r"holds out 0\.5"):
        run_command("judge_versions", dataset="d", judge="sq", seed=7, held_out=0.3)


def test_examples_are_drawn_only_from_the_pool_s_disagreements(family):
    ds, v1 = family
    pool, held = sides(ds)
    disagreeing = {f"mc-{i}" for i in range(N) if human_truth(i) != "correct"}  # v1 always says correct
    assert disagreeing & held, "the test needs held-out disagreements that must not be drawn"
    run_command("add_judge", "sq-v2", from_judge="sq", dataset="d", few_shot=50, seed=7)
    v2 = Judge.objects.get(name="sq-v2")
    used = {e["external_id"] for e in v2.few_shot_examples}
    assert used == disagreeing & pool  # all of them (K exceeds them), and no other
    assert all(e["human"] == "incorrect" and e["reply"] == "B" for e in v2.few_shot_examples)
    assert (v2.family, v2.family_version, v2.split_seed) == (v1, 2, 7)
    # A draw of fewer is seeded: the same K and seed give the same examples.
    run_command("add_judge", "sq-v2b", from_judge="sq", dataset="d", few_shot=2, seed=7)
    run_command("add_judge", "sq-v2c", from_judge="sq", dataset="d", few_shot=2, seed=7)
    b, c = Judge.objects.get(name="sq-v2b"), Judge.objects.get(name="sq-v2c")
    assert len(b.few_shot_examples) == 2 and {e["external_id"] for e in b.few_shot_examples} <= used
    assert b.family_version == 3 and c.family_version == 4  # each a version of its own
    # An unparsed reply is a disagreement too (the judge gave no grade the human did give).
    r = Reading.objects.get(reader_spec=judge_spec_for(v1), response__external_id=sorted(pool)[0])
    Reading.objects.filter(pk=r.pk).update(verdict="error")
    Judgement.objects.filter(reading=r).update(parse_status="unparsed", label="")
    split = JudgeSplit.objects.get(dataset=ds)
    assert r.response_id in pool_disagreements(judge=v1, split=split)
    with pytest.raises(SetupError, match="seed 7"):
        from judges.services.versions import judge_version_create

        JudgeSplit.objects.create(dataset=ds, family="sq", seed=8, held_out_fraction=0.5, pool=split.pool)
        judge_version_create(parent=v1, dataset=ds, few_shot=2, seed=8, name="sq-other-seed")


def test_a_version_sends_its_examples_and_records_itself_as_a_reader_of_its_own(family, loopback):
    ds, v1 = family
    v1_spec = judge_spec_for(v1)
    assert set(v1_spec.config) == {"endpoint_model", "template", "template_hash", "parser", "temperature", "max_tokens"}
    run_command("add_judge", "sq-v2", from_judge="sq", dataset="d", few_shot=3, seed=7)
    v2 = Judge.objects.get(name="sq-v2")
    loopback.stats.bodies.clear()
    loopback.reply = replying({"v2": lambda i: "B" if human_truth(i) == "incorrect" else "A"})
    judge(ds, v2)
    spec = judge_spec_for(v2)
    assert spec.name == "sq-v2" and spec.config_hash != v1_spec.config_hash
    examples = {e["external_id"]: e for e in v2.few_shot_examples}
    assert spec.config["few_shot"] == sorted(e["response_id"] for e in v2.few_shot_examples)
    assert (spec.config["family"], spec.config["family_version"], spec.config["split"]["seed"]) == ("sq", 2, 7)
    prompts_sent = [b["messages"][-1]["content"] for b in loopback.stats.bodies if "messages" in b]
    assert len(prompts_sent) == N
    for content in prompts_sent:
        shown, judged = content.split("--- End of examples ---")
        for ext in examples:
            assert f"[{ext.split('-')[1]}]" in shown  # each example's response text, before the item
        assert shown.count("Expected reply: B") == 3 and "Reply with the letter only" in judged
    readings = Reading.objects.filter(reader_spec=spec).select_related("judgement")
    assert readings.count() == N
    assert {r.judgement.template_hash for r in readings} == {prompt_template_hash(v2)}
    assert prompt_template_hash(v2) != prompt_template_hash(v1)
    # Every bias figure names the prompt: the version's says it carries examples.
    shown = judge_template_hashes(dataset=ds)
    assert shown["sq-v2"] == f"{v1_spec.config['template_hash']}+{spec.config['few_shot_hash']}"
    assert "+" not in shown["sq"]
    # Another example set is another reader: its config hash differs.
    other = Judge(**{f.attname: getattr(v2, f.attname) for f in Judge._meta.concrete_fields if f.attname != "id"})
    other.few_shot_examples = v2.few_shot_examples[:2]
    assert judge_config(other)["few_shot"] != spec.config["few_shot"]


def test_a_label_used_as_a_few_shot_example_never_counts_in_that_version_s_agreement(family, loopback):
    ds, _v1 = family
    run_command("add_judge", "sq-v2", from_judge="sq", dataset="d", few_shot=5, seed=7)
    v2 = Judge.objects.get(name="sq-v2")
    example_ids = {e["external_id"] for e in v2.few_shot_examples}
    # v2 agrees with the humans on everything but its own examples (an overfit prompt would
    # do the opposite; either way the examples must not move its reported agreement).
    loopback.reply = replying(
        {"v2": lambda i: ("A" if f"mc-{i}" in example_ids else "B") if human_truth(i) == "incorrect" else "A"}
    )
    judge(ds, v2)
    report = json.loads(run_command("judge_versions", dataset="d", judge="sq", json=True))
    row = next(v for v in report["versions"] if v["label"] == "sq-v2")
    _pool, held = sides(ds)
    assert not example_ids & held
    verdicts = dict(Reading.objects.filter(reader_spec__name="sq-v2").values_list("response__external_id", "verdict"))
    on_held = judge_bias((verdicts[e], human_truth(int(e[3:]))) for e in held)
    with_examples = judge_bias((verdicts[e], human_truth(int(e[3:]))) for e in held | example_ids)
    assert with_examples["cohen_kappa"] != on_held["cohen_kappa"]  # counting them would change κ
    assert row["kappa"] == pytest.approx(on_held["cohen_kappa"]) == pytest.approx(1.0)
    assert row["n"] == len(held) and row["few_shot"] == 5
    assert row["kappa_ci"] is None and "zero estimated variance" in row["kappa_ci_note"]  # κ = 1: no fake certainty
    v1_row = report["versions"][0]
    assert v1_row["family_version"] == 1 and v1_row["n"] == len(held)
    # v1 is always "correct": every held-out incorrect is a false accept, which v2 fixes.
    [pair] = report["pairs"]
    wrong_held = sum(human_truth(int(e[3:])) == "incorrect" for e in held)
    assert (pair["better"], pair["worse"], pair["n"]) == (wrong_held, 0, len(held))
    assert pair["p_value"] == pytest.approx(2 * 0.5**wrong_held)


def test_an_example_found_on_the_held_out_side_is_left_out_of_every_version():
    """Defensive: a version made by hand, or a split edited afterwards, could put an example
    on the held-out side; it is then measured nowhere, and the report says so."""
    human = {str(i): human_truth(i) for i in range(N)}
    held = [str(i) for i in range(20)]
    leaked = "0"  # human: incorrect
    wrong_on_it = {k: ("incorrect" if v == "incorrect" else "correct") for k, v in human.items()} | {leaked: "correct"}
    v = VersionReadings(
        label="hand-made",
        spec_id=1,
        family_version=2,
        template_hash="",
        few_shot=frozenset({leaked}),
        verdicts=wrong_on_it,
    )
    out = compare_versions([v], held_out=held, human=human)
    row = out["versions"][0]
    assert out["examples_left_out"] == 1 and out["warnings"] and row["n"] == 19
    assert row["kappa"] == pytest.approx(1.0)
    assert judge_bias((wrong_on_it[k], human[k]) for k in held)["cohen_kappa"] < 1.0


def test_mcnemar_on_a_known_table():
    # before right / after wrong: 1; before wrong / after right: 9; concordant 5 + 3.
    human = {str(i): "correct" for i in range(18)}
    before = {str(i): ("correct" if i < 6 else "incorrect") for i in range(18)}  # right on 0-5
    after = {str(i): ("correct" if 1 <= i < 15 else "incorrect") for i in range(18)}  # right on 1-14
    out = paired_test(before, after, human, [str(i) for i in range(18)])
    assert (out["both_right"], out["worse"], out["better"], out["both_wrong"]) == (5, 1, 9, 3)
    assert out["p_value"] == pytest.approx(22 / 1024)  # two-sided exact binomial, 1 of 10 discordant
    assert out["accuracy_change"] == pytest.approx(8 / 18)
    assert paired_test(before, before, human, list(human))["p_value"] is None


def test_the_command_prints_every_version_with_its_intervals(family, loopback):
    ds, _ = family
    run_command("add_judge", "sq-v2", from_judge="sq", dataset="d", few_shot=2, seed=7)
    loopback.reply = replying({"v2": lambda i: "B" if human_truth(i) == "incorrect" else "A"})
    judge(ds, Judge.objects.get(name="sq-v2"))
    text = run_command("judge_versions", dataset="d", judge="sq")
    assert "v1 sq (" in text and "v2 sq-v2:" in text and "2 example(s)" in text
    assert "κ 0.000 (no interval" in text  # v1 said "correct" to everything: no fake certainty
    assert "false-accept 1.000 [" in text and "McNemar exact p" in text
    assert "held-out labels only" in text


def test_the_page_is_for_managers_and_escapes_what_it_shows(family, client: Client):
    ds, _ = family
    url = f"/analytics/{ds.pk}/judge-versions/"
    client.force_login(make_user("ann", "annotator", "adjudicator"))
    assert client.get(url, {"judge": "sq"}).status_code == 403
    manager = Client()
    manager.force_login(make_user("boss", "manager"))
    page = manager.get(url, {"judge": "sq"}).content.decode()
    assert 'id="versions"' in page and "Split seed 7" in page
    hostile = manager.get(url, {"judge": "<script>alert(1)</script>"}).content.decode()
    assert "<script>alert(1)</script>" not in hostile and "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile
    assert "judge-versions" in manager.get(f"/analytics/{ds.pk}/").content.decode()
    assert ReaderSpec.objects.filter(name="sq").exists()


def test_a_bundle_of_a_dataset_only_a_later_version_judged_carries_its_family(family, loopback, make_dataset, tmp_path):
    from adjudication.bundles import contents
    from adjudication.bundles.services import bundle_replay, bundle_write
    from judges.models import Endpoint, LLMAttempt

    run_command("add_judge", "sq-v2", from_judge="sq", dataset="d", few_shot=2, seed=7)
    other = make_dataset([mc_row(i) for i in range(3)], name="e")
    loopback.reply = replying({"v2": lambda i: "A"})
    judge(other, Judge.objects.get(name="sq-v2"))
    before = sorted(Judge.objects.values_list("name", "family__name", "family_version", "split_dataset"))
    out = tmp_path / "e.zip"
    bundle_write(dataset=other, out=out, report_specs=[])
    LLMAttempt.objects.all().delete()
    JudgeSplit.objects.all().delete()
    Judge.objects.filter(family__isnull=False).delete()  # versions first: a family is protected
    for table in reversed(contents.TABLES):
        if not table.model._meta.auto_created:
            table.model._base_manager.all().delete()
    assert not Endpoint.objects.exists()
    bundle_replay(path=out)
    assert sorted(Judge.objects.values_list("name", "family__name", "family_version", "split_dataset")) == before
