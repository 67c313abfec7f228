"""The two real-data results of docs/analytics.md, reproducible without a database:

    python -m scripts.realdata answer-matching [DIR] [--json]
        DeepSeek-V3 (and Qwen-2.5-7B) judge bias against each human rater, per answering model,
        and human–human agreement, on ../shared/data/answer-matching-human-annotations.
    python -m scripts.realdata mmlu-pro-ranking [FILE] [--json] [--reader NAME ...]
        The 7 models' ranking under each reader on the stratified slice of
        ../shared/data/mmlu-pro-model-outputs, with rank flips and Kendall's τ.
    python -m scripts.realdata consensus-validation [--json] [--quick]
        The panel consensus (docs/consensus.md) against real human labels: answer matching's
        gpqa_diamond and mmlu_pro, EVOUNA's NQ and TQ; per-item agreement, per-producer and
        per-model accuracy errors, and the human labels (randomized and greedy allocator vs
        random) that bring the error under 2 points.
    python -m scripts.realdata estimate-validation [--quick] [--json] [--seeds N]
        The prediction-powered estimates (docs/estimates.md) on the same four data sets under the
        platform's two sampling designs, label budgets 50–400: coverage, width, bias, effective
        labels, beside today's estimators (scripts/estimate_validation.py).

Human verdict (answer matching): rating_match ≥ 4 ("Leaning Yes" or "Surely Yes") is correct,
1–3 incorrect (3 = "Unsure" counts as not matching), as the data set's README binarises it. The
judge's score 1/0 is correct/incorrect. Only rows carrying the judge's verdict are compared.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adjudication.analytics.allocation import (
    BudgetStep,
    Target,
    batch_picks,
    check_target,
    labels_to_reach,
    simulate_budget,
    target_estimate,
    target_truth,
)
from adjudication.analytics.bias import judge_bias
from adjudication.analytics.consensus import ConsensusInputs, consensus
from adjudication.analytics.ranking import compare
from adjudication.analytics.stats import cohen_kappa, jsonable, krippendorff_alpha, pairwise

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ANSWER_MATCHING = SHARED / "answer-matching-human-annotations"
MMLU_PRO = SHARED / "mmlu-pro-model-outputs" / "mmlu_pro_cot_outputs_sample.jsonl"
FILES = {"gpqa_diamond": "gpqa_diamond_freeform_annotated.jsonl", "mmlu_pro": "mmlu_pro_freeform_annotated.jsonl"}
DEEPSEEK = "deepseek-chat-v3-0324"
RANKING_READERS = ("fixed", "strict-match", "mmlu-pro-custom-extract", "last-extract", "boxed")
RELEASED = "released"


def _load(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def human_binary(rating: int | None) -> str | None:
    if rating is None:
        return None
    return "correct" if rating >= 4 else "incorrect"


def judge_verdict(score: int | None) -> str | None:
    return None if score is None else ("correct" if score == 1 else "incorrect")


def answer_matching(directory: Path = ANSWER_MATCHING, *, seed: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"human_rule": "rating_match >= 4 is correct", "datasets": {}}
    for name, filename in FILES.items():
        rows = _load(directory / filename)
        annotators = sorted({a for r in rows for a in r["human"]})
        judges = sorted({j for r in rows for j in r["llm_judges"]})
        ds: dict[str, Any] = {
            "rows": len(rows),
            "annotators": annotators,
            "judges": {},
            "rows_with_judge": {j: sum(j in r["llm_judges"] for r in rows) for j in judges},
        }
        for judge in judges:
            per: dict[str, Any] = {}
            for ann in [*annotators, "consensus"]:
                pairs, by_model = [], defaultdict(list)
                for r in rows:
                    if judge not in r["llm_judges"]:
                        continue
                    if ann == "consensus":
                        hs = {human_binary(h["rating_match"]) for h in r["human"].values()}
                        h = hs.pop() if len(hs) == 1 and len(r["human"]) >= 2 else None
                    else:
                        h = human_binary((r["human"].get(ann) or {}).get("rating_match"))
                    if h is None:
                        continue
                    pair = (judge_verdict(r["llm_judges"][judge]["score"]), h)
                    pairs.append(pair)
                    by_model[r["model"]].append(pair)
                per[ann] = {
                    "all": judge_bias(pairs, seed=seed),
                    "by_model": {m: judge_bias(p, seed=seed) for m, p in sorted(by_model.items())},
                }
            ds["judges"][judge] = per
        # human–human: binary (the README's rule) and the 1–5 scale (ordinal α)
        binary = {
            a: {str(i): human_binary(r["human"][a]["rating_match"]) for i, r in enumerate(rows) if a in r["human"]}
            for a in annotators
        }
        scale = {
            a: {str(i): r["human"][a]["rating_match"] for i, r in enumerate(rows) if a in r["human"]}
            for a in annotators
        }
        both = [str(i) for i, r in enumerate(rows) if len(r["human"]) >= 2]
        agree = sum(binary[annotators[0]][i] == binary[annotators[1]][i] for i in both)
        ds["human_human"] = {
            "items_rated_by_both": len(both),
            "binary_agreement": agree,
            "binary_agreement_rate": agree / len(both) if both else None,
            "cohen_kappa_binary": cohen_kappa(
                [binary[annotators[0]][i] for i in both], [binary[annotators[1]][i] for i in both]
            ),
            "krippendorff_alpha_binary": krippendorff_alpha(binary, "nominal", ["correct", "incorrect"]),
            "krippendorff_alpha_ordinal_1_5": krippendorff_alpha(scale, "ordinal", [1, 2, 3, 4, 5]),
            "pairwise": pairwise(binary),
        }
        out["datasets"][name] = ds
    return out


def mmlu_pro_ranking(
    path: Path = MMLU_PRO, *, readers: tuple[str, ...] = RANKING_READERS, processes: int = 4, budget_s: float = 5.0
) -> dict[str, Any]:
    """Accuracy of each model under each reader on the stratified slice (same 280 questions for all
    7 models), the released prediction as one more reader, rankings, flips and Kendall's τ."""
    from readers import Item
    from readers.isolation.pool import IsolatedPool

    rows = [r for r in _load(path) if r["slice"] == "stratified"]
    items = [
        Item(response=r["model_output"], gold=r["answer"], choices=tuple(r["options"]), question=r["question"])
        for r in rows
    ]
    verdicts: dict[str, list[str]] = {}
    with IsolatedPool(processes=processes, budget_s=budget_s) as pool:
        for name in readers:
            verdicts[name] = [reading.verdict for reading, _ms in pool.read_many(name, items)]
    verdicts[RELEASED] = [
        (
            "no_answer"
            if not r.get("pred_as_released")
            else "correct"
            if r["pred_as_released"] == r["answer"]
            else "incorrect"
        )
        for r in rows
    ]
    tables: dict[str, dict[str, tuple[int, int]]] = {}
    extraction: dict[str, dict[str, float]] = {}
    for name, vs in verdicts.items():
        k: dict[str, int] = defaultdict(int)
        n: dict[str, int] = defaultdict(int)
        e: dict[str, int] = defaultdict(int)
        for r, v in zip(rows, vs):
            n[r["model"]] += 1
            k[r["model"]] += v == "correct"
            e[r["model"]] += v in ("correct", "incorrect")
        tables[name] = {m: (k[m], n[m]) for m in sorted(n)}
        extraction[name] = {m: e[m] / n[m] for m in sorted(n)}
    every_pair = compare(tables)
    vs_released = compare(tables, reference=RELEASED)
    return {
        "rows": len(rows),
        "questions": len({r["question_id"] for r in rows}),
        "readers": list(verdicts),
        "rankings": every_pair["rankings"],
        "extraction_rate": extraction,
        "kendall_tau": every_pair["kendall_tau"],
        "flips": every_pair["flips"],
        "flips_vs_released": vs_released["flips"],
        "rank_changes_vs_released": vs_released["rank_changes_vs_reference"],
    }


