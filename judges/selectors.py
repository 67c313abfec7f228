"""Reads of the judges app: which judges there are, and what a judge run on a subset would do,
without writing anything (no reader spec is created for a judge that has not run yet)."""

from __future__ import annotations

from collections.abc import Sequence

from adjudication.models import Dataset, ReaderSpec, Reading
from adjudication.pipeline.producers import JudgePlan
from adjudication.pipeline.selectors import subset_response_ids
from adjudication.pipeline.subsets import ResponseSubset
from judges.models import Judge
from judges.services.judging import JUDGE_VERSION, judge_config
from readers.base import config_hash


def judge_names() -> list[str]:
    return list(Judge.objects.order_by("name").values_list("name", flat=True))


def judges_named(names: Sequence[str]) -> list[Judge]:
    """The judges of these names, in the order given (unknown names left out)."""
    found = {j.name: j for j in Judge.objects.filter(name__in=names).select_related("endpoint")}
    return [found[n] for n in dict.fromkeys(names) if n in found]


def judge_spec_current(judge: Judge) -> ReaderSpec | None:
    """The reader spec of the judge as it is now configured, if a run has made it
    (judges.services.judging.judge_spec_for, which a preview must not call: it creates the spec)."""
    return ReaderSpec.objects.filter(
        name=judge.name, version=JUDGE_VERSION, config_hash=config_hash(judge_config(judge))
    ).first()


def judging_plan(*, dataset: Dataset, judges: Sequence[Judge], subset: ResponseSubset) -> list[JudgePlan]:
    """Per judge, how many responses the subset holds, how many it has already judged (a reading
    of its current spec, whatever the verdict) and how many a run would judge. A subset that names
    what the dataset has not is refused as the run would refuse it (SubsetError)."""
    if subset.is_whole:
        response_ids = None
        n = dataset.responses.count()
    else:
        response_ids = subset_response_ids(dataset=dataset, subset=subset)
        n = len(response_ids)
    plans = []
    for judge in judges:
        spec = judge_spec_current(judge)
        judged = 0
        if spec is not None:
            readings = Reading.objects.filter(reader_spec=spec)
            readings = (
                readings.filter(response__dataset=dataset)
                if response_ids is None
                else readings.filter(response_id__in=response_ids)
            )
            judged = readings.count()
        plans.append(JudgePlan(judge=judge.name, responses=n, judged=judged, to_judge=n - judged))
    return plans
