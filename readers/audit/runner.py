"""Run the metamorphic audit: every (gold, transform, reader) through the isolation pool, then the
seed-001 tables (self-validation, coverage, per-stratum rates with Wilson intervals, error budget,
pairwise disagreement with pair support, off-by-one acceptance by gold magnitude).

Verdict classes (seed 001 §2.3):
  accepted    = "correct"
  rejected    = "incorrect" or "no_answer"
  not judged  = "error" or "timeout"   (execution failure: never counted as a rejection)
coverage = judged / n. Rates over judged verdicts are null (never 0) when nothing was judged.

Pure Python (no Django): the CLI, the Celery task and the bench call `run_audit`.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import Item
from ..stats import wilson
from .contracts import CONTRACT_OVERRIDES, SEED001_READERS, SEED_STRATA, Overrides, override_rows, seed_stratum_label
from .transforms import (
    ADVERSARIAL,
    CERTIFIED,
    CONTRACT_DEP,
    STRATA,
    TRANSFORMS,
    Transform,
    Variant,
    build_variants,
    int_value,
)

ACCEPTED, REJECTED, NOT_JUDGED = "accepted", "rejected", "not_judged"
OUTCOME = {
    "correct": ACCEPTED,
    "incorrect": REJECTED,
    "no_answer": REJECTED,
    "error": NOT_JUDGED,
    "timeout": NOT_JUDGED,
}
BUCKETS = ("<10", "1e1", "1e2", "1e3", "1e4", ">=1e5")
# The seed's four verifiers (Table 1) under the seed's own conventions: the audit's default.
SEED_READERS = SEED001_READERS
# The same four verifiers as this platform registers them for reading stored responses (our variants).
OUR_READERS = ("math-verify-latex", "math-verify-expr", "strip-string", "sympy-cascade")
# Named reader sets `--readers` accepts besides reader names.
READER_SETS = {"seed001": SEED001_READERS, "ours": OUR_READERS}
CORPUS, SYNTHETIC = "corpus", "synthetic"
GOLD_SOURCES = (CORPUS, SYNTHETIC)
# Punctuation / whitespace rewrites and the variant each is paired with (same gold) to measure its effect.
PUNCTUATION = {
    "trailing_period": "identity",
    "trailing_newline": "identity",
    "trailing_escaped_newline": "identity",
    "pad_spaces": "identity",
    "leading_newline": "identity",
    "dollar_period": "dollar",
    "dollar_newline": "dollar",
    "dollar_then_period": "dollar",
}

Progress = Callable[[str, int], None]
# Forms the transforms exercise: a reader claiming none of them (an option-letter reader) would be out
# of contract on every variant.
MATH_FORMS = frozenset({"plain_number", "latex", "boxed", "sets_intervals", "percent", "units"})


def audit_reader_choices() -> list[str]:
    """Registered rule readers that claim at least one maths answer form, the seed's four first."""
    from .. import registry

    names = []
    for name in registry.names():
        reader = registry.get(name)
        if reader.kind == "rule" and reader.contract & MATH_FORMS:
            names.append(name)
    seed = [n for n in (*SEED_READERS, *OUR_READERS) if n in names]
    return seed + sorted(n for n in names if n not in seed)


def resolve_readers(spec: Sequence[str] | None) -> list[str]:
    """Reader names from what a user typed: nothing = the seed-001 set; `seed001` / `ours` = a named
    set; `all` = every maths rule reader; anything else a reader name (checked by the caller)."""
    if not spec:
        return list(SEED_READERS)
    names: list[str] = []
    for item in spec:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            if part == "all":
                names += audit_reader_choices()
            elif part in READER_SETS:
                names += READER_SETS[part]
            else:
                names.append(part)
    return list(dict.fromkeys(names))


def reader_identity(name: str) -> dict[str, str]:
    """What seed 001 §4 asks every verifier figure to carry: name, version, config hash, upstream."""
    from .. import registry

    reader = registry.get(name)
    return {
        "name": reader.name,
        "version": reader.version,
        "config_hash": reader.config_hash,
        "upstream": reader.upstream or "",
    }