# ---------------------------------------------------------------------------------------------
# consensus-validation: the panel consensus (docs/consensus.md) against real human labels
# ---------------------------------------------------------------------------------------------

EVOUNA = SHARED / "evouna-qa-eval"
EVOUNA_FILES = {"NQ": "NQ.json", "TQ": "TQ.json"}
EVOUNA_SYSTEMS = {
    "fid": "DPR+FiD",
    "gpt35": "GPT-3.5",
    "chatgpt": "ChatGPT-3.5",
    "gpt4": "GPT-4",
    "newbing": "Bing Chat",
}
QA_READERS = ("qa-exact-match", "qa-contains", "qa-token-f1")
# Answer matching: the registered readers that take a free-form gold, on the text each is made for:
# `fixed` and `boxed` extract from the full response; the others compare a short answer, so they
# read the authors' extracted answer (what the humans and the judges rated).
AM_READERS = (
    ("fixed", "response"),
    ("boxed", "response"),
    ("math-verify-expr", "extracted_answer"),
    ("sympy-cascade", "extracted_answer"),
    ("strip-string", "extracted_answer"),
    *((name, "extracted_answer") for name in QA_READERS),
)
MIN_COVERAGE = 0.5  # a producer is kept when it votes correct/incorrect on at least half the items
ERROR_GOAL = 0.02  # "under 2 points"
RANDOM_SEEDS = (0, 1)
HUMAN_WEIGHT = 10
EVOUNA_CURVE_QUESTIONS = 300  # per EVOUNA file, a seeded sample of questions for the label curves (time)
# One producer's accuracy, on one answering model's items (a single-stratum fit: refits cost ~0.3 s
# each whatever their size, and a by-model fit over all items is one per model per round).
PRODUCER_TARGET = {
    "gpqa_diamond": (f"judge:{DEEPSEEK}", "gpt-4o"),
    "mmlu_pro": (f"judge:{DEEPSEEK}", "gpt-4o"),
    "NQ": ("qa-contains", "GPT-4"),
    "TQ": ("qa-contains", "GPT-4"),
}


@dataclass
class ValidationSet:
    """One data set as the consensus sees it: votes, the hidden human truth, each item's model."""

    name: str
    votes: list[tuple[str, str, str]]
    truth: dict[str, str]
    model_of: dict[str, str]
    coverage: dict[str, float] = field(default_factory=dict)  # every candidate producer's vote share
    dropped_producers: list[str] = field(default_factory=list)
    excluded: dict[str, int] = field(default_factory=dict)  # why items were left out, with counts

    @property
    def inputs(self) -> ConsensusInputs:
        return ConsensusInputs(votes=self.votes, strata={i: {"model": m} for i, m in self.model_of.items()})


