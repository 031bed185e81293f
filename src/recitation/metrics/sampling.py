"""A share of a whole book from a weighted sample of its passages, with an exact-style
confidence interval (the design: audit/sampling.py).

Each sampled passage ``i`` stands for ``w_i`` passages of the book; the share of the book
with a property (e.g. reproduced verbatim) is estimated as ``sum w_i y_i / sum w_i``. Its
interval is the Clopper-Pearson interval at the effective sample size, the method of Korn
and Graubard (1998, "Confidence intervals for proportions with small expected number of
positive counts estimated from survey data", Survey Methodology 24(2)): with Kish's
``n_eff = (sum w)^2 / sum w^2`` (the design effect of unequal weights) and
``x_eff = share * n_eff``,

    low  = Beta(alpha/2;     x_eff,     n_eff - x_eff + 1)   (0 when x_eff = 0)
    high = Beta(1 - alpha/2; x_eff + 1, n_eff - x_eff)       (1 when x_eff = n_eff)

With equal weights this is the exact Clopper-Pearson interval of ``x`` in ``n``. It ignores
what stratification gains and the finite-population correction (a sample is a sizeable part
of a short book), both of which only narrow the true interval: the stated interval is
conservative. It stays valid at 0 positives, where a normal approximation gives [0, 0].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy.stats import beta


@dataclass(frozen=True)
class Share:
    share: float
    low: float
    high: float
    positives: int  # sampled passages with the property
    n: int  # sampled passages
    n_eff: float
    confidence: float

    def to_dict(self) -> dict[str, float | int]:
        return {"share": self.share, "low": self.low, "high": self.high,
                "positives": self.positives, "n": self.n, "n_eff": self.n_eff,
                "confidence": self.confidence}


def weighted_share(flags: Sequence[bool], weights: Sequence[float],
                   confidence: float = 0.95) -> Share:
    """The weighted share of ``flags`` and its Korn-Graubard interval (module docstring)."""
    if len(flags) != len(weights) or not flags:
        raise ValueError("a share needs one weight per sampled passage, and at least one")
    if any(w <= 0 for w in weights):
        raise ValueError("sampling weights must be positive")
    total = float(sum(weights))
    share = sum(w for f, w in zip(flags, weights, strict=True) if f) / total
    n_eff = total ** 2 / sum(w * w for w in weights)
    x = share * n_eff
    a = 1 - confidence
    low = 0.0 if x <= 1e-12 else float(beta.ppf(a / 2, x, n_eff - x + 1))
    high = 1.0 if x >= n_eff - 1e-9 else float(beta.ppf(1 - a / 2, x + 1, n_eff - x))
    return Share(share, low, high, sum(bool(f) for f in flags), len(flags), n_eff, confidence)


def passage_weights(strata: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Passage id -> the book passages it stands for, ``N_h / n_h``, from the strata of an
    audit's sampling record (audit/sampling.py: ``size`` and the drawn ``ids`` of each)."""
    return {i: s["size"] / len(s["ids"]) for s in strata for i in s["ids"]}


__all__ = ["Share", "passage_weights", "weighted_share"]
