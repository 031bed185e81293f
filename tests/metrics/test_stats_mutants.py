"""metrics/stats.py: the breaks a mutation run found (scripts/mutation.sh), each against an
independent reference: brute force over exact fractions, binomial and hypergeometric sums
written from their definitions, scipy and scikit-learn functions other than the one under
test. No test depends on timing."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from recitation.metrics import stats as S

ss = pytest.importorskip("scipy.stats")
skm = pytest.importorskip("sklearn.metrics")


def test_labels_and_scores_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"^labels \(3,\) and scores \(2,\) must be 1-d"):
        S.roc_auc([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"must be 1-d and equal length$"):
        S.roc_auc([[0, 1], [1, 0]], [[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(ValueError, match="^labels must be 0 or 1$"):
        S.roc_auc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="^ROC statistics need both positive and negative"):
        S.roc_auc([0, 0, 0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="both positive and negative"):
        S.roc_auc([1, 1], [0.1, 0.2])
    # labels given as floats or booleans are 0/1 all the same
    assert S.roc_auc([0.0, 1.0, 1.0], [0.1, 0.3, 0.2]) == 1.0
    assert S.roc_auc([False, True], [0.2, 0.1]) == 0.0


def test_roc_auc_counts_a_tie_one_half() -> None:
    # one positive, two negatives, the positive tied with one: (1 + 1/2) / 2 by hand
    assert S.roc_auc([1, 0, 0], [0.5, 0.5, 0.1]) == 0.75
    assert S.roc_auc([0, 1, 1, 0], [0.3, 0.2, 0.9, 0.1]) == pytest.approx(
        skm.roc_auc_score([0, 1, 1, 0], [0.3, 0.2, 0.9, 0.1]))


def test_roc_points_start_at_the_origin_with_an_infinite_threshold() -> None:
    f, t, th = S.roc_points([0, 1, 1, 0, 1], [0.1, 0.4, 0.4, 0.3, 0.9])
    assert th[0] == np.inf and f[0] == 0.0 and t[0] == 0.0
    # by hand: thresholds 0.9, 0.4 (two positives tied), 0.3, 0.1
    assert list(th[1:]) == [0.9, 0.4, 0.3, 0.1]
    assert list(t) == [0.0, 1 / 3, 1.0, 1.0, 1.0]
    assert list(f) == [0.0, 0.0, 0.0, 0.5, 1.0]


def test_tpr_at_fpr_at_an_exact_operating_point_and_its_bounds() -> None:
    # three negatives: FPR 1/3 is a point exactly; the TPR there counts
    y, s = [1, 0, 1, 0, 0, 1], [0.9, 0.8, 0.7, 0.3, 0.2, 0.1]
    fpr, tpr, _ = skm.roc_curve(y, s, drop_intermediate=False)
    for target in (0.0, 1 / 3, 2 / 3, 1.0, 0.5):
        assert S.tpr_at_fpr(y, s, target) == tpr[fpr <= target].max()
    assert S.tpr_at_fpr(y, s, 1 / 3) == 2 / 3
    with pytest.raises(ValueError, match=r"^fpr must be in \[0, 1\], got -0.1$"):
        S.tpr_at_fpr(y, s, -0.1)
    with pytest.raises(ValueError, match=r"fpr must be in \[0, 1\], got 1.01"):
        S.tpr_at_fpr(y, s, 1.01)


def test_threshold_at_fpr_floor_is_exact_where_floats_are_not() -> None:
    neg = np.arange(100, dtype=float)[::-1]  # 99 .. 0
    # 0.29 * 100 = 28.999999999999996: k = 29 negatives may exceed the threshold
    assert S.threshold_at_fpr(neg, 0.29) == 99 - 29
    assert int((neg > S.threshold_at_fpr(neg, 0.29)).sum()) == 29
    assert S.threshold_at_fpr(neg, 0.0) == 99.0
    assert S.threshold_at_fpr([5.0], 0.9) == 5.0  # k = 0 of one
    assert S.threshold_at_fpr([1.0, 2.0], 0.99) == 1.0  # k = 1: the smallest
    with pytest.raises(ValueError, match=r"^fpr must be in \[0, 1\), got 1.0$"):
        S.threshold_at_fpr(neg, 1.0)
    with pytest.raises(ValueError, match=r"fpr must be in \[0, 1\), got -0.5"):
        S.threshold_at_fpr(neg, -0.5)
    with pytest.raises(ValueError, match="^threshold_at_fpr needs at least one negative score$"):
        S.threshold_at_fpr([], 0.1)


def test_bootstrap_ci_options_against_scipy() -> None:
    x = np.random.default_rng(8).exponential(size=25)
    for n, conf, seed in ((200, 0.9, 3), (500, 0.99, 4)):
        ref = ss.bootstrap((x,), np.median, n_resamples=n, confidence_level=conf,
                           method="percentile", rng=np.random.default_rng(seed),
                           vectorized=False).confidence_interval
        got = S.bootstrap_ci(x, np.median, n_resamples=n, confidence=conf, seed=seed)
        assert got == pytest.approx((ref.low, ref.high), abs=1e-12)
    # the default statistic is the mean, at 95%, 1000 resamples, seed 0
    ref = ss.bootstrap((x,), np.mean, n_resamples=1000, method="percentile",
                       rng=np.random.default_rng(0),
                       vectorized=False).confidence_interval
    assert S.bootstrap_ci(x) == pytest.approx((ref.low, ref.high), abs=1e-12)
    with pytest.raises(ValueError, match="^bootstrap_ci needs a non-empty 1-d sample$"):
        S.bootstrap_ci([])
    with pytest.raises(ValueError, match="non-empty 1-d"):
        S.bootstrap_ci([[1.0, 2.0]])


def _diff_of_means(labels: list[int], scores: list[float]) -> float:
    y, s = np.asarray(labels), np.asarray(scores)
    return float(s[y == 1].mean() - s[y == 0].mean())


def test_stratified_bootstrap_is_scipys_two_sample_percentile_interval() -> None:
    """Positives and negatives resampled separately: for a difference of means, the interval
    scipy's bootstrap gives over two independent samples (different draws: within 0.03)."""
    rng = np.random.default_rng(9)
    pos, neg = rng.normal(1.0, 1.0, 40), rng.normal(0.0, 0.5, 60)
    labels = [1] * 40 + [0] * 60
    got = S.stratified_bootstrap_ci(labels, list(pos) + list(neg), _diff_of_means, n_boot=4000,
                                    seed=1)
    ref = ss.bootstrap((pos, neg), lambda a, b: a.mean() - b.mean(), n_resamples=4000,
                       method="percentile", rng=np.random.default_rng(2),
                       vectorized=False).confidence_interval
    assert got == pytest.approx((ref.low, ref.high), abs=0.03)
    assert got[0] is not None and got[1] is not None and got[1] - got[0] > 0.3