def _keep_voted(
    name: str,
    votes: list[tuple[str, str, str]],
    truth: dict[str, str],
    model_of: dict[str, str],
    excluded: dict[str, int],
) -> ValidationSet:
    """Producers with a real share of votes, and the items with a human truth and at least one
    correct/incorrect vote among them (an item with no vote is outside any fit)."""
    items = set(truth)
    said: dict[str, int] = defaultdict(int)
    for _, producer, verdict in votes:
        said[producer] += verdict in ("correct", "incorrect")
    coverage = {p: said[p] / len(items) for p in sorted(said)}
    kept = {p for p, share in coverage.items() if share >= MIN_COVERAGE}
    votes = [v for v in votes if v[1] in kept and v[0] in items]
    voted = {i for i, _, verdict in votes if verdict in ("correct", "incorrect")}
    excluded = {**excluded, "no machine vote": len(items - voted)}
    return ValidationSet(
        name=name,
        votes=[v for v in votes if v[0] in voted],
        truth={i: t for i, t in truth.items() if i in voted},
        model_of={i: m for i, m in model_of.items() if i in voted},
        coverage=coverage,
        dropped_producers=sorted(set(coverage) - kept),
        excluded=excluded,
    )


def answer_matching_set(name: str, directory: Path, *, quick: bool, processes: int = 2) -> ValidationSet:
    """The file's LLM judges and our free-form readers as producers; the truth is the two raters'
    binary label (rating_match >= 4) where they agree, or the only rater's; rows where they
    disagree are left out."""
    from readers import Item
    from readers.isolation.pool import IsolatedPool

    rows = _load(directory / FILES[name])
    if quick:
        rows = _sample(rows, 80)
    truth: dict[str, str] = {}
    model_of: dict[str, str] = {}
    disagree = 0
    for index, r in enumerate(rows):
        labels = {human_binary(h["rating_match"]) for h in r["human"].values()} - {None}
        if len(labels) != 1:
            disagree += 1
            continue
        item = f"{name}:{index}"
        truth[item] = labels.pop()  # type: ignore[assignment]
        model_of[item] = r["model"].split("/")[-1]
    kept = [(f"{name}:{i}", r) for i, r in enumerate(rows) if f"{name}:{i}" in truth]
    votes = [
        (item, f"judge:{judge}", judge_verdict(v["score"]))  # type: ignore[misc]
        for item, r in kept
        for judge, v in sorted(r["llm_judges"].items())
    ]
    with IsolatedPool(processes=processes, budget_s=5.0) as pool:
        for reader, text in AM_READERS:
            items = [Item(response=r[text] or "", gold=r["reference_answer"], question=r["question"]) for _, r in kept]
            producer = reader if text == "response" else f"{reader} (extracted)"
            for (item, _), (reading, _ms) in zip(kept, pool.read_many(reader, items), strict=True):
                votes.append((item, producer, reading.verdict))
    return _keep_voted(name, votes, truth, model_of, {"raters disagree": disagree})


def evouna_set(name: str, directory: Path, *, quick: bool) -> ValidationSet:
    """Each (question, system) answer is an item; the short-answer QA readers are the producers
    (the files carry no machine verdicts). Improper questions, the null gold and null human
    verdicts are left out."""
    from readers import Item, registry

    with open(directory / EVOUNA_FILES[name], encoding="utf-8") as fh:
        questions = json.load(fh)
    if quick:
        questions = _sample(questions, 40)
    readers = {n: registry.get(n) for n in QA_READERS}
    votes: list[tuple[str, str, str]] = []
    truth: dict[str, str] = {}
    model_of: dict[str, str] = {}
    excluded = {"improper question": 0, "no gold": 0, "no human verdict": 0}
    for qi, q in enumerate(questions):
        if q.get("improper"):
            excluded["improper question"] += 5
            continue
        if not q.get("golden_answer"):
            excluded["no gold"] += 5
            continue
        for key, system in EVOUNA_SYSTEMS.items():
            judged = q.get(f"judge_{key}")
            if judged is None:
                excluded["no human verdict"] += 1
                continue
            item = f"{name}:{qi}:{key}"
            truth[item] = "correct" if judged else "incorrect"
            model_of[item] = system
            answer = Item(response=q.get(f"answer_{key}") or "", gold=q["golden_answer"], question=q["question"])
            votes += [(item, n, r.read(answer).verdict) for n, r in readers.items()]
    return _keep_voted(name, votes, truth, model_of, excluded)


def _sample(rows: list[Any], n: int, seed: int = 0) -> list[Any]:
    """A seeded subset of n rows, in file order."""
    if len(rows) <= n:
        return rows
    keep = set(np.random.default_rng(seed).choice(len(rows), size=n, replace=False).tolist())
    return [r for i, r in enumerate(rows) if i in keep]


