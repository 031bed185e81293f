"""Statistics used across the toolkit, in numpy only (scipy is not a runtime dependency).

Conventions (they change results, so they are fixed here):

* labels are 1 for members / positives, 0 for non-members; a higher score means "more
  likely a member";
* :func:`roc_auc` is the Mann-Whitney probability with ties counted 1/2 (equal to
  ``sklearn.metrics.roc_auc_score``);
* :func:`tpr_at_fpr` is the largest TPR among ROC operating points whose FPR is at most
  the target (points as ``sklearn.metrics.roc_curve(..., drop_intermediate=False)``);
* :func:`threshold_at_fpr` uses negatives only and the rule "positive iff score >
  threshold", so at most ``floor(fpr * n)`` negatives exceed it;
* :func:`bootstrap_ci` draws ``rng.integers(0, n, (n_resamples, n))`` from
  ``numpy.random.default_rng(seed)`` and takes percentiles: the same draws and interval as
  ``scipy.stats.bootstrap(..., method="percentile", rng=default_rng(seed))`` for one sample;
* p-values are two-sided, from Student's t via a regularized incomplete beta function
  (agrees with scipy to about 1e-12).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True)
class TestResult:
    """A test statistic, its two-sided p-value and degrees of freedom."""

    statistic: float
    pvalue: float
    df: float


def _labels_scores(
    labels: ArrayLike, scores: ArrayLike
) -> tuple[NDArray[np.int_], NDArray[np.float64]]:
    y = np.asarray(labels).astype(int)
    s = np.asarray(scores, dtype=float)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError(f"labels {y.shape} and scores {s.shape} must be 1-d and equal length")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    if y.sum() == 0 or y.sum() == y.size:
        raise ValueError("ROC statistics need both positive and negative labels")
    return y, s


def rankdata(values: ArrayLike) -> NDArray[np.float64]:
    """Ranks 1..n with ties given their average rank (``scipy.stats.rankdata``)."""
    a = np.asarray(values, dtype=float)
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    ranks = np.empty(a.size, dtype=float)
    # boundaries of runs of equal values
    starts = np.flatnonzero(np.r_[True, sorted_a[1:] != sorted_a[:-1]])
    ends = np.r_[starts[1:], a.size]
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve (probability a positive outscores a negative)."""
    y, s = _labels_scores(labels, scores)
    r = rankdata(s)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    u = r[y == 1].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def roc_points(
    labels: ArrayLike, scores: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(fpr, tpr, thresholds) for "positive iff score >= threshold", one point per distinct
    score, starting at (0, 0) with threshold +inf."""
    y, s = _labels_scores(labels, scores)
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    last_of_run = np.r_[np.flatnonzero(s_sorted[1:] != s_sorted[:-1]), s.size - 1]
    tps = np.cumsum(y_sorted)[last_of_run]
    fps = (last_of_run + 1) - tps
    tpr = np.r_[0.0, tps / y.sum()]
    fpr = np.r_[0.0, fps / (y.size - y.sum())]
    thr = np.r_[np.inf, s_sorted[last_of_run]]
    return fpr, tpr, thr


def tpr_at_fpr(labels: ArrayLike, scores: ArrayLike, fpr: float) -> float:
    """Largest TPR among ROC points with FPR <= ``fpr``."""
    if not 0.0 <= fpr <= 1.0:
        raise ValueError(f"fpr must be in [0, 1], got {fpr}")
    f, t, _ = roc_points(labels, scores)
    return float(t[f <= fpr + 1e-12].max())


def threshold_at_fpr(negatives: ArrayLike, fpr: float) -> float:
    """Threshold from negative (non-member) scores alone for a target false-positive rate.

    Returns the ``(k+1)``-th largest negative score with ``k = floor(fpr * n)``; flagging
    ``score > threshold`` then flags at most ``k`` of the negatives (ties at the threshold
    are not flagged). ``fpr=0`` gives the largest negative score.
    """
    neg = np.sort(np.asarray(negatives, dtype=float))[::-1]
    if neg.size == 0:
        raise ValueError("threshold_at_fpr needs at least one negative score")
    if not 0.0 <= fpr < 1.0:
        raise ValueError(f"fpr must be in [0, 1), got {fpr}")
    k = int(math.floor(fpr * neg.size + 1e-9))
    return float(neg[min(k, neg.size - 1)])


def bootstrap_ci(
    data: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], float] = np.mean,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over a 1-d sample."""
    x = np.asarray(data, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("bootstrap_ci needs a non-empty 1-d sample")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, (n_resamples, x.size))
    values = np.array([statistic(x[row]) for row in idx], dtype=float)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(values, [alpha * 100, (1 - alpha) * 100])
    return float(lo), float(hi)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln_front) * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def paired_t_test(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Paired t-test of mean(a - b) = 0 (``scipy.stats.ttest_rel``)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = d.size
    if n < 2:
        raise ValueError("paired_t_test needs at least two pairs")
    sd, mean = float(d.std(ddof=1)), float(d.mean())
    if sd > 0:
        t = mean / (sd / math.sqrt(n))
    else:  # all differences equal: infinite t, or undefined when they are all 0
        t = math.copysign(math.inf, mean) if mean else math.nan
    return TestResult(t, t_two_sided_p(t, n - 1), float(n - 1))


def independent_t_test(a: ArrayLike, b: ArrayLike, *, equal_var: bool = False) -> TestResult:
    """Two-sample t-test (Welch by default; ``equal_var=True`` is Student's).

    Equals ``scipy.stats.ttest_ind(a, b, equal_var=equal_var)``; note scipy's own default
    is ``equal_var=True``.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = x.size, y.size
    if n1 < 2 or n2 < 2:
        raise ValueError("independent_t_test needs at least two values per sample")
    v1, v2 = x.var(ddof=1), y.var(ddof=1)
    if equal_var:
        df = float(n1 + n2 - 2)
        sp = ((n1 - 1) * v1 + (n2 - 1) * v2) / df
        se = math.sqrt(sp * (1 / n1 + 1 / n2))
    else:
        q1, q2 = v1 / n1, v2 / n2
        se = math.sqrt(q1 + q2)
        df = (q1 + q2) ** 2 / (q1**2 / (n1 - 1) + q2**2 / (n2 - 1))
    t = float((x.mean() - y.mean()) / se)
    return TestResult(t, t_two_sided_p(t, df), df)


def spearman(x: ArrayLike, y: ArrayLike) -> TestResult:
    """Spearman rank correlation with the t-approximation p-value (``scipy.stats.spearmanr``)."""
    rx, ry = rankdata(x), rankdata(y)
    if rx.size != ry.size or rx.size < 3:
        raise ValueError("spearman needs two samples of equal length >= 3")
    rho = float(np.corrcoef(rx, ry)[0, 1])
    df = rx.size - 2
    if abs(rho) >= 1.0:
        return TestResult(rho, 0.0, float(df))
    t = rho * math.sqrt(df / ((1.0 + rho) * (1.0 - rho)))
    return TestResult(rho, t_two_sided_p(t, df), float(df))


def describe_ci(values: Sequence[float]) -> str:
    """``"mean [lo, hi]"`` with a seeded 95% bootstrap interval, for reports."""
    lo, hi = bootstrap_ci(values)
    return f"{float(np.mean(values)):.3f} [{lo:.3f}, {hi:.3f}]"
