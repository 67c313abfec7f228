"""Judge versions compared on held-out human labels (docs/judges.md, "Judge versions").

Pure functions. A judge family's labelled responses are split once per seed into a pool (whose
labels may become a new version's few-shot examples) and a held-out set (whose labels only
measure). Each version's agreement with the humans is `bias.judge_bias` over the held-out items
alone, with Cohen's κ given its asymptotic interval (statsmodels), and consecutive versions are
compared on the held-out items both judged by McNemar's exact test on who was right.

No example ever counts: the examples come from the pool, so none is held out; the measured set
also drops every example id of every version of the family (defensively, and so that all the
versions are measured on the same items), and says how many it dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from adjudication.analytics.bias import human_binary, judge_bias, producer_binary
from adjudication.analytics.stats import Undefined

POOL = "pool"
HELD_OUT = "held_out"
DEFAULT_HELD_OUT_FRACTION = 0.5
KAPPA_CI_NONE = "no interval: zero estimated variance (perfect agreement, or a one-category rater)"


def held_out_side(*, seed: int, external_id: str, held_out_fraction: float) -> bool:
    """Whether a response is held out: a uniform number made from the seed and the response's
    external id (sha256), below the fraction. Neither database order nor which other responses are
    labelled moves a response from one side to the other."""
    digest = hashlib.sha256(f"{seed}\x00{external_id}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < held_out_fraction


def split_sides(
    labelled: Mapping[str, str], *, seed: int, held_out_fraction: float
) -> tuple[dict[str, str], dict[str, str]]:
    """(pool, held out) of `labelled`: {response key: external id} -> each side's {key: external id}."""
    pool: dict[str, str] = {}
    held: dict[str, str] = {}
    for key, external_id in labelled.items():
        side = held if held_out_side(seed=seed, external_id=external_id, held_out_fraction=held_out_fraction) else pool
        side[key] = external_id
    return pool, held


def prompt_hash_label(config: Mapping[str, Any]) -> str:
    """A judge spec's prompt as its figures name it: the template's hash, and after a `+` that of
    the few-shot examples sent before it, for a version that has some."""
    few = config.get("few_shot_hash")
    return str(config.get("template_hash") or "") + (f"+{few}" if few else "")


@dataclass(frozen=True)
class VersionReadings:
    """One version of a judge (one reader spec) and its verdicts: {response key: verdict}."""

    label: str
    spec_id: int
    family_version: int
    template_hash: str
    few_shot: frozenset[str]
    verdicts: Mapping[str, str] = field(default_factory=dict)


def kappa_interval(tp: int, fp: int, fn: int, tn: int) -> list[float] | None:
    """The asymptotic 95 % interval of Cohen's κ of a 2×2 table (statsmodels' cohens_kappa), for a
    table whose κ is defined. None where its estimated variance is 0 (perfect agreement, or a rater
    that used one category): a zero-width interval would claim a certainty n items cannot give."""
    import warnings

    from statsmodels.stats.inter_rater import cohens_kappa

    with warnings.catch_warnings():
        # Its z statistic (not used here) divides by a null variance when κ is 0 by a margin.
        warnings.simplefilter("ignore", RuntimeWarning)
        res = cohens_kappa([[tp, fp], [fn, tn]])
    lo, hi = float(res.kappa_low), float(res.kappa_upp)
    one_category = 0 in (tp + fp, fn + tn, tp + fn, fp + tn)
    if one_category or not float(res.std_kappa) > 1e-12:  # 0 up to round-off, or NaN
        return None
    if lo != lo or hi != hi:  # NaN
        return None
    return [max(-1.0, lo), min(1.0, hi)]


def _version_row(v: VersionReadings, measured: Sequence[str], human: Mapping[str, str | None], seed: int) -> dict:
    judged = [r for r in measured if r in v.verdicts]
    stats = judge_bias(((v.verdicts[r], human.get(r)) for r in judged), seed=seed)
    kappa = stats["cohen_kappa"]
    kappa_ci = (
        None if isinstance(kappa, Undefined) else kappa_interval(stats["tp"], stats["fp"], stats["fn"], stats["tn"])
    )
    return {
        "label": v.label,
        "spec_id": v.spec_id,
        "family_version": v.family_version,
        "template_hash": v.template_hash,
        "few_shot": len(v.few_shot),
        "held_out": len(measured),
        "judged": len(judged),
        "not_judged": len(measured) - len(judged),
        "n": stats["n"],
        "kappa": kappa if not isinstance(kappa, Undefined) else None,
        "kappa_undefined": kappa.reason if isinstance(kappa, Undefined) else "",
        "kappa_ci_note": "" if kappa_ci is not None or isinstance(kappa, Undefined) else KAPPA_CI_NONE,
        "kappa_ci": kappa_ci,
        **{
            key: (stats[key] if not isinstance(stats[key], Undefined) else None)
            for key in ("accuracy", "bias", "false_accept_rate", "false_reject_rate")
        },
        **{f"{key}_ci": stats[f"{key}_ci"] for key in ("accuracy", "bias", "false_accept_rate", "false_reject_rate")},
        "confusion": stats["confusion"]["matrix"],
        "excluded": stats["excluded"],
        "warnings": stats["warnings"],
    }