def _majority(votes: list[tuple[str, str, str]]) -> dict[str, float | None]:
    """item -> the majority vote as P(correct): 1, 0, or None for a tie."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for item, _, verdict in votes:
        if verdict in ("correct", "incorrect"):
            tally[item][verdict == "incorrect"] += 1
    return {i: 1.0 if c > n else 0.0 if n > c else None for i, (c, n) in tally.items()}


def _share(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _points(estimate: float | None, truth: float | None) -> float | None:
    return None if estimate is None or truth is None else 100 * (estimate - truth)


def _item_table(
    items: list[str], post: Mapping[str, float], majority: Mapping[str, float | None], truth: Mapping[str, str]
) -> dict[str, Any]:
    """Per-item agreement with the humans: the consensus (P >= 0.5 is correct) and majority vote
    (a tie counts half: a fair coin)."""
    said = [truth[i] == "correct" for i in items]
    maj = [0.5 if majority[i] is None else float((majority[i] == 1.0) == s) for i, s in zip(items, said, strict=True)]
    return {
        "n": len(items),
        "consensus_agreement": _share([float((post[i] >= 0.5) == s) for i, s in zip(items, said, strict=True)]),
        "majority_agreement": _share(maj),
        "majority_ties": sum(majority[i] is None for i in items),
    }


def _curve_inputs(vs: ValidationSet, items: Collection[str]) -> tuple[ConsensusInputs, dict[str, str]]:
    keep = set(items)
    inputs = ConsensusInputs(
        votes=[v for v in vs.votes if v[0] in keep],
        strata={i: {"model": vs.model_of[i]} for i in keep},
    )
    return inputs, {i: vs.truth[i] for i in keep}


def weighted_budget(
    inputs: ConsensusInputs,
    truth: Mapping[str, str],
    *,
    target: Target,
    strategy: str,
    batch: int,
    human_weight: int,
    by: str | None = "model",
    seed: int = 0,
) -> list[BudgetStep]:
    """allocation.simulate_budget's rounds (the same picks for the same seed: both pick through
    allocation.batch_picks), with the revealed labels weighted `human_weight` times in every refit;
    simulate_budget has no weight (v1)."""
    labels: dict[str, str] = {}
    hidden = sorted((i for i, v in truth.items() if v in ("correct", "incorrect")), key=str)
    rng = np.random.default_rng(seed)
    steps: list[BudgetStep] = []
    true_value: float | None = None
    round_no = 0
    while True:
        current = ConsensusInputs(votes=inputs.votes, human=labels, strata=inputs.strata)
        result = consensus(current, by=by, n_boot=0, seed=seed, human_weight=human_weight)
        if round_no == 0:
            check_target(target, inputs, result)
            true_value = target_truth(target, inputs, result, truth)
        est = target_estimate(target, current, result)
        error = None if est.estimate is None or true_value is None else abs(est.estimate - true_value)
        steps.append(BudgetStep(len(labels), est.estimate, est.width, error))
        if not hidden:
            return steps
        k = min(batch, len(hidden))
        picks = batch_picks(
            strategy,
            target=target,
            inputs=current,
            result=result,
            hidden=hidden,
            k=k,
            random_share=0.0,
            seed=seed,
            round_no=round_no,
            rng=rng,
        )
        labels.update((i, truth[i]) for i in picks)
        chosen = set(picks)
        hidden = [i for i in hidden if i not in chosen]
        round_no += 1


def _human_only(truth: Mapping[str, str], *, batch: int, seed: int) -> list[BudgetStep]:
    """The no-consensus baseline: the accuracy of the randomly labelled items alone."""
    order = sorted(truth)
    order = [order[j] for j in np.random.default_rng(seed).permutation(len(order))]
    true_value = sum(truth[i] == "correct" for i in order) / len(order)
    steps = [BudgetStep(0, None, None, None)]
    for k in range(batch, len(order) + batch, batch):
        k = min(k, len(order))
        estimate = sum(truth[i] == "correct" for i in order[:k]) / k
        steps.append(BudgetStep(k, estimate, None, abs(estimate - true_value)))
    return steps


def _labels_needed(runs: list[list[BudgetStep]]) -> dict[str, Any]:
    """Labels after which the error stays under ERROR_GOAL, per run, and their mean."""
    reached = [labels_to_reach(steps, field="error", below=ERROR_GOAL) for steps in runs]
    return {
        "runs": reached,
        "mean": _share([float(r) for r in reached]) if all(r is not None for r in reached) else None,
        "error_at_0": runs[0][0].error if runs and runs[0] else None,
    }


@dataclass(frozen=True)
class CurvePlan:
    """How many curves: rounds per curve, random seeds, whether the weighted allocator runs, and
    how many answering models get an accuracy curve (None: all)."""

    rounds: int = 10
    seeds: tuple[int, ...] = RANDOM_SEEDS
    weighted: bool = True
    models: int | None = None


FULL = CurvePlan()
QUICK = CurvePlan(rounds=3, seeds=(0,), weighted=False, models=1)


@dataclass(frozen=True)
class CurveJob:
    """One label curve: a target on some items, a strategy, a seed and the labels' weight."""

    dataset: str
    target: Target
    inputs: ConsensusInputs
    truth: dict[str, str]
    strategy: str  # allocation.STRATEGIES ("information" is randomized) | "human-only" (random labels, no consensus)
    seed: int
    human_weight: int
    rounds: int
    scope: str  # the answering model whose items the curve runs on

    @property
    def batch(self) -> int:
        return max(5, math.ceil(len(self.truth) / self.rounds))


def run_curve(job: CurveJob) -> list[BudgetStep]:
    if job.strategy == "human-only":
        return _human_only(job.truth, batch=job.batch, seed=job.seed)
    if job.human_weight == 1:
        return simulate_budget(
            job.inputs, job.truth, target=job.target, strategy=job.strategy, batch=job.batch, by="model", seed=job.seed
        )
    return weighted_budget(
        job.inputs,
        job.truth,
        target=job.target,
        strategy=job.strategy,
        batch=job.batch,
        human_weight=job.human_weight,
        seed=job.seed,
    )


