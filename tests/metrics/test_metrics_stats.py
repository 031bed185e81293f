"""Statistics against independent references: R's published output, textbook formulas,
scikit-learn and scipy functions other than the one under test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recitation.metrics import stats as S

ss = pytest.importorskip("scipy.stats")
skm = pytest.importorskip("sklearn.metrics")


def _samples(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(60):
        n = int(rng.integers(6, 150))
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        s = np.round(rng.normal(size=n) + 0.7 * y, int(rng.integers(0, 3)))  # with ties
        out.append((y, s))
    return out


def test_roc_auc_matches_sklearn() -> None:
    for y, s in _samples(0):
        assert S.roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)


def test_tpr_at_fpr_matches_sklearn_roc_curve() -> None:
    for y, s in _samples(1):
        fpr, tpr, _ = skm.roc_curve(y, s, drop_intermediate=False)
        for target in (0.0, 0.01, 0.05, 0.1, 0.25, 1.0):
            assert S.tpr_at_fpr(y, s, target) == pytest.approx(tpr[fpr <= target].max(), abs=1e-12)


def test_roc_points_match_sklearn() -> None:
    for y, s in _samples(2):
        fpr, tpr, thr = skm.roc_curve(y, s, drop_intermediate=False)
        f, t, th = S.roc_points(y, s)
        np.testing.assert_allclose(f, fpr)
        np.testing.assert_allclose(t, tpr)
        np.testing.assert_allclose(th[1:], thr[1:])


def test_threshold_at_fpr_uses_negatives_only() -> None:
    rng = np.random.default_rng(3)
    for _ in range(100):
        neg = np.round(rng.normal(size=int(rng.integers(1, 300))), 1)
        for target in (0.0, 0.01, 0.05, 0.2, 0.5):
            thr = S.threshold_at_fpr(neg, target)
            flagged = int((neg > thr).sum())
            assert flagged <= math.floor(target * neg.size + 1e-9)
            # the smallest such threshold among observed scores: one step lower flags too many
            lower = neg[neg < thr]
            if lower.size:
                assert int((neg > lower.max()).sum()) > math.floor(target * neg.size + 1e-9)
    with pytest.raises(ValueError):
        S.threshold_at_fpr([], 0.1)


def test_bootstrap_ci_equals_scipy_percentile() -> None:
    rng = np.random.default_rng(4)
    for seed in range(5):
        x = rng.exponential(size=int(rng.integers(5, 60)))
        ours = S.bootstrap_ci(x, np.mean, n_resamples=1000, seed=seed)
        ref = ss.bootstrap(
            (x,),
            np.mean,
            n_resamples=1000,
            method="percentile",
            rng=np.random.default_rng(seed),
            vectorized=False,
        ).confidence_interval
        assert ours == pytest.approx((ref.low, ref.high), abs=1e-12)


# Student's sleep data (Cushny & Peebles 1905; R's ``sleep``): extra hours of sleep of ten
# patients under two drugs. The figures are R's published ``t.test`` output.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_t_tests_reproduce_r_on_the_sleep_data() -> None:
    # t.test(extra ~ group, data = sleep, paired = TRUE): t = -4.0621, df = 9, p = 0.002833
    r = S.paired_t_test(SLEEP_1, SLEEP_2)
    assert (r.statistic, r.df, r.pvalue) == pytest.approx((-4.0621, 9, 0.002833), abs=5e-5)
    # Welch (R's default): t = -1.8608, df = 17.776, p-value = 0.07939
    r = S.independent_t_test(SLEEP_1, SLEEP_2)
    assert (r.statistic, r.df, r.pvalue) == pytest.approx((-1.8608, 17.776, 0.07939),
                                                          abs=5e-4)
    # var.equal = TRUE: t = -1.8608, df = 18, p-value = 0.07919
    r = S.independent_t_test(SLEEP_1, SLEEP_2, equal_var=True)
    assert (r.statistic, r.df, r.pvalue) == pytest.approx((-1.8608, 18, 0.07919), abs=5e-5)


def test_paired_t_test_is_the_one_sample_test_of_the_differences() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        a = rng.normal(size=int(rng.integers(3, 80)))
        b = a + rng.normal(scale=0.7, size=a.size) + 0.2
        d = a - b
        t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))  # the textbook statistic
        r = S.paired_t_test(a, b)
        assert r.statistic == pytest.approx(t, rel=1e-9) and r.df == d.size - 1
        # two-sided p from the t distribution's survival function
        assert r.pvalue == pytest.approx(2 * ss.t.sf(abs(t), d.size - 1), rel=1e-9)


def _ranks(x: np.ndarray) -> np.ndarray:
    """1..n by sorting (no ties in the data these tests use)."""
    out = np.empty(x.size)
    out[np.argsort(x)] = np.arange(1, x.size + 1)
    return out


def test_spearman_is_the_rank_difference_formula_and_pearson_on_ranks() -> None:
    rng = np.random.default_rng(6)
    for _ in range(30):
        n = int(rng.integers(4, 60))
        a = rng.normal(size=n)
        b = a + rng.normal(scale=1.5, size=n)
        d2 = float(((_ranks(a) - _ranks(b)) ** 2).sum())
        r = S.spearman(a, b)
        assert r.statistic == pytest.approx(1 - 6 * d2 / (n * (n * n - 1)), abs=1e-12)
        assert r.pvalue == pytest.approx(ss.pearsonr(_ranks(a), _ranks(b)).pvalue, rel=1e-6)
        assert r.df == n - 2


def test_spearman_p_value_brackets_t_table_critical_values() -> None:
    # n = 12 (df = 10): t = 2.228 is the two-sided 5% point, t = 3.169 the 1% point.
    # sum d^2 = 122: rho = 1 - 6 * 122 / 1716 = 0.573, t = 2.21 (p just above 5%);
    # sum d^2 = 64: rho = 0.776, t = 3.89 (p below 1%)
    x = np.arange(12.0)
    for y, sum_d2, lo, hi in (([6, 1, 2, 0, 4, 5, 8, 7, 11, 9, 10, 3], 122, 0.05, 0.06),
                              ([4, 1, 2, 6, 0, 5, 3, 7, 9, 11, 10, 8], 64, 0.001, 0.01)):
        assert float(((x - np.asarray(y)) ** 2).sum()) == sum_d2
        assert S.spearman(x, y).statistic == pytest.approx(1 - 6 * sum_d2 / 1716)
        assert lo < S.spearman(x, y).pvalue < hi


def test_clopper_pearson_is_the_beta_quantile_interval() -> None:
    for k, n in ((0, 20), (3, 20), (19, 20), (7, 51)):
        lo = ss.beta.ppf(0.025, k, n - k + 1) if k else 0.0
        hi = ss.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
        assert S.clopper_pearson(k, n) == pytest.approx((lo, hi), abs=1e-9)
    with pytest.raises(ValueError, match="successes"):
        S.clopper_pearson(3, 2)


def test_input_errors() -> None:
    with pytest.raises(ValueError):
        S.roc_auc([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError):
        S.roc_auc([0, 1], [0.1])
    with pytest.raises(ValueError):
        S.tpr_at_fpr([0, 1], [0.1, 0.2], 1.5)
