"""The statistics a benchmark claim needs (issue 49), from stored scores alone: the conformal
threshold ``detect`` uses, a true-positive rate's interval that includes the threshold's own
variance, and paired comparisons of two detectors on the same members, corrected together.

* :func:`conformal_threshold` — the ``k``-th smallest of ``n`` calibration non-member
  scores, ``k = ceil((n + 1)(1 - alpha))`` (:func:`recitation.metrics.stats.conformal_rank`):
  a fresh non-member scores strictly above it with probability at most ``alpha``. None when
  ``(n + 1) alpha < 1`` (0.1% needs at least 999 calibration non-members).
* :func:`tpr_interval` — a percentile bootstrap that resamples the members *and* the
  calibration non-members, recomputing the threshold each time: an interval that holds the
  threshold fixed is too narrow where the ROC curve is steep.
* :func:`mcnemar_exact` — two detectors' flags on the same members: the exact (binomial)
  McNemar test on the discordant pairs, two-sided.
* :func:`holm` — Holm's step-down adjustment over every pair compared (family-wise error).

Used by ``recitation bench claims`` (:mod:`recitation.bench.claims_analysis`); the earlier
``recitation bench groundtruth`` tables keep :func:`recitation.metrics.stats.threshold_at_fpr`
(docs/groundtruth-results.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from recitation.errors import require
from recitation.metrics.stats import conformal_rank


def conformal_threshold(calibration: Sequence[float], alpha: float) -> float | None:
    """The conformal threshold at FPR ``alpha`` (flag: score strictly above it), or None
    when the calibration non-members are too few to reach ``alpha``."""
    k = conformal_rank(len(calibration), alpha)
    return None if k is None else float(np.sort(np.asarray(calibration, dtype=float))[k - 1])


def bootstrap_flagged(members: Sequence[float], calibration: Sequence[float], alpha: float,
                      *, n_boot: int = 2000, seed: int = 0) -> np.ndarray | None:
    """Members flagged in each of ``n_boot`` resamples: members and calibration non-members
    resampled apart, the conformal threshold recomputed from each calibration resample.
    None when ``alpha`` is not reachable with these calibration non-members."""
    pos = np.asarray(members, dtype=float)
    neg = np.asarray(calibration, dtype=float)
    k = conformal_rank(neg.size, alpha)
    if k is None or not pos.size:
        return None
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot, dtype=np.int64)
    for lo in range(0, n_boot, CHUNK):  # a chunk's resamples held at once (memory)
        m = min(CHUNK, n_boot - lo)
        resampled = neg[rng.integers(0, neg.size, (m, neg.size))]
        thresholds = np.partition(resampled, k - 1, axis=1)[:, k - 1]
        draws = pos[rng.integers(0, pos.size, (m, pos.size))]
        out[lo:lo + m] = (draws > thresholds[:, None]).sum(axis=1)
    return out


CHUNK = 250


def tpr_interval(members: Sequence[float], calibration: Sequence[float], alpha: float, *,
                 n_boot: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the TPR at the conformal threshold, members and
    calibration non-members resampled apart, the threshold recomputed in each resample.
    None when ``alpha`` is not reachable with these calibration non-members."""
    flagged = bootstrap_flagged(members, calibration, alpha, n_boot=n_boot, seed=seed)
    if flagged is None:
        return None
    lo, hi = np.quantile(flagged / len(members), [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def pooled_interval(flagged: Sequence[np.ndarray], sizes: Sequence[int], *, seed: int = 0,
                    n_boot: int = 2000, confidence: float = 0.95) -> tuple[float, float]:
    """Interval of the TPR pooled over organisms (seeds): each resample draws the organisms
    with replacement and, for each, one of its own bootstrap resamples
    (:func:`bootstrap_flagged`), so the interval holds the spread between organisms, the
    members' sampling and the threshold's own variance."""
    rng = np.random.default_rng(seed)
    s = len(flagged)
    picks = rng.integers(0, s, (n_boot, s))
    tp = np.zeros(n_boot)
    n = np.zeros(n_boot)
    for j in range(s):
        for org in range(s):
            rows = picks[:, j] == org
            tp[rows] += flagged[org][rng.integers(0, flagged[org].size, int(rows.sum()))]
            n[rows] += sizes[org]
    lo, hi = np.quantile(tp / n, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


SUPPORT_COUNT = 5
"""An FPR ``alpha`` is *measured* when the calibration non-members leave at least this many
above the conformal threshold (``floor((n + 1) alpha)``: the threshold's own FPR then varies
by about +-1/sqrt(5) of ``alpha``, not by orders of magnitude as with the largest score) and
the test non-members expect at least this many false positives (``alpha * n_test``)."""


def supported(alpha: float, n_calibration: int, n_test: int) -> bool:
    """Whether these sizes measure FPR ``alpha`` (:data:`SUPPORT_COUNT`)."""
    above = math.floor((n_calibration + 1) * alpha + 1e-9)
    return above >= SUPPORT_COUNT and alpha * n_test >= SUPPORT_COUNT - 1e-9


def above_chance(tp: int, n: int, fp: int, n_test: int) -> float:
    """One-sided Fisher exact p that members are flagged more often than test non-members
    at the same threshold (``scipy.stats.fisher_exact``)."""
    fisher = require("scipy.stats", "the test against chance").fisher_exact
    return float(fisher([[tp, n - tp], [fp, n_test - fp]], alternative="greater").pvalue)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Two-sided exact McNemar p-value of detectors ``a`` and ``b`` flagging the same items
    (1.0 when they never disagree)."""
    if len(a) != len(b):
        raise ValueError(f"paired flags differ in length: {len(a)} and {len(b)}")
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    if only_a + only_b == 0:
        return 1.0
    binomtest = require("scipy.stats", "the paired test of two detectors").binomtest
    return float(binomtest(only_a, only_a + only_b, 0.5).pvalue)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the input order: reject where
    the adjusted p is at most the family-wise level."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


__all__ = ["above_chance", "bootstrap_flagged", "conformal_threshold", "holm", "mcnemar_exact",
           "pooled_interval", "supported", "tpr_interval"]