def curve_jobs(vs: ValidationSet, *, plan: CurvePlan) -> list[CurveJob]:
    """Each answering model's accuracy (on its own items: the same fit as by="model") and one
    producer's accuracy on one model's items: the randomized allocator (routing's default design,
    a draw per seed as random's), the greedy allocator and random labels with the plain clamp, the
    randomized allocator with the labels weighted HUMAN_WEIGHT times, and random labels alone."""
    curve_items = _curve_sample(vs)
    models = sorted(set(vs.model_of.values()))[: plan.models]
    targets: list[tuple[Target, str]] = [(Target("accuracy", (m,)), m) for m in models]
    producer, on_model = PRODUCER_TARGET.get(vs.name, (None, None))
    if producer and any(vs.model_of[i] == on_model and p == producer for i, p, _ in vs.votes):
        targets.append((Target("reader", (producer,)), on_model))
    jobs = []
    for target, scope in targets:
        inputs, truth = _curve_inputs(vs, [i for i in curve_items if vs.model_of[i] == scope])
        runs = [("information", s, 1) for s in plan.seeds] + [("greedy", 0, 1)]
        runs += [("random", s, 1) for s in plan.seeds]
        if plan.weighted and target.kind == "accuracy":
            runs.append(("information", 0, HUMAN_WEIGHT))
        if target.kind == "accuracy":
            runs += [("human-only", s, 1) for s in plan.seeds]
        jobs += [CurveJob(vs.name, target, inputs, truth, st, seed, w, plan.rounds, scope) for st, seed, w in runs]
    return jobs


def _curve_report(jobs: Sequence[CurveJob], results: Sequence[list[BudgetStep]]) -> dict[str, Any]:
    """Per target: the labels that bring the error under 2 points for good, per strategy (the
    mean over seeds), and the randomized allocator's first curve."""
    out: dict[str, Any] = {}
    grouped: dict[str, dict[str, list[list[BudgetStep]]]] = defaultdict(lambda: defaultdict(list))
    first: dict[str, CurveJob] = {}
    for job, steps in zip(jobs, results, strict=True):
        key = job.strategy + ("" if job.human_weight == 1 else f" (labels x{job.human_weight})")
        grouped[str(job.target)][key].append(steps)
        first.setdefault(str(job.target), job)
    for target, runs in grouped.items():
        job = first[target]
        out[target] = {
            "answers_of": job.scope,
            "items": len(job.truth),
            "batch": job.batch,
            "labels_to_goal": {k: _labels_needed(v) for k, v in runs.items()},
            "information_steps": [asdict(s) for s in runs["information"][0]],
        }
    return out


def validate_set(vs: ValidationSet) -> dict[str, Any]:
    """Hide the human labels, fit one Dawid-Skene model per answering model from the machine
    verdicts alone, and compare with the humans (docs/consensus.md, "Validation on real labels")."""
    fit = consensus(vs.inputs, by="model", n_boot=0)
    post = {i.item: i.p_correct for i in fit.items}
    majority = _majority(vs.votes)
    items = sorted(vs.truth)
    models = sorted(set(vs.model_of.values()))
    by_model = {m: [i for i in items if vs.model_of[i] == m] for m in models}
    per_model = []
    for m, members in by_model.items():
        human = sum(vs.truth[i] == "correct" for i in members) / len(members)
        cons = _share([post[i] for i in members])
        maj = _share([0.5 if majority[i] is None else majority[i] for i in members])  # type: ignore[misc]
        per_model.append(
            {
                "model": m,
                "n": len(members),
                "human_correct": sum(vs.truth[i] == "correct" for i in members),
                "human_accuracy": human,
                "consensus_accuracy": cons,
                "consensus_error_points": _points(cons, human),
                "majority_accuracy": maj,
                "majority_error_points": _points(maj, human),
                **{k: v for k, v in _item_table(members, post, majority, vs.truth).items() if k != "n"},
            }
        )
    said: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for item, producer, verdict in vs.votes:
        if verdict in ("correct", "incorrect"):
            said[producer].append((item, verdict))
    producers = []
    for producer, pairs in sorted(said.items()):
        human = _share([float(v == vs.truth[i]) for i, v in pairs])
        cons = _share([post[i] if v == "correct" else 1 - post[i] for i, v in pairs])
        producers.append(
            {
                "producer": producer,
                "votes": len(pairs),
                "coverage": vs.coverage[producer],
                "human_accuracy": human,
                "consensus_accuracy": cons,
                "error_points": _points(cons, human),
            }
        )
    out: dict[str, Any] = {
        "items": len(items),
        "models": models,
        "producers_kept": sorted(said),
        "producers_dropped": {p: vs.coverage[p] for p in vs.dropped_producers},
        "excluded_items": vs.excluded,
        "per_item": _item_table(items, post, majority, vs.truth),
        "per_model": per_model,
        "per_producer": producers,
        "mean_abs_model_error_points": _share([abs(r["consensus_error_points"]) for r in per_model]),
        "mean_abs_producer_error_points": _share([abs(r["error_points"]) for r in producers]),
        "degenerate": sorted({f"{r.producer} ({r.stratum})" for r in fit.producers if r.degenerate}),
        "correlated_pairs": [c.producers for c in fit.correlated],
    }
    return out


def _curve_sample(vs: ValidationSet) -> list[str]:
    """EVOUNA's label curves run on a seeded sample of its questions (time); answer matching on all."""
    items = sorted(vs.truth)
    if vs.name not in EVOUNA_FILES:
        return items
    questions = sorted({i.rsplit(":", 1)[0] for i in items})
    keep = set(_sample(questions, EVOUNA_CURVE_QUESTIONS, seed=1))
    return [i for i in items if i.rsplit(":", 1)[0] in keep]


