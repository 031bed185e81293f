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

Not wired into ``recitation bench groundtruth`` yet: the benchmark's tables still use the
threshold of :func:`recitation.metrics.stats.threshold_at_fpr` (docs/groundtruth-results.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recitation.errors import require
from recitation.metrics.stats import conformal_rank


def conformal_threshold(calibration: Sequence[float], alpha: float) -> float | None:
    """The conformal threshold at FPR ``alpha`` (flag: score strictly above it), or None
    when the calibration non-members are too few to reach ``alpha``."""
    k = conformal_rank(len(calibration), alpha)
    return None if k is None else float(np.sort(np.asarray(calibration, dtype=float))[k - 1])


def tpr_interval(members: Sequence[float], calibration: Sequence[float], alpha: float, *,
                 n_boot: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the TPR at the conformal threshold, members and
    calibration non-members resampled apart, the threshold recomputed in each resample.
    None when ``alpha`` is not reachable with these calibration non-members."""
    pos = np.asarray(members, dtype=float)
    neg = np.asarray(calibration, dtype=float)
    k = conformal_rank(neg.size, alpha)
    if k is None or not pos.size:
        return None
    rng = np.random.default_rng(seed)
    thresholds = np.sort(rng.choice(neg, (n_boot, neg.size)), axis=1)[:, k - 1]
    draws = rng.choice(pos, (n_boot, pos.size))
    tpr = (draws > thresholds[:, None]).mean(axis=1)
    lo, hi = np.quantile(tpr, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


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


__all__ = ["conformal_threshold", "holm", "mcnemar_exact", "tpr_interval"]
