"""Links from the queue page's agreement numbers to the item browser's disagreeing items.

The item browser's URL contract: `/items/?queue=<queue id>&disagree=<username>,<username>` (items on
which those two annotators' current labels differ) and `/items/?queue=<queue id>&disagree=any`
(items whose current labels are not all equal), under whatever path `review:items` has."""

from __future__ import annotations

from urllib.parse import urlencode

from django import template
from django.urls import reverse

register = template.Library()


def disagreeing_items_url(*, queue_id: int, annotators: tuple[str, ...] = ()) -> str:
    """The item browser's list of a queue's disagreeing items: between two annotators, or (none
    given) among all. Usernames cannot hold a comma (Django's validator), so the pair is unambiguous."""
    disagree = ",".join(annotators) if annotators else "any"
    return f"{reverse('review:items')}?{urlencode({'queue': queue_id, 'disagree': disagree}, safe=',@')}"


@register.simple_tag
def disagreeing_items(queue_id: int, *annotators: str) -> str:
    """{% disagreeing_items queue.id %} or {% disagreeing_items queue.id "ann" "bob" %}."""
    return disagreeing_items_url(queue_id=queue_id, annotators=tuple(annotators))
