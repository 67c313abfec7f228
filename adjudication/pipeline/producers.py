"""Producers of readings that need an LLM endpoint (Answer Regeneration, and the LLM judges the
dataset page runs), filled at start-up by the app that has them: the judges app registers its own
in `JudgesConfig.ready()`. Adjudication never imports judges, so `run_readers --reader
regeneration` and the dataset page reach them through here, and a project without the judges app
is told so instead of failing on a missing command."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.management.base import OutputWrapper

from adjudication.errors import ApplicationError

if TYPE_CHECKING:
    from adjudication.models import Dataset
    from adjudication.pipeline.subsets import ResponseSubset


@dataclass(frozen=True)
class EndpointRun:
    """One run of an LLM producer over a dataset, as `run_readers` asks for it."""

    dataset: str
    endpoint: str
    instruction: str | None
    batch_size: int
    no_wait: bool
    timeout: float
    stdout: OutputWrapper  # a command's: each write is a line

    @classmethod
    def from_options(cls, options: Mapping[str, Any], *, stdout: OutputWrapper) -> EndpointRun:
        """The run a command's parsed options ask for: --dataset, --endpoint, --regen-instruction
        and the shared enqueue options."""
        return cls(
            dataset=options["dataset"],
            endpoint=options["endpoint"],
            instruction=options["regen_instruction"],
            batch_size=options["batch_size"],
            no_wait=options["no_wait"],
            timeout=options["timeout"],
            stdout=stdout,
        )


EndpointProducer = Callable[[EndpointRun], None]

_PRODUCERS: dict[str, EndpointProducer] = {}


class ProducerUnavailable(ApplicationError):
    """A reader that needs an LLM endpoint was asked for, and no installed app produces it."""


def endpoint_producer_register(*, name: str, run: EndpointProducer) -> None:
    _PRODUCERS[name] = run


def endpoint_producer(name: str) -> EndpointProducer:
    try:
        return _PRODUCERS[name]
    except KeyError:
        raise ProducerUnavailable(
            f"the {name} reader calls a model through the judges app, which is not installed "
            "(add 'judges' to INSTALLED_APPS)"
        ) from None


@dataclass(frozen=True)
class JudgePlan:
    """What judging a subset means for one judge: the responses it holds, those the judge (in its
    current template, parser and model) has already judged, and those left to judge."""

    judge: str
    responses: int
    judged: int
    to_judge: int


@dataclass(frozen=True)
class JudgeRuns:
    """What the dataset page asks of the app that runs LLM judges (the judges app registers it in
    `JudgesConfig.ready()`): the judges there are, what a run on a subset would judge (read-only),
    and starting one (enqueues on commit, returns at once)."""

    names: Callable[[], list[str]]
    plan: Callable[[Dataset, Sequence[str], ResponseSubset], list[JudgePlan]]
    start: Callable[[Dataset, Sequence[str], ResponseSubset], list[JudgePlan]]


_JUDGE_RUNS: list[JudgeRuns] = []


def judge_runs_register(*, runs: JudgeRuns) -> None:
    _JUDGE_RUNS[:] = [runs]


def judge_runs() -> JudgeRuns | None:
    """The registered judge runs; None when no installed app runs LLM judges."""
    return _JUDGE_RUNS[0] if _JUDGE_RUNS else None