def test_stratified_bootstrap_keeps_both_classes_and_says_none_without_resamples() -> None:
    seen: list[tuple[int, int]] = []

    def count(labels: list[int], scores: list[float]) -> float:
        seen.append((labels.count(1), labels.count(0)))
        return float(sum(scores))

    S.stratified_bootstrap_ci([1, 0, 0, 1, 0], [1.0, 2.0, 3.0, 4.0, 5.0], count, n_boot=7)
    assert seen == [(2, 3)] * 7
    assert S.stratified_bootstrap_ci([1, 0], [1.0, 0.0], count, n_boot=0) == (None, None)
    assert S.stratified_bootstrap_ci([1, 0], [1.0, 0.0], count, n_boot=-1) == (None, None)
    assert S.stratified_bootstrap_ci([1, 0], [1.0, 0.0], count, n_boot=5) == (1.0, 1.0)
    with pytest.raises(ValueError, match="^a stratified bootstrap needs both positive and"):
        S.stratified_bootstrap_ci([1, 1], [1.0, 0.0], count, n_boot=5)
    with pytest.raises(ValueError, match="both positive and negative labels$"):
        S.stratified_bootstrap_ci([0, 0], [1.0, 0.0], count, n_boot=5)


def _rank_by_definition(n: int, alpha: float) -> int | None:
    """The smallest k in 1..n with (n + 1 - k) / (n + 1) <= alpha, in exact fractions."""
    a = Fraction(str(alpha))
    return next((k for k in range(1, n + 1) if Fraction(n + 1 - k, n + 1) <= a), None)


def test_conformal_rank_and_controls_needed_by_brute_force() -> None:
    for alpha in (0.01, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.9):
        for n in range(1, 130):
            assert S.conformal_rank(n, alpha) == _rank_by_definition(n, alpha), (n, alpha)
        fewest = next(n for n in range(1, 1000) if _rank_by_definition(n, alpha) is not None)
        assert S.controls_needed(alpha) == fewest, alpha
    with pytest.raises(ValueError, match="^a conformal threshold needs at least one control"):
        S.conformal_rank(0, 0.1)
    for alpha in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match=rf"^alpha must be in \(0, 1\), got {alpha}$"):
            S.conformal_rank(10, alpha)


