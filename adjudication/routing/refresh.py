"""Asking for a refit of a greedy information policy's priorities after a final label: the one thing the
review rooms need of routing. Apart from routing.services, which knows panels and reader names, so
that the annotator's room (adjudication.review.annotate, blinded by its imports) can settle a label
without importing it. The refit itself is routing.services.information_refresh_claimed, run by the
refresh_information_priorities task (sent by name: adjudication.task_names)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from adjudication.models import RoutingPolicy
from adjudication.task_names import REFRESH_INFORMATION_PRIORITIES, task_send_on_commit


def information_refresh_request(*, policy_id: int) -> bool:
    """Ask for a refit of an information policy's priorities after a final label (call it inside the
    label's transaction): a compare-and-set on the policy's refresh_requested_at, so that of a burst
    of labels only the first enqueues the task (on commit, after INFORMATION_REFRESH_DELAY seconds);
    the others find the request pending and leave it. A request older than a lease is taken as lost
    (its task died before claiming it) and made again. Other policies, randomized information ones
    included (their draw and order stay put): nothing (one UPDATE of no row)."""
    now = timezone.now()
    lost = now - timedelta(seconds=settings.INFORMATION_REFRESH_LEASE_SECONDS)
    requested = (
        RoutingPolicy.objects.filter(
            pk=policy_id, priority=RoutingPolicy.Priority.INFORMATION, sampling=RoutingPolicy.Sampling.GREEDY
        )
        .filter(Q(refresh_requested_at__isnull=True) | Q(refresh_requested_at__lt=lost))
        .update(refresh_requested_at=now)
    )
    if requested:
        task_send_on_commit(
            REFRESH_INFORMATION_PRIORITIES, policy_id, countdown=settings.INFORMATION_REFRESH_DELAY_SECONDS
        )
    return bool(requested)
