"""A dataset's prediction-powered estimates (docs/estimates.md): the one function the `estimates`
report kind (its command, page, API and bundles) and the stored analytics report both call, so
that the page, the command and the stored report agree number for number.

`estimate_inputs` reads (the population with every producer's verdicts, the predictor's values,
the human labels of one probability design with that design); `dataset_estimates` computes them
with analytics.estimate_table, one Frame for the predictor, reused across every target. It sits
above analytics.selectors and analytics.design, which it reads through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adjudication.analytics.design import EstimateSample, estimate_sample
from adjudication.analytics.estimate_table import design_summary, estimates_table
from adjudication.analytics.estimates import N_BOOT, Population
from adjudication.analytics.selectors import VOTE, estimate_population, estimate_predictor
from adjudication.models import Dataset

# The predictor when none is named: the analytics' fixed reader, else the vote of every producer.
DEFAULT_PREDICTOR = "fixed"


@dataclass(frozen=True)
class EstimateInputs:
    population: Population
    predictor: dict[str, float]
    predictor_name: str
    predictor_why: str  # how the predictor was chosen, said beside every estimate
    sample: EstimateSample


def estimate_inputs(
    *, dataset: Dataset, predictor: str | None, policy: str | None, prefer: str = DEFAULT_PREDICTOR
) -> EstimateInputs:
    """What the estimates rest on. `predictor` named: that producer, "vote" or "consensus" (an
    EstimateError naming the field when the dataset has no such producer); None: `prefer` when it
    gave verdicts on the dataset, else the vote. `policy` None: the design's own choice."""
    population = estimate_population(dataset=dataset)
    if predictor:
        name, why = predictor, "named"
    elif prefer in population.verdicts:
        name, why = prefer, f"the default: the analytics' fixed reader, {prefer!r}"
    else:
        name = VOTE
        why = (
            f"the default: the analytics' fixed reader, {prefer!r}, gave no verdicts on this dataset, "
            "so the share of the producers calling a response correct"
        )
    values = estimate_predictor(dataset=dataset, population=population, name=name)
    sample = estimate_sample(dataset=dataset, policy=policy or None)
    return EstimateInputs(population, values, name, why, sample)


def dataset_estimates(
    *,
    dataset: Dataset,
    target: str | None = None,
    predictor: str | None = None,
    policy: str | None = None,
    by: str = "checkpoint",
    base: str = "base",
    reported: str = "boxed",
    seed: int = 0,
    prefer: str = DEFAULT_PREDICTOR,
    inputs: EstimateInputs | None = None,
) -> dict[str, Any]:
    """The estimates report's JSON: the predictor (and why it), the design, and one target or the
    headline set, each machine only, human only and prediction-powered. `inputs`: what
    estimate_inputs read for these predictor, policy and prefer, when the caller has it (the
    analytics report reads the population once for this and its judge-bias table)."""
    if inputs is None:
        inputs = estimate_inputs(dataset=dataset, predictor=predictor, policy=policy, prefer=prefer)
    sample = inputs.sample
    table = estimates_table(
        inputs.population,
        predictor=inputs.predictor,
        predictor_name=inputs.predictor_name,
        labels=sample.labels,
        design=sample.design,
        target=target or None,
        by=by,
        base=base,
        reported=reported,
        seed=seed,
        n_boot=N_BOOT,
    )
    return {
        "dataset": dataset.name,
        "predictor": {"name": inputs.predictor_name, "why": inputs.predictor_why},
        "design": design_summary(
            policy=sample.policy,
            design=sample.design,
            labels=sample.labels,
            population=sample.population,
            left_out=sample.left_out,
        ),
        **table,
    }
