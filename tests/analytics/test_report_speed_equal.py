"""The report's faster paths give the numbers the slower ones gave (issue 36 item 15): each
optimised function against the code it replaced, kept here as the reference, on random inputs.
Equality is exact (==), not approximate: the stored report must not change by a bit."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections import defaultdict
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudication.analytics import agreement, bias, consensus, ranking, stats
from adjudication.analytics.stats import Undefined

# --- the replaced code, verbatim in substance -------------------------------------------------


def _old_producer_correlations(binary, posterior):
    said: dict[str, dict[str, int]] = defaultdict(dict)
    for item, producer, verdict in binary:
        said[producer][item] = 1 if verdict == "correct" else 0
    out = []
    for a, b in combinations(sorted(said), 2):
        common = sorted(set(said[a]) & set(said[b]))
        if not common:
            continue
        va = np.array([said[a][i] for i in common])
        vb = np.array([said[b][i] for i in common])
        pc = np.array([posterior.get(i, 0.5) for i in common])
        phis, masses = [], []
        for w in (pc, 1 - pc):
            table = np.array(
                [
                    [np.sum(w * va * vb), np.sum(w * va * (1 - vb))],
                    [np.sum(w * (1 - va) * vb), np.sum(w * (1 - va) * (1 - vb))],
                ]
            )
            phis.append(consensus._phi(table))
            masses.append(float(w.sum()))
        defined = [(p, m) for p, m in zip(phis, masses, strict=True) if p is not None and m > 0]
        phi = sum(p * m for p, m in defined) / sum(m for _, m in defined) if defined else None
        out.append(
            consensus.PairCorrelation(
                producers=[a, b],
                n=len(common),
                agreement=float(np.mean(va == vb)),
                phi_correct=phis[0],
                phi_incorrect=phis[1],
                phi=phi,
            )
        )
    return sorted(out, key=lambda c: (-(c.phi if c.phi is not None else -2.0), c.producers))


def _old_jsonable(obj: Any) -> Any:
    if isinstance(obj, Undefined):
        return None
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out[str(k)] = _old_jsonable(v)
            if isinstance(v, Undefined) and f"{k}_reason" not in obj:
                out[f"{k}_reason"] = v.reason
        return out
    if isinstance(obj, (list, tuple)):
        return [_old_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    return obj


def _old_percentile_interval(samples, alpha=stats.ALPHA):
    arr = np.asarray(
        [s for s in samples if s is not None and not (isinstance(s, float) and math.isnan(s))], dtype=float
    )
    if arr.size == 0:
        return None
    lo, hi = np.quantile(arr, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


# --- the tests ----------------------------------------------------------------------------------


def _panel(seed: int, n_items: int, n_producers: int):
    rnd = random.Random(seed)
    binary = []
    for i in range(n_items):
        for k in range(n_producers):
            if rnd.random() < 0.25:
                continue  # this producer abstained on this item
            binary.append((f"r{rnd.randrange(10**6)}-{i}", f"p{k}", rnd.choice(("correct", "incorrect"))))
    # Items voted on by several producers, and posteriors for most but not all of them.
    binary = [(f"r{i % (n_items // 2 + 1)}", p, v) for i, (_, p, v) in enumerate(binary)]
    binary = list({(i, p): (i, p, v) for i, p, v in binary}.values())
    posterior = {i: rnd.choice([0.0, 1.0, rnd.random()]) for i, _, _ in binary if rnd.random() < 0.9}
    return binary, posterior


@pytest.mark.parametrize(("seed", "n_items", "n_producers"), [(0, 30, 2), (1, 400, 6), (2, 2000, 18), (3, 5, 4)])
def test_producer_correlations_by_column_equal_the_per_pair_lists(seed, n_items, n_producers):
    """issue 36 item 15: the correlation table built from one column per producer is the per-pair
    table it replaced (34 s at 100,000 responses), to the bit."""
    binary, posterior = _panel(seed, n_items, n_producers)
    assert consensus.producer_correlations(binary, posterior) == _old_producer_correlations(binary, posterior)


_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.builds(Undefined, st.text(max_size=5))
    | st.floats().map(np.float64)
    | st.integers(-(2**31), 2**31 - 1).map(np.int64)
    | st.booleans().map(np.bool_)
)
_TREES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4)
    ),
    max_leaves=25,
)


@given(_TREES)
@settings(max_examples=400, deadline=None)
def test_jsonable_with_its_fast_leaves_is_the_old_jsonable(value):
    """issue 36 item 15: jsonable's exact-type shortcut for str/int/bool/float/None returns what
    the isinstance chain returned, for any nesting of the values a report holds."""
    new, old = stats.jsonable(value), _old_jsonable(value)
    assert new == old
    assert repr(new) == repr(old)  # the same types too (True is not 1, 1.0 is not 1)


@given(
    st.lists(st.floats(allow_infinity=False) | st.just(math.nan), max_size=60),
    st.sampled_from([0.05, 0.1, 0.32]),
)
@settings(max_examples=300, deadline=None)
def test_percentile_interval_of_a_float_array_is_that_of_its_list(values, alpha):
    """issue 36 item 15: a bootstrap's float64 array goes through numpy's NaN mask instead of a
    Python filter per replicate; the interval is the one the list gives."""
    arr = np.array(values, dtype=float)
    assert stats.percentile_interval(arr, alpha) == _old_percentile_interval(list(values), alpha)
    assert stats.percentile_interval(arr, alpha) == _old_percentile_interval(arr, alpha)


@given(
    st.tuples(st.integers(0, 500), st.integers(1, 500)),
    st.tuples(st.integers(0, 500), st.integers(1, 500)),
)
def test_the_integer_order_of_two_accuracies_is_the_fractions_order(a, b):
    """issue 36 item 15: flips compare accuracies by cross-multiplication instead of Fractions."""
    diff = Fraction(*a) - Fraction(*b)
    assert ranking._order(a, b) == (diff > 0) - (diff < 0)


def test_an_accuracy_over_no_responses_is_refused_as_before():
    with pytest.raises(ZeroDivisionError):
        ranking._order((0, 0), (1, 2))


def test_ranking_flips_are_the_fraction_flips_on_random_tables():
    """issue 36 item 15: the whole comparison (rankings, flips, τ) on random tables with ties is the
    one the Fraction arithmetic gave: flips recomputed here with Fractions."""
    rnd = random.Random(7)
    for _ in range(30):
        models = [f"m{k}" for k in range(rnd.randint(2, 6))]
        tables = {
            f"r{j}": {m: (lambda n: (rnd.randint(0, n), n))(rnd.choice([4, 10, 10, 37])) for m in models}
            for j in range(rnd.randint(2, 5))
        }
        out = ranking.compare(tables)
        expected = set()
        for x, y in combinations(tables, 2):
            for a, b in combinations(models, 2):
                ax, bx = Fraction(*tables[x][a]), Fraction(*tables[x][b])
                ay, by = Fraction(*tables[y][a]), Fraction(*tables[y][b])
                if (ax - bx) * (ay - by) < 0:
                    expected.add((x, y, *((a, b) if ax > bx else (b, a))))
        assert {(*f["readers"], *f["models"]) for f in out["flips"]} == expected


@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 3))
@settings(max_examples=60, deadline=None)
def test_the_bias_interval_remembered_is_the_one_drawn(tp, fp, fn, tn, seed):
    """issue 36 item 15: _bias_interval is remembered per (cells, seed, n_boot); the remembered
    interval is the freshly drawn one, and a caller changing its copy changes nothing."""
    n = tp + fp + fn + tn
    first = bias._bias_interval(tp, fp, fn, tn, seed=seed, n_boot=300)
    if n == 0:
        assert first is None
        return
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, np.array([tp, fp, fn, tn], dtype=float) / n, size=300)
    lo, hi = np.quantile((draws[:, 1] - draws[:, 2]) / n, [0.025, 0.975])
    assert first == [float(lo), float(hi)]
    first.append("changed by a caller")
    assert bias._bias_interval(tp, fp, fn, tn, seed=seed, n_boot=300) == [float(lo), float(hi)]


def test_producer_correlations_keep_a_producers_last_verdict_on_an_item_as_before():
    """issue 36 item 15: a repeated (item, producer) vote replaces the earlier one, as the per-pair
    dictionaries did."""
    binary, posterior = _panel(4, 300, 5)
    binary = binary + [(i, p, "incorrect" if v == "correct" else "correct") for i, p, v in binary[::7]]
    assert consensus.producer_correlations(binary, posterior) == _old_producer_correlations(binary, posterior)


def _old_judge_bias_cells_and_kappa(pairs, no_answer="incorrect"):
    judge, human, excluded = [], [], {}
    for p, h in pairs:
        pb, hb = bias.producer_binary(p, no_answer), bias.human_binary(h)
        if hb is None:
            key = f"human_{h if h else 'missing'}"
            excluded[key] = excluded.get(key, 0) + 1
        elif pb is None:
            key = f"producer_{p if p else 'missing'}"
            excluded[key] = excluded.get(key, 0) + 1
        else:
            judge.append(pb)
            human.append(hb)
    return stats.confusion(judge, human, bias.BINARY), stats.cohen_kappa(judge, human, labels=bias.BINARY), excluded


_VERDICT = st.sampled_from(["correct", "incorrect", "no_answer", "error", "timeout", None, "ambiguous"])


@given(st.lists(st.tuples(_VERDICT, _VERDICT), max_size=80), st.sampled_from(["incorrect", "exclude"]))
@settings(max_examples=300, deadline=None)
def test_judge_bias_counted_per_distinct_pair_equals_the_item_walk(pairs, no_answer):
    """issue 36 item 15: judge_bias counts each distinct (producer, human) pair once; its cells,
    Cohen's κ (or the reason it is undefined) and exclusions are those of walking every item."""
    out = bias.judge_bias(pairs, no_answer=no_answer, n_boot=50)
    matrix, kappa, excluded = _old_judge_bias_cells_and_kappa(pairs, no_answer)
    assert out["confusion"]["matrix"] == matrix
    assert [out["tp"], out["fp"], out["fn"], out["tn"]] == [matrix[0][0], matrix[0][1], matrix[1][0], matrix[1][1]]
    assert out["cohen_kappa"] == kappa
    assert out["excluded"] == dict(sorted(excluded.items()))
    assert all(type(x) is int for x in (out["n"], out["tp"], out["fp"], out["fn"], out["tn"]))


