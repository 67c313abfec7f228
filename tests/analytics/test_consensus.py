"""Panel consensus on simulated panels with known confusion matrices: every producer's votes are
drawn from its (sensitivity, specificity) against a drawn truth, so what the fit should recover
is known exactly (up to sampling noise, which shrinks with the number of items)."""

from __future__ import annotations

import numpy as np
import pytest

from adjudication.analytics.consensus import ConsensusInputs, consensus, fit_model, group_producers

# producer -> (sensitivity, specificity, coverage: the share of items it votes on)
PANEL = {
    "p_a": (0.95, 0.90, 1.0),
    "p_b": (0.80, 0.95, 1.0),
    "p_c": (0.70, 0.75, 0.8),
    "p_d": (0.99, 0.60, 1.0),
    "p_e": (0.60, 0.85, 0.7),
    "p_f": (0.90, 0.80, 0.9),
}


def simulate(
    n: int,
    *,
    seed: int,
    panel: dict[str, tuple[float, float, float]] = PANEL,
    prevalence: float = 0.6,
    prefix: str = "i",
) -> tuple[list[tuple[str, str, str]], dict[str, bool]]:
    rng = np.random.default_rng(seed)
    truth = {f"{prefix}{i}": bool(t) for i, t in enumerate(rng.random(n) < prevalence)}
    votes = []
    for producer, (se, sp, coverage) in panel.items():
        for item, t in truth.items():
            if rng.random() >= coverage:
                continue
            says_correct = rng.random() < se if t else rng.random() >= sp
            votes.append((item, producer, "correct" if says_correct else "incorrect"))
    return votes, truth


def mean_abs_error(result, panel=PANEL) -> float:
    errors = [
        abs(r.sensitivity - panel[r.producer][0]) + abs(r.specificity - panel[r.producer][1]) for r in result.producers
    ]
    return float(np.mean(errors)) / 2


@pytest.mark.parametrize("model", ["dawid-skene", "mace"])
def test_recovered_rates_converge_as_items_grow(model):
    errors = {}
    for n in (500, 5000):
        votes, _ = simulate(n, seed=11)
        result = consensus(ConsensusInputs(votes=votes), model=model, n_boot=0)
        assert {r.producer for r in result.producers} == set(PANEL)
        errors[n] = mean_abs_error(result)
    assert errors[5000] < errors[500]
    assert errors[5000] < 0.03
    for r in result.producers:
        assert r.false_accept_rate == pytest.approx(1 - r.specificity)
        assert r.false_reject_rate == pytest.approx(1 - r.sensitivity)


def test_posteriors_recover_the_truth_and_prevalence():
    votes, truth = simulate(3000, seed=5)
    result = consensus(ConsensusInputs(votes=votes), n_boot=0)
    agree = np.mean([(i.p_correct > 0.5) == truth[i.item] for i in result.items])
    majority = {}
    for item, _, verdict in votes:
        majority.setdefault(item, []).append(verdict == "correct")
    mv = np.mean([(np.mean(v) > 0.5) == truth[i] for i, v in majority.items()])
    assert agree > mv  # the weighted panel beats the plain majority
    assert result.accuracy_by is None and len(result.accuracy) == 1
    assert result.accuracy[0].accuracy == pytest.approx(np.mean(list(truth.values())), abs=0.02)


def test_abstentions_are_not_votes():
    votes, _ = simulate(3000, seed=7)
    rng = np.random.default_rng(0)
    kinds = ("no_answer", "timeout", "error")
    abstaining, dropped, counted = [], [], dict.fromkeys(kinds, 0)
    for item, producer, verdict in votes:
        if producer == "p_b" and rng.random() < 0.5:
            kind = kinds[int(rng.integers(0, 3))]
            counted[kind] += 1
            abstaining.append((item, producer, kind))
            continue
        abstaining.append((item, producer, verdict))
        dropped.append((item, producer, verdict))
    with_abstentions = consensus(ConsensusInputs(votes=abstaining), n_boot=0)
    without = consensus(ConsensusInputs(votes=dropped), n_boot=0)
    rates = {r.producer: (r.sensitivity, r.specificity, r.n_votes) for r in with_abstentions.producers}
    assert rates == {r.producer: (r.sensitivity, r.specificity, r.n_votes) for r in without.producers}
    b = next(r for r in with_abstentions.producers if r.producer == "p_b")
    assert b.abstentions == {k: v for k, v in counted.items() if v}
    assert b.n_votes == sum(1 for _, p, v in abstaining if p == "p_b" and v in ("correct", "incorrect"))
    # Half the votes, the same producer: its rates are still its own.
    assert abs(b.sensitivity - PANEL["p_b"][0]) < 0.04 and abs(b.specificity - PANEL["p_b"][1]) < 0.04


