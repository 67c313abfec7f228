"""Template filters that print the headline's numbers exactly as the quickstart prints them
(adjudication.analytics.headline), so a card and the terminal never disagree on a rounding."""

from __future__ import annotations

from typing import Any

from django import template

from adjudication.analytics.headline import points_text, rate_text, share_text

register = template.Library()


@register.filter
def points(value: float | None, ci: Any = None) -> str:
    return points_text(value, ci or None)


@register.filter
def share(value: float | None, ci: Any = None) -> str:
    return share_text(value, ci or None)


@register.filter
def rate(value: float | None) -> str:
    return rate_text(value)
