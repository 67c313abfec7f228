"""Reads of judge versions: a family's reader specs, its split, and the versions compared on the
split's held-out labels. A family is named by its first judge; its later versions are judge specs
whose config names it (`family`, written by the judges app), so this reads no judges table."""

from __future__ import annotations

from typing import Any

from adjudication.analytics.selectors import human_observations
from adjudication.analytics.versions.compare import (
    VersionReadings,
    compare_versions,
    held_out_side,
    prompt_hash_label,
)
from adjudication.models import Dataset, JudgeSplit, ReaderSpec, Reading, Response


def judge_family_specs(*, family: str) -> list[ReaderSpec]:
    """The family's judge specs, oldest version first: the first judge's (every config it has had,
    each a version of its own) then each later version's."""
    specs = ReaderSpec.objects.filter(kind="judge", name=family) | ReaderSpec.objects.filter(
        kind="judge", config__family=family
    )
    return sorted(specs, key=lambda s: (int((s.config or {}).get("family_version", 1)), s.id))


def judge_families() -> list[str]:
    """The names of the first judges that have a reader spec (each names a family)."""
    names = ReaderSpec.objects.filter(kind="judge").exclude(config__has_key="family").values_list("name", flat=True)
    return sorted(set(names))


def judge_split_of(*, dataset: Dataset, family: str, seed: int | None = None) -> JudgeSplit | None:
    """The family's split on the dataset: with `seed`, that seed's; else the one its newest
    version was made from (else the only or oldest one)."""
    splits = JudgeSplit.objects.filter(dataset=dataset, family=family)
    if seed is not None:
        return splits.filter(seed=seed).first()
    for spec in reversed(judge_family_specs(family=family)):
        split = (spec.config or {}).get("split") or {}
        if split.get("dataset") == dataset.name and isinstance(split.get("seed"), int):
            return splits.filter(seed=split["seed"]).first()
    return splits.order_by("id").first()


def labelled_external_ids(*, dataset: Dataset) -> dict[str, str]:
    """{response id: external id} of the dataset's responses whose final label gives a verdict."""
    human = human_observations(dataset=dataset)
    keys = [int(k) for k, h in human.items() if h.verdict in ("correct", "incorrect")]
    return {str(rid): ext for rid, ext in Response.objects.filter(id__in=keys).values_list("id", "external_id")}


def judge_versions_report(*, dataset: Dataset, family: str, seed: int | None = None) -> dict[str, Any]:
    """Every version of the family measured on the split's held-out labels, with the paired tests
    between consecutive versions. The held-out side is taken by the split's rule over the labels as
    they stand now (the stored lists are its record as of the last refresh, made by the same rule)."""
    specs = judge_family_specs(family=family)
    split = judge_split_of(dataset=dataset, family=family, seed=seed)
    out: dict[str, Any] = {"family": family, "dataset": dataset.name, "split": None, "versions": [], "pairs": []}
    if not specs:
        out["error"] = f"no judge named {family!r} has a reader spec (add it with add_judge, run it with run_judges)"
        return out
    if split is None:
        out["error"] = (
            f"no split of {family}'s labels on dataset {dataset.name}: make one with "
            f"`manage.py judge_versions --dataset {dataset.name} --judge {family}`"
        )
        return out
    human = {k: h.verdict for k, h in human_observations(dataset=dataset).items()}
    labelled = labelled_external_ids(dataset=dataset)
    held_out = [
        k
        for k, ext in labelled.items()
        if held_out_side(seed=split.seed, external_id=ext, held_out_fraction=split.held_out_fraction)
    ]
    verdicts: dict[int, dict[str, str]] = {s.id: {} for s in specs}
    rows = Reading.objects.filter(
        reader_spec__in=specs, response__dataset=dataset, response_id__in=[int(k) for k in held_out]
    )
    for rid, sid, verdict in rows.values_list("response_id", "reader_spec_id", "verdict").iterator(chunk_size=5000):
        verdicts[sid][str(rid)] = verdict
    versions = [
        VersionReadings(
            label=_label(spec, family),
            spec_id=spec.id,
            family_version=int((spec.config or {}).get("family_version", 1)),
            template_hash=prompt_hash_label(spec.config or {}),
            few_shot=frozenset(str(r) for r in (spec.config or {}).get("few_shot", [])),
            verdicts=verdicts[spec.id],
        )
        for spec in specs
    ]
    out.update(compare_versions(versions, held_out=held_out, human=human, seed=split.seed))
    out["split"] = {
        "seed": split.seed,
        "held_out_fraction": split.held_out_fraction,
        "pool": sum(1 for k in labelled if k not in set(held_out)),
        "held_out": len(held_out),
        "updated_at": split.updated_at.isoformat(),
    }
    return out


def _label(spec: ReaderSpec, family: str) -> str:
    """A version's name, with its config hash where the first judge has had several configs."""
    return f"{spec.name} ({spec.config_hash[:8]})" if spec.name == family else spec.name
