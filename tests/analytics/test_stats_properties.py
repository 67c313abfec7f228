"""Every statistic equals the reference library (statsmodels, scikit-learn, scipy, krippendorff)
and, where a closed form exists, our own transcription of the textbook formula, on random inputs."""

from __future__ import annotations

import math
from collections import Counter

import krippendorff
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.proportion import proportion_confint

from adjudication.analytics import stats
from adjudication.analytics.bias import judge_bias
from adjudication.analytics.stats import Undefined

Z = 1.959963984540054
VERDICT = st.sampled_from(["correct", "incorrect"])


def wilson_formula(k: int, n: int, z: float = Z) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def kappa_formula(a: list, b: list) -> float:
    n = len(a)
    cats = set(a) | set(b)
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[c] * cb[c] for c in cats) / (n * n)
    return (po - pe) / (1 - pe)


@st.composite
def k_and_n(draw):
    n = draw(st.integers(1, 5000))
    return draw(st.integers(0, n)), n


@settings(max_examples=300, deadline=None)
@given(k_and_n(), st.sampled_from([0.05, 0.01, 0.1]))
def test_wilson_equals_statsmodels_and_the_formula(kn, alpha):
    k, n = kn
    lo, hi = stats.wilson(k, n, alpha)
    ref = proportion_confint(k, n, alpha=alpha, method="wilson")
    # Equal to statsmodels, except that the edges are the exact 0 and 1 (statsmodels can be one ulp in).
    assert lo == (0.0 if k == 0 else float(ref[0])) and math.isclose(lo, ref[0], abs_tol=1e-15)
    assert hi == (1.0 if k == n else float(ref[1])) and math.isclose(hi, ref[1], abs_tol=1e-15)
    if alpha == 0.05:
        f_lo, f_hi = wilson_formula(k, n)
        assert math.isclose(lo, f_lo, abs_tol=1e-12) and math.isclose(hi, f_hi, abs_tol=1e-12)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_wilson_is_undefined_without_trials():
    assert stats.wilson(0, 0) is None
    assert stats.proportion(0, 0) == {"k": 0, "n": 0, "rate": None, "ci": None}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), min_size=1, max_size=300))
def test_cohen_kappa_equals_scikit_learn_and_the_formula(pairs):
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    got = stats.cohen_kappa(a, b)
    if len(set(a) | set(b)) == 1:
        assert isinstance(got, Undefined)
        return
    ref = cohen_kappa_score(a, b)
    if math.isnan(ref):
        assert isinstance(got, Undefined)
        return
    assert got == ref
    assert math.isclose(got, kappa_formula(a, b), abs_tol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(VERDICT, VERDICT), min_size=1, max_size=400))
def test_confusion_matrix_equals_scikit_learn(pairs):
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    labels = ["correct", "incorrect"]
    assert stats.confusion(a, b, labels) == confusion_matrix(a, b, labels=labels).tolist()


def alpha_nominal_formula(data: np.ndarray) -> float:
    """Krippendorff's α (nominal) from the coincidence matrix (Krippendorff 2011, §3)."""
    values = sorted({v for v in data.flatten() if not np.isnan(v)})
    idx = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for u in range(data.shape[1]):
        col = [v for v in data[:, u] if not np.isnan(v)]
        m = len(col)
        if m < 2:
            continue
        for i, x in enumerate(col):
            for j, y in enumerate(col):
                if i != j:
                    o[idx[x], idx[y]] += 1 / (m - 1)
    n_c = o.sum(axis=0)
    n = n_c.sum()
    d_o = o.sum() - np.trace(o)
    d_e = (n * n - (n_c**2).sum()) / (n - 1)
    return 1 - d_o / d_e


@st.composite
def reliability(draw):
    raters = draw(st.integers(2, 4))
    items = draw(st.integers(2, 25))
    cells = draw(
        st.lists(
            st.one_of(st.none(), st.sampled_from(["x", "y", "z"])), min_size=raters * items, max_size=raters * items
        )
    )
    return {
        f"r{r}": {f"i{i}": cells[r * items + i] for i in range(items) if cells[r * items + i] is not None}
        for r in range(raters)
    }


