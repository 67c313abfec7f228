"""The reader contract: what every answer reader takes, returns and declares.

This package is a pure Python library: it must never import Django, so that it runs in
Celery workers, in killable isolation processes and in `manage.py read` without a database.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

Verdict = Literal["correct", "incorrect", "no_answer", "error", "timeout", "not_applicable"]
VERDICTS: tuple[Verdict, ...] = ("correct", "incorrect", "no_answer", "error", "timeout", "not_applicable")
# The reader does not apply to the item's task type (readers.tasks): it did not run. A class apart,
# never a failure (error, timeout) nor a wrong answer: every count leaves it out of its denominator.
NOT_APPLICABLE: Verdict = "not_applicable"

# Answer forms a reader may claim to handle (seed 001 §2.2: the contract matrix). A reader is
# only scored on forms it claims; anything else is reported as out-of-contract, never a defect.
ANSWER_FORMS: tuple[str, ...] = (
    "option_letter",
    "option_text",
    "boxed",
    "plain_number",
    "latex",
    "units",
    "percent",
    "sets_intervals",
    # a short free-text answer compared with gold aliases (open-domain QA: NQ, TriviaQA)
    "short_text",
)

# Task types: what kind of answer an item asks for (readers.tasks tells an item's).
TaskType = Literal["multiple_choice", "maths", "free_form"]
TASK_TYPES: tuple[TaskType, ...] = ("multiple_choice", "maths", "free_form")
ALL_TASK_TYPES: frozenset[str] = frozenset(TASK_TYPES)
# Which task type each answer form belongs to: a reader applies to the task types of the forms it
# claims. Every form not listed is a maths form.
_FORM_TASK_TYPE: dict[str, TaskType] = {
    "option_letter": "multiple_choice",
    "option_text": "multiple_choice",
    "short_text": "free_form",
}


def task_types_of_contract(contract: frozenset[str]) -> frozenset[str]:
    """The task types a reader claiming `contract` applies to. A reader that claims no form (a
    plugin that declares nothing) is taken to apply everywhere: only a claim can rule it out."""
    if not contract:
        return ALL_TASK_TYPES
    return frozenset(_FORM_TASK_TYPE.get(form, "maths") for form in contract)


@dataclass(frozen=True)
class Item:
    """One stored response as a reader sees it. `choices` is empty for open-ended questions.

    `task_type` (readers.tasks) is the item's task type as its caller knows it (the pipeline, from
    the stored question; `manage.py read`, from the file): the isolation pool then answers
    `not_applicable` for a reader that does not apply to it, without running the reader. None
    reads with every reader (the audits, which score readers on their contracts themselves)."""

    response: str
    gold: str
    choices: tuple[str, ...] = ()
    question: str = ""
    task_type: str | None = None

    @property
    def is_multiple_choice(self) -> bool:
        return bool(self.choices)


@dataclass(frozen=True)
class Reading:
    """What a reader made of one response.

    `answer` is the extracted string, as written (None when nothing was found); `normalized` is
    the form the reader compares with the gold (the reader's own, faithful to its upstream);
    `span` is the answer's [start, end) character span in the response, when the reader can point
    at it; `canonical` is the platform's one form of the answer, the same whoever read it (the
    option letter for multiple choice, a normal form for maths; see readers.answer.canonical). Readers
    may leave it None: the isolation worker fills it from `answer` within the reading's budget.
    """

    verdict: Verdict
    answer: str | None = None
    normalized: str | None = None
    span: tuple[int, int] | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    # Last, so that positional Reading(verdict, answer, normalized, span, detail) keeps its meaning.
    canonical: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "answer": self.answer,
            "canonical": self.canonical,
            "normalized": self.normalized,
            "span": list(self.span) if self.span else None,
            "detail": self.detail,
        }


def config_hash(config: Any) -> str:
    """Stable hash of a reader config dataclass (or mapping): the identity stored with every verdict."""
    is_instance = dataclasses.is_dataclass(config) and not isinstance(config, type)
    data = dataclasses.asdict(config) if is_instance else dict(config)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class NoConfig:
    """For readers with nothing to configure."""


class Reader:
    """A small named component: name + version + config + declared contract.

    Subclasses set the class attributes and implement `read`. `read` must be a pure function of
    (config, item): the isolation pool may run it in any process, retry it, or kill it mid-way.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    kind: ClassVar[str] = "rule"  # "rule" | "regeneration" | "judge"
    # In the panel a dataset is read with when no reader is named (pipeline.selectors.default_panel).
    # Off for readers that only make sense on one kind of benchmark and would otherwise vote on
    # every response of every other kind (the short-answer QA readers): those are named to run.
    in_default_panel: ClassVar[bool] = True
    contract: ClassVar[frozenset[str]] = frozenset()
    # The task types (readers.tasks) this reader applies to; None: those of the forms it claims
    # (task_types_of_contract). On any other item its verdict is "not_applicable".
    task_types: ClassVar[frozenset[str] | None] = None
    # The benchmarks whose released harness this reader reproduces ("mmlu-pro"): on a dataset of
    # those benchmarks it is the default reported reader of format share (readers.harness.harness_reader).
    harness_benchmarks: ClassVar[frozenset[str]] = frozenset()
    # Which upstream behaviour this reproduces ("lm-eval 0.4.13 gsm8k strict-match"), for the docs.
    upstream: ClassVar[str] = ""
    Config: ClassVar[type] = NoConfig
    # The config a subclass reads with when none is given (a named upstream config such as
    # gsm8k's strict-match regex); None means `Config()`, the dataclass's own defaults.
    default_config: ClassVar[Any] = None

    def __init__(
        self,
        config: Any | None = None,
        *,
        name: str | None = None,
        contract: frozenset[str] | None = None,
        upstream: str | None = None,
    ) -> None:
        if config is None:
            config = self.default_config if self.default_config is not None else self.Config()
        self.config = config
        # Named configs of one implementation (e.g. lm-eval's RegexFilter as "gsm8k-strict-match",
        # or lm-eval's port of strip_string) carry their own registry name, and may claim another
        # contract and cite another upstream than the class default.
        if name is not None:
            self.name = name  # type: ignore[misc]
        if contract is not None:
            self.contract = contract  # type: ignore[misc]
        if upstream is not None:
            self.upstream = upstream  # type: ignore[misc]

    def applicable_task_types(self) -> frozenset[str]:
        return self.task_types if self.task_types is not None else task_types_of_contract(self.contract)

    @property
    def config_hash(self) -> str:
        return config_hash(self.config)

    def config_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self.config)

    def read(self, item: Item) -> Reading:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<Reader {self.name} {self.version} {self.config_hash}>"


@dataclass(frozen=True)
class Entry:
    """A reader as the registry lists it: the name users type and verdicts store, and how to build it."""

    name: str
    factory: Callable[[], Reader]
    summary: str = ""
    # Builds this reader under a configured name, NAME@SETTING ("fixed@relative:1e-4"): a named
    # config the user declares per dataset, with its own name, version and config hash. Raises
    # ValueError, with the reason, on a setting it does not accept.
    configure: Callable[[str], Reader] | None = None