def test_clamped_human_labels_hold_in_the_posteriors():
    votes, truth = simulate(600, seed=3)
    # Human labels on 60 items, a third of them the opposite of the truth the votes point to.
    items = sorted(truth)[:60]
    human = {
        i: ("incorrect" if truth[i] else "correct") if k % 3 == 0 else ("correct" if truth[i] else "incorrect")
        for k, i in enumerate(items)
    }
    fit = fit_model(votes, human, model="dawid-skene")
    for i, label in human.items():
        assert fit.p_correct[i] == pytest.approx(1.0 if label == "correct" else 0.0, abs=1e-6)
    result = consensus(ConsensusInputs(votes=votes, human=human), n_boot=0)
    by_item = {i.item: i for i in result.items}
    assert all(by_item[i].human == h and by_item[i].p_correct == (h == "correct") for i, h in human.items())
    # The human-measured rates are the producers' votes against those labels, counted here independently.
    said = {(i, p): v for i, p, v in votes}
    for r in result.producers:
        pos = [said[(i, r.producer)] for i, h in human.items() if h == "correct" and (i, r.producer) in said]
        assert r.human_sensitivity["n"] == len(pos) and r.human_sensitivity["k"] == pos.count("correct")
        assert r.human_sensitivity["ci"][0] <= r.human_sensitivity["rate"] <= r.human_sensitivity["ci"][1]
    # Human labels alone on items nobody read still count: as known truths.
    extra = consensus(ConsensusInputs(votes=votes, human={**human, "unread": "correct"}), n_boot=0)
    assert {i.item: i.p_correct for i in extra.items}["unread"] == 1.0


def test_mace_with_human_labels_says_the_rates_ignore_them():
    votes, truth = simulate(300, seed=4)
    human = {i: "correct" if truth[i] else "incorrect" for i in sorted(truth)[:40]}
    result = consensus(ConsensusInputs(votes=votes, human=human), model="mace", n_boot=0)
    assert any("MACE takes no known labels" in w for w in result.warnings)
    assert all(i.p_correct == (i.human == "correct") for i in result.items if i.human)


def test_correlation_flags_a_near_copy_and_grouping_merges_it():
    votes, _ = simulate(1500, seed=9)
    rng = np.random.default_rng(1)
    copy = []
    for item, producer, verdict in votes:
        if producer == "p_c":
            flip = rng.random() < 0.01
            other = "incorrect" if verdict == "correct" else "correct"
            copy.append((item, "p_c_copy", other if flip else verdict))
    result = consensus(ConsensusInputs(votes=votes + copy), n_boot=0)
    flagged = [c.producers for c in result.correlated]
    assert ["p_c", "p_c_copy"] in flagged
    independent = [c for c in result.correlations if "p_c_copy" not in c.producers]
    assert all(c.phi is not None and abs(c.phi) < 0.15 for c in independent)
    assert all("p_c_copy" in c.producers for c in result.correlated)

    grouped = consensus(ConsensusInputs(votes=votes + copy), n_boot=0, group_duplicates=0.98)
    assert grouped.groups == {"p_c+p_c_copy": ["p_c", "p_c_copy"]}
    assert {r.producer for r in grouped.producers} == (set(PANEL) - {"p_c"}) | {"p_c+p_c_copy"}
    assert grouped.correlated == []
    merged = next(r for r in grouped.producers if r.producer == "p_c+p_c_copy")
    assert abs(merged.sensitivity - PANEL["p_c"][0]) < 0.05 and abs(merged.specificity - PANEL["p_c"][1]) < 0.05


def test_grouping_takes_the_members_majority_and_a_tie_abstains():
    votes = [(f"i{k}", p, "correct") for k in range(12) for p in ("a", "b", "c")]
    votes += [("i12", "a", "correct"), ("i12", "b", "incorrect"), ("i12", "c", "correct")]
    votes += [("i13", "a", "correct"), ("i13", "b", "incorrect")]
    merged, groups = group_producers(votes, threshold=0.9)
    assert groups == {"a+b+c": ["a", "b", "c"]}
    out = {i: v for i, _, v in merged}
    assert out["i12"] == "correct" and out["i13"] == "no_answer" and out["i0"] == "correct"


