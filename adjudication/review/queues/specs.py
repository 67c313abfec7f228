"""A new queue's creation values as one validated value.

Built once where a request comes in (create_queue's options, the queue form, POST /api/queues/)
and passed whole to queue_create: the queue's own settings are checked here, against the model
fields' validators (the column bounds, a name of one printable line), and its routing by the
PolicySpec it holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from django.core.exceptions import ValidationError

from adjudication.models import ReviewQueue
from adjudication.review.errors import ReviewError
from adjudication.routing.specs import PolicySpec
from adjudication.validators import unprintable

_TITLE_FIELD = ReviewQueue._meta.get_field("title")
assert _TITLE_FIELD.max_length is not None  # the title is a bounded CharField
TITLE_MAX: int = _TITLE_FIELD.max_length


def title_check(title: str) -> None:
    """A title annotators can be shown: bounded, one line of printable text."""
    if len(title) > TITLE_MAX:
        raise ReviewError(f"title: at most {TITLE_MAX} characters", field="title")
    bad = unprintable(title)
    if bad:
        raise ReviewError(f"title: must be one line of printable text (found {bad})", field="title")


@dataclass(frozen=True)
class QueueSpec:
    """A queue's settings: its managers' handle (`name`) and the title annotators see instead,
    labels per item (`overlap`), how long a claimed item stays its annotator's, what annotators
    are shown and asked, the guidelines (None: the built-in ones for the task), and the `routing`
    of the policy made for it when it is not built on an existing one (whose seed also orders the
    queue's ties)."""

    name: str
    overlap: int = 2
    lease_seconds: int = 900
    show_candidates: bool = True
    judge_correctness: bool = False
    title: str = ""
    guidelines: str | None = None
    routing: PolicySpec = field(default_factory=PolicySpec)

    def __post_init__(self) -> None:
        problems: dict[str, list[str]] = {}
        for name in ("name", "overlap", "lease_seconds"):
            try:
                # The model field's own clean: its validators are the column's bounds.
                ReviewQueue._meta.get_field(name).clean(getattr(self, name), None)  # type: ignore[union-attr]
            except ValidationError as exc:
                problems[name] = exc.messages
        if len(problems) == 1:
            (name, messages), *_ = problems.items()
            raise ReviewError(f"{name}: {' '.join(messages)}", field=name)
        if problems:
            raise ReviewError("; ".join(f"{name}: {' '.join(messages)}" for name, messages in problems.items()))
        object.__setattr__(self, "title", self.title.strip())
        title_check(self.title)

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> QueueSpec:
        """The spec of those `values` that name one of its settings or the routing's (a form's
        cleaned data, an API body); a setting left out or None keeps its default."""
        own = {f.name: values[f.name] for f in fields(cls) if f.name != "routing" and values.get(f.name) is not None}
        return cls(**own, routing=PolicySpec.from_values(values))