def test_validate_still_names_the_first_offending_vote():
    """issue 36 item 15: the C-loop check lets valid votes through and the walk names the offender."""
    ok = consensus.ConsensusInputs(votes=[("a", "p", "correct"), ("b", "p", "no_answer")], human={}, strata={})
    consensus.validate(ok)
    twice = consensus.ConsensusInputs(votes=[("a", "p", "correct"), ("a", "p", "incorrect")], human={}, strata={})
    with pytest.raises(ValueError, match="item 'a', producer 'p': two verdicts"):
        consensus.validate(twice)
    unknown = consensus.ConsensusInputs(votes=[("a", "p", "correct"), ("b", "q", "maybe")], human={}, strata={})
    with pytest.raises(ValueError, match="verdict 'maybe'"):
        consensus.validate(unknown)


def _old_producer_table(binary, abstentions, human, fits, *, stratum_of):
    from collections import Counter

    votes, abstained = defaultdict(list), defaultdict(Counter)
    for item, producer, verdict in binary:
        votes[(producer, stratum_of(item))].append((item, verdict))
    for item, producer, verdict in abstentions:
        abstained[(producer, stratum_of(item))][verdict] += 1
    out = []
    for key in sorted(set(votes) | set(abstained)):
        producer, stratum = key
        rows = votes.get(key, [])
        fit = fits.get(stratum)
        se, sp = fit.rates.get(producer, (None, None)) if fit else (None, None)
        with_h = [(v, human[i]) for i, v in rows if i in human]
        pos = [v for v, h in with_h if h == "correct"]
        neg = [v for v, h in with_h if h == "incorrect"]
        out.append(
            consensus.ProducerRates(
                producer=producer,
                stratum=stratum,
                n_votes=len(rows),
                abstentions=dict(sorted(abstained.get(key, Counter()).items())),
                sensitivity=se,
                specificity=sp,
                false_accept_rate=None if sp is None else 1 - sp,
                false_reject_rate=None if se is None else 1 - se,
                human_sensitivity=stats.proportion(pos.count("correct"), len(pos)),
                human_specificity=stats.proportion(neg.count("incorrect"), len(neg)),
                degenerate=se is not None
                and sp is not None
                and se >= 1 - consensus.DEGENERATE
                and sp >= 1 - consensus.DEGENERATE,
            )
        )
    return out


