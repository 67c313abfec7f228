"""Judge runs on a subset of a dataset (`run_judges --queue | --labelled | --sample | --ids`), end to
end against the loopback server: which responses are judged, what the summary says, re-runs."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.core.management.base import CommandError

from adjudication.models import Dataset, Reading, Response
from adjudication.pipeline.readings import reader_spec_by_name
from adjudication.pipeline.selectors import subset_response_ids
from adjudication.pipeline.subsets import ResponseSubset, SubsetError, id_lines
from adjudication.review.adjudicate.services import final_label_adjudicate
from adjudication.review.queues.services import queue_create
from adjudication.review.queues.specs import QueueSpec
from adjudication.routing.specs import PolicySpec

from ..conftest import mc_row, reading_at, run_command
from ..review.conftest import label_next, make_user

N_RESPONSES = 10
DISPUTED = 6  # mc-0 .. mc-5: the panel disagrees on them, so they are routed to the queue


@dataclass
class AuditWorld:
    dataset: Dataset
    queued: set[str]  # external ids of the responses in queue "q"
    labelled: set[str]  # ... with a final label that decided them
    unresolved: set[str]  # ... whose adjudicator marked them unresolved


def audit_world(write_jsonl, name: str = "audit") -> AuditWorld:
    """10 MC responses; the two panel readers disagree on 6, which queue "q" takes in. Of the
    queue's items, one is settled by agreement, one adjudicated, one marked unresolved."""
    rows = [mc_row(i, response=f"Reasoning {i}. The answer is B. Then again \\boxed{{C}}") for i in range(N_RESPONSES)]
    run_command("import_responses", str(write_jsonl(rows, name=f"{name}.jsonl")), dataset=name, no_progress=True)
    dataset = Dataset.objects.get(name=name)
    specs = [reader_spec_by_name(name="strict-match"), reader_spec_by_name(name="boxed")]
    readings = []
    for response in Response.objects.filter(dataset=dataset, external_id__in=[f"mc-{i}" for i in range(DISPUTED)]):
        readings += [
            reading_at(response, specs[0], "B", at=response.text.index("B."), verdict="correct"),
            reading_at(response, specs[1], "C", at=response.text.index("{C}") + 1, verdict="incorrect"),
        ]
    Reading.objects.bulk_create(readings)
    queue = queue_create(
        dataset=dataset,
        spec=QueueSpec(name="q", overlap=2, lease_seconds=600, routing=PolicySpec(unreadable_fraction=0.0)),
    )
    first, second = make_user(f"{name}-a1", "annotator"), make_user(f"{name}-a2", "annotator")
    adjudicator = make_user(f"{name}-adj", "adjudicator")
    items = [label_next(queue, first, "B").item for _ in range(3)]
    # The second annotator is served the same items in the same order: agrees on the first only.
    for i, answer in enumerate(("B", "C", "C")):
        assert label_next(queue, second, answer).item == items[i]
    for item in items:
        item.refresh_from_db()
    final_label_adjudicate(item=items[1], adjudicator=adjudicator, kind="option", answer="B")
    final_label_adjudicate(item=items[2], adjudicator=adjudicator, kind="option", unresolved=True)
    external = [item.review_item.response.external_id for item in items]
    queued = set(Response.objects.filter(review_items__queue_items__queue=queue).values_list("external_id", flat=True))
    return AuditWorld(dataset=dataset, queued=queued, labelled=set(external[:2]), unresolved={external[2]})


def judged(judge: str = "sq") -> set[str]:
    return set(Reading.objects.filter(reader_spec__name=judge).values_list("response__external_id", flat=True))


def summary(out: str, judge: str = "sq") -> tuple[int, int, int]:
    """(enqueued, already judged, responses in the subset) from the judge's summary line."""
    line = next(line for line in out.splitlines() if line.split()[0] == judge)
    match = re.search(r"(\d+) enqueued, (\d+) already judged, of (\d+) responses", line)
    assert match, line
    return int(match[1]), int(match[2]), int(match[3])


def external_ids(dataset: Dataset, subset: ResponseSubset) -> set[str]:
    ids = subset_response_ids(dataset=dataset, subset=subset)
    return set(Response.objects.filter(id__in=ids).values_list("external_id", flat=True))


# --- the command, end to end (eager tasks, real sockets to the loopback server) ---


