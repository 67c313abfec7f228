"""Celery tasks on the `llm` queue (routed by `judges.tasks.*`): take ids, load, re-check what is
still missing, call one service. Idempotent: a redelivered task costs a query, never a duplicate.

Each task records its batch's status (adjudication.pipeline.batches), so that a command waiting
for the readings learns of a failure; the failure is re-raised as BatchFailed, API keys redacted."""

from __future__ import annotations

from celery import shared_task

from judges.models import Endpoint, Judge
from judges.services.batches import BatchFailed, llm_batch_tracked
from judges.services.judging import judgements_create
from judges.services.regeneration import regenerations_create

__all__ = ["BatchFailed", "judge_batch", "regenerate_batch"]


@shared_task(bind=True, acks_late=True)
def judge_batch(
    self,
    judge_ids: list[int],
    response_ids: list[int],
    retry_errors: bool = False,
    tag: str = "",
    batch_id: int | None = None,
) -> int:
    with llm_batch_tracked(batch_id):
        judges = list(Judge.objects.filter(pk__in=judge_ids).select_related("endpoint", "family").order_by("name"))
        return judgements_create(judges=judges, response_ids=response_ids, retry_errors=retry_errors, tag=tag)


@shared_task(bind=True, acks_late=True)
def regenerate_batch(
    self,
    endpoint_id: int,
    response_ids: list[int],
    retry_errors: bool = False,
    tag: str = "",
    batch_id: int | None = None,
    instruction: str | None = None,
) -> int:
    with llm_batch_tracked(batch_id):
        endpoint = Endpoint.objects.filter(pk=endpoint_id).first()
        if endpoint is None:
            return 0
        return regenerations_create(
            endpoint=endpoint, response_ids=response_ids, retry_errors=retry_errors, tag=tag, instruction=instruction
        )