def consensus_validation(
    *,
    answer_matching_dir: Path = ANSWER_MATCHING,
    evouna_dir: Path = EVOUNA,
    quick: bool = False,
    curves: bool = True,
    processes: int = 2,
) -> dict[str, Any]:
    """The four data sets (gpqa_diamond, mmlu_pro, NQ, TQ), each through validate_set; `quick` takes
    a seeded slice of each (80 rows, 40 questions) and one random seed."""
    started = time.monotonic()
    plan = QUICK if quick else FULL
    sets = [answer_matching_set(n, answer_matching_dir, quick=quick, processes=processes) for n in FILES]
    sets += [evouna_set(n, evouna_dir, quick=quick) for n in EVOUNA_FILES]
    out: dict[str, Any] = {
        "quick": quick,
        "human_rule": "answer matching: rating_match >= 4, the raters agreeing; EVOUNA: judge_* true/false",
        "model": "dawid-skene, one fit per answering model (by=model), no human label",
        "min_coverage": MIN_COVERAGE,
        "error_goal_points": 100 * ERROR_GOAL,
        "curves": asdict(plan),
        "human_weight": HUMAN_WEIGHT,
        "evouna_curve_questions": EVOUNA_CURVE_QUESTIONS,
        "datasets": {},
    }
    for vs in sets:
        out["datasets"][vs.name] = validate_set(vs)
    if curves:
        jobs = [job for vs in sets for job in curve_jobs(vs, plan=plan)]
        # Each refit is ~0.3 s of crowd-kit overhead whatever its size: the curves run in parallel.
        with ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(run_curve, jobs, chunksize=1))
        for vs in sets:
            mine = [(j, r) for j, r in zip(jobs, results, strict=True) if j.dataset == vs.name]
            out["datasets"][vs.name]["curve_items"] = len(_curve_sample(vs))
            out["datasets"][vs.name]["curves"] = _curve_report([j for j, _ in mine], [r for _, r in mine])
    out["seconds"] = round(time.monotonic() - started, 1)
    return out


# ---------------------------------------------------------------------------------------------
# Markdown (the tables in docs/analytics.md are this output)
# ---------------------------------------------------------------------------------------------


