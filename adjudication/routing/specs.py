"""A routing policy's settings as one validated value, and the routing's error.

Built once where a request comes in (a command's options, the queue form, the API's body) and
passed whole to the services, so that every setting is checked in one place and the settings do
not travel as a clump of keywords. Free of the ORM, like routing.rules: what can be checked
without the data is checked here; what needs the data (the panel's readers, the target against the
dataset's consensus) is the services'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, get_args

from adjudication.errors import ApplicationError
from adjudication.routing.rules import Compare, Priority, Sampling
from adjudication.validators import INT_MAX, INT_MIN

if TYPE_CHECKING:
    from adjudication.models import ReaderSpec

TARGET_MAX = 200  # RoutingPolicy.target's max_length


class RoutingError(ApplicationError, ValueError):
    """A routing policy refused: a setting out of bounds, a panel that cannot disagree, a target
    the data cannot route by. Still a ValueError, as the routing's refusals were before they had a
    class of their own, for the callers that catch them as one."""


class UnknownPanelReader(RoutingError, KeyError):
    """A panel member no reader answers to. A KeyError too, as the reader registry's UnknownReader
    it reports, for the callers that catch that."""


def _bounded(value: Any, *, field: str, low: int, high: int) -> None:
    # The model fields' MinValueValidator / MaxValueValidator, in their words.
    if isinstance(value, bool) or not isinstance(value, int):
        raise RoutingError(f"{field}: Enter a whole number.", field=field)
    if value < low:
        raise RoutingError(f"{field}: Ensure this value is greater than or equal to {low}.", field=field)
    if value > high:
        raise RoutingError(f"{field}: Ensure this value is less than or equal to {high}.", field=field)


@dataclass(frozen=True)
class PolicySpec:
    """How a policy routes: which readers' disagreement (`panel`: reader names or the specs
    themselves; empty: the queue's default panel), what a dispute is (`compare`,
    `missing_is_disagreement`), the share of undisputed responses drawn as controls, the share of
    the responses no panel reader can read that is routed (`unreadable_fraction`: their own
    stratum), the seed of every draw, and the serving order. With priority "information", the `target` whose uncertainty
    the labels narrow, an optional `budget` of items, and the `sampling`: "randomized" (the
    default: every response drawn with a known probability, fit for estimates) or "greedy" (the top
    label values, unfit for estimates); other priorities take no target or budget, and are
    probability designs already (sampling stays "randomized")."""

    panel: tuple[str | ReaderSpec, ...] = ()
    compare: Compare = "either"
    missing_is_disagreement: bool = False
    control_fraction: float = 0.0
    unreadable_fraction: float = 0.1
    seed: int = 0
    priority: Priority = "disagreement"
    target: str = ""
    budget: int | None = None
    sampling: Sampling = "randomized"

    def __post_init__(self) -> None:
        # Frozen: normalised through object.__setattr__, once, before anything can read them.
        object.__setattr__(self, "panel", tuple(self.panel))
        if self.compare not in get_args(Compare):
            raise RoutingError(f"compare: one of {', '.join(get_args(Compare))}", field="compare")
        if self.priority not in get_args(Priority):
            raise RoutingError(f"priority: one of {', '.join(get_args(Priority))}", field="priority")
        if self.sampling not in get_args(Sampling):
            raise RoutingError(f"sampling: one of {', '.join(get_args(Sampling))}", field="sampling")
        for name in ("control_fraction", "unreadable_fraction"):
            fraction = getattr(self, name)
            if isinstance(fraction, bool) or not (
                isinstance(fraction, (int, float)) and math.isfinite(fraction) and 0.0 <= fraction <= 1.0
            ):
                # NaN passes every comparison-based validator and PostgreSQL orders it above 1.
                what = name.replace("_", " ")
                raise RoutingError(f"{what} must be a number between 0 and 1", field=name)
        _bounded(self.seed, field="seed", low=INT_MIN, high=INT_MAX)
        if not isinstance(self.target, str):
            raise RoutingError("target: Enter a text.", field="target")
        object.__setattr__(self, "target", self.target.strip())
        if len(self.target) > TARGET_MAX:
            raise RoutingError(
                f"target: Ensure this value has at most {TARGET_MAX} characters (it has {len(self.target)}).",
                field="target",
            )
        if self.budget is not None:
            _bounded(self.budget, field="budget", low=1, high=INT_MAX)
        if self.priority != "information" and (self.target or self.budget is not None):
            raise RoutingError(
                f"a target and a budget go with priority information only (this policy's is {self.priority!r})",
                field="target",
            )
        if self.priority != "information" and self.sampling != "randomized":
            raise RoutingError(
                f"sampling {self.sampling} goes with priority information only (this policy's is {self.priority!r})",
                field="sampling",
            )

    def settings(self) -> dict[str, Any]:
        """Every setting but the panel, by the name RoutingPolicy's columns share with them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "panel"}

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> PolicySpec:
        """The spec of those `values` that name one of its settings (a form's cleaned data, an API
        body): the others are left to whoever reads them; a setting left out or None (a form's
        blank field) keeps its default."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if values.get(f.name) is not None})