@pytest.mark.django_db(transaction=True)  # autocommit, as in `manage.py`: on_commit fires at once
def test_each_subset_judges_only_its_responses_and_reruns_enqueue_nothing(
    loopback, make_judge, write_jsonl, eager, tmp_path
):
    world = audit_world(write_jsonl)
    assert len(world.queued) == DISPUTED and world.labelled < world.queued
    make_judge("sq", template="simpleqa")
    ds = world.dataset.name

    out = run_command("run_judges", dataset=ds, judges=["sq"], queue="q")
    assert judged() == world.queued
    assert summary(out) == (DISPUTED, 0, DISPUTED)
    assert "subset: the responses in review queue 'q': 6 responses" in out
    assert loopback.stats.requests == DISPUTED

    # The labelled responses are all in the queue: judged already, nothing enqueued, no call made.
    out = run_command("run_judges", dataset=ds, judges=["sq"], labelled=True)
    assert summary(out) == (0, len(world.labelled), len(world.labelled))
    assert loopback.stats.requests == DISPUTED

    sample = external_ids(world.dataset, ResponseSubset.sample(5, seed=7))
    out = run_command("run_judges", dataset=ds, judges=["sq"], sample=5, seed=7)
    new = sample - world.queued
    assert summary(out) == (len(new), len(sample & world.queued), 5)
    assert judged() == world.queued | sample
    assert loopback.stats.requests == DISPUTED + len(new)

    rest = sorted({f"mc-{i}" for i in range(N_RESPONSES)} - judged())
    listed = tmp_path / "ids.txt"
    listed.write_text("# the responses not judged yet\n\n" + "\n".join(f"  {x}  " for x in rest) + "\nmc-0\n")
    out = run_command("run_judges", dataset=ds, judges=["sq"], ids=listed)
    assert summary(out) == (len(rest), 1, len(rest) + 1)
    assert judged() == {f"mc-{i}" for i in range(N_RESPONSES)}
    requests = loopback.stats.requests
    assert requests == N_RESPONSES

    # Every subset again, and the whole dataset: nothing is missing, nothing is enqueued or called.
    for options in ({"queue": "q"}, {"labelled": True}, {"sample": 5, "seed": 7}, {"ids": listed}, {}):
        out = run_command("run_judges", dataset=ds, judges=["sq"], **options)
        assert summary(out)[0] == 0, options
    assert loopback.stats.requests == requests
    assert Reading.objects.filter(reader_spec__name="sq").count() == N_RESPONSES


@pytest.mark.django_db
def test_labelled_means_a_deciding_final_label_not_an_unresolved_one(write_jsonl):
    world = audit_world(write_jsonl)
    assert external_ids(world.dataset, ResponseSubset.labelled()) == world.labelled
    assert not world.unresolved & external_ids(world.dataset, ResponseSubset.labelled())
    assert external_ids(world.dataset, ResponseSubset.of_queue("q")) == world.queued


@pytest.mark.django_db(transaction=True)
def test_an_unknown_id_is_refused_with_its_file_and_line_before_anything_is_enqueued(
    loopback, make_judge, make_dataset, eager, tmp_path
):
    ds = make_dataset(n_mc=4, n_math=0)
    make_judge("sq")
    listed = tmp_path / "ids.txt"
    listed.write_text("mc-0\n# a comment\nmc-1\n\nmc-9\nmc-2\nnope\n")
    with pytest.raises(CommandError) as refused:
        run_command("run_judges", dataset=ds.name, judges=["sq"], ids=listed)
    message = str(refused.value)
    assert f"{listed}, line 5: no response 'mc-9'" in message and "and 1 more unknown id" in message
    assert loopback.stats.requests == 0 and not Reading.objects.exists()
    from adjudication.models import TaskBatch

    assert not TaskBatch.objects.exists()


@pytest.mark.django_db
def test_subset_options_are_refused_when_they_name_nothing_the_dataset_has(make_judge, make_dataset, tmp_path):
    ds = make_dataset(n_mc=2, n_math=0)
    make_judge("sq")
    with pytest.raises(CommandError, match="no review queue named 'nope' in dataset 'd' \\(it has no queue\\)"):
        run_command("run_judges", dataset=ds.name, judges=["sq"], queue="nope")
    with pytest.raises(CommandError, match="at least 1 response"):
        run_command("run_judges", dataset=ds.name, judges=["sq"], sample=0)
    with pytest.raises(CommandError, match="--seed draws a --sample"):
        run_command("run_judges", dataset=ds.name, judges=["sq"], seed=3)
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(CommandError, match=f"{empty}: no response id in it"):
        run_command("run_judges", dataset=ds.name, judges=["sq"], ids=empty)
    with pytest.raises(CommandError, match="cannot read"):
        run_command("run_judges", dataset=ds.name, judges=["sq"], ids=tmp_path / "missing.txt")
    with pytest.raises(CommandError, match="not allowed with argument"):
        run_command("run_judges", "--queue", "q", "--labelled", dataset=ds.name, judges=["sq"])
    assert not Reading.objects.exists()


# --- the sample ---


@pytest.mark.django_db
def test_a_sample_is_the_same_for_the_same_seed_whatever_the_row_order_and_differs_with_the_seed(write_jsonl):
    rows = [mc_row(i) for i in range(40)]
    for name, ordered in (("fwd", rows), ("rev", rows[::-1])):
        run_command("import_responses", str(write_jsonl(ordered, name=f"{name}.jsonl")), dataset=name, no_progress=True)
    fwd, rev = Dataset.objects.get(name="fwd"), Dataset.objects.get(name="rev")
    first = external_ids(fwd, ResponseSubset.sample(10, seed=0))
    assert len(first) == 10
    # Same seed: same responses, in a dataset imported in the other order (other row ids) too.
    assert external_ids(fwd, ResponseSubset.sample(10, seed=0)) == first
    assert external_ids(rev, ResponseSubset.sample(10, seed=0)) == first
    # Another seed, another sample; a larger sample of the same seed holds the smaller one.
    assert external_ids(fwd, ResponseSubset.sample(10, seed=1)) != first
    assert first < external_ids(fwd, ResponseSubset.sample(15, seed=0))
    # More than the dataset holds: all of it.
    assert len(subset_response_ids(dataset=fwd, subset=ResponseSubset.sample(100, seed=0))) == 40