def test_a_fit_per_checkpoint_recovers_rates_a_single_fit_cannot():
    # A lexical reader that works on one checkpoint's short spans and fails on the other's prose.
    lexical = {"short": (0.95, 0.95, 1.0), "prose": (0.30, 0.95, 1.0)}
    votes, human, strata = [], {}, {}
    for seed, ckpt in enumerate(lexical):
        panel = {**{k: v for k, v in PANEL.items() if k in ("p_a", "p_b", "p_f")}, "lexical": lexical[ckpt]}
        v, truth = simulate(2000, seed=20 + seed, panel=panel, prefix=f"{ckpt}-")
        votes += v
        strata.update({i: {"checkpoint": ckpt} for i in truth})
    inputs = ConsensusInputs(votes=votes, human=human, strata=strata)
    per = consensus(inputs, by="checkpoint", n_boot=0)
    pooled = consensus(inputs, n_boot=0)
    fitted = {r.stratum: r.sensitivity for r in per.producers if r.producer == "lexical"}
    assert set(fitted) == {"short", "prose"}
    for ckpt, (se, _, _) in lexical.items():
        assert abs(fitted[ckpt] - se) < 0.04
        one = next(r for r in pooled.producers if r.producer == "lexical")
        assert one.stratum == "all" and abs(one.sensitivity - se) > 0.2
    assert [g.group for g in per.accuracy] == ["prose", "short"]
    assert pooled.accuracy_by == "checkpoint" and [g.group for g in pooled.accuracy] == ["prose", "short"]


def test_bootstrap_replicates_are_seeded_refits_on_resampled_items():
    votes, truth = simulate(120, seed=2)
    items = sorted(truth)
    strata = {i: {"checkpoint": "ck1" if k % 2 else "ck2"} for k, i in enumerate(items)}
    human = {i: "correct" if truth[i] else "incorrect" for i in items[:50]}
    inputs = ConsensusInputs(votes=votes, human=human, strata=strata)
    first = consensus(inputs, n_boot=2, seed=4)
    for g in first.accuracy:
        assert g.ci is not None and g.ci[0] <= g.ci[1]
        labelled = [human[i] for i in human if strata[i]["checkpoint"] == g.group]
        assert g.human["n"] == len(labelled) and g.human["k"] == labelled.count("correct")
    assert any("human label(s)" in w for w in first.warnings)  # 25 per checkpoint < 30

    # One replicate, rebuilt here: draw the items as numpy's seeded generator does, give every
    # drawn copy a name of its own and fit those data afresh; its accuracy is the replicate's.
    one = consensus(inputs, n_boot=1, seed=9)
    draw = np.random.default_rng(9).integers(0, len(items), size=len(items))
    copies = [(f"{items[j]}#{k}", items[j]) for k, j in enumerate(draw)]
    by_item: dict[str, list[tuple[str, str]]] = {}
    for item, producer, verdict in votes:
        by_item.setdefault(item, []).append((producer, verdict))
    resampled = ConsensusInputs(
        votes=[(c, p, v) for c, orig in copies for p, v in by_item.get(orig, [])],
        human={c: human[orig] for c, orig in copies if orig in human},
        strata={c: strata[orig] for c, orig in copies},
    )
    refit = {g.group: g.accuracy for g in consensus(resampled, n_boot=0).accuracy}
    for g in one.accuracy:
        assert g.ci == pytest.approx([refit[g.group], refit[g.group]])


def test_a_producer_taken_as_the_truth_is_flagged_and_grouping_its_twin_undoes_it():
    # Two producers that always agree (one extractor run twice) outvote a weak panel: the model
    # explains the data best by taking them as the truth, the documented failure of correlated voters.
    panel = {"p_x": (0.80, 0.75, 1.0), "p_c": PANEL["p_c"], "p_e": PANEL["p_e"]}
    votes, _ = simulate(400, seed=6, panel=panel)
    votes += [(i, "p_x_twin", v) for i, p, v in votes if p == "p_x"]
    result = consensus(ConsensusInputs(votes=votes), n_boot=0)
    assert {r.producer for r in result.producers if r.degenerate} == {"p_x", "p_x_twin"}
    assert any(w.startswith("p_x_twin (all): fitted at sensitivity ≈ specificity ≈ 1") for w in result.warnings)
    assert ["p_x", "p_x_twin"] in [c.producers for c in result.correlations if c.agreement == 1.0]
    grouped = consensus(ConsensusInputs(votes=votes), n_boot=0, group_duplicates=0.98)
    assert not any(r.degenerate for r in grouped.producers)


def test_small_strata_are_warned_about():
    votes, _ = simulate(20, seed=1, panel={k: PANEL[k] for k in ("p_a", "p_b", "p_f")})
    result = consensus(ConsensusInputs(votes=votes), n_boot=0)
    assert any(w.startswith("stratum all: only 20 item(s)") for w in result.warnings)