@pytest.mark.parametrize("by", [None, "checkpoint"])
def test_the_counted_producer_table_is_the_listed_one(by):
    """issue 36 item 15: the producer table counted per (producer, stratum) is the one built from
    per-key vote lists, abstaining-only producers and empty strata included."""
    rnd = random.Random(5)
    votes = [
        (f"r{i}", f"p{k}", rnd.choice(["correct", "incorrect", "incorrect", "no_answer", "error"]))
        for i in range(300)
        for k in range(6)
        if rnd.random() < 0.8
    ] + [(f"r{i}", "mute", "timeout") for i in range(0, 300, 3)]
    human = {f"r{i}": rnd.choice(["correct", "incorrect"]) for i in range(0, 300, 4)}
    strata = {f"r{i}": {"checkpoint": "rl" if i % 3 else "base"} for i in range(300)}
    inputs = consensus.ConsensusInputs(votes=votes, human=human, strata=strata)
    result = consensus.consensus(inputs, by=by, n_boot=0)
    binary = [v for v in votes if v[2] in bias.BINARY]
    abstentions = [v for v in votes if v[2] not in bias.BINARY]
    fits = consensus._fit_strata(
        binary,
        human,
        by=by,
        stratum_of=lambda i, key: consensus.ALL if key is None else (strata.get(i) or {}).get(key) or "-",
        model="dawid-skene",
    )

    def stratum_of(i):
        return consensus.ALL if by is None else (strata.get(i) or {}).get(by) or "-"

    old = _old_producer_table(binary, abstentions, human, fits, stratum_of=stratum_of)
    assert consensus._producer_table(binary, abstentions, human, fits, stratum_of=stratum_of) == old
    assert result.producers == old


