"""The blind baseline: can a classifier that never queries the model tell the text from its
controls? (Das et al., 2024, "Blind Baselines Beat Membership Inference Attacks for
Foundation Models".)

A bag of words (word 1- and 2-grams, lower-cased, present or absent) feeds a logistic
regression; every passage is scored by a model fitted without it (stratified k-fold,
``k = min(5, smaller group)``, out of fold), and the ROC AUC of those scores (text = the
positive class) says how far the two sets differ in words alone. Its 95% interval is a
stratified bootstrap of the out-of-fold scores (text and controls resampled apart; the
folds' refitting is not resampled, so the interval is somewhat narrow on small sets).

**When it separates them** (the interval's lower end above :data:`SEPARATES_AUC`), a
detector's success would be explained as well by that difference as by memorization: the
verdict does not call the text memorized on the detectors' evidence, and names the words
that tell the sets apart (the largest coefficients of the model fitted on all passages,
with how many passages of each set hold them). Reproduction evidence does not rest on the
controls being alike in this way and is unaffected.

What it does not guarantee: a quiet baseline does not prove the controls alike (a
difference a bag of words misses, in style, era or edition, can still move a detector);
with few passages it cannot separate anything (the interval is wide).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np

from recitation.errors import require
from recitation.metrics import stats as _stats

SEPARATES_AUC = 0.6
"""The blind baseline separates text and controls when its AUC interval lies above this.
On i.i.d. splits its AUC is 0.5 give or take chance (0.46-0.52 on the low-FPR benchmark's
split); 0.6 leaves that chance room at the sample sizes an audit has (its lower end is
below 0.6 when the AUC is near 0.5), and any real split in topic or genre lies far above
it (KJV verses against novels: 1.0)."""

TELLING_WORDS = 6
NGRAMS = (1, 2)
PURPOSE = "the blind baseline (a bag-of-words classifier that never queries the model)"


def blind_baseline(text: list[str], controls: list[str], *, seed: int = 0,
                   n_boot: int = 1000) -> dict[str, Any] | None:
    """The blind baseline of ``text`` against ``controls`` (module docstring), or None when
    a set has fewer than 2 passages. Computed once per process for the same texts and seed
    (an audit's detect runs of several models share their texts)."""
    if min(len(text), len(controls)) < 2:
        return None
    return copy.deepcopy(_blind(tuple(text), tuple(controls), seed, n_boot))


@functools.lru_cache(maxsize=4)
def _blind(text: tuple[str, ...], controls: tuple[str, ...], seed: int,
           n_boot: int) -> dict[str, Any]:
    sk_text = require("sklearn.feature_extraction.text", PURPOSE)
    vec = sk_text.CountVectorizer(lowercase=True, binary=True, ngram_range=NGRAMS)
    x = vec.fit_transform(list(text) + list(controls))
    y = np.array([1] * len(text) + [0] * len(controls))
    prob = out_of_fold(x, y, seed)
    auc = _stats.roc_auc(y, prob)
    lo, hi = _stats.stratified_bootstrap_ci(y.tolist(), prob.tolist(), _stats.roc_auc,
                                            n_boot=n_boot, seed=seed)
    separates = lo is not None and lo > SEPARATES_AUC
    return {"auc": auc, "auc_ci": [lo, hi], "threshold": SEPARATES_AUC,
            "separates": separates, "n_text": len(text), "n_controls": len(controls),
            "folds": _folds(y), "features": int(x.shape[1]),
            "method": "bag of words (1-2-grams, binary), logistic regression, out of fold",
            "words": telling_words(x, y, vec.get_feature_names_out()) if separates else []}


def _folds(y: np.ndarray) -> int:
    return int(min(5, y.sum(), len(y) - y.sum()))


def _classifier(seed: int) -> Any:
    lm = require("sklearn.linear_model", PURPOSE)
    return lm.LogisticRegression(max_iter=1000, solver="liblinear", random_state=seed)


def out_of_fold(x: Any, y: np.ndarray, seed: int) -> np.ndarray:
    """Each passage's probability of being text under a model fitted without it."""
    StratifiedKFold = require("sklearn.model_selection", PURPOSE).StratifiedKFold
    prob = np.zeros(len(y))
    cv = StratifiedKFold(n_splits=_folds(y), shuffle=True, random_state=seed)
    for train, test in cv.split(x, y):
        prob[test] = _classifier(seed).fit(x[train], y[train]).predict_proba(x[test])[:, 1]
    return prob


def telling_words(x: Any, y: np.ndarray, names: Any, k: int = TELLING_WORDS
                  ) -> list[dict[str, Any]]:
    """The ``k`` n-grams with the largest coefficients (either sign) of the model fitted on
    every passage, each with the set it points to and how many passages of each set hold
    it."""
    coef = _classifier(0).fit(x, y).coef_[0]
    in_text = np.asarray(x[y == 1].sum(axis=0)).ravel()
    in_controls = np.asarray(x[y == 0].sum(axis=0)).ravel()
    order = np.argsort(-np.abs(coef), kind="stable")[:k]
    return [{"ngram": str(names[i]), "points_to": "text" if coef[i] > 0 else "controls",
             "coef": round(float(coef[i]), 3), "in_text": int(in_text[i]),
             "in_controls": int(in_controls[i])} for i in order]