def magnitude_bucket(value: int) -> str:
    v = abs(value)
    if v < 10:
        return "<10"
    if v >= 10**5:
        return ">=1e5"
    return f"1e{len(str(v)) - 1}"


def _ci(count: int, nobs: int) -> tuple[float | None, float | None]:
    """The Wilson 95 % interval as (low, high), (None, None) when nobs is 0 (an empty CSV cell)."""
    return wilson(count, nobs) or (None, None)


def _rate(count: int, nobs: int) -> float | None:
    return count / nobs if nobs else None


@dataclass
class Tally:
    n: int = 0
    accepted: int = 0
    rejected: int = 0
    not_judged: int = 0

    def add(self, outcome: str) -> None:
        self.n += 1
        if outcome == ACCEPTED:
            self.accepted += 1
        elif outcome == REJECTED:
            self.rejected += 1
        else:
            self.not_judged += 1

    @property
    def judged(self) -> int:
        return self.accepted + self.rejected

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "judged": self.judged,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "not_judged": self.not_judged,
            "coverage": _rate(self.judged, self.n),
        }


@dataclass
class AuditResult:
    golds: list[str]
    readers: list[str]
    variants: list[Variant]
    contracts: dict[str, frozenset[str]]
    # outcome per reader, aligned with `variants`: (verdict, ms)
    verdicts: dict[str, list[tuple[str, float]]]
    timing: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    strata_rows: list[dict[str, Any]] = field(default_factory=list)
    disagreement_rows: list[dict[str, Any]] = field(default_factory=list)
    magnitude_rows: list[dict[str, Any]] = field(default_factory=list)
    # reader -> stratum -> in contract (decides where given; the form contract decides elsewhere)
    overrides: Overrides = field(default_factory=dict)
    # gold -> "corpus" | "synthetic" (missing = corpus)
    gold_sources: dict[str, str] = field(default_factory=dict)
    # reader -> {name, version, config_hash, upstream}
    identity: dict[str, dict[str, str]] = field(default_factory=dict)

    def in_contract(self, reader: str, variant: Variant) -> bool:
        decided = self.overrides.get(reader, {}).get(variant.stratum)
        if decided is not None:
            return bool(decided)
        return variant.forms <= self.contracts[reader]

    def source(self, gold: str) -> str:
        return self.gold_sources.get(gold, CORPUS)

    def records(self) -> Iterable[dict[str, Any]]:
        for reader in self.readers:
            ident = self.identity.get(reader, {})
            for v, (verdict, ms) in zip(self.variants, self.verdicts[reader]):
                yield {
                    "gold": v.gold,
                    "gold_source": self.source(v.gold),
                    "variant": v.text,
                    "transform": v.transform.name,
                    "stratum": v.stratum,
                    "seed_stratum": seed_stratum_label(v.stratum),
                    "class": v.klass,
                    "reader": reader,
                    "reader_version": ident.get("version"),
                    "reader_config_hash": ident.get("config_hash"),
                    "verdict": verdict,
                    "outcome": OUTCOME[verdict],
                    "in_contract": self.in_contract(reader, v),
                    "forms": sorted(v.forms),
                    "ms": round(ms, 3),
                }


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------


