"""The statistics detection uses, delegated to :mod:`recitation.metrics.stats` (the
toolkit's one implementation of ROC AUC, TPR at FPR and thresholds at a target FPR).

This module only adapts call shapes and adds what is specific to detection: a *stratified*
bootstrap (members and controls resampled separately, so every resample has both classes)
of AUC and TPR (``metrics.stats.bootstrap_ci`` resamples one sample; a two-class AUC needs
both classes in every resample), the conformal rank of a threshold with an out-of-sample
FPR guarantee, and the Clopper-Pearson interval of a proportion.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

CONFIDENCE = 0.95
log = logging.getLogger(__name__)


def _m() -> Any:
    """``recitation.metrics.stats``, imported when first needed."""
    try:
        from recitation.metrics import stats
    except ImportError as e:
        raise ImportError("detector calibration needs recitation.metrics.stats "
                          "(issue 3), which this checkout does not have yet") from e
    return stats


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    return float(_m().roc_auc(list(labels), list(scores)))


def tpr_at_fpr(labels: Sequence[int], scores: Sequence[float], fpr: float) -> float:
    return float(_m().tpr_at_fpr(list(labels), list(scores), fpr))


def _stratified_bootstrap(labels: Sequence[int], scores: Sequence[float],
                          stat: Callable[[list[int], list[float]], float], n_boot: int,
                          seed: int) -> tuple[float | None, float | None]:
    if n_boot <= 0:
        return None, None
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=float)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_boot):
        idx = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))])
        vals.append(stat(y[idx].tolist(), s[idx].tolist()))
    lo, hi = np.quantile(vals, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(lo), float(hi)


def bootstrap_auc_ci(labels: Sequence[int], scores: Sequence[float], *, n_boot: int = 1000,
                     seed: int = 0) -> tuple[float | None, float | None]:
    """95% percentile interval of the ROC AUC (stratified bootstrap)."""
    return _stratified_bootstrap(labels, scores, roc_auc, n_boot, seed)


def bootstrap_stat_ci(labels: Sequence[int], scores: Sequence[float],
                      stat: Callable[[list[int], list[float]], float], *, n_boot: int = 1000,
                      seed: int = 0) -> tuple[float | None, float | None]:
    """95% percentile interval of any two-class statistic (stratified bootstrap)."""
    return _stratified_bootstrap(labels, scores, stat, n_boot, seed)


def roc_points(labels: Sequence[int], scores: Sequence[float]) -> dict[str, Any]:
    """The ROC curve (FPR, TPR, threshold; "member iff score >= threshold") for plotting."""
    fpr, tpr, thr = _m().roc_points(list(labels), list(scores))
    return {"fpr": fpr.tolist(), "tpr": tpr.tolist(),
            "thresholds": [float(t) if np.isfinite(t) else None for t in thr]}


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
                    confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Exact (Clopper-Pearson) interval of a binomial proportion, from
    ``scipy.stats.binomtest``; None (with a warning) when scipy is missing."""
    try:
        from scipy.stats import binomtest
    except ImportError:
        log.warning("scipy missing: no Clopper-Pearson interval "
                    "(pip install 'recitation[detect]')")
        return None
    ci = binomtest(successes, trials).proportion_ci(confidence_level=confidence,
                                                    method="exact")
    return float(ci.low), float(ci.high)
