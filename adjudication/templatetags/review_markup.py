"""The review pages' HTML of untrusted texts (questions, options, answers, guidelines, responses):
made here, when a template asks, from the plain values the selectors return. Every value is escaped
by adjudication.review.markup (raw HTML off, maths as escaped TeX text), which is why each may be
marked safe."""

from __future__ import annotations

import functools

from django import template
from django.utils.safestring import SafeString, mark_safe

from adjudication.review.markup import answer_html, inline_html
from adjudication.review.rendering import Part, ShownItem, response_parts, text_html

register = template.Library()


@register.filter(name="text_html")
def text_html_filter(text: str) -> SafeString:
    """A question or another dataset text: Markdown with maths."""
    return mark_safe(text_html(text))  # noqa: S308  # escaped by markup


@register.filter(name="inline_html")
def inline_html_filter(text: str) -> SafeString:
    """One line (an option): maths typeset, no block Markdown."""
    return mark_safe(inline_html(text))  # noqa: S308  # escaped by markup


@register.filter(name="answer_html")
def answer_html_filter(answer: str) -> SafeString:
    """An extracted or reference answer: one formula when it looks like TeX, else text."""
    return mark_safe(answer_html(answer))  # noqa: S308  # escaped by markup


@functools.lru_cache(maxsize=64)
def _guidelines_html(text: str) -> str:
    # Guidelines change rarely and every item page shows them: render each text once per process.
    return text_html(text)


@register.filter
def guidelines_html(text: str) -> SafeString:
    """A queue's guidelines (the manager's Markdown with maths)."""
    return mark_safe(_guidelines_html(text))  # noqa: S308  # escaped by markup


@register.simple_tag
def response_parts_of(shown: ShownItem) -> list[Part]:
    """{% response_parts_of shown as parts %}: the response's thinking and answer parts, each with
    its Markdown HTML and its segments (the candidates' spans marked)."""
    return response_parts(shown.response, list(shown.spans))