def read_variants(
    variants: Sequence[Variant],
    readers: Sequence[str],
    *,
    pool: Any = None,
    processes: int = 2,
    budget_s: float = 5.0,
    progress: Progress | None = None,
) -> tuple[dict, dict]:
    """{reader: [(verdict, ms) per variant]} and timing. One read_many call per reader over the
    distinct (gold, variant) pairs (readers are pure functions of the item)."""
    from ..isolation.pool import IsolatedPool

    keys: dict[tuple[str, str], int] = {}
    index = [keys.setdefault((v.gold, v.text), len(keys)) for v in variants]
    items = [Item(response=text, gold=gold) for gold, text in keys]
    own = pool is None
    if own:
        pool = IsolatedPool(processes=processes, budget_s=budget_s)
    out: dict[str, list[tuple[str, float]]] = {}
    per_reader: dict[str, Any] = {}
    t_all = time.perf_counter()
    try:
        for name in readers:
            t0 = time.perf_counter()
            results = pool.read_many(name, items) if items else []
            seconds = time.perf_counter() - t0
            unique = [(reading.verdict, ms) for reading, ms in results]
            out[name] = [unique[i] for i in index]
            counts: dict[str, int] = defaultdict(int)
            for verdict, _ms in unique:
                counts[verdict] += 1
            per_reader[name] = {
                "readings": len(items),
                "verdicts": len(variants),
                "seconds": round(seconds, 3),
                "verdicts_per_s": round(len(variants) / seconds, 1) if seconds else None,
                "timeouts": counts["timeout"],
                "errors": counts["error"],
            }
            if progress:
                progress(name, len(variants))
    finally:
        if own:
            pool.close()
    seconds = time.perf_counter() - t_all
    n = len(variants) * len(readers)
    timing = {
        "verdicts": n,
        "readings": len(items) * len(readers),
        "seconds": round(seconds, 3),
        "verdicts_per_s": round(n / seconds, 1) if seconds else None,
        "per_reader": per_reader,
        "processes": getattr(pool, "processes", processes),
        "budget_s": getattr(pool, "budget_s", budget_s),
    }
    return out, timing


def run_audit(
    golds: Sequence[str],
    readers: Sequence[str],
    out_dir: str | Path | None = None,
    *,
    processes: int = 2,
    budget_s: float = 5.0,
    pool: Any = None,
    progress: Progress | None = None,
    transforms: Sequence[Transform] = TRANSFORMS,
    contract_overrides: Overrides | None = None,
    gold_sources: dict[str, str] | None = None,
) -> AuditResult:
    """Build the variants of `golds`, read them with every reader, compute the tables and (when
    `out_dir` is given) write verdicts.jsonl, strata.csv, disagreement.csv, magnitude.csv and
    summary.json there.

    contract_overrides: reader -> stratum -> in contract (default: seed 001's published
    assignments, readers.audit.contracts.CONTRACT_OVERRIDES; pass {} for form contracts only).
    gold_sources: gold -> "corpus" | "synthetic" (default: every gold is corpus)."""
    from .. import registry

    readers = registry.require(readers)
    if not readers:
        raise ValueError("no readers to audit")
    contracts = {name: frozenset(registry.get(name).contract) for name in readers}
    identity = {name: reader_identity(name) for name in readers}
    overrides = CONTRACT_OVERRIDES if contract_overrides is None else contract_overrides
    overrides = {r: dict(overrides[r]) for r in readers if r in overrides}
    sources = {g.strip(): s for g, s in (gold_sources or {}).items()}
    bad = sorted({s for s in sources.values() if s not in GOLD_SOURCES})
    if bad:
        raise ValueError(f"unknown gold source(s) {bad}; expected one of {list(GOLD_SOURCES)}")
    golds = list(dict.fromkeys(g.strip() for g in golds if g and g.strip()))
    variants = build_variants(golds, transforms)
    verdicts, timing = read_variants(
        variants, readers, pool=pool, processes=processes, budget_s=budget_s, progress=progress
    )
    result = AuditResult(
        golds,
        readers,
        variants,
        contracts,
        verdicts,
        timing,
        overrides=overrides,
        gold_sources={g: sources.get(g, CORPUS) for g in golds},
        identity=identity,
    )
    analyse(result, transforms)
    if out_dir is not None:
        write_outputs(result, Path(out_dir))
    return result


# ---------------------------------------------------------------------------------------------
# analysis
# ---------------------------------------------------------------------------------------------


def _metric(klass: str) -> str:
    return {CERTIFIED: "false_negative_rate", ADVERSARIAL: "false_positive_rate", CONTRACT_DEP: "acceptance_rate"}[
        klass
    ]