@settings(max_examples=300, deadline=None)
@given(reliability())
def test_krippendorff_alpha_equals_the_package_and_the_coincidence_formula(ratings):
    got = stats.krippendorff_alpha(ratings, "nominal", ["x", "y", "z"])
    raters = list(ratings)
    items = sorted({i for r in raters for i in ratings[r]})
    code = {"x": 0, "y": 1, "z": 2}
    data = np.array([[code[ratings[r][i]] if i in ratings[r] else np.nan for i in items] for r in raters], dtype=float)
    pairable = data[:, np.sum(~np.isnan(data), axis=0) >= 2] if items else np.zeros((len(raters), 0))
    if pairable.size == 0 or len({v for v in pairable.flatten() if not np.isnan(v)}) < 2:
        assert isinstance(got, Undefined)
        return
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=[0, 1, 2])
    assert math.isclose(got, ref, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(got, alpha_nominal_formula(pairable), rel_tol=1e-9, abs_tol=1e-9)


def test_krippendorff_ordinal_uses_the_declared_order():
    ratings = {"a": {"1": 1, "2": 2, "3": 5, "4": 4}, "b": {"1": 2, "2": 2, "3": 4, "4": 5}}
    data = np.array([[0, 1, 4, 3], [1, 1, 3, 4]], dtype=float)
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3, 4])
    assert stats.krippendorff_alpha(ratings, "ordinal", [1, 2, 3, 4, 5]) == ref


@settings(max_examples=150, deadline=None)
@given(reliability())
def test_pairwise_kappa_and_percent_agreement_on_common_items(ratings):
    for pair in stats.pairwise(ratings):
        r1, r2 = pair["raters"]
        common = sorted(set(ratings[r1]) & set(ratings[r2]))
        assert pair["n"] == len(common)
        a, b = [ratings[r1][i] for i in common], [ratings[r2][i] for i in common]
        assert pair["agreement"]["k"] == sum(x == y for x, y in zip(a, b))
        if common and len(set(a) | set(b)) > 1 and not math.isnan(cohen_kappa_score(a, b)):
            assert pair["cohen_kappa"] == cohen_kappa_score(a, b)
        else:
            assert isinstance(pair["cohen_kappa"], Undefined)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100)), min_size=2, max_size=12, unique_by=lambda t: t[0]))
def test_kendall_tau_equals_scipy(pairs):
    x, y = [float(a) for a, _ in pairs], [float(b) for _, b in pairs]
    got = stats.kendall_tau(x, y)
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert isinstance(got["tau"], Undefined)
    else:
        ref = kendalltau(x, y)
        assert got["tau"] == ref.statistic and got["p_value"] == ref.pvalue


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["correct", "incorrect", "no_answer", "error", "timeout"]),
            st.sampled_from(["correct", "incorrect", None]),
        ),
        min_size=0,
        max_size=300,
    )
)
def test_judge_bias_matches_the_definitions(pairs):
    s = judge_bias(pairs, n_boot=50)
    used = [
        ("incorrect" if p == "no_answer" else p, h) for p, h in pairs if h is not None and p not in ("error", "timeout")
    ]
    n = len(used)
    tp = sum(p == "correct" and h == "correct" for p, h in used)
    fp = sum(p == "correct" and h == "incorrect" for p, h in used)
    fn = sum(p == "incorrect" and h == "correct" for p, h in used)
    tn = n - tp - fp - fn
    assert (s["n"], s["tp"], s["fp"], s["fn"], s["tn"]) == (n, tp, fp, fn, tn)
    assert sum(s["excluded"].values()) == len(pairs) - n
    if not n:
        assert isinstance(s["bias"], Undefined) and s["accuracy_ci"] is None
        return
    assert s["accuracy"] == (tp + tn) / n
    assert s["judge_correct_rate"] == (tp + fp) / n and s["human_correct_rate"] == (tp + fn) / n
    assert math.isclose(s["bias"], (tp + fp) / n - (tp + fn) / n, abs_tol=1e-15)
    assert np.allclose(s["accuracy_ci"], proportion_confint(tp + tn, n, method="wilson"), rtol=0, atol=1e-15)
    if fp + tn:
        assert s["false_accept_rate"] == fp / (fp + tn)
        assert np.allclose(
            s["false_accept_rate_ci"], proportion_confint(fp, fp + tn, method="wilson"), rtol=0, atol=1e-15
        )
    else:
        assert isinstance(s["false_accept_rate"], Undefined)
    if fn + tp:
        assert s["false_reject_rate"] == fn / (fn + tp)
    judge = [p for p, _ in used]
    human = [h for _, h in used]
    if len(set(judge) | set(human)) > 1 and not math.isnan(cohen_kappa_score(judge, human)):
        assert s["cohen_kappa"] == cohen_kappa_score(judge, human, labels=["correct", "incorrect"])
    else:
        assert isinstance(s["cohen_kappa"], Undefined)
    assert s["bias_ci"][0] <= s["bias_ci"][1]


