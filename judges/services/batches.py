"""LLM tasks are tracked like every fan-out task (adjudication.pipeline.batches); what only they
add is that an error may quote an endpoint's API key, which is redacted before it is stored or
logged."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

from adjudication.pipeline.batches import BatchFailed, batch_tracked
from judges.models import Endpoint
from judges.redaction import redact, secrets_from_env

__all__ = ["BatchFailed", "known_secrets", "llm_batch_tracked"]


def known_secrets() -> tuple[str, ...]:
    """The API keys of every endpoint: a task's exception may quote any of them."""
    return secrets_from_env(Endpoint.objects.exclude(api_key_env="").values_list("api_key_env", flat=True))


def _redactor() -> Callable[[str], str]:
    return partial(redact, secrets=known_secrets())


@contextmanager
def llm_batch_tracked(batch_id: int | None) -> Iterator[None]:
    with batch_tracked(batch_id, redact=_redactor):
        yield