def _cell(t: Tally, klass: str) -> dict[str, Any]:
    """The rate a class is scored on, over judged verdicts, with its Wilson interval."""
    if klass == CERTIFIED:
        count = t.rejected  # a judged rejection of an equivalent variant is a false negative
    else:
        count = t.accepted  # adversarial: a false positive; contract-dep: plain acceptance
    lo, hi = _ci(count, t.judged)
    return {**t.as_dict(), "metric": _metric(klass), "rate": _rate(count, t.judged), "ci_low": lo, "ci_high": hi}


def analyse(result: AuditResult, transforms: Sequence[Transform] = TRANSFORMS) -> None:
    readers, variants = result.readers, result.variants
    strata_order = {s: i for i, s in enumerate(STRATA)}
    outcomes = {r: [OUTCOME[v] for v, _ms in result.verdicts[r]] for r in readers}
    inside = {r: [result.in_contract(r, v) for v in variants] for r in readers}
    source = [result.source(v.gold) for v in variants]
    by_source: dict[str, dict[str, Tally]] = {s: defaultdict(Tally) for s in GOLD_SOURCES}

    cells: dict[tuple[str, str, str, bool], Tally] = defaultdict(Tally)
    selfval: dict[str, Tally] = defaultdict(Tally)
    adversarial: dict[str, Tally] = defaultdict(Tally)
    in_contract_all: dict[str, Tally] = defaultdict(Tally)
    budget: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    magnitude: dict[str, dict[str, Tally]] = {r: {b: Tally() for b in BUCKETS} for r in readers}
    obo_total: dict[str, Tally] = defaultdict(Tally)
    examples: dict[str, list[dict[str, Any]]] = defaultdict(list)

    for r in readers:
        for i, v in enumerate(variants):
            o, ok = outcomes[r][i], inside[r][i]
            klass = v.klass
            cells[(r, v.stratum, klass, ok)].add(o)
            if ok:
                in_contract_all[r].add(o)
            if klass == CERTIFIED and ok:
                selfval[r].add(o)
                by_source[source[i]][r].add(o)
                budget[r][v.stratum].add(o)
                if (
                    o != ACCEPTED
                    and len(examples[r]) < 12
                    and not any(e["transform"] == v.transform.name for e in examples[r])
                ):
                    examples[r].append(
                        {
                            "gold": v.gold,
                            "variant": v.text,
                            "transform": v.transform.name,
                            "stratum": v.stratum,
                            "verdict": result.verdicts[r][i][0],
                        }
                    )
            if klass == ADVERSARIAL and ok:
                adversarial[r].add(o)
            if v.stratum == "off_by_one" and ok:
                value = int_value(v.gold)
                if value is not None:
                    magnitude[r][magnitude_bucket(value)].add(o)
                    obo_total[r].add(o)

    # strata.csv: reader x stratum x class x scope
    rows = []
    for (r, stratum, klass, ok), t in sorted(
        cells.items(), key=lambda kv: (readers.index(kv[0][0]), not kv[0][3], strata_order.get(kv[0][1], 99), kv[0][2])
    ):
        rows.append(
            {
                "reader": r,
                "reader_version": result.identity.get(r, {}).get("version"),
                "reader_config_hash": result.identity.get(r, {}).get("config_hash"),
                "stratum": stratum,
                "seed_stratum": seed_stratum_label(stratum),
                "class": klass,
                "scope": "in-contract" if ok else "out-of-contract",
                **_cell(t, klass),
            }
        )
    result.strata_rows = rows

    # self-validation (Table 1)
    readers_summary = {}
    for r in readers:
        t = selfval[r]
        lo, hi = _ci(t.accepted, t.n)
        jlo, jhi = _ci(t.accepted, t.judged)
        a = adversarial[r]
        alo, ahi = _ci(a.accepted, a.judged)
        readers_summary[r] = {
            "version": result.identity.get(r, {}).get("version"),
            "config_hash": result.identity.get(r, {}).get("config_hash"),
            "self_validation": _rate(t.accepted, t.n),
            "coverage": _rate(t.judged, t.n),
            "judged": _rate(t.accepted, t.judged),
            "n": t.n,
            "n_judged": t.judged,
            "accepted": t.accepted,
            "rejected": t.rejected,
            "not_judged": t.not_judged,
            "self_validation_ci": [lo, hi],
            "judged_ci": [jlo, jhi],
            "contract": sorted(result.contracts[r]),
            "in_contract_coverage": _rate(in_contract_all[r].judged, in_contract_all[r].n),
            "adversarial": {
                "n": a.n,
                "judged": a.judged,
                "accepted": a.accepted,
                "false_positive_rate": _rate(a.accepted, a.judged),
                "ci": [alo, ahi],
            },
        }

    # error budget (Table 2): share of in-contract certified failures (rejected + not judged) by stratum
    error_budget = {}
    for r in readers:
        total = sum(t.n - t.accepted for t in budget[r].values())
        strata = {}
        for stratum, t in sorted(budget[r].items(), key=lambda kv: -(kv[1].n - kv[1].accepted)):
            fails = t.n - t.accepted
            if fails:
                strata[stratum] = {
                    "failures": fails,
                    "share": fails / total,
                    "rejected": t.rejected,
                    "not_judged": t.not_judged,
                    "n": t.n,
                }
        error_budget[r] = {"failures": total, "strata": strata}

    # off-by-one by magnitude (Table 4)
    off_by_one: dict[str, dict[str, float | None]] = {}
    mag_rows: list[dict[str, Any]] = []
    for r in readers:
        off_by_one[r] = {}
        for b in BUCKETS:
            t = magnitude[r][b]
            rate = _rate(t.accepted, t.judged)
            off_by_one[r][b] = rate
            lo, hi = _ci(t.accepted, t.judged)
            mag_rows.append(
                {
                    "reader": r,
                    "reader_version": result.identity.get(r, {}).get("version"),
                    "reader_config_hash": result.identity.get(r, {}).get("config_hash"),
                    "bucket": b,
                    "n": t.n,
                    "judged": t.judged,
                    "accepted": t.accepted,
                    "rate": rate,
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
    result.magnitude_rows = mag_rows
    off_by_one_total = {}
    for r in readers:
        t = obo_total[r]
        lo, hi = _ci(t.accepted, t.judged)
        off_by_one_total[r] = {
            "n": t.n,
            "judged": t.judged,
            "accepted": t.accepted,
            "rate": _rate(t.accepted, t.judged),
            "ci": [lo, hi],
        }

    # pairwise disagreement on certified-equivalent pairs, both judged (Table 5)
    cert = [i for i, v in enumerate(variants) if v.klass == CERTIFIED]
    dis_rows: list[dict[str, Any]] = []
    matrix: dict[str, dict[str, Any]] = {}
    for reader_a in readers:
        matrix[reader_a] = {}
        for reader_b in readers:
            support = disagree = 0
            oa, ob = outcomes[reader_a], outcomes[reader_b]
            for i in cert:
                if oa[i] != NOT_JUDGED and ob[i] != NOT_JUDGED:
                    support += 1
                    disagree += oa[i] != ob[i]
            cell = {"support": support, "disagreements": disagree, "rate": _rate(disagree, support)}
            matrix[reader_a][reader_b] = cell
            dis_rows.append(
                {
                    "reader_a": reader_a,
                    "reader_a_config_hash": result.identity.get(reader_a, {}).get("config_hash"),
                    "reader_b": reader_b,
                    "reader_b_config_hash": result.identity.get(reader_b, {}).get("config_hash"),
                    **cell,
                }
            )
    result.disagreement_rows = dis_rows

    # contract-dependent acceptance (Table 6) and out-of-contract results (Table 7), kept apart
    contract_dep: dict[str, dict[str, Any]] = defaultdict(dict)
    out_of_contract: dict[str, dict[str, Any]] = defaultdict(dict)
    dep_tally: dict[tuple[str, str], Tally] = defaultdict(Tally)
    for (r, stratum, klass, ok), t in cells.items():
        if klass == CONTRACT_DEP:
            d = dep_tally[(r, stratum)]
            d.n += t.n
            d.accepted += t.accepted
            d.rejected += t.rejected
            d.not_judged += t.not_judged
        elif not ok:
            out_of_contract[r][f"{stratum} ({klass})"] = _cell(t, klass)
    for (r, stratum), t in sorted(dep_tally.items(), key=lambda kv: strata_order.get(kv[0][1], 99)):
        contract_dep[r][stratum] = _cell(t, CONTRACT_DEP)

    # trailing period / newline / spaces: each paired with its baseline variant of the same gold
    # (the gold itself, or the gold in $…$ for the rewrites inside math mode)
    baseline: dict[str, dict[str, dict[str, str]]] = {b: {r: {} for r in readers} for b in set(PUNCTUATION.values())}
    for i, v in enumerate(variants):
        if v.transform.name in baseline:
            for r in readers:
                baseline[v.transform.name][r][v.gold] = outcomes[r][i]
    punctuation: dict[str, dict[str, Any]] = {r: {} for r in readers}
    for name, base_name in PUNCTUATION.items():
        idx = [
            i for i, v in enumerate(variants) if v.transform.name == name and v.gold in baseline[base_name][readers[0]]
        ]
        if not idx:
            continue
        for r in readers:
            ref = baseline[base_name][r]
            base = sum(ref[variants[i].gold] == ACCEPTED for i in idx)
            acc = sum(outcomes[r][i] == ACCEPTED for i in idx)
            lost = sum(ref[variants[i].gold] == ACCEPTED and outcomes[r][i] != ACCEPTED for i in idx)
            gained = sum(ref[variants[i].gold] != ACCEPTED and outcomes[r][i] == ACCEPTED for i in idx)
            punctuation[r][name] = {
                "baseline": base_name,
                "n": len(idx),
                "baseline_accepted": base,
                "variant_accepted": acc,
                "lost": lost,
                "gained": gained,
                "baseline_rate": _rate(base, len(idx)),
                "variant_rate": _rate(acc, len(idx)),
            }

    klass_counts: dict[str, int] = defaultdict(int)
    for transform in transforms:
        klass_counts[transform.klass] += 1
    applied: dict[str, int] = defaultdict(int)
    for v in variants:
        applied[v.transform.name] += 1
    # seed 001 §3.5: self-validation on corpus golds alone (and on synthetic golds alone)
    source_counts = {s: sum(1 for g in result.golds if result.source(g) == s) for s in GOLD_SOURCES}
    self_validation_by_source: dict[str, dict[str, Any]] = {}
    for s in GOLD_SOURCES:
        self_validation_by_source[s] = {}
        for r in readers:
            t = by_source[s][r]
            lo, hi = _ci(t.accepted, t.n)
            self_validation_by_source[s][r] = {
                "n": t.n,
                "accepted": t.accepted,
                "not_judged": t.not_judged,
                "self_validation": _rate(t.accepted, t.n),
                "coverage": _rate(t.judged, t.n),
                "judged": _rate(t.accepted, t.judged),
                "ci": [lo, hi],
            }

    result.summary = {
        "reader_identity": {r: result.identity.get(r, {}) for r in readers},
        "contract_overrides": override_rows(result.overrides, readers),
        "seed_strata": {s: seed_stratum_label(s) for s in STRATA if s in SEED_STRATA},
        "gold_sources": source_counts,
        "self_validation_by_source": self_validation_by_source,
        "readers": readers_summary,
        "off_by_one": off_by_one,
        "off_by_one_total": off_by_one_total,
        "error_budget": error_budget,
        "disagreement": matrix,
        "contract_dependent": dict(contract_dep),
        "out_of_contract": dict(out_of_contract),
        "punctuation_effect": punctuation,
        "examples": dict(examples),
        "suite": {
            "transforms": len(transforms),
            "strata": len({t.stratum for t in transforms}),
            "classes": dict(klass_counts),
            "applied": dict(applied),
        },
        "golds": len(result.golds),
        "variants": len(variants),
        "verdicts": len(variants) * len(readers),
        "throughput": result.timing,
        "definitions": {
            "accepted": "verdict correct",
            "rejected": "verdict incorrect or no_answer",
            "not_judged": "verdict error or timeout (execution failure)",
            "self_validation": "accepted / n over in-contract CERTIFIED-EQUIV variants",
            "coverage": "judged / n over the same variants",
            "judged": "accepted / judged over the same variants",
            "in_contract": "the contract override for (reader, stratum) when there is one (seed 001's published "
            "assignments); otherwise every answer form the variant exercises is in the reader's "
            "contract",
            "gold_source": "corpus = a gold as given; synthetic = generated by readers.audit.synthetic (seed 001 §2.5)",
            "off_by_one": "acceptance of off-by-one variants over judged verdicts, by |gold| bucket; null = no verdict",
        },
    }


# ---------------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------------


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return "" if v is None else v


def _write_csv(path: Path, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for row in rows:
            w.writerow([_fmt(row.get(c)) for c in columns])


STRATA_COLUMNS = (
    "reader",
    "reader_version",
    "reader_config_hash",
    "stratum",
    "seed_stratum",
    "class",
    "scope",
    "metric",
    "n",
    "judged",
    "coverage",
    "accepted",
    "rejected",
    "not_judged",
    "rate",
    "ci_low",
    "ci_high",
)
DISAGREEMENT_COLUMNS = (
    "reader_a",
    "reader_a_config_hash",
    "reader_b",
    "reader_b_config_hash",
    "support",
    "disagreements",
    "rate",
)
MAGNITUDE_COLUMNS = (
    "reader",
    "reader_version",
    "reader_config_hash",
    "bucket",
    "n",
    "judged",
    "accepted",
    "rate",
    "ci_low",
    "ci_high",
)


def _json_text(value: Any, **kwargs: Any) -> str:
    """JSON that is valid UTF-8 whatever the golds hold: readable when it can be, and ASCII-escaped
    (lossless: a lone surrogate becomes \\udXXX) when a string UTF-8 cannot encode is inside."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, **kwargs)
    return text


def write_outputs(result: AuditResult, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "verdicts.jsonl", "w", encoding="utf-8") as fh:
        for rec in result.records():
            fh.write(_json_text(rec) + "\n")
    _write_csv(out_dir / "strata.csv", result.strata_rows, STRATA_COLUMNS)
    _write_csv(out_dir / "disagreement.csv", result.disagreement_rows, DISAGREEMENT_COLUMNS)
    _write_csv(out_dir / "magnitude.csv", result.magnitude_rows, MAGNITUDE_COLUMNS)
    with open(out_dir / "summary.json", "w", encoding="utf-8") as fh:
        fh.write(_json_text(result.summary, indent=2) + "\n")


def render_table(summary: dict[str, Any]) -> str:
    """A short plain-text report: self-validation per reader and the off-by-one step."""

    def pct(x: Any) -> str:
        return "  n/a" if x is None else f"{100 * x:5.1f}"

    lines = [
        f"{'reader':30s} {'n':>7s} {'self-val':>8s} {'cov.':>6s} {'judged':>6s}  off-by-one % by |gold|: "
        + " ".join(f"{b:>6s}" for b in BUCKETS)
    ]
    for name, r in summary["readers"].items():
        ob = summary["off_by_one"].get(name, {})
        lines.append(
            f"{name:30s} {r['n']:7d} {pct(r['self_validation']):>8s} {pct(r['coverage']):>6s} "
            f"{pct(r['judged']):>6s}  {'':23s}" + " ".join(f"{pct(ob.get(b)):>6s}" for b in BUCKETS)
        )
    t = summary.get("throughput", {})
    lines.append(
        f"{summary['verdicts']} verdicts ({summary['golds']} golds, {summary['variants']} variants, "
        f"{len(summary['readers'])} readers) in {t.get('seconds')} s: {t.get('verdicts_per_s')} verdicts/s"
    )
    return "\n".join(lines) + "\n"