@pytest.mark.django_db
def test_plain_rows_are_the_orm_iterators_rows_in_its_order(labelled):
    """issue 36 item 15: consensus_inputs reads every reading through _plain_rows (the cursor's
    rows); they are the ORM iterator's, in its order, and a field that needs converting (verbatim
    text) goes through the ORM."""
    from adjudication.analytics.selectors import _plain_rows
    from adjudication.models import Reading

    plain = Reading.objects.filter(response__dataset=labelled[0]).values_list(
        "response_id", "reader_spec_id", "verdict", "response__run__model"
    )
    assert list(_plain_rows(plain, chunk_size=7)) == list(plain.iterator(chunk_size=7))
    # Verbatim text as stored: a NUL and a lone surrogate go in under the sentinel, and come back.
    first, second = Reading.objects.filter(response__dataset=labelled[0]).order_by("id")[:2]
    Reading.objects.filter(pk=first.pk).update(answer="a\x00b", canonical="x\ud800y")
    Reading.objects.filter(pk=second.pk).update(answer=None)
    verbatim = Reading.objects.filter(response__dataset=labelled[0]).values_list(
        "response_id", "answer", "verdict", "canonical"
    )
    rows = list(_plain_rows(verbatim, chunk_size=7))
    assert rows == list(verbatim.iterator(chunk_size=7))
    assert (first.response_id, "a\x00b", first.verdict, "x\ud800y") in rows
    assert len(list(_plain_rows(plain, chunk_size=7))) == plain.count() > 7


