"""The one write of judge versions on this side: a family's split of a dataset's human labels."""

from __future__ import annotations

from django.db import transaction

from adjudication.analytics.selectors import human_observations
from adjudication.analytics.versions.compare import DEFAULT_HELD_OUT_FRACTION, split_sides
from adjudication.analytics.versions.selectors import judge_family_specs, labelled_external_ids
from adjudication.errors import ApplicationError
from adjudication.models import Dataset, JudgeSplit


class VersionsError(ApplicationError, ValueError):
    """A refused split: the message names the option at fault."""


def judge_split_ensure(
    *, dataset: Dataset, family: str, seed: int = 0, held_out_fraction: float | None = None
) -> JudgeSplit:
    """The family's split of the dataset's labels for `seed`, made on first use and brought up to
    date with labels made since (each placed by the same rule, so no earlier member moves). Its
    fraction is fixed when it is made: another one would move labels between the sides."""
    if not judge_family_specs(family=family):
        raise VersionsError(f"no judge named {family!r} has a reader spec; add it with add_judge and run it first")
    if held_out_fraction is not None and not 0.0 < held_out_fraction < 1.0:
        raise VersionsError("--held-out must be a fraction strictly between 0 and 1")
    with transaction.atomic():
        split, created = JudgeSplit.objects.select_for_update().get_or_create(
            dataset=dataset,
            family=family,
            seed=seed,
            defaults={"held_out_fraction": held_out_fraction or DEFAULT_HELD_OUT_FRACTION},
        )
        if not created and held_out_fraction is not None and held_out_fraction != split.held_out_fraction:
            raise VersionsError(
                f"{family}'s split of seed {seed} holds out {split.held_out_fraction:g} of the labels; "
                "another fraction would move labels that may already have fed examples into the held-out set"
            )
        human = human_observations(dataset=dataset)
        pool, held = split_sides(
            labelled_external_ids(dataset=dataset), seed=split.seed, held_out_fraction=split.held_out_fraction
        )
        split.pool = {k: human[k].verdict for k in sorted(pool, key=int)}
        split.held_out = sorted(int(k) for k in held)
        split.save(update_fields=["pool", "held_out", "updated_at"])
    return split
