"""The one rule for responses an import replaced (`--replace`), whichever path imported them (the
ORM's in services.py, PostgreSQL's COPY and merge in staging.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from adjudication.pipeline.store import readings_discard
from adjudication.review.queues.services import InvalidationReport, review_invalidate_replaced


class Replaced(NamedTuple):
    """A response whose row an import replaced, and what changed besides its row hash."""

    response_id: int
    text_changed: bool
    question_changed: bool


def replaced_responses_invalidate(*, replaced: Sequence[Replaced], review: InvalidationReport) -> None:
    """The responses' rows were replaced: their readings go, and where the text or the question
    changed, what review decided about them is invalidated, counted into `review`. The data version
    is the import's to raise, once and last (adjudication.revisions)."""
    # Readings describe the old text; keeping them would attach verdicts to words never read.
    readings_discard(response_ids=[r.response_id for r in replaced])
    # Labels judged the old text against the old question and gold: they no longer stand (a change
    # of model name or meta alone leaves them be).
    reworded = [r.response_id for r in replaced if r.text_changed or r.question_changed]
    if not reworded:
        return
    found = review_invalidate_replaced(response_ids=reworded, record_change=False)
    review.labels += found.labels
    review.final_labels += found.final_labels
    review.items_reopened += found.items_reopened
