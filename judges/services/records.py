"""Writing what LLM jobs produced: attempts, readings (one per response and reader spec) and
judgements. Runs in the thread that owns the database connection (see calls.fan_out)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

from django.db import IntegrityError, transaction

from adjudication.fields import json_safe
from adjudication.models import ReaderSpec, Reading, Response
from adjudication.services.readings import missing_pairs

from ..models import Judgement, LLMAttempt
from .calls import AttemptEvent, Finished

# Readings a later `--retry-errors` run may replace: the calls failed (or our code did); never a
# reply that was received, whatever it said.
RETRYABLE_VERDICTS = ("error", "timeout")


@dataclass
class ReadingResult:
    response_id: int
    spec_id: int
    verdict: str
    answer: str | None = None
    normalized: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    judgement: dict[str, Any] | None = None  # Judgement fields, for judges
    replace_id: int | None = None  # an existing failed reading this one replaces


def work_for(*, spec: ReaderSpec, response_ids: Sequence[int], retry_errors: bool) -> dict[int, int | None]:
    """Response id -> None (no reading yet) or the id of a failed reading to replace."""
    todo: dict[int, int | None] = {rid: None for rid in missing_pairs(reader_specs=[spec],
                                                                     response_ids=response_ids)[spec.id]}
    if retry_errors:
        failed = Reading.objects.filter(reader_spec=spec, response_id__in=list(response_ids),
                                        verdict__in=RETRYABLE_VERDICTS, detail__has_key="failed")
        for rid, reading_id in failed.values_list("response_id", "id"):
            todo[rid] = reading_id
    return todo


def _attempt_row(e: AttemptEvent) -> LLMAttempt:
    r = e.result
    response_id, spec_id = e.key  # type: ignore[misc]
    return LLMAttempt(
        endpoint_id=e.endpoint_id, reader_spec_id=spec_id, response_id=response_id, purpose=e.purpose,
        attempt=e.number, status=r.status, http_status=r.http_status, latency_ms=r.latency_ms,
        prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens, error=r.error,
        request_hash=e.request_hash, started_at=datetime.fromtimestamp(r.started_at, tz=timezone.utc),
    )


def _reading_row(f: Finished) -> Reading:
    r: ReadingResult = f.result
    return Reading(response_id=r.response_id, reader_spec_id=r.spec_id, answer=r.answer, normalized=r.normalized,
                   verdict=r.verdict, detail=json_safe(r.detail), elapsed_ms=f.elapsed_ms)


def _judgement_row(reading_id: int, r: ReadingResult) -> Judgement:
    return Judgement(reading_id=reading_id, **r.judgement)  # type: ignore[arg-type]


def write(attempts: list[AttemptEvent], finished: list[Finished], *, tag: str = "") -> None:
    """Persist one flush. A reading another worker wrote meanwhile (a redelivered task) wins;
    ours is dropped with its judgement, and its attempts are kept. A reading redone in place by
    `--retry-errors` carries the run's `tag` in its detail (`retry_tag`), so the command can tell
    when every retried reading was redone, whatever its new verdict."""
    ids = {e.key[0] for e in attempts} | {f.result.response_id for f in finished}  # type: ignore[index]
    alive = set(Response.objects.filter(id__in=ids).values_list("id", flat=True))  # deleted meanwhile: skipped
    attempts = [e for e in attempts if e.key[0] in alive]  # type: ignore[index]
    finished = [f for f in finished if f.result.response_id in alive]
    fresh = [f for f in finished if f.result.replace_id is None]
    retried = [f for f in finished if f.result.replace_id is not None]
    with transaction.atomic():
        if attempts:
            LLMAttempt.objects.bulk_create([_attempt_row(e) for e in attempts], batch_size=1000)
        if fresh:
            try:
                with transaction.atomic():
                    rows = Reading.objects.bulk_create([_reading_row(f) for f in fresh], batch_size=1000)
                    judgements = [_judgement_row(row.pk, f.result) for row, f in zip(rows, fresh, strict=True)
                                  if f.result.judgement is not None]
                    if judgements:
                        Judgement.objects.bulk_create(judgements, batch_size=1000)
            except IntegrityError:
                for f in fresh:
                    try:
                        with transaction.atomic():
                            row = _reading_row(f)
                            row.save(force_insert=True)
                            if f.result.judgement is not None:
                                _judgement_row(row.pk, f.result).save(force_insert=True)
                    except IntegrityError:
                        pass
        for f in retried:
            r: ReadingResult = f.result
            detail = dict(r.detail, retry_tag=tag) if tag else r.detail
            updated = Reading.objects.filter(id=r.replace_id, verdict__in=RETRYABLE_VERDICTS).update(
                answer=r.answer, normalized=r.normalized, verdict=r.verdict, detail=json_safe(detail),
                elapsed_ms=f.elapsed_ms, span_start=None, span_end=None)
            if updated and r.judgement is not None:
                Judgement.objects.update_or_create(reading_id=r.replace_id, defaults=r.judgement)


def internal_failure(response_id: int, spec_id: int, replace_id: int | None,
                     judgement: dict[str, Any] | None = None):
    """The result of a job whose own code raised: an error reading, retryable by --retry-errors."""

    def failure(exc: BaseException) -> ReadingResult:
        detail = {"failed": "internal", "error": f"{type(exc).__name__}: {exc}"[:1000]}
        j = None
        if judgement is not None:
            j = dict(judgement, raw_reply=None, label="", parse_status=Judgement.ParseStatus.CALL_FAILED, reparses={})
        return ReadingResult(response_id, spec_id, "error", detail=detail, judgement=j, replace_id=replace_id)

    return failure
