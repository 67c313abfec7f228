"""A reader task that fails is noticed: its TaskBatch row says why, and run_readers stops with that
error instead of waiting forever for readings nobody is writing."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError
from django.db import connection
from tqdm import tqdm

from adjudication.models import Dataset, Reading, TaskBatch
from adjudication.pipeline import progress
from adjudication.pipeline.batches import BatchFailed, batch_sizes
from adjudication.pipeline.progress import wait_for_readings
from adjudication.pipeline.services import ReadRun, dataset_read
from adjudication.pipeline.tasks import read_batch

from ..conftest import FakeClock, manage, mc_row, run_command

READERS = ["boxed", "strict-match"]

# A write every reading insert fails on, as a full disk or a lost table would make it fail.
BREAK_READINGS = """
    CREATE FUNCTION refuse_reading() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'the disk is full'; END $$;
    CREATE TRIGGER refuse_reading BEFORE INSERT ON adjudication_reading
        FOR EACH ROW EXECUTE FUNCTION refuse_reading();"""
MEND_READINGS = """
    DROP TRIGGER IF EXISTS refuse_reading ON adjudication_reading;
    DROP FUNCTION IF EXISTS refuse_reading();"""


@pytest.fixture
def broken_readings():
    if connection.vendor != "postgresql":
        pytest.skip("the failure is injected with a PostgreSQL trigger")
    with connection.cursor() as cursor:
        cursor.execute(BREAK_READINGS)
    yield
    with connection.cursor() as cursor:
        cursor.execute(MEND_READINGS)


def imported(write_jsonl, n: int = 6) -> Dataset:
    run_command("import_responses", str(write_jsonl([mc_row(i) for i in range(n)])), dataset="b", no_progress=True)
    return Dataset.objects.get(name="b")


def wait_for_reader_tasks(run: ReadRun, ds: Dataset, *, total: int) -> None:
    """Wait for `run`'s `total` readings, with no progress bar and a timeout the tests never reach."""
    wait_for_readings(
        run_id=run.id,
        dataset_id=ds.pk,
        kind=run.kind,
        done=Reading.objects.count,
        total=total,
        bar=tqdm(disable=True),
        timeout=600,
        noun="reader task",
    )


@pytest.mark.django_db
def test_each_enqueued_batch_has_a_queued_row_and_a_task_marks_it_done(write_jsonl, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    ds = imported(write_jsonl)
    # Inside the test's transaction nothing is really enqueued (on_commit): we play the worker.
    run = dataset_read(dataset=ds, reader_names=READERS, batch_size=4)
    batches = list(TaskBatch.objects.filter(run=run.id).order_by("id"))
    assert [(b.kind, b.status, b.responses) for b in batches] == [("read", "queued", 4), ("read", "queued", 2)]
    spec_ids = [e.reader_spec.id for e in run.enqueued]
    read_batch.run(spec_ids, list(ds.responses.order_by("id").values_list("id", flat=True))[:4], batches[0].pk)
    batches[0].refresh_from_db()
    assert (batches[0].status, batches[0].deliveries) == ("done", 1) and Reading.objects.count() == 8


@pytest.mark.django_db
def test_a_failing_reader_task_records_why_and_raises(write_jsonl, settings, broken_readings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    ds = imported(write_jsonl, 2)
    run = dataset_read(dataset=ds, reader_names=READERS)
    (batch,) = TaskBatch.objects.filter(run=run.id)
    with pytest.raises(BatchFailed, match="the disk is full"):
        read_batch.run(
            [e.reader_spec.id for e in run.enqueued], list(ds.responses.values_list("id", flat=True)), batch.pk
        )
    batch.refresh_from_db()
    assert batch.status == "failed" and "the disk is full" in batch.error


@pytest.mark.django_db
def test_waiting_stops_with_the_error_once_the_runs_tasks_ended_and_one_failed(write_jsonl, settings, monkeypatch):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    ds = imported(write_jsonl)
    run = dataset_read(dataset=ds, reader_names=READERS, batch_size=2)
    first, second, third = TaskBatch.objects.filter(run=run.id).order_by("id")
    TaskBatch.objects.filter(pk=first.pk).update(status="done")
    TaskBatch.objects.filter(pk=second.pk).update(status="failed", error="OperationalError: the disk is full")

    def third_task_ends(polls: int) -> None:
        if polls == 1:
            TaskBatch.objects.filter(pk=third.pk).update(status="done")

    # the wait's clock: no real sleeping, and the third task ends during the first poll interval
    clock = FakeClock(on_sleep=third_task_ends)
    monkeypatch.setattr(progress, "time", clock)
    with pytest.raises(CommandError, match=r"1 of 3 reader tasks failed \(first error: OperationalError: the disk"):
        wait_for_reader_tasks(run, ds, total=12)
    # stopped on the failure at the next look once every task had ended, not on the timeout:
    # one poll interval waited of the 1,200 that the timeout allows
    assert clock.sleeps == [0.5]


@pytest.mark.django_db
def test_waiting_stops_when_every_task_ended_without_the_readings(write_jsonl, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    ds = imported(write_jsonl, 2)
    run = dataset_read(dataset=ds, reader_names=READERS)
    TaskBatch.objects.filter(run=run.id).update(status="done")  # e.g. the reader spec was deleted meanwhile
    with pytest.raises(CommandError, match=r"every reader task finished but 4 of 4 readings are missing"):
        wait_for_reader_tasks(run, ds, total=4)


@pytest.mark.django_db(transaction=True)  # autocommit, as in `manage.py`: on_commit fires at once
def test_run_readers_in_eager_mode_fails_with_the_tasks_error(write_jsonl, eager, broken_readings):
    imported(write_jsonl, 2)
    with pytest.raises(CommandError, match="the disk is full"):
        run_command("run_readers", dataset="b", readers=READERS)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_run_readers_with_a_real_worker_exits_with_the_error_of_a_failed_task(
    write_jsonl, celery_worker, service_env, broken_readings
):
    imported(write_jsonl, 4)
    proc = manage(
        "run_readers",
        "--dataset",
        "b",
        "--reader",
        "boxed",
        "--reader",
        "strict-match",
        "--batch-size",
        "2",
        "--timeout",
        "240",
        env=service_env,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "2 of 2 reader tasks failed" in proc.stderr and "the disk is full" in proc.stderr
    assert "timed out" not in proc.stderr and "Traceback" not in proc.stderr
    assert set(TaskBatch.objects.values_list("status", flat=True)) == {"failed"}


@pytest.mark.parametrize("n,size", [(1600, 100), (401, 100), (400, 10), (1000, 200), (20, 5)])
def test_a_long_runs_last_batches_get_smaller_down_to_a_quarter_batch(n, size):
    sizes = batch_sizes(n, size, taper=True)
    assert sum(sizes) == n
    assert sizes == sorted(sizes, reverse=True), "never larger after smaller"
    full = sizes.count(size)
    assert sizes[:full] == [size] * full and n - full * size <= 4 * size  # full batches until four are left
    assert len(sizes) > full + 2  # ... then smaller ones
    assert min(sizes[:-1]) >= -(-size // 4)  # the smallest but the very last: a quarter batch


@pytest.mark.parametrize("n,size", [(6, 4), (6, 2), (19, 5), (399, 100)])
def test_a_run_of_fewer_than_four_batches_is_cut_in_full_batches(n, size):
    assert (
        batch_sizes(n, size, taper=True) == batch_sizes(n, size) == [size] * (n // size) + [n % size] * bool(n % size)
    )
