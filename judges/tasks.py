"""Celery tasks on the `llm` queue (routed by `judges.tasks.*`): take ids, load, re-check what is
still missing, call one service. Idempotent: a redelivered task costs a query, never a duplicate."""
from __future__ import annotations

from celery import shared_task

from .models import Endpoint, Judge
from .services.judging import judgements_create
from .services.regeneration import regenerations_create


@shared_task(bind=True, acks_late=True)
def judge_batch(self, judge_ids: list[int], response_ids: list[int], retry_errors: bool = False, tag: str = "") -> int:
    judges = list(Judge.objects.filter(pk__in=judge_ids).select_related("endpoint").order_by("name"))
    return judgements_create(judges=judges, response_ids=response_ids, retry_errors=retry_errors, tag=tag)


@shared_task(bind=True, acks_late=True)
def regenerate_batch(self, endpoint_id: int, response_ids: list[int], retry_errors: bool = False,
                     tag: str = "") -> int:
    endpoint = Endpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        return 0
    return regenerations_create(endpoint=endpoint, response_ids=response_ids, retry_errors=retry_errors, tag=tag)