@given(
    st.integers(1, 40),
    st.integers(1, 30),
    st.integers(1, 4),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_resampled_sums_are_the_count_matrix_product(n, n_boot, columns, seed, binary):
    """issue 36 item 15: the stratified bootstrap sums each resample per 0/1 pattern; the sums are
    resample_counts(...) @ a for the same draws, to the bit (and any other values take the product)."""
    from adjudication.analytics.agreement import resample_counts, resampled_sums

    data = np.random.default_rng(seed)
    a = (data.random((n, columns)) < 0.5).astype(float) if binary else data.random((n, columns))
    drawn = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    counts = resample_counts(np.random.default_rng(seed), n, n_boot)
    assert np.array_equal(resampled_sums(drawn, a), counts @ a)


def _old_consensus_inputs(dataset):
    """consensus_inputs before the readings lost their join to runs: each reading carried its
    run's model, checkpoint and benchmark."""
    from adjudication.analytics import selectors
    from adjudication.models import Response

    labels = selectors.reader_labels(dataset=dataset)
    rows = selectors._applicable_readings(dataset).values_list(
        "response_id",
        "reader_spec_id",
        "verdict",
        "response__run__model",
        "response__run__checkpoint",
        "response__run__benchmark",
    )
    read = list(selectors._plain_rows(rows, chunk_size=5000))
    votes = [(str(rid), labels[sid], verdict) for rid, sid, verdict, _, _, _ in read]
    runs = {row[0]: row[3:] for row in read}
    strata = {
        str(rid): {"model": model, "checkpoint": ckpt, "benchmark": bench} for rid, (model, ckpt, bench) in runs.items()
    }
    human = {
        rid: obs.verdict
        for rid, obs in selectors.human_observations(dataset=dataset).items()
        if obs.verdict in ("correct", "incorrect")
    }
    missing = [int(r) for r in human if r not in strata]
    if missing:
        for rid, model, ckpt, bench in Response.objects.filter(id__in=missing).values_list(
            "id", "run__model", "run__checkpoint", "run__benchmark"
        ):
            strata[str(rid)] = {"model": model, "checkpoint": ckpt, "benchmark": bench}
    return consensus.ConsensusInputs(votes=votes, human=human, strata=strata)


@pytest.mark.django_db
def test_consensus_inputs_read_readings_without_joining_runs_and_give_the_same_inputs(labelled):
    """issue 36 item 15: the consensus reads every reading with its response's run id, not joined
    to the run's texts (the strata come from one read of the runs); the votes, labels and strata
    are the old path's, in the same order, and no two responses share one strata dict."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from adjudication.analytics.selectors import consensus_inputs

    dataset = labelled[0]
    with CaptureQueriesContext(connection) as queries:
        new = consensus_inputs(dataset=dataset)
    readings_sql = [q["sql"] for q in queries.captured_queries if 'FROM "adjudication_reading"' in q["sql"]]
    assert readings_sql, "the readings were not read"
    assert not any('"adjudication_run"' in sql for sql in readings_sql)

    old = _old_consensus_inputs(dataset)
    assert len({s["checkpoint"] for s in old.strata.values()}) > 1  # more than one run to map
    assert new.votes == old.votes
    assert list(new.human.items()) == list(old.human.items())
    assert list(new.strata.items()) == list(old.strata.items())
    assert len({id(s) for s in new.strata.values()}) == len(new.strata)


@pytest.mark.django_db
def test_consensus_votes_of_one_response_share_one_key_string(labelled):
    """issue 36 item 15: every vote of a response, and its strata entry, carry one and the same str
    object (its hash computed once for the fit's dictionaries, not once per reading); the inputs
    still equal the old path's."""
    from adjudication.analytics.selectors import consensus_inputs

    new = consensus_inputs(dataset=labelled[0])
    keys = {key: key for key in new.strata}
    assert len(new.votes) > len(keys)  # several readings per response
    assert all(keys[item] is item for item, _, _ in new.votes)
    old = _old_consensus_inputs(labelled[0])
    assert new.votes == old.votes
    assert list(new.strata.items()) == list(old.strata.items())


def _old_unreadable_responses(*, dataset, specs):
    """routing.selectors.unreadable_responses before it counted in the database: every panel
    reading built in Python, chunk by chunk."""
    from adjudication.routing.rules import is_unreadable
    from adjudication.routing.selectors import panel_readings

    return {
        response.response_id: response.external_id
        for chunk in panel_readings(dataset=dataset, specs=specs)
        for response in chunk
        if len(response.readings) >= len(specs) and is_unreadable(response.readings)
    }


@pytest.mark.django_db
def test_unreadable_responses_counted_in_the_database_are_the_ones_built_in_python(labelled):
    """issue 36 item 15: the unreadable stratum (every panel reader read the response, none read
    anything) counted by one aggregate query is the old per-reading walk's, in the same order:
    abstentions of every kind, a reader that has not read the response yet, one panel reader alone."""
    from adjudication.models import ReaderSpec, Reading, Response
    from adjudication.routing.selectors import unreadable_responses

    dataset = labelled[0]
    specs = list(ReaderSpec.objects.filter(name__in=("boxed", "strict-match")).order_by("name"))
    ids = list(Response.objects.filter(dataset=dataset).order_by("id").values_list("id", flat=True))
    kinds = ["no_answer", "error", "timeout", "not_applicable"]
    for n, rid in enumerate(ids[:12]):
        Reading.objects.filter(response_id=rid, reader_spec__in=specs).update(verdict=kinds[n % len(kinds)])
    Reading.objects.filter(response_id=ids[12], reader_spec=specs[0]).update(verdict="no_answer")  # one reads
    Reading.objects.filter(response_id=ids[1], reader_spec=specs[1]).delete()  # not read by every reader
    for panel in (specs, specs[:1], specs[1:], []):
        new = unreadable_responses(dataset=dataset, specs=panel)
        assert list(new.items()) == list(_old_unreadable_responses(dataset=dataset, specs=panel).items())
    both = unreadable_responses(dataset=dataset, specs=specs)
    assert set(both) == set(ids[:12]) - {ids[1]}
    assert ids[12] in unreadable_responses(dataset=dataset, specs=specs[:1])


VERDICTS = ("correct", "incorrect", "no_answer", "error", "timeout")


# stratified before its readers shared one resampling count (verbatim but for names).
def _old_stratified(
    obs: list[agreement.ReaderObs],
    human: dict[str, agreement.HumanObs],
    *,
    policy: str,
    n_disputed: int,
    n_undisputed: int,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Population estimates for one routing policy: each stratum's rate weighted by its size.

    n_disputed: responses the policy routed as disputed; n_undisputed: responses the panel read
    and agreed on (controls were drawn from these). Rates per stratum are over labelled items."""
    out: dict[str, Any] = {"policy": policy, "n_disputed": n_disputed, "n_undisputed": n_undisputed, "readers": {}}
    total = n_disputed + n_undisputed
    if total == 0:
        out["error"] = "the policy routed nothing"
        return out
    w = {"disputed": n_disputed / total, "controls": n_undisputed / total}
    per_reader: dict[str, dict[str, list]] = defaultdict(lambda: {"disputed": [], "controls": []})
    for o in obs:
        h = human.get(o.response)
        if h is None or h.policy != policy:
            continue
        jb, hb = agreement.producer_binary(o.verdict), h.verdict if h.verdict in ("correct", "incorrect") else None
        if jb is None or hb is None:
            continue
        per_reader[o.reader]["controls" if h.is_control else "disputed"].append(
            (jb == hb, jb == "correct", hb == "correct")
        )
    rng_seed = seed
    # Every reader's bootstrap starts from the same seed, so readers with as many labelled items
    # per stratum draw the same resamples: counted once (resample_counts), used for each.
    draws: dict[tuple[int, ...], dict[str, np.ndarray]] = {}
    for reader, strata in sorted(per_reader.items()):
        missing = [s for s in ("disputed", "controls") if w[s] > 0 and not strata[s]]
        entry: dict[str, Any] = {"n_labelled": {s: len(v) for s, v in strata.items()}}
        if missing:
            entry["error"] = (
                f"no labelled {' or '.join(missing)} item(s): that stratum "
                f"({', '.join(f'{w[s]:.1%}' for s in missing)} of the population) is unobserved"
            )
            out["readers"][reader] = entry
            continue
        arrays = {s: np.array(v, dtype=float).reshape(-1, 3) for s, v in strata.items()}

        def estimate(means: dict[str, np.ndarray], arrays: dict[str, np.ndarray] = arrays) -> np.ndarray:
            weighted = sum(w[s] * means[s] for s in arrays if w[s] > 0)
            assert isinstance(weighted, np.ndarray)  # total > 0: some stratum has a positive weight
            return weighted

        point = estimate({s: a.mean(axis=0) for s, a in arrays.items() if a.size})
        # Stratified bootstrap: each stratum resampled within itself, n_boot times at once.
        sizes = tuple(len(a) for a in arrays.values())
        if sizes not in draws:
            rng = np.random.default_rng(rng_seed)
            # The drawn indices (what resample_counts draws, in the same order), summed per reader.
            draws[sizes] = {
                s: rng.integers(0, len(a), size=(n_boot, len(a))) for s, a in arrays.items() if a.size and n_boot > 0
            }
        boot_means = {
            s: agreement.resampled_sums(drawn, arrays[s]) / len(arrays[s]) for s, drawn in draws[sizes].items()
        }
        boots = n_boot > 0
        boots_arr = estimate(boot_means) if boots else np.zeros((0, 3))
        names = ("accuracy", "judge_correct_rate", "human_correct_rate")
        for j, name in enumerate(names):
            entry[name] = float(point[j])
            ci = agreement.percentile_interval(boots_arr[:, j]) if boots else None
            entry[f"{name}_ci"] = list(ci) if ci else None
        entry["bias"] = float(point[1] - point[2])
        ci = agreement.percentile_interval(boots_arr[:, 1] - boots_arr[:, 2]) if boots else None
        entry["bias_ci"] = list(ci) if ci else None
        out["readers"][reader] = entry
    out["weights"] = w
    return out


@given(
    st.lists(st.sampled_from(VERDICTS), min_size=4 * 40, max_size=4 * 40),
    st.lists(
        st.tuples(st.sampled_from(("correct", "incorrect", None)), st.booleans(), st.booleans()),
        min_size=40,
        max_size=40,
    ),
    st.integers(0, 30),
    st.integers(0, 30),
    st.sampled_from((0, 1, 7, 40)),
    st.integers(0, 2**32 - 1),
)
@settings(max_examples=150, deadline=None)
def test_stratified_with_shared_resampling_counts_is_the_per_reader_bootstrap(
    readings, labels, n_disputed, n_undisputed, n_boot, seed
):
    """issue 36 item 15: the population table's stratified bootstrap sums every reader that shares
    a resampling in one product; each reader's estimates, intervals, errors and order are the
    per-reader code's, to the bit."""
    human = {
        str(i): agreement.HumanObs(str(i), verdict, None, is_control=control, policy="p" if ours else "q")
        for i, (verdict, control, ours) in enumerate(labels)
    }
    # Four readers read every item; an abstention (error, timeout) leaves a reader with fewer
    # labelled items, so some readers share a resampling and some do not.
    obs = [agreement.ReaderObs(str(k // 4), f"r{k % 4}", verdict) for k, verdict in enumerate(readings)]
    kwargs = dict(policy="p", n_disputed=n_disputed, n_undisputed=n_undisputed, n_boot=n_boot, seed=seed)
    new = agreement.stratified(obs, human, **kwargs)
    old = _old_stratified(obs, human, **kwargs)
    assert json.dumps(new, sort_keys=False) == json.dumps(old, sort_keys=False)


@given(
    st.integers(1, 30),
    st.integers(1, 20),
    st.lists(st.integers(1, 4), max_size=5),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_stacked_resampled_sums_are_each_arrays_own(n, n_boot, widths, seed, binary):
    """issue 36 item 15: one count matrix times every reader's columns gives each reader's sums
    exactly (0/1 columns), and other values go the per-array way."""
    from adjudication.analytics.agreement import resampled_sums, resampled_sums_stacked

    data = np.random.default_rng(seed)
    arrays = [(data.random((n, k)) < 0.5).astype(float) if binary else data.random((n, k)) for k in widths]
    drawn = data.integers(0, n, size=(n_boot, n))
    stacked = resampled_sums_stacked(drawn, arrays)
    assert len(stacked) == len(arrays)
    for a, summed in zip(arrays, stacked, strict=True):
        assert summed.dtype == np.float64
        assert np.array_equal(summed, resampled_sums(drawn, a))


@pytest.mark.django_db
def test_the_report_consensus_without_its_pair_check_and_item_posteriors_is_the_full_fits(labelled):
    """issue 36 item 15: votes read from the database are unique per (response, producer) by the
    readings' constraint, so the report's fit skips that check and leaves out the per-item
    posteriors it never shows; every other number is the full fit's. A duplicate vote handed in
    without the guarantee is still refused, naming it."""
    from adjudication.analytics.selectors import consensus_inputs

    inputs = consensus_inputs(dataset=labelled[0])
    assert inputs.votes_unique
    checked = consensus.ConsensusInputs(votes=inputs.votes, human=inputs.human, strata=inputs.strata)
    full = consensus.consensus(checked, by=None, n_boot=20, seed=3)
    fast = consensus.consensus(inputs, by=None, n_boot=20, seed=3, with_items=False)
    assert full.items and fast.items == []
    assert fast == dataclasses.replace(full, items=[])
    twice = consensus.ConsensusInputs(votes=[*inputs.votes, inputs.votes[0]], human=inputs.human)
    with pytest.raises(ValueError, match="two verdicts"):
        consensus.consensus(twice, n_boot=0)


@pytest.mark.django_db
def test_the_final_labels_are_read_once_per_snapshot_and_each_caller_gets_its_own_dict(labelled):
    """issue 36 item 15: the report's sections each ask for the final labels; inside one
    read_snapshot they are read once, and equal what a fresh read gives; outside a snapshot, or
    in a read-write one, every call reads."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from adjudication.analytics.selectors import human_observations, read_snapshot

    dataset = labelled[0]
    fresh = human_observations(dataset=dataset)
    assert fresh

    def label_reads(queries) -> int:
        return sum('FROM "adjudication_finallabel"' in q["sql"] for q in queries.captured_queries)

    with CaptureQueriesContext(connection) as queries, read_snapshot():
        first = human_observations(dataset=dataset)
        first.clear()  # a caller's own dict
        second = human_observations(dataset=dataset)
    assert label_reads(queries) == 1
    assert second == fresh and list(second) == list(fresh)
    for snapshot in (read_snapshot(read_only=False),):
        with CaptureQueriesContext(connection) as queries, snapshot:
            human_observations(dataset=dataset)
            human_observations(dataset=dataset)
        assert label_reads(queries) == 2
    with CaptureQueriesContext(connection) as queries:
        human_observations(dataset=dataset)
        human_observations(dataset=dataset)
    assert label_reads(queries) == 2


@pytest.mark.django_db
def test_a_streamed_read_left_early_leaves_its_transaction_usable(labelled):
    """issue 36 item 15: the report's readings are streamed on PostgreSQL; a caller that stops
    early (or raises) must not abort the transaction it reads in, as a cancelled statement would,
    and the rows come in chunks of the size asked for, all of them, in the statement's order."""
    from django.db import connection, transaction

    from adjudication.analytics.selectors import _chunks
    from adjudication.models import Reading

    sql = 'SELECT "id" FROM "adjudication_reading" ORDER BY "id"'
    expected = list(Reading.objects.order_by("id").values_list("id", flat=True))
    assert len(expected) > 7
    chunks = list(_chunks(connection.alias, sql, [], chunk_size=7))
    assert [row[0] for chunk in chunks for row in chunk] == expected
    assert all(len(chunk) == 7 for chunk in chunks[:-1]) and 0 < len(chunks[-1]) <= 7
    # Far more rows than one network read brings, so that the statement is still running when the
    # caller stops.
    many = "SELECT g FROM generate_series(1, 2000000) AS g"
    with transaction.atomic():
        left = _chunks(connection.alias, many, [], chunk_size=1000)
        assert [row[0] for row in next(left)] == list(range(1, 1001))
        left.close()
        assert Reading.objects.count() == len(expected)