@pytest.mark.django_db
def test_samples_over_many_seeds_take_every_response_about_equally_often(write_jsonl):
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(10)])), dataset="u", no_progress=True)
    ds = Dataset.objects.get(name="u")
    seeds = 400
    counts = dict.fromkeys(ds.responses.values_list("id", flat=True), 0)
    for seed in range(seeds):
        for rid in subset_response_ids(dataset=ds, subset=ResponseSubset.sample(3, seed=seed)):
            counts[rid] += 1
    # Each response is drawn with probability 3/10: 120 of 400 expected, sd ~9.2; 5 sd either side.
    assert all(74 <= n <= 166 for n in counts.values()), counts


# --- the id list ---


def test_id_lines_skip_blanks_and_comment_lines_and_keep_line_numbers():
    got = id_lines("a\n\n  # skip me\n b \r\nc#1\n", source="f.txt")
    assert [(i.line, i.external_id) for i in got] == [(1, "a"), (4, "b"), (5, "c#1")]
    with pytest.raises(SubsetError, match=r"f.txt, line 2: an id of 501 characters"):
        id_lines("ok\n" + "x" * 501, source="f.txt")


def test_a_subset_checks_its_own_values():
    with pytest.raises(SubsetError, match="sample: a sample holds at least 1"):
        ResponseSubset.sample(0)
    with pytest.raises(SubsetError, match="seed: a whole number"):
        ResponseSubset.sample(3, seed=-1)
    with pytest.raises(SubsetError, match="queue: name the review queue"):
        ResponseSubset.of_queue("")


@pytest.mark.django_db
def test_listed_ids_may_repeat_and_an_unknown_one_names_its_line(make_dataset):
    ds = make_dataset(n_mc=3, n_math=0)
    assert external_ids(ds, ResponseSubset.listed("mc-0\nmc-2\nmc-0\n", source="ids")) == {"mc-0", "mc-2"}
    with pytest.raises(SubsetError, match=r"^ids, line 3: no response 'mc-7' in dataset 'd'; nothing was enqueued$"):
        subset_response_ids(dataset=ds, subset=ResponseSubset.listed("mc-0\n\nmc-7\n", source="ids"))


# --- through a real worker: the command waits for the subset's readings, not the dataset's ---


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_subset_run_through_a_real_worker_waits_for_exactly_its_readings(
    loopback, make_judge, make_dataset, celery_worker, tmp_path
):
    ds = make_dataset(n_mc=8, n_math=0)
    loopback.latency_s = 0.1
    make_judge("sq", template="simpleqa")
    sample = external_ids(ds, ResponseSubset.sample(4, seed=4))
    others = {f"mc-{i}" for i in range(8)} - sample
    listed = tmp_path / "ids.txt"
    listed.write_text("\n".join(sorted(others)))
    out = run_command("run_judges", dataset=ds.name, judges=["sq"], ids=listed, batch_size=1, timeout=120)
    assert summary(out) == (4, 0, 4) and judged() == others
    # As many readings as the sample holds exist already, all outside it: a wait that counted the
    # dataset's readings would return at once, before the workers wrote the sample's.
    out = run_command("run_judges", dataset=ds.name, judges=["sq"], sample=4, seed=4, batch_size=1, timeout=120)
    assert summary(out) == (4, 0, 4)
    assert judged() == others | sample
    assert "judges.tasks.judge_batch" in celery_worker.log()


@pytest.mark.django_db(transaction=True)
def test_retry_errors_on_a_subset_redoes_only_the_subset_s_failed_readings(
    loopback, make_endpoint, make_judge, make_dataset, eager, tmp_path, monkeypatch
):
    ds = make_dataset(n_mc=4, n_math=0)
    monkeypatch.delenv("SUBSET_TEST_KEY", raising=False)
    make_judge("sq", endpoint=make_endpoint(api_key_env="SUBSET_TEST_KEY"))
    run_command("run_judges", dataset=ds.name, judges=["sq"])
    verdicts = dict(Reading.objects.filter(reader_spec__name="sq").values_list("response__external_id", "verdict"))
    assert verdicts == dict.fromkeys(["mc-0", "mc-1", "mc-2", "mc-3"], "error")

    monkeypatch.setenv("SUBSET_TEST_KEY", "k-123")
    listed = tmp_path / "ids.txt"
    listed.write_text("mc-0\nmc-1\n")
    out = run_command("run_judges", dataset=ds.name, judges=["sq"], ids=listed, retry_errors=True)
    assert summary(out) == (2, 0, 2)
    verdicts = dict(Reading.objects.filter(reader_spec__name="sq").values_list("response__external_id", "verdict"))
    assert verdicts == {"mc-0": "correct", "mc-1": "correct", "mc-2": "error", "mc-3": "error"}
