"""The review flow's one error: a request it refuses (expired lease, wrong annotator, bad label,
bad queue setting). Every room raises it; the edges (pages, API, commands) show its message."""

from __future__ import annotations


class ReviewError(Exception):
    """A request the review flow refuses (expired lease, wrong annotator, bad label)."""
