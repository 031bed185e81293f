"""LLM dataset inference (Maini et al., NeurIPS 2024, "LLM Dataset Inference: Did you train
on my dataset?"), as the authors' ``linear_di.py`` computes it, on membership features that
are already scored (every registered detector's score of each passage).

Given a **suspect** set (the text) and a **validation** set drawn from the same distribution
that the model cannot have seen (unpublished chapters, text written after its cutoff):

1. per feature and per set, the ``int(n * 0.05 / 2)`` highest and lowest values are clipped
   to the innermost of them (``remove_outliers(..., outliers="clip")``, their default);
2. every feature is normalized with the suspect set's mean and standard deviation (their
   ``normalize="train"``);
3. both sets are shuffled (seeded) and their first halves train a linear model (one logit;
   suspect = 0, validation = 1, as their labels) with binary cross-entropy, full batch, Adam
   (lr 0.01, betas 0.9 / 0.999), 1,000 steps, the weights initialised as ``torch.nn.Linear``
   (uniform in +-1/sqrt(features));
4. the model's outputs on the held-out halves are compared by a one-sided t-test (the suspect
   set's outputs lower than the validation set's); the p-value is the test's result.

The assumption it rests on: the two sets are drawn from one distribution. When a blind
baseline (text length, a bag of words) already separates them, a small p may reflect that
shift, not training, and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CLIP_FRACTION = 0.05
STEPS = 1000
LEARNING_RATE = 0.01


@dataclass(frozen=True)
class InferenceResult:
    """The test's p-value, its t statistic, the held-out sizes and each feature's weight."""

    p_value: float
    t: float
    n_suspect: int
    n_validation: int
    weights: dict[str, float]
    welch: bool

    def to_dict(self) -> dict[str, object]:
        return {"p_value": self.p_value, "t": self.t, "n_suspect": self.n_suspect,
                "n_validation": self.n_validation, "weights": self.weights,
                "test": "Welch" if self.welch else "Student"}


def clip_outliers(values: np.ndarray, fraction: float = CLIP_FRACTION) -> np.ndarray:
    """The ``k = int(n * fraction / 2)`` lowest values set to the k-th lowest, the k highest to
    the k-th highest (the authors' ``remove_outliers`` with ``outliers="clip"``)."""
    k = int(len(values) * fraction / 2)
    if k == 0:
        return values.copy()
    order = np.argsort(values, kind="stable")
    out = values.copy()
    out[order[:k]] = values[order[k - 1]]
    out[order[-k:]] = values[order[-k]]
    return out


def initial_weights(d: int, rng: np.random.Generator) -> np.ndarray:
    """As ``torch.nn.Linear(d, 1)`` draws them: weights and bias uniform in +-1/sqrt(d)."""
    bound = 1.0 / math.sqrt(d)
    return rng.uniform(-bound, bound, d + 1)


def adam_logistic(x: np.ndarray, y: np.ndarray, w0: np.ndarray) -> np.ndarray:
    """Weights (bias last) of a one-logit linear model fitted from ``w0`` by full-batch Adam
    (torch's defaults) on the mean binary cross-entropy, :data:`STEPS` steps."""
    from scipy.special import expit

    n, d = x.shape
    w = w0.astype(float).copy()
    xb = np.hstack([x, np.ones((n, 1))])
    m, v = np.zeros(d + 1), np.zeros(d + 1)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for step in range(1, STEPS + 1):
        p = expit(xb @ w)
        grad = xb.T @ (p - y) / n
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad ** 2
        w -= LEARNING_RATE * (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + eps)
    return w


def dataset_inference(suspect: np.ndarray, validation: np.ndarray, names: Sequence[str], *,
                      seed: int = 0, welch: bool = True) -> InferenceResult:
    """The test of the module docstring on two feature matrices (rows: passages; columns:
    ``names``, oriented or not: the model learns the signs)."""
    if suspect.shape[1] != validation.shape[1] or suspect.shape[1] != len(names):
        raise ValueError("the feature matrices and names must agree")
    if min(len(suspect), len(validation)) < 4:
        raise ValueError("dataset inference needs at least 4 passages in each set (2 to "
                         "train, 2 to test)")
    from scipy.stats import ttest_ind

    s = np.column_stack([clip_outliers(c) for c in suspect.T]).astype(float)
    val = np.column_stack([clip_outliers(c) for c in validation.T]).astype(float)
    mean, std = s.mean(axis=0), s.std(axis=0)
    std[std == 0] = 1.0  # a constant feature carries nothing; keep it finite
    s, val = (s - mean) / std, (val - mean) / std
    rng = np.random.default_rng(seed)
    s, val = s[rng.permutation(len(s))], val[rng.permutation(len(val))]
    ks, kv = len(s) // 2, len(val) // 2
    x = np.vstack([s[:ks], val[:kv]])
    y = np.concatenate([np.zeros(ks), np.ones(kv)])
    w = adam_logistic(x, y, initial_weights(x.shape[1], rng))
    out_s = np.hstack([s[ks:], np.ones((len(s) - ks, 1))]) @ w
    out_v = np.hstack([val[kv:], np.ones((len(val) - kv, 1))]) @ w
    t, p = ttest_ind(out_s, out_v, equal_var=not welch, alternative="less")
    return InferenceResult(float(p), float(t), len(out_s), len(out_v),
                           {n: float(x) for n, x in zip(names, w[:-1], strict=True)}, welch)


__all__ = ["InferenceResult", "adam_logistic", "clip_outliers", "dataset_inference",
           "initial_weights"]
