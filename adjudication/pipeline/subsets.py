"""Which responses of a dataset an LLM run covers, as one validated value.

Judging a whole dataset is slow and costs money (812 responses took ~40 minutes with a small model
on a CPU), while an audit of a judge needs only the responses it is compared on: a review queue's,
the labelled ones, a random sample, or a list of ids. Built where a request comes in (`run_judges`'
options, the dataset page's form) and passed whole to the service, which asks the selector
(`pipeline.selectors.subset_response_ids`) for the responses; what needs no data (a sample's size,
the lines of an id list) is checked here. Free of the ORM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from adjudication.errors import ApplicationError

SubsetKind = Literal["all", "queue", "labelled", "sample", "ids"]
SUBSET_KINDS: tuple[SubsetKind, ...] = ("all", "queue", "labelled", "sample", "ids")
EXTERNAL_ID_MAX = 500  # Response.external_id's max_length
SEED_MAX = 2**63 - 1


class SubsetError(ApplicationError, ValueError):
    """A subset refused: a queue the dataset has not, ids it holds no response of, a sample of
    fewer than one response."""


@dataclass(frozen=True)
class IdLine:
    """One response external id of a list, and the line (from 1) it was read from."""

    line: int
    external_id: str


def id_lines(text: str, *, source: str, field: str | None = None) -> tuple[IdLine, ...]:
    """The external ids of an id list, one a line: surrounding whitespace stripped, blank lines and
    lines starting with `#` left out (an id may itself hold a `#`, so there are no trailing
    comments). An id longer than any response's is refused with its file (`source`) and line."""
    ids = []
    for number, raw in enumerate(text.splitlines(), start=1):
        value = raw.strip()
        if not value or value.startswith("#"):
            continue
        if len(value) > EXTERNAL_ID_MAX:
            raise SubsetError(
                f"{source}, line {number}: an id of {len(value)} characters "
                f"(a response's is at most {EXTERNAL_ID_MAX})",
                field=field,
            )
        ids.append(IdLine(number, value))
    if not ids:
        raise SubsetError(f"{source}: no response id in it (one a line; # starts a comment line)", field=field)
    return tuple(ids)


@dataclass(frozen=True)
class ResponseSubset:
    """The responses a run covers: `all` of the dataset; those with an item in the review `queue`
    of that name; the `labelled` ones (a standing final human label that decided it, not
    "unresolved"); a uniform `sample` of `size` drawn by `seed` (each response ranked by a hash of
    the seed and its external id, so the same seed draws the same responses on every machine and
    in every run, and a larger sample holds the smaller one); or the listed `ids` (read from
    `source`, whose lines the errors name)."""

    kind: SubsetKind = "all"
    queue: str = ""
    size: int = 0
    seed: int = 0
    ids: tuple[IdLine, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in SUBSET_KINDS:
            raise SubsetError(f"subset: one of {', '.join(SUBSET_KINDS)}, not {self.kind!r}", field="subset")
        if self.kind == "queue" and not self.queue:
            raise SubsetError("queue: name the review queue", field="queue")
        if self.kind == "sample":
            if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
                raise SubsetError("sample: a sample holds at least 1 response", field="sample")
            if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= SEED_MAX:
                raise SubsetError(f"seed: a whole number from 0 to {SEED_MAX}", field="seed")
        if self.kind == "ids" and not self.ids:
            raise SubsetError(f"{self.source or 'ids'}: no response id in it", field="ids")

    @classmethod
    def whole(cls) -> ResponseSubset:
        return cls()

    @classmethod
    def of_queue(cls, name: str) -> ResponseSubset:
        return cls(kind="queue", queue=name)

    @classmethod
    def labelled(cls) -> ResponseSubset:
        return cls(kind="labelled")

    @classmethod
    def sample(cls, size: int, *, seed: int = 0) -> ResponseSubset:
        return cls(kind="sample", size=size, seed=seed)

    @classmethod
    def listed(cls, text: str, *, source: str, field: str | None = None) -> ResponseSubset:
        return cls(kind="ids", ids=id_lines(text, source=source, field=field), source=source)

    @property
    def is_whole(self) -> bool:
        return self.kind == "all"

    def describe(self) -> str:
        """What the subset is, in a few words (the command's summary, the page's message)."""
        if self.kind == "queue":
            return f"the responses in review queue {self.queue!r}"
        if self.kind == "labelled":
            return "the responses with a final human label"
        if self.kind == "sample":
            return f"a random sample of {self.size} (seed {self.seed})"
        if self.kind == "ids":
            return f"the {len({i.external_id for i in self.ids})} responses listed in {self.source}"
        return "the whole dataset"
