"""The two real-data results of docs/analytics.md, reproducible without a database:

    python -m scripts.realdata answer-matching [DIR] [--json]
        DeepSeek-V3 (and Qwen-2.5-7B) judge bias against each human rater, per answering model,
        and human–human agreement, on ../shared/data/answer-matching-human-annotations.
    python -m scripts.realdata mmlu-pro-ranking [FILE] [--json] [--reader NAME ...]
        The 7 models' ranking under each reader on the stratified slice of
        ../shared/data/mmlu-pro-model-outputs, with rank flips and Kendall's τ.

Human verdict (answer matching): rating_match ≥ 4 ("Leaning Yes" or "Surely Yes") is correct,
1–3 incorrect (3 = "Unsure" counts as not matching), as the data set's README binarises it. The
judge's score 1/0 is correct/incorrect. Only rows carrying the judge's verdict are compared.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from adjudication.analytics.bias import judge_bias
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
    args = parser.parse_args(argv)
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
