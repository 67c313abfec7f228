"""Routing's Celery task: refit an information policy's priorities."""

from __future__ import annotations

from celery import shared_task

from adjudication.routing.services import information_refresh_claimed
from adjudication.task_names import REFRESH_INFORMATION_PRIORITIES


@shared_task(name=REFRESH_INFORMATION_PRIORITIES, bind=True, acks_late=True)
def refresh_information_priorities(self, policy_id: int) -> str:
    """Refit an information policy's priorities if its refresh request is still pending (a burst of
    final labels made one request; a second delivery finds it claimed and does nothing)."""
    report = information_refresh_claimed(policy_id=policy_id)
    return f"{report.changed} priorities changed" if report.refitted else "nothing pending"
