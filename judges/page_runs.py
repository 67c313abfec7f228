"""Judge runs as the dataset page starts them (through pipeline.producers.JudgeRuns, which
JudgesConfig.ready() registers: adjudication never imports judges): by judge name, on a subset,
without waiting. The page's form offers only the judges `judge_names` lists."""

from __future__ import annotations

from collections.abc import Sequence

from adjudication.models import Dataset
from adjudication.pipeline.producers import JudgePlan, JudgeRuns
from adjudication.pipeline.subsets import ResponseSubset
from judges.selectors import judge_names, judges_named, judging_plan
from judges.services.runs import dataset_judge


def plan(dataset: Dataset, names: Sequence[str], subset: ResponseSubset) -> list[JudgePlan]:
    return judging_plan(dataset=dataset, judges=judges_named(names), subset=subset)


def start(dataset: Dataset, names: Sequence[str], subset: ResponseSubset) -> list[JudgePlan]:
    return dataset_judge(dataset=dataset, judges=judges_named(names), subset=subset).plans()


JUDGE_RUNS = JudgeRuns(names=judge_names, plan=plan, start=start)
