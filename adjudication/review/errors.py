"""The review flow's error, shared by its rooms (queues, annotation, adjudication)."""

from __future__ import annotations

from adjudication.errors import ApplicationError


class ReviewError(ApplicationError):
    """A request the review flow refuses (expired lease, wrong annotator, bad label)."""