def paired_test(
    before: Mapping[str, str], after: Mapping[str, str], human: Mapping[str, str | None], items: Iterable[str]
) -> dict[str, Any]:
    """McNemar's exact test (statsmodels) of two versions on the items both judged with a binary
    verdict and the human labelled: `worse` = the earlier version right and the later wrong,
    `better` the reverse; only these discordant items carry the test."""
    table = [[0, 0], [0, 0]]  # rows: before right / wrong; columns: after right / wrong
    for r in items:
        h = human_binary(human.get(r))
        a, b = producer_binary(before.get(r)), producer_binary(after.get(r))
        if h is None or a is None or b is None:
            continue
        table[0 if a == h else 1][0 if b == h else 1] += 1
    n = sum(map(sum, table))
    worse, better = table[0][1], table[1][0]
    p_value: float | None = None
    if worse + better:
        from statsmodels.stats.contingency_tables import mcnemar

        p_value = float(mcnemar(table, exact=True).pvalue)
    return {
        "n": n,
        "both_right": table[0][0],
        "both_wrong": table[1][1],
        "worse": worse,
        "better": better,
        "accuracy_change": ((better - worse) / n) if n else None,
        "p_value": p_value,
    }


def compare_versions(
    versions: Sequence[VersionReadings],
    *,
    held_out: Iterable[str],
    human: Mapping[str, str | None],
    seed: int = 0,
) -> dict[str, Any]:
    """Every version measured on the held-out labelled items (less any example of the family),
    and each version against the one before it by the paired test."""
    examples = frozenset().union(*(v.few_shot for v in versions)) if versions else frozenset()
    held = sorted(set(held_out))
    leaked = sorted(set(held) & examples)
    measured = [r for r in held if r not in examples and human_binary(human.get(r)) is not None]
    rows = [_version_row(v, measured, human, seed) for v in versions]
    pairs = [
        {"before": a.label, "after": b.label, **paired_test(a.verdicts, b.verdicts, human, measured)}
        for a, b in pairwise(versions)
    ]
    warnings = []
    if leaked:
        # Cannot happen through the versions service (examples come from the pool); a version
        # made by hand or a split edited afterwards could, and such labels must not measure.
        warnings.append(
            f"{len(leaked)} held-out response(s) were used as few-shot examples and are left out of every measure"
        )
    return {
        "held_out": len(held),
        "measured": len(measured),
        "examples_left_out": len(leaked),
        "versions": rows,
        "pairs": pairs,
        "warnings": warnings,
    }


def _num(value: float | None, ci: Sequence[float] | None = None, *, signed: bool = False) -> str:
    if value is None:
        return "—"
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    if ci:
        lo, hi = ci
        text += f" [{lo:+.3f}, {hi:+.3f}]" if signed else f" [{lo:.3f}, {hi:.3f}]"
    return text


def versions_text(report: Mapping[str, Any]) -> str:
    """The comparison as `manage.py judge_versions` prints it."""
    lines = [f"judge family {report['family']} on dataset {report['dataset']}"]
    if report.get("error"):
        return "\n".join([*lines, report["error"]])
    split = report["split"]
    lines.append(
        f"split seed {split['seed']}: {split['pool']} labels in the pool (may feed examples), "
        f"{split['held_out']} held out (only measure; {report['measured']} measured after leaving out examples)"
    )
    lines.append("every number below is on the held-out labels only; intervals 95 % (κ asymptotic, bias bootstrap)")
    for v in report["versions"]:
        lines.append(
            f"v{v['family_version']} {v['label']}: template {v['template_hash'] or '—'}, {v['few_shot']} example(s), "
            f"n={v['n']} of {v['held_out']} held out judged ({v['not_judged']} not judged"
            + (f", left out: {', '.join(f'{k}={n}' for k, n in v['excluded'].items())}" if v["excluded"] else "")
            + ")"
        )
        lines.append(
            f"    κ {_num(v['kappa'], v['kappa_ci'])}"
            + (f" ({v['kappa_undefined'] or v['kappa_ci_note']})" if v["kappa_undefined"] or v["kappa_ci_note"] else "")
            + f"  accuracy {_num(v['accuracy'], v['accuracy_ci'])}  bias {_num(v['bias'], v['bias_ci'], signed=True)}"
        )
        lines.append(
            f"    false-accept {_num(v['false_accept_rate'], v['false_accept_rate_ci'])}"
            f"  false-reject {_num(v['false_reject_rate'], v['false_reject_rate_ci'])}"
        )
        lines.extend(f"    ! {w}" for w in v["warnings"])
    for p in report["pairs"]:
        p_text = "no discordant items" if p["p_value"] is None else f"McNemar exact p = {p['p_value']:.4g}"
        lines.append(
            f"{p['before']} -> {p['after']}: on {p['n']} held-out items both judged, {p['better']} now right "
            f"(were wrong), {p['worse']} now wrong (were right); {p_text}"
        )
    lines.extend(f"! {w}" for w in report["warnings"])
    return "\n".join(lines)