def test_no_answer_can_be_excluded_instead_of_counted_incorrect():
    pairs = [("no_answer", "incorrect"), ("correct", "correct"), ("incorrect", "correct")]
    assert judge_bias(pairs)["n"] == 3
    s = judge_bias(pairs, no_answer="exclude")
    assert s["n"] == 2 and s["excluded"] == {"producer_no_answer": 1}


def test_small_samples_carry_a_warning():
    s = judge_bias([("correct", "correct")] * 20 + [("incorrect", "incorrect")] * 5)
    assert any("n = 25 < 30" in w for w in s["warnings"])
    assert any("false-accept rate is not informative" in w for w in s["warnings"])
    big = judge_bias([("correct", "correct")] * 40 + [("incorrect", "incorrect")] * 40)
    assert big["warnings"] == [] and big["cohen_kappa"] == 1.0 and big["lean"] == "none detected"


def test_a_lenient_judge_leans_toward_correct():
    s = judge_bias([("correct", "correct")] * 50 + [("correct", "incorrect")] * 30 + [("incorrect", "incorrect")] * 20)
    assert s["bias"] == 0.3 and s["lean"] == "toward correct" and s["bias_p_value"] < 1e-6
    assert s["bias_ci"][0] > 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=60), st.integers(0, 2**32 - 1))
def test_bootstrap_is_seeded_and_equals_a_manual_percentile_bootstrap(values, seed):
    arr = np.array(values)
    got = stats.bootstrap(lambda idx: float(arr[idx].mean()), len(arr), n_boot=200, seed=seed)
    again = stats.bootstrap(lambda idx: float(arr[idx].mean()), len(arr), n_boot=200, seed=seed)
    assert got == again
    rng = np.random.default_rng(seed)
    manual = [arr[rng.integers(0, len(arr), size=len(arr))].mean() for _ in range(200)]
    assert got["ci"] == [float(v) for v in np.quantile(manual, [0.025, 0.975])]


def test_jsonable_turns_undefined_into_null_with_a_reason():
    out = stats.jsonable({"kappa": Undefined("no items"), "x": np.float64(0.5), "y": float("nan"), "t": (1, 2)})
    assert out == {"kappa": None, "kappa_reason": "no items", "x": 0.5, "y": None, "t": [1, 2]}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=50),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_counted_resamples_give_the_means_that_indexing_the_draws_gives(rows, n_boot, seed):
    import numpy as np

    from adjudication.analytics.agreement import resample_counts

    a = np.array(rows, dtype=float).reshape(-1, 3)
    want = a[np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))].mean(axis=1)
    counts = resample_counts(np.random.default_rng(seed), len(a), n_boot)
    assert np.array_equal((counts @ a) / len(a), want)  # the same floats, not merely close