def _p(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def _ci(ci: Any) -> str:
    return "" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def answer_matching_markdown(res: dict[str, Any]) -> str:
    res = jsonable(res)
    lines = []
    for name, ds in res["datasets"].items():
        hh = ds["human_human"]
        lines += [
            f"### {name}: {ds['rows']} rows; judge verdicts on "
            + ", ".join(f"{j} {n}" for j, n in ds["rows_with_judge"].items()),
            "",
            (
                f"Human–human (binary, rating ≥ 4): {hh['binary_agreement']}/{hh['items_rated_by_both']} agree "
                f"({_p(hh['binary_agreement_rate'])}), κ {_p(hh['cohen_kappa_binary'])}, Krippendorff α "
                f"{_p(hh['krippendorff_alpha_binary'])} (nominal), {_p(hh['krippendorff_alpha_ordinal_1_5'])} "
                "(ordinal, 1–5 ratings)."
            ),
            "",
            (
                "| judge | human | n | TP | FP | FN | TN | judge correct | human correct | bias [95 %] | McNemar p "
                "| false accept [95 %] | false reject [95 %] | accuracy | κ |"
            ),
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for judge, per in ds["judges"].items():
            for ann, block in per.items():
                s = block["all"]
                lines.append(
                    f"| {judge} | {ann} | {s['n']} | {s['tp']} | {s['fp']} | {s['fn']} | {s['tn']} | "
                    f"{_p(s['judge_correct_rate'])} | {_p(s['human_correct_rate'])} | "
                    f"{s['bias']:+.3f}{_ci(s['bias_ci'])} | "
                    f"{s['bias_p_value']:.2g} | {_p(s['false_accept_rate'])}{_ci(s['false_accept_rate_ci'])} | "
                    f"{_p(s['false_reject_rate'])}{_ci(s['false_reject_rate_ci'])} | {_p(s['accuracy'])} | "
                    f"{_p(s['cohen_kappa'])} |"
                )
        lines.append("")
        if DEEPSEEK in ds["judges"]:
            lines += [
                f"{DEEPSEEK} by answering model (human = consensus of the two raters, disagreements left out):",
                "",
                "| answering model | n | bias [95 %] | false accept | false reject | warnings |",
                "|---|---|---|---|---|---|",
            ]
            for model, s in ds["judges"][DEEPSEEK]["consensus"]["by_model"].items():
                lines.append(
                    f"| {model} | {s['n']} | {s['bias']:+.3f}{_ci(s['bias_ci'])} | {_p(s['false_accept_rate'])} | "
                    f"{_p(s['false_reject_rate'])} | {'; '.join(s['warnings']) or '–'} |"
                )
            lines.append("")
    return "\n".join(lines)


def ranking_markdown(res: dict[str, Any]) -> str:
    res = jsonable(res)
    readers = res["readers"]
    models = sorted({row["model"] for rows in res["rankings"].values() for row in rows})
    by = {r: {row["model"]: row for row in res["rankings"][r]} for r in readers}
    lines = [
        (
            f"{res['rows']} responses: {res['questions']} questions × {len(models)} models. "
            "Accuracy % (rank); extraction rate below."
        ),
        "",
        "| model | " + " | ".join(readers) + " |",
        "|---|" + "---|" * len(readers),
    ]
    for m in models:
        lines.append(
            f"| {m} | " + " | ".join(f"{100 * by[r][m]['accuracy']:.1f} ({by[r][m]['rank']})" for r in readers) + " |"
        )
    lines.append(
        "| *extraction rate (mean)* | "
        + " | ".join(f"{100 * sum(res['extraction_rate'][r].values()) / len(models):.1f}" for r in readers)
        + " |"
    )
    lines += [
        "",
        "Kendall's τ-b between readers' accuracy vectors (7 models) and the number of flipped model pairs:",
        "",
        "| readers | τ | p | flips |",
        "|---|---|---|---|",
    ]
    flips_per = defaultdict(int)
    for f in res["flips"]:
        flips_per[tuple(f["readers"])] += 1
    for t in res["kendall_tau"]:
        tau = "–" if t["tau"] is None else f"{t['tau']:.3f}"
        p = "–" if t["p_value"] is None else f"{t['p_value']:.3g}"
        lines.append(f"| {t['readers'][0]} vs {t['readers'][1]} | {tau} | {p} | {flips_per[tuple(t['readers'])]} |")
    lines += [
        "",
        (
            "Flips against the released extractor (a pair ordered one way by `released`, the other way by the "
            "reader; *separated* = the Wilson intervals are disjoint under both):"
        ),
        "",
    ]
    for f in res["flips_vs_released"]:
        x, y = f["readers"]
        a, b = f["models"]
        lines.append(
            f"- {y}: {b} {100 * f[y][b]['accuracy']:.1f} > {a} {100 * f[y][a]['accuracy']:.1f} "
            f"(released: {a} {100 * f[x][a]['accuracy']:.1f} > {b} {100 * f[x][b]['accuracy']:.1f})"
            + (" — separated" if f["separated"] else "")
        )
    return "\n".join(lines)


def _pt(x: Any) -> str:
    return "–" if x is None else f"{x:+.1f}"


def _pc(x: Any) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _goal(block: dict[str, Any] | None) -> str:
    if not block:
        return "–"
    runs = block["runs"]
    if len(runs) == 1:
        return str(runs[0])
    return f"{block['mean']:.0f} ({', '.join(str(r) for r in runs)})"


def consensus_validation_markdown(res: dict[str, Any]) -> str:
    res = jsonable(res)
    lines = [
        (
            "Dawid–Skene, one fit per answering model, from the machine verdicts alone (the human labels hidden); "
            f"human: {res['human_rule']}."
            + (" **--quick: a seeded slice, not the reported figures.**" if res["quick"] else "")
        ),
        "",
        "| data set | items | producers (votes on ≥ 50 % of items) | left out |",
        "|---|---|---|---|",
    ]
    for name, ds in res["datasets"].items():
        dropped = ", ".join(f"{p} ({100 * c:.0f} %)" for p, c in ds["producers_dropped"].items())
        left = ", ".join(f"{k} {v}" for k, v in ds["excluded_items"].items() if v)
        lines.append(
            f"| {name} | {ds['items']} | {', '.join(ds['producers_kept'])} | "
            + "; ".join(x for x in (left and f"items: {left}", dropped and f"producers: {dropped}") if x)
            + " |"
        )
    lines += [
        "",
        "Per item, agreement with the human label (consensus: P(correct) ≥ 0.5; majority vote: a tie counts half):",
        "",
        "| data set | items | consensus | majority vote |",
        "|---|---|---|---|",
    ]
    for name, ds in res["datasets"].items():
        t = ds["per_item"]
        lines.append(f"| {name} | {t['n']} | {_pc(t['consensus_agreement'])} % | {_pc(t['majority_agreement'])} % |")
    lines += [
        "",
        "Per answering model, accuracy % (error against the humans, points):",
        "",
        "| data set | model | n | human | consensus | majority vote | consensus item agreement |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, ds in res["datasets"].items():
        for r in ds["per_model"]:
            lines.append(
                f"| {name} | {r['model']} | {r['n']} | {_pc(r['human_accuracy'])} | "
                f"{_pc(r['consensus_accuracy'])} ({_pt(r['consensus_error_points'])}) | "
                f"{_pc(r['majority_accuracy'])} ({_pt(r['majority_error_points'])}) | "
                f"{_pc(r['consensus_agreement'])} % |"
            )
    lines += [
        "",
        "Per producer, accuracy % against the humans and as the consensus estimates it (error, points):",
        "",
        "| data set | producer | votes | human-measured | consensus-estimated |",
        "|---|---|---|---|---|",
    ]
    for name, ds in res["datasets"].items():
        for r in ds["per_producer"]:
            lines.append(
                f"| {name} | {r['producer']} | {r['votes']} | {_pc(r['human_accuracy'])} | "
                f"{_pc(r['consensus_accuracy'])} ({_pt(r['error_points'])}) |"
            )
    lines += [
        "",
        (
            "Labels after which the target's error stays under 2 points (randomized: the allocator's default "
            "design, routing's; greedy: the top label values; several seeds: their mean, each seed in brackets; ×w: "
            "the labels weighted w times in the fit; human only: random labels' own share correct, no consensus). A "
            "producer's target is its accuracy on one answering model's answers."
        ),
        "",
        (
            "| data set | target | items | error at 0 labels | randomized | greedy | random "
            f"| randomized ×{res['human_weight']} | human only |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, ds in res["datasets"].items():
        for target, c in ds.get("curves", {}).items():
            g = c["labels_to_goal"]
            weighted = next((v for k, v in g.items() if k.startswith("information (")), None)
            e0 = g["information"]["error_at_0"]
            scope = "" if target.startswith("accuracy") else f" on {c['answers_of']}"
            at0 = "–" if e0 is None else f"{100 * e0:.1f}"
            lines.append(
                f"| {name} | {target}{scope} | {c['items']} | {at0} | "
                f"{_goal(g.get('information'))} | {_goal(g.get('greedy'))} | {_goal(g.get('random'))} | "
                f"{_goal(weighted)} | {_goal(g.get('human-only'))} |"
            )
    lines += ["", f"{res['seconds']} s."]
    return "\n".join(lines)


def _estimate_validation(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from scripts import estimate_validation as ev

    for path in (args.answer_matching, args.evouna):
        if not path.exists():
            parser.error(f"no such directory: {path}")
    unknown = sorted(set(args.datasets or ()) - set(ev.PLANS))
    if unknown:
        parser.error(f"unknown data set(s) {', '.join(unknown)}: use {', '.join(ev.PLANS)}")
    seeds = args.seeds if args.seeds is not None else ev.QUICK_SEEDS if args.quick else ev.FULL_SEEDS
    if seeds < 1:
        parser.error("--seeds must be at least 1")
    unknown = sorted(set(args.designs or ()) - set(ev.DESIGNS))
    if unknown:
        parser.error(f"unknown design(s) {', '.join(unknown)}: use {', '.join(ev.DESIGNS)}")
    delta = ev.FLOOR if args.delta is None else args.delta
    if not 0 < delta <= 1:
        parser.error("--delta must be in (0, 1]")
    res = ev.estimate_validation(
        answer_matching_dir=args.answer_matching,
        evouna_dir=args.evouna,
        seeds=seeds,
        quick=args.quick,
        processes=args.processes,
        datasets=args.datasets,
        designs=args.designs,
        floor=delta,
        data_slice=args.data_slice,
    )
    print(json.dumps(res, indent=2) if args.json else ev.markdown(res))
    print(ev.result_lines(res))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.realdata",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="what", required=True)
    a = sub.add_parser("answer-matching", help="judge bias vs the two human raters")
    a.add_argument("directory", nargs="?", type=Path, default=ANSWER_MATCHING)
    a.add_argument("--json", action="store_true")
    r = sub.add_parser("mmlu-pro-ranking", help="7 models ranked under each reader, with flips")
    r.add_argument("file", nargs="?", type=Path, default=MMLU_PRO)
    r.add_argument("--reader", action="append", dest="readers", default=None)
    r.add_argument("--processes", type=int, default=4)
    r.add_argument("--json", action="store_true")
    c = sub.add_parser(
        "consensus-validation", help="the panel consensus against the human labels (gpqa, mmlu_pro, NQ, TQ)"
    )
    c.add_argument("--answer-matching", type=Path, default=ANSWER_MATCHING, dest="answer_matching")
    c.add_argument("--evouna", type=Path, default=EVOUNA)
    c.add_argument("--quick", action="store_true", help="a seeded slice of each data set and fewer curves (tests)")
    c.add_argument("--processes", type=int, default=2)
    c.add_argument("--json", action="store_true")
    e = sub.add_parser(
        "estimate-validation",
        help="prediction-powered estimates under the routing designs, against the human labels (docs/estimates.md)",
    )
    e.add_argument("--answer-matching", type=Path, default=ANSWER_MATCHING, dest="answer_matching")
    e.add_argument("--evouna", type=Path, default=EVOUNA)
    e.add_argument("--quick", action="store_true", help="fewer seeds (the same designs and data)")
    e.add_argument("--seeds", type=int, default=None, help="seeds per design and budget (default 1000; --quick 60)")
    e.add_argument("--dataset", action="append", dest="datasets", default=None, help="only these (repeatable)")
    e.add_argument("--design", action="append", dest="designs", default=None, help="only these (repeatable)")
    e.add_argument("--slice", action="store_true", dest="data_slice", help="a seeded slice of each data set (tests)")
    e.add_argument(
        "--delta", type=float, default=None, help="the information design's uniform share δ (default 0.1; experiments)"
    )
    e.add_argument("--processes", type=int, default=2)
    e.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.what == "estimate-validation":
        return _estimate_validation(parser, args)
    if args.what == "consensus-validation":
        for path in (args.answer_matching, args.evouna):
            if not path.exists():
                parser.error(f"no such directory: {path}")
        res = consensus_validation(
            answer_matching_dir=args.answer_matching, evouna_dir=args.evouna, quick=args.quick, processes=args.processes
        )
        print(json.dumps(jsonable(res), indent=2) if args.json else consensus_validation_markdown(res))
        return 0
    if args.what == "answer-matching":
        if not args.directory.exists():
            parser.error(f"no such directory: {args.directory}")
        res = answer_matching(args.directory)
        print(json.dumps(jsonable(res), indent=2) if args.json else answer_matching_markdown(res))
    else:
        if not args.file.exists():
            parser.error(f"no such file: {args.file}")
        res = mmlu_pro_ranking(args.file, readers=tuple(args.readers or RANKING_READERS), processes=args.processes)
        print(json.dumps(jsonable(res), indent=2) if args.json else ranking_markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
