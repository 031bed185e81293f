"""Calibrated verdicts from control samples, labelled metrics, and a distribution-shift guard.

Scores are first *oriented* so that higher always means "more likely a member"
(``score`` if ``higher_means_member`` else ``-score``).

* **FPR curve** — for every threshold t among the control scores, the share of controls with
  an oriented score ``> t`` (in sample, descriptive) and the out-of-sample FPR bound a
  verdict at t can state, ``(controls above t + 1) / (n + 1)``.
* **Threshold at a target FPR alpha** — the conformal order statistic over n + 1: the
  ``ceil((n + 1)(1 - alpha))``-th smallest control score; a sample is called a member when
  its oriented score is strictly above it (a tie is not flagged). For a new non-member
  exchangeable with the n controls, P(flagged) <= ``floor((n + 1) alpha) / (n + 1)`` <=
  alpha: that bound is stated with every verdict, with the 95% Clopper-Pearson interval of
  this threshold's FPR. When ``(n + 1) alpha < 1`` no threshold among the controls reaches
  alpha: nothing is flagged and the verdict says "a 1% FPR is not reachable with 20
  controls". The former in-sample threshold (at most ``floor(alpha n)`` controls above it;
  out of sample 2/21 = 9.5% at 5% with 20 controls) stays available as
  ``method="empirical"``.
* **With labels** (audited samples known to be members): ROC AUC, TPR at the conformal 1% and
  5% thresholds (and, named ``_in_sample``, the optimistic ROC-curve values), bootstrap
  intervals, and the ROC curve points.
* **Shift guard** — the blind-baseline pitfall of membership inference (Das et al., 2024;
  Duan et al., 2024): if members and controls differ on simple features, any detector can
  "succeed" without seeing the model. We report the AUC of length alone and of date-like
  tokens alone with permutation p-values, warn when one is far from 0.5 and significant, and
  put the length-only AUC next to every detector's. The words are the blind baseline's
  (:mod:`recitation.detect.blind`: a bag-of-words classifier, out of fold, with its interval).
"""

from __future__ import annotations

import copy
import functools
import logging
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from recitation.corpus.tokenize import words
from recitation.metrics import stats as _stats

log = logging.getLogger(__name__)

SHIFT_WARN_AUC = 0.75  # warn when a feature-only AUC is >= this or <= 1 - this
_DATE = re.compile(
    r"\b(1[5-9]\d\d|20\d\d)\b|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|\b(January|February|March|"
    r"April|May|June|July|August|September|October|November|December)\b", re.IGNORECASE)


def oriented(score: float, higher_means_member: bool) -> float:
    return score if higher_means_member else -score


def fpr_curve(control_scores: Sequence[float]) -> list[tuple[float, float, float]]:
    """(threshold, FPR on the controls, out-of-sample FPR bound) for every distinct oriented
    control score, thresholds descending.

    The middle value is descriptive (share of these controls strictly above the threshold,
    in sample); the last is what a verdict at that threshold can state for a new non-member:
    ``(controls above + 1) / (n + 1)`` (exchangeability; ties are never flagged)."""
    n = len(control_scores)
    pts = sorted(set(control_scores), reverse=True)
    out = []
    for t in pts:
        above = sum(c > t for c in control_scores)
        out.append((t, above / n, (above + 1) / (n + 1)))
    return out


CalibrationMethod = Literal["conformal", "empirical"]
CALIBRATION_METHODS: tuple[str, ...] = ("conformal", "empirical")


@dataclass(frozen=True)
class Calibration:
    """A threshold on oriented scores (member iff score > threshold) and what it means.

    ``fpr_bound`` is the out-of-sample guarantee: for a new non-member exchangeable with the
    controls, P(flagged) <= fpr_bound (averaged over the draw of the controls).
    ``fpr_ci`` is the 95% Clopper-Pearson interval for this threshold's own FPR given these
    controls (``n - rank`` controls above the rank-th smallest, out of ``n``; exact for
    continuous scores, since that FPR is Beta(n + 1 - rank, rank)). ``achieved_fpr`` is the
    share of the controls above the threshold (in sample: the number the empirical method
    used to state, which understates the FPR)."""

    threshold: float  # oriented; +inf when the target is not reachable (nothing flagged)
    target_fpr: float
    achieved_fpr: float  # in sample, on the controls that set the threshold
    n_controls: int
    method: str = "conformal"
    rank: int | None = None  # threshold = rank-th smallest control score; None: unreachable
    fpr_bound: float = 0.0
    fpr_ci: tuple[float, float] | None = None
    note: str | None = None  # e.g. "a 1% FPR is not reachable with 20 controls ..."

    @property
    def reachable(self) -> bool:
        return self.rank is not None

    @property
    def resolution(self) -> float:
        """The step between attainable out-of-sample FPRs, 1 / (n + 1)."""
        return 1.0 / (self.n_controls + 1)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "target_fpr": self.target_fpr,
                "threshold_oriented": self.threshold if self.reachable else None,
                "reachable": self.reachable, "rank": self.rank,
                "fpr_bound": self.fpr_bound,
                "fpr_ci": list(self.fpr_ci) if self.fpr_ci else None,
                "achieved_fpr_in_sample": self.achieved_fpr, "n_controls": self.n_controls,
                "fpr_resolution": self.resolution, "controls_needed":
                _stats.controls_needed(self.target_fpr), "note": self.note}