@pytest.mark.parametrize(
    ("inputs", "options", "message"),
    [
        (ConsensusInputs(votes=[("i1", "a", "maybe")]), {}, "verdict 'maybe'"),
        (ConsensusInputs(votes=[("i1", "a", "correct"), ("i1", "a", "incorrect")]), {}, "two verdicts"),
        (ConsensusInputs(votes=[("i1", "a", "correct")], human={"i1": "unsure"}), {}, "human label 'unsure'"),
        (ConsensusInputs(votes=[("i1", "a", "timeout")]), {}, "only abstentions"),
        (ConsensusInputs(votes=[("i1", "a", "correct")]), {"model": "glad"}, "model must be one of"),
        (ConsensusInputs(votes=[("i1", "a", "correct")]), {"by": "prompt"}, "by must be one of"),
    ],
)
def test_bad_inputs_are_refused_with_the_reason(inputs, options, message):
    with pytest.raises(ValueError, match=message):
        consensus(inputs, n_boot=0, **options)


def test_abstentions_are_counted_per_stratum_and_a_silent_producer_still_has_its_row():
    votes, truth = simulate(200, seed=8, panel={k: PANEL[k] for k in ("p_a", "p_b", "p_f")})
    items = sorted(truth)
    strata = {i: {"checkpoint": "base" if k < 50 else "rl"} for k, i in enumerate(items)}
    votes += [(i, "crashes", "error") for i in items[:70]]  # 50 on base, 20 on rl
    result = consensus(ConsensusInputs(votes=votes, strata=strata), by="checkpoint", n_boot=0)
    rows = {(r.producer, r.stratum): r for r in result.producers}
    assert rows[("crashes", "base")].abstentions == {"error": 50}
    assert rows[("crashes", "rl")].abstentions == {"error": 20}
    silent = rows[("crashes", "rl")]
    assert silent.n_votes == 0 and silent.sensitivity is None and silent.specificity is None
    assert rows[("p_a", "rl")].abstentions == {}


def _strict_twins_panel(n: int, *, seed: int) -> tuple[list[tuple[str, str, str]], dict[str, bool]]:
    # EVOUNA's failure in miniature: two near-identical strict producers that reject most correct
    # answers (exact match and token F1 on chat prose), one lenient producer right most of the time.
    rng = np.random.default_rng(seed)
    truth = {f"i{i}": bool(t) for i, t in enumerate(rng.random(n) < 0.75)}
    votes = []
    for item, t in truth.items():
        strict = rng.random() < (0.15 if t else 0.02)
        twin = strict if rng.random() < 0.97 else not strict
        lenient = rng.random() < (0.97 if t else 0.45)
        for producer, says in (("strict_a", strict), ("strict_b", twin), ("lenient", lenient)):
            votes.append((item, producer, "correct" if says else "incorrect"))
    return votes, truth


def test_weighted_human_labels_pull_a_fit_that_took_correlated_twins_for_the_truth():
    votes, truth = _strict_twins_panel(1500, seed=5)
    labelled = sorted(truth)[::10]  # 150 labels
    human = {i: "correct" if truth[i] else "incorrect" for i in labelled}
    agreement, rates = {}, {}
    for weight in (1, 20):
        result = consensus(ConsensusInputs(votes=votes, human=human), n_boot=0, human_weight=weight)
        assert {p.item for p in result.items} == set(truth)  # the copies are not items
        agreement[weight] = np.mean([(p.p_correct >= 0.5) == truth[p.item] for p in result.items])
        rates[weight] = {r.producer: (r.sensitivity, r.specificity) for r in result.producers}
    assert agreement[1] < 0.6  # the plain clamp: the twins stay the truth
    assert agreement[20] > 0.85
    assert rates[20]["strict_a"][0] == pytest.approx(0.15, abs=0.05)
    assert rates[20]["lenient"] == pytest.approx((0.97, 0.55), abs=0.15)


def test_human_weight_one_is_the_plain_clamp_and_bad_weights_are_refused():
    votes, truth = simulate(300, seed=2)
    human = {i: "correct" if truth[i] else "incorrect" for i in sorted(truth)[:40]}
    inputs = ConsensusInputs(votes=votes, human=human)
    assert consensus(inputs, n_boot=0, human_weight=1) == consensus(inputs, n_boot=0)
    weighted = consensus(inputs, n_boot=3, human_weight=4)  # the bootstrap refits with the weight too
    assert all(g.ci is not None for g in weighted.accuracy)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="human_weight"):
            consensus(inputs, n_boot=0, human_weight=bad)
    with pytest.raises(ValueError, match="dawid-skene"):
        consensus(inputs, model="mace", n_boot=0, human_weight=3)