def test_clopper_pearson_at_other_levels_and_its_refusals() -> None:
    for k, n, conf in ((0, 10, 0.9), (4, 10, 0.99), (10, 10, 0.5), (1, 1, 0.95)):
        half = (1 - conf) / 2
        lo = ss.beta.ppf(half, k, n - k + 1) if k else 0.0
        hi = ss.beta.ppf(1 - half, k + 1, n - k) if k < n else 1.0
        assert S.clopper_pearson(k, n, conf) == pytest.approx((lo, hi), abs=1e-9)
    for k, n in ((0, 0), (-1, 5), (6, 5)):
        with pytest.raises(ValueError, match=rf"^need 0 <= successes <= trials and trials >= 1, "
                           rf"got {k} of {n}$"):
            S.clopper_pearson(k, n)


def test_the_t_tests_and_spearman_refuse_what_they_cannot_test() -> None:
    with pytest.raises(ValueError, match="^paired_t_test needs two samples of equal length"):
        S.paired_t_test([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="equal length >= 2$"):
        S.paired_t_test([1.0], [2.0])
    r = S.paired_t_test([1.0, 2.0], [0.0, 0.5])  # two pairs are enough: df 1
    assert r.df == 1
    with pytest.raises(ValueError, match="^independent_t_test needs at least two values"):
        S.independent_t_test([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="two values per sample$"):
        S.independent_t_test([1.0, 2.0], [1.0])
    assert S.independent_t_test([1.0, 2.0], [3.0, 5.0]).df == pytest.approx(
        ss.ttest_ind([1.0, 2.0], [3.0, 5.0], equal_var=False).df)
    with pytest.raises(ValueError, match="^spearman needs two 1-d samples of equal length >= 3$"):
        S.spearman([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="spearman needs"):
        S.spearman([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="spearman needs"):
        S.spearman([[1.0, 2.0, 3.0]], [[3.0, 1.0, 2.0]])
    assert S.spearman([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]).statistic == pytest.approx(0.5)


def test_a_test_result_is_floats() -> None:
    r = S.spearman(np.arange(5), np.array([1, 0, 2, 4, 3]))
    assert all(type(v) is float for v in (r.statistic, r.pvalue, r.df))
    r = S.paired_t_test([1, 2, 3], [0, 2, 5])
    assert all(type(v) is float for v in (r.statistic, r.pvalue, r.df))


def _hypergeom_upper(a: int, n_a: int, b: int, n_b: int) -> float:
    """P(X >= a), X the successes of group a when the a + b successes are spread at random
    over the n_a + n_b trials (Fisher's one-sided exact test, by its definition)."""
    k, n = a + b, n_a + n_b
    return sum(math.comb(n_a, x) * math.comb(n_b, k - x)
               for x in range(a, min(n_a, k) + 1)) / math.comb(n, k)


def _binom_upper(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def test_fisher_greater_is_the_hypergeometric_upper_tail() -> None:
    for a, n_a, b, n_b in ((3, 5, 0, 10), (0, 4, 2, 6), (5, 5, 5, 5), (2, 12, 7, 30),
                           (9, 30, 1, 40)):
        assert S.fisher_greater(a, n_a, b, n_b) == pytest.approx(
            _hypergeom_upper(a, n_a, b, n_b), rel=1e-9)
    assert S.fisher_greater(1, 1, 0, 1) == pytest.approx(0.5)  # by hand: 1 of C(2, 1)
    assert S.fisher_greater(1, 0, 0, 3) is None and S.fisher_greater(1, 3, 0, 0) is None
    assert S.fisher_greater(0, 1, 0, 1) == 1.0


def test_binom_greater_is_the_binomial_upper_tail_with_p_kept_in_range() -> None:
    for k, n, p in ((0, 5, 0.3), (3, 10, 0.1), (10, 10, 0.5), (4, 20, 0.05)):
        assert S.binom_greater(k, n, p) == pytest.approx(_binom_upper(k, n, p), rel=1e-9)
    assert S.binom_greater(1, 10, 0.0) == pytest.approx(_binom_upper(1, 10, 1e-12), rel=1e-6)
    assert S.binom_greater(1, 10, 0.0) > 0
    assert S.binom_greater(3, 10, 1.5) == 1.0
    assert S.binom_greater(10, 10, 1.0) == 1.0


def test_a_missing_scipy_is_reported_with_what_needed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test asks for scipy.stats naming itself, so the install hint says what needed it
    (recitation.errors.require)."""
    asked: list[str] = []

    def fake_require(module: str, purpose: str) -> object:
        assert module == "scipy.stats"
        asked.append(purpose)
        return ss

    monkeypatch.setattr(S, "require", fake_require)
    S.roc_auc([0, 1], [0.1, 0.2])
    S.paired_t_test([1.0, 2.0, 4.0], [0.0, 2.5, 3.0])
    S.independent_t_test([1.0, 2.0], [3.0, 5.0])
    S.spearman([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
    S.fisher_greater(1, 2, 0, 2)
    S.binom_greater(1, 2, 0.5)
    S.clopper_pearson.cache_clear()  # cached: a run before this one may have asked already
    S.clopper_pearson(3, 17, 0.8)
    assert asked == ["ROC AUC", "a paired t-test", "a t-test", "Spearman's correlation",
                     "Fisher's exact test", "the binomial test", "the Clopper-Pearson interval"]


def test_yes_no_scores_and_outcomes_are_numbers() -> None:
    """Booleans (a detector that only flags; a passage reproduced or not) are 0/1 numbers:
    numpy refuses to negate or subtract booleans, so the inputs are made floats first."""
    y = [0, 1, 1, 0, 1, 0]
    flags = [False, True, False, False, True, True]
    fpr, tpr, _ = skm.roc_curve(y, flags, drop_intermediate=False)
    f, t, _ = S.roc_points(y, flags)
    assert list(f) == list(fpr) and list(t) == list(tpr)
    assert S.tpr_at_fpr(y, flags, 1 / 3) == pytest.approx(tpr[fpr <= 1 / 3].max())
    a, b = [True, False, True, True], [False, False, True, False]
    want = ss.ttest_1samp([1.0, 0.0, 0.0, 1.0], 0.0)
    r = S.paired_t_test(a, b)
    assert (r.statistic, r.pvalue) == pytest.approx((want.statistic, want.pvalue))


def test_bootstrap_gives_its_statistic_float64_as_typed() -> None:
    seen: list[np.dtype[np.generic]] = []

    def stat(a: np.ndarray) -> float:
        seen.append(a.dtype)
        return float(a.mean())

    S.bootstrap_ci([1, 2, 3], stat, n_resamples=3)
    assert seen == [np.dtype(np.float64)] * 3


def test_stratified_bootstrap_defaults_levels_and_seed() -> None:
    calls: list[list[float]] = []

    def index(labels: list[int], scores: list[float]) -> float:
        calls.append(scores)
        return float(len(calls) - 1)  # the resamples' statistics are 0, 1, ..., n - 1

    lo, hi = S.stratified_bootstrap_ci([1, 0, 1], [1, 2, 3], index)
    assert len(calls) == 1000  # the default: 1000 resamples
    # numpy's default (linear) percentile of 0 .. 999 at 2.5% and 97.5%: 999 p
    assert (lo, hi) == pytest.approx((999 * 0.025, 999 * 0.975))
    assert all(type(x) is float for x in calls[0])  # the scores reach it as floats
    assert S.stratified_bootstrap_ci([1, 0], [1.0, 0.0], index, n_boot=1) == (1000.0, 1000.0)

    def total(labels: list[int], scores: list[float]) -> float:
        return float(sum(scores))

    y, s = [1, 0, 1, 0, 1, 0, 1], [0.3, 0.1, 0.9, 0.4, 0.5, 0.8, 0.2]
    default = S.stratified_bootstrap_ci(y, s, total)
    assert default == S.stratified_bootstrap_ci(y, s, total, n_boot=1000, seed=0)
    assert S.stratified_bootstrap_ci(y, s, total, seed=4) == S.stratified_bootstrap_ci(
        y, s, total, seed=4)
    assert S.stratified_bootstrap_ci(y, s, total, seed=4) != default


def test_threshold_and_tpr_at_the_edges_of_float_noise() -> None:
    # fpr a hair under 1: floor(fpr * n + 1e-9) = n, kept to the last (smallest) negative
    assert S.threshold_at_fpr([5.0], 1 - 1e-12) == 5.0
    assert S.threshold_at_fpr([5.0, 7.0, 6.0], 1 - 1e-12) == 5.0
    # a target 1e-12 under an operating point (float noise) still counts the point
    y, s = [1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]  # points at FPR 0, 0.5, 1
    assert S.tpr_at_fpr(y, s, 0.5 - 1e-12) == 1.0
    assert S.tpr_at_fpr(y, s, 0.5 - 1e-9) == 0.5
