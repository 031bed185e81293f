"""Statistics against scipy and scikit-learn."""

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


def test_t_tests_and_spearman_match_scipy() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(3, 80))
        a = rng.normal(size=n)
        b = a + rng.normal(scale=0.7, size=n) + 0.2
        c = rng.normal(loc=0.3, scale=2.0, size=int(rng.integers(3, 60)))
        r, ref = S.paired_t_test(a, b), ss.ttest_rel(a, b)
        assert (r.statistic, r.pvalue) == pytest.approx(
            (ref.statistic, ref.pvalue), rel=1e-9, abs=1e-12
        )
        for equal_var in (True, False):
            r, ref = (
                S.independent_t_test(a, c, equal_var=equal_var),
                ss.ttest_ind(a, c, equal_var=equal_var),
            )
            assert (r.statistic, r.pvalue) == pytest.approx(
                (ref.statistic, ref.pvalue), rel=1e-9, abs=1e-12
            )
        bt = np.round(b, 1)
        r, ref = S.spearman(a, bt), ss.spearmanr(a, bt)
        assert (r.statistic, r.pvalue) == pytest.approx(
            (ref.statistic, ref.pvalue), rel=1e-9, abs=1e-12
        )


def test_rankdata_and_betainc_match_scipy() -> None:
    from scipy.special import betainc

    rng = np.random.default_rng(6)
    x = np.round(rng.normal(size=200), 1)
    np.testing.assert_array_equal(S.rankdata(x), ss.rankdata(x))
    for a, b, v in rng.uniform([0.1, 0.1, 0.0], [60, 60, 1.0], size=(300, 3)):
        assert S.betainc(a, b, v) == pytest.approx(betainc(a, b, v), abs=1e-12)


def test_input_errors() -> None:
    with pytest.raises(ValueError):
        S.roc_auc([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError):
        S.roc_auc([0, 1], [0.1])
    with pytest.raises(ValueError):
        S.tpr_at_fpr([0, 1], [0.1, 0.2], 1.5)