def not_reachable_note(target_fpr: float, n: int) -> str:
    return (f"a {target_fpr * 100:g}% FPR is not reachable with {n} controls (needs at least "
            f"{_stats.controls_needed(target_fpr)}); no sample is flagged")


def threshold_rank(n: int, target_fpr: float, method: CalibrationMethod = "conformal"
                   ) -> int | None:
    """Rank (k-th smallest control score) of the threshold; None when not reachable.

    ``conformal`` (default): k = ceil((n + 1)(1 - target)), out-of-sample FPR <= target.
    ``empirical`` (the former default): at most floor(target * n) controls above the
    threshold, an in-sample rate; out of sample its FPR is (floor(target n) + 1) / (n + 1),
    e.g. 2/21 = 9.5% at a 5% target with 20 controls."""
    if method == "conformal":
        return _stats.conformal_rank(n, target_fpr)
    if method == "empirical":
        if not 0.0 <= target_fpr < 1.0:
            raise ValueError(f"target FPR must be in [0, 1), got {target_fpr}")
        return n - min(math.floor(target_fpr * n + 1e-9), n - 1)
    raise ValueError(f"unknown calibration method '{method}': choose "
                     f"{' or '.join(CALIBRATION_METHODS)}")


def threshold_from_rank(sorted_scores: Sequence[float], rank: int | None) -> float:
    return math.inf if rank is None else float(sorted_scores[rank - 1])


def calibrate(control_scores: Sequence[float], target_fpr: float,
              method: CalibrationMethod = "conformal") -> Calibration:
    """The threshold at ``target_fpr`` from oriented control scores (see
    :func:`threshold_rank`), its out-of-sample FPR bound and Clopper-Pearson interval."""
    if not control_scores:
        raise ValueError("calibration needs at least one control score")
    n = len(control_scores)
    rank = threshold_rank(n, target_fpr, method)
    t = threshold_from_rank(sorted(control_scores), rank)
    achieved = sum(c > t for c in control_scores) / n
    if rank is None:
        return Calibration(t, target_fpr, achieved, n, method, None, 0.0, (0.0, 0.0),
                           not_reachable_note(target_fpr, n))
    return Calibration(t, target_fpr, achieved, n, method, rank, (n + 1 - rank) / (n + 1),
                       _stats.clopper_pearson(n - rank, n))


def verdicts(scores: dict[str, float], cal: Calibration) -> list[dict[str, Any]]:
    """One verdict per sample (oriented scores), each stating the FPR it was made at: the
    out-of-sample bound (``fpr``), its Clopper-Pearson interval, and any note."""
    return [{"sample_id": sid, "score": s, "member": s > cal.threshold,
             "threshold": cal.threshold if cal.reachable else None, "fpr": cal.fpr_bound,
             "fpr_ci": list(cal.fpr_ci) if cal.fpr_ci else None,
             "target_fpr": cal.target_fpr, "method": cal.method, "note": cal.note}
            for sid, s in scores.items()]


def tpr_at_calibrated_fpr(members: Sequence[float], controls: Sequence[float],
                          target_fpr: float) -> float | None:
    """Share of members flagged by the conformal threshold at ``target_fpr`` (the TPR a user
    gets with an out-of-sample FPR <= target); None when the target is not reachable."""
    rank = _stats.conformal_rank(len(controls), target_fpr)
    if rank is None:
        return None
    t = threshold_from_rank(sorted(controls), rank)
    return sum(m > t for m in members) / len(members)


