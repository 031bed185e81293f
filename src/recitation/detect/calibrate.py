"""Calibrated verdicts from control samples, labelled metrics, and a distribution-shift guard.

Scores are first *oriented* so that higher always means "more likely a member"
(``score`` if ``higher_means_member`` else ``-score``).

* **FPR curve** — for every threshold t among the control scores, the share of controls with
  an oriented score ``> t`` (controls are known non-members, so that share is the FPR).
* **Threshold at a target FPR** — from the controls only (``metrics.stats``); a sample is
  called a member when its oriented score is strictly above it. The FPR the threshold
  achieves on the controls is stated with every verdict, together with the smallest FPR the
  control set can resolve (1 / number of controls).
* **With labels** (audited samples known to be members): ROC AUC, TPR at 1% and 5% FPR, their
  bootstrap intervals, and the ROC curve points.
* **Shift guard** — the blind-baseline pitfall of membership inference (Das et al., 2024;
  Duan et al., 2024): if members and controls differ on simple features, any detector can
  "succeed" without seeing the model. We report the AUC of length alone, of date-like tokens
  alone and of a cross-validated bag-of-words classifier with permutation p-values, warn
  when one is far from 0.5 and significant, and put the length-only AUC next to every
  detector's.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from recitation.detect import _stats

log = logging.getLogger(__name__)

SHIFT_WARN_AUC = 0.75  # warn when a feature-only AUC is >= this or <= 1 - this
_DATE = re.compile(
    r"\b(1[5-9]\d\d|20\d\d)\b|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|\b(January|February|March|"
    r"April|May|June|July|August|September|October|November|December)\b", re.IGNORECASE)
_WORD = re.compile(r"\w+")


def oriented(score: float, higher_means_member: bool) -> float:
    return score if higher_means_member else -score


def fpr_curve(control_scores: Sequence[float]) -> list[tuple[float, float]]:
    """(threshold, FPR) for every distinct oriented control score, thresholds descending;
    FPR = share of controls strictly above the threshold."""
    n = len(control_scores)
    pts = sorted(set(control_scores), reverse=True)
    return [(t, sum(c > t for c in control_scores) / n) for t in pts]


@dataclass(frozen=True)
class Calibration:
    threshold: float  # oriented: member iff oriented score > threshold
    target_fpr: float
    achieved_fpr: float  # on the controls
    n_controls: int

    @property
    def resolution(self) -> float:
        return 1.0 / self.n_controls


def calibrate(control_scores: Sequence[float], target_fpr: float) -> Calibration:
    """The threshold at ``target_fpr`` from oriented control scores."""
    if not control_scores:
        raise ValueError("calibration needs at least one control score")
    t = _stats.threshold_at_fpr(list(control_scores), target_fpr)
    achieved = sum(c > t for c in control_scores) / len(control_scores)
    return Calibration(float(t), target_fpr, achieved, len(control_scores))


def verdicts(scores: dict[str, float], cal: Calibration) -> list[dict[str, Any]]:
    """One verdict per sample (oriented scores), with the FPR it was made at."""
    return [{"sample_id": sid, "score": s, "member": s > cal.threshold,
             "threshold": cal.threshold, "fpr": cal.achieved_fpr,
             "target_fpr": cal.target_fpr} for sid, s in scores.items()]


def labelled_metrics(members: Sequence[float], controls: Sequence[float], *,
                     n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """AUC, TPR at 1%/5% FPR (with bootstrap intervals) and the ROC points."""
    labels = [1] * len(members) + [0] * len(controls)
    scores = list(members) + list(controls)
    out: dict[str, Any] = {"n_members": len(members), "n_controls": len(controls)}
    out["auc"] = _stats.roc_auc(labels, scores)
    out["auc_ci"] = _stats.bootstrap_auc_ci(labels, scores, n_boot=n_boot, seed=seed)
    for fpr in (0.01, 0.05):
        key = f"tpr_at_{round(fpr * 100)}pct_fpr"
        out[key] = _stats.tpr_at_fpr(labels, scores, fpr)
        out[key + "_ci"] = _stats.bootstrap_tpr_ci(labels, scores, fpr, n_boot=n_boot,
                                                   seed=seed)
    out["roc"] = _stats.roc_points(labels, scores)
    return out


def date_rate(text: str) -> float:
    words = _WORD.findall(text)
    return len(_DATE.findall(text)) / max(1, len(words))


def _bow_auc_fn(texts: Sequence[str], seed: int) -> Callable[[list[int]], float | None]:
    """labels -> cross-validated AUC of a bag-of-words logistic regression (a blind
    baseline); the binary word matrix is built once (it does not depend on the labels)."""
    try:
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold
    except ImportError:
        log.warning("scikit-learn missing: vocabulary shift check skipped "
                    "(pip install 'recitation[detect]')")
        return lambda labels: None
    x = CountVectorizer(lowercase=True, binary=True).fit_transform(list(texts))

    def auc(labels: list[int]) -> float | None:
        y = np.asarray(labels)
        folds = min(5, int(y.sum()), int(len(y) - y.sum()))
        if folds < 2:
            return None
        prob = np.zeros(len(y))
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        for train, test in cv.split(x, y):
            clf = LogisticRegression(max_iter=1000, solver="liblinear").fit(x[train], y[train])
            prob[test] = clf.predict_proba(x[test])[:, 1]
        return _stats.roc_auc(labels, prob.tolist())

    return auc


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
    shuffled ``permutations`` times, at most 100 for the bag-of-words model) tells them apart."""
    y = [1] * len(members) + [0] * len(controls)
    texts = list(members) + list(controls)
    lengths = [float(len(t.split())) for t in texts]
    dates = [date_rate(t) for t in texts]
    stats: dict[str, tuple[Callable[[list[int]], float | None], int]] = {
        "length_words": (lambda lab: _stats.roc_auc(lab, lengths), permutations),
        "date_tokens": (lambda lab: _stats.roc_auc(lab, dates), permutations),
        "vocabulary_bow_cv": (_bow_auc_fn(texts, seed), min(permutations, 100)),
    }
    feats: dict[str, float | None] = {}
    pvals: dict[str, float | None] = {}
    for name, (fn, n_perm) in stats.items():
        auc = fn(y)
        feats[name] = auc
        pvals[name] = None if auc is None else _permutation_p(auc, fn, y, n_perm, seed)
    warnings = [
        f"members and controls differ on {name} alone (AUC {auc:.2f}, permutation p = "
        f"{pvals[name]:.3f}): detector AUCs near this value may reflect the distribution "
        "shift, not memorization"
        for name, auc in feats.items()
        if auc is not None and (auc >= SHIFT_WARN_AUC or auc <= 1 - SHIFT_WARN_AUC)
        and (pvals[name] or 1.0) < 0.05]
    for w in warnings:
        log.warning(w)
    return {"feature_auc": feats, "feature_p": pvals, "warnings": warnings}


def length_baseline_auc(members: Sequence[str], controls: Sequence[str]) -> float:
    """AUC of text length alone (longer = member), reported next to every detector."""
    labels = [1] * len(members) + [0] * len(controls)
    return float(_stats.roc_auc(labels, [float(len(t.split())) for t in
                                         list(members) + list(controls)]))
