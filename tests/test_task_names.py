"""Task names are what queued messages and CELERY_TASK_ROUTES carry: moving a task to its capability
must not change its name, and every name a service sends by is registered in this process."""

from __future__ import annotations

from celery import current_app

from adjudication import task_names
from adjudication.analytics.tasks import compute_report
from adjudication.audit.tasks import run_audit
from adjudication.pipeline.tasks import read_batch
from adjudication.routing.tasks import refresh_information_priorities


def test_the_tasks_keep_the_names_queued_messages_carry() -> None:
    assert {
        read_batch.name,
        run_audit.name,
        compute_report.name,
        refresh_information_priorities.name,
    } == {
        "adjudication.tasks.read_batch",
        "adjudication.tasks.run_audit",
        "adjudication.tasks.compute_report",
        "adjudication.tasks.refresh_information_priorities",
    }


def test_every_name_a_service_sends_by_is_registered_at_start_up() -> None:
    names = {getattr(task_names, n) for n in dir(task_names) if n.isupper()}
    assert names and names <= set(current_app.tasks)