def labelled_metrics(members: Sequence[float], controls: Sequence[float], *,
                     n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """AUC, TPR at 1%/5% FPR (with bootstrap intervals) and the ROC points.

    ``tpr_at_Xpct_fpr`` is the TPR at the conformal threshold (out-of-sample FPR <= X%,
    stated as ``fpr_bound_Xpct``; None when X% is not reachable with these controls).
    ``tpr_at_Xpct_fpr_in_sample`` is the ROC-curve value (largest TPR whose FPR on these
    same controls is <= X%): the usual MIA-benchmark number, optimistic because the
    operating point is chosen on the controls it is measured on."""
    labels = [1] * len(members) + [0] * len(controls)
    scores = list(members) + list(controls)
    n = len(controls)
    out: dict[str, Any] = {"n_members": len(members), "n_controls": n}
    out["auc"] = _stats.roc_auc(labels, scores)
    out["auc_ci"] = _stats.stratified_bootstrap_ci(labels, scores, _stats.roc_auc,
                                                   n_boot=n_boot, seed=seed)
    for fpr in (0.01, 0.05):
        key = f"tpr_at_{round(fpr * 100)}pct_fpr"
        rank = _stats.conformal_rank(n, fpr)
        out[key] = tpr_at_calibrated_fpr(members, controls, fpr)
        out[f"fpr_bound_{round(fpr * 100)}pct"] = (
            (n + 1 - rank) / (n + 1) if rank is not None else None)
        out[key + "_ci"] = (None, None) if rank is None else _stats.stratified_bootstrap_ci(
            labels, scores, functools.partial(_tpr_split, fpr=fpr), n_boot=n_boot, seed=seed)
        out[key + "_note"] = None if rank is not None else not_reachable_note(fpr, n)
        out[key + "_in_sample"] = _stats.tpr_at_fpr(labels, scores, fpr)
    roc_fpr, roc_tpr, roc_thr = _stats.roc_points(labels, scores)
    out["roc"] = {"fpr": roc_fpr.tolist(), "tpr": roc_tpr.tolist(),  # member iff score >= thr
                  "thresholds": [float(t) if np.isfinite(t) else None for t in roc_thr]}
    return out


def _tpr_split(labels: list[int], scores: list[float], fpr: float) -> float:
    pos = [s for y, s in zip(labels, scores, strict=True) if y == 1]
    neg = [s for y, s in zip(labels, scores, strict=True) if y == 0]
    tpr = tpr_at_calibrated_fpr(pos, neg, fpr)
    return 0.0 if tpr is None else tpr


def date_rate(text: str) -> float:
    return len(_DATE.findall(text)) / max(1, len(words(text)))


def _permutation_p(auc: float, stat: Callable[[list[int]], float | None], y: Sequence[int],
                   n: int, seed: int) -> float:
    """Two-sided permutation p-value of ``|auc - 0.5|`` under shuffled labels."""
    rng = random.Random(seed)
    labels = list(y)
    hits = 0
    for _ in range(n):
        rng.shuffle(labels)
        null = stat(labels)
        hits += null is not None and abs(null - 0.5) >= abs(auc - 0.5) - 1e-12
    return (hits + 1) / (n + 1)


def shift_guard(members: Sequence[str], controls: Sequence[str], *, seed: int = 0,
                permutations: int = 200) -> dict[str, Any]:
    """Feature-only AUCs (members positive), their permutation p-values, and warnings for
    shifts that are both strong (AUC >= 0.75 or <= 0.25) and significant (p < 0.05).

    With 20 + 20 samples, feature AUCs of 0.7-0.8 arise by chance; the p-value (labels
    shuffled ``permutations`` times) tells them apart.
    A property of the texts alone: computed once per process for the same texts and seed
    (an audit's detect runs of several models share their texts)."""
    out = copy.deepcopy(_shift_guard(tuple(members), tuple(controls), seed, permutations))
    for w in out["warnings"]:
        log.warning(w)
    return out


@functools.lru_cache(maxsize=4)
def _shift_guard(members: tuple[str, ...], controls: tuple[str, ...], seed: int,
                 permutations: int) -> dict[str, Any]:
    y = [1] * len(members) + [0] * len(controls)
    texts = list(members) + list(controls)
    lengths = [float(len(t.split())) for t in texts]
    dates = [date_rate(t) for t in texts]
    stats: dict[str, Callable[[list[int]], float | None]] = {
        "length_words": lambda lab: _stats.roc_auc(lab, lengths),
        "date_tokens": lambda lab: _stats.roc_auc(lab, dates),
    }
    feats: dict[str, float | None] = {}
    pvals: dict[str, float | None] = {}
    for name, fn in stats.items():
        auc = fn(y)
        feats[name] = auc
        pvals[name] = None if auc is None else _permutation_p(auc, fn, y, permutations, seed)
    warnings = [
        f"members and controls differ on {name} alone (AUC {auc:.2f}, permutation p = "
        f"{pvals[name]:.3f}): detector AUCs near this value may reflect the distribution "
        "shift, not memorization"
        for name, auc in feats.items()
        if auc is not None and (auc >= SHIFT_WARN_AUC or auc <= 1 - SHIFT_WARN_AUC)
        and (pvals[name] or 1.0) < 0.05]
    return {"feature_auc": feats, "feature_p": pvals, "warnings": warnings}


def length_baseline_auc(members: Sequence[str], controls: Sequence[str]) -> float:
    """AUC of text length alone (longer = member), reported next to every detector."""
    labels = [1] * len(members) + [0] * len(controls)
    return float(_stats.roc_auc(labels, [float(len(t.split())) for t in
                                         list(members) + list(controls)]))
