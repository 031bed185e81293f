"""Statistics used across the toolkit: ROC summaries, bootstrap intervals, conformal ranks,
and tests from ``scipy.stats`` (the ``detect`` extra installs scipy).

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
  :func:`stratified_bootstrap_ci` resamples positives and negatives separately, so every
  resample of a two-class statistic (AUC, TPR) has both classes;
* p-values are two-sided: ``scipy.stats.ttest_rel`` / ``ttest_ind`` / ``spearmanr``, with
  Welch's test as the default of :func:`independent_t_test` (scipy's default is Student's).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from recitation.errors import require

CONFIDENCE = 0.95


@dataclass(frozen=True)
class TestResult:
    """A test statistic, its two-sided p-value and degrees of freedom."""

    statistic: float
    pvalue: float
    df: float


def _scipy_stats(purpose: str) -> Any:
    return require("scipy.stats", purpose)


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


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve (probability a positive outscores a negative)."""
    y, s = _labels_scores(labels, scores)
    r = _scipy_stats("ROC AUC").rankdata(s)
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
    confidence: float = CONFIDENCE,
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


def stratified_bootstrap_ci(
    labels: Sequence[int],
    scores: Sequence[float],
    stat: Callable[[list[int], list[float]], float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """95% percentile interval of a two-class statistic, positives and negatives resampled
    separately; ``(None, None)`` when ``n_boot`` is 0."""
    if n_boot <= 0:
        return None, None
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=float)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if not pos.size or not neg.size:
        raise ValueError("a stratified bootstrap needs both positive and negative labels")
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_boot):
        idx = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        vals.append(stat(y[idx].tolist(), s[idx].tolist()))
    lo, hi = np.quantile(vals, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(lo), float(hi)


def conformal_rank(n: int, alpha: float) -> int | None:
    """The rank ``k = ceil((n + 1)(1 - alpha))`` of the conformal threshold among ``n``
    control scores (``k``-th smallest; a new sample is flagged when strictly above it), or
    None when ``(n + 1) * alpha < 1``: no control score then gives an out-of-sample FPR of
    at most ``alpha``.

    For exchangeable controls and a fresh non-member, P(fresh > k-th smallest) <=
    (n + 1 - k) / (n + 1) <= alpha, ties included (a tie is never flagged)."""
    if n < 1:
        raise ValueError("a conformal threshold needs at least one control score")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    above = math.floor((n + 1) * alpha + 1e-9)  # = n + 1 - k, computed without 1 - alpha
    return None if above < 1 else n + 1 - above


def controls_needed(alpha: float) -> int:
    """The fewest controls for which :func:`conformal_rank` exists at ``alpha``."""
    return max(1, math.ceil(1.0 / alpha - 1e-9) - 1)


@functools.lru_cache(maxsize=4096)
def clopper_pearson(successes: int, trials: int,
                    confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion
    (``scipy.stats.binomtest(...).proportion_ci(method="exact")``)."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got "
                         f"{successes} of {trials}")
    binomtest = _scipy_stats("the Clopper-Pearson interval").binomtest
    ci = binomtest(successes, trials).proportion_ci(confidence_level=confidence,
                                                    method="exact")
    return float(ci.low), float(ci.high)


def _result(res: Any) -> TestResult:
    return TestResult(float(res.statistic), float(res.pvalue), float(res.df))


def paired_t_test(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Paired t-test of mean(a - b) = 0 (``scipy.stats.ttest_rel``)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size < 2:
        raise ValueError("paired_t_test needs two samples of equal length >= 2")
    return _result(_scipy_stats("a paired t-test").ttest_rel(x, y))


def independent_t_test(a: ArrayLike, b: ArrayLike, *, equal_var: bool = False) -> TestResult:
    """Two-sample t-test, Welch's by default (``equal_var=True``: Student's), from
    ``scipy.stats.ttest_ind`` (whose own default is Student's)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        raise ValueError("independent_t_test needs at least two values per sample")
    return _result(_scipy_stats("a t-test").ttest_ind(x, y, equal_var=equal_var))


def spearman(x: ArrayLike, y: ArrayLike) -> TestResult:
    """Spearman rank correlation with the t-approximation p-value (``scipy.stats.spearmanr``;
    ``df`` = n - 2)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 3:
        raise ValueError("spearman needs two 1-d samples of equal length >= 3")
    res = _scipy_stats("Spearman's correlation").spearmanr(a, b)
    return TestResult(float(res.statistic), float(res.pvalue), float(a.size - 2))


def fisher_greater(a: int, n_a: int, b: int, n_b: int) -> float | None:
    """One-sided p that group a's rate (``a`` of ``n_a``) exceeds group b's (``b`` of
    ``n_b``): ``scipy.stats.fisher_exact``, alternative "greater"; None without both
    groups."""
    if n_a < 1 or n_b < 1:
        return None
    st = _scipy_stats("Fisher's exact test")
    return float(st.fisher_exact([[a, n_a - a], [b, n_b - b]], alternative="greater").pvalue)


def binom_greater(k: int, n: int, p: float) -> float:
    """One-sided p of ``k`` or more successes in ``n`` trials at rate ``p``
    (``scipy.stats.binomtest``, alternative "greater"; ``p`` kept inside (0, 1])."""
    st = _scipy_stats("the binomial test")
    return float(st.binomtest(k, n, min(max(p, 1e-12), 1.0), alternative="greater").pvalue)
