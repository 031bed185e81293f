"""White-box membership-inference scores from per-token log-probabilities.

Every backend whose ``capabilities.logprobs`` is true (``Model.score``) feeds these; Min-K%++
also needs ``capabilities.full_distribution`` (the vocabulary mean and standard deviation of
log p at every position). Definitions (NOTES.md, "Membership-inference scores"):

========================  =====================================================  =========
detector                  score                                                  member if
========================  =====================================================  =========
``loss``                  mean token negative log-likelihood (NLL)               lower
``zlib``                  mean NLL / zlib-compressed length of the UTF-8 text    lower
``lowercase``             NLL(lower-cased text) / NLL(text)                      higher
``min_k_{10,20,30}``      mean of the k% lowest token log-probabilities          higher
``min_k_pp_{10,20,30}``   the same over (log p - mu) / sigma (Min-K%++)          higher
``min_k_{k}_ngram{n}``    Min-K% over the means of n-token windows (option)      higher
``reference``             NLL(target model) - NLL(reference model)               lower
========================  =====================================================  =========

"k% lowest" takes ``max(1, floor(n * k / 100))`` of the n scored tokens (the first token of
a text has no context and is not scored). The n-gram option (``min_k_ngram`` n > 1, as MIMIR's
``get_min_k_prob(window=n, stride=1)``) first averages the log-probabilities of every window
of n consecutive scored tokens (one window of all tokens when a text has fewer than n), then
takes the k% lowest windows; it adds ``min_k_{k}_ngram{n}`` beside the unchanged ``min_k_{k}``.

All NLLs are per-token means, so texts of different lengths (and the reference model's
different tokenizer) compare.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from recitation.models.base import TokenScores

MIN_K_PERCENTS = (10, 20, 30)
_EPS = 1e-8


@dataclass(frozen=True)
class DetectorScore:
    """The one output schema every detector shares."""

    sample_id: str
    detector: str
    score: float
    higher_means_member: bool

    def to_dict(self) -> dict[str, object]:
        return {"sample_id": self.sample_id, "detector": self.detector, "score": self.score,
                "higher_means_member": self.higher_means_member}


# name -> higher_means_member
WHITEBOX_DIRECTIONS: dict[str, bool] = {
    "loss": False, "zlib": False, "lowercase": True,
    **{f"min_k_{k}": True for k in MIN_K_PERCENTS},
    **{f"min_k_pp_{k}": True for k in MIN_K_PERCENTS},
    "reference": False,
}


def _lowest_mean(values: Sequence[float], k: float) -> float:
    if not values:
        raise ValueError("no scored tokens (a text needs at least two tokens)")
    n = max(1, math.floor(len(values) * k / 100))
    return sum(sorted(values)[:n]) / n


def mean_nll(ts: TokenScores) -> float:
    if not ts.logprobs:
        raise ValueError("no scored tokens (a text needs at least two tokens)")
    return -sum(ts.logprobs) / len(ts.logprobs)


def min_k_percent(logprobs: Sequence[float], k: float) -> float:
    """Min-K% (Shi et al., 2024): the mean of the k% lowest token log-probabilities."""
    return _lowest_mean(logprobs, k)


def min_k_plus_plus(logprobs: Sequence[float], mu: Sequence[float], sigma: Sequence[float],
                    k: float) -> float:
    """Min-K%++ (Zhang et al., 2025): Min-K% over ``(log p - mu) / sigma`` per token."""
    if not (len(logprobs) == len(mu) == len(sigma)):
        raise ValueError("logprobs, mu and sigma must be aligned")
    z = [(lp - m) / max(s, _EPS) for lp, m, s in zip(logprobs, mu, sigma, strict=True)]
    return _lowest_mean(z, k)


def min_k_ngram(logprobs: Sequence[float], k: float, n: int) -> float:
    """Min-K% over the mean log-probabilities of the sliding n-token windows (stride 1)."""
    if n < 1:
        raise ValueError(f"the n-gram window must be >= 1, got {n}")
    if len(logprobs) <= n:
        return _lowest_mean([sum(logprobs) / len(logprobs)] if logprobs else [], k)
    windows = [sum(logprobs[i:i + n]) / n for i in range(len(logprobs) - n + 1)]
    return _lowest_mean(windows, k)


def zlib_length(text: str) -> int:
    return len(zlib.compress(text.encode("utf-8")))


def whitebox_scores(sample_id: str, text: str, target: TokenScores,
                    lowercase: TokenScores | None = None,
                    reference: TokenScores | None = None, ngram: int = 1
                    ) -> list[DetectorScore]:
    """All white-box scores a sample's token scores allow (Min-K%++ only with mu/sigma;
    n-gram Min-K% only with ``ngram`` > 1)."""
    nll = mean_nll(target)
    vals: dict[str, float] = {"loss": nll, "zlib": nll / max(1, zlib_length(text))}
    if lowercase is not None:
        vals["lowercase"] = mean_nll(lowercase) / max(nll, _EPS)
    for k in MIN_K_PERCENTS:
        vals[f"min_k_{k}"] = min_k_percent(target.logprobs, k)
        if ngram > 1:
            vals[f"min_k_{k}_ngram{ngram}"] = min_k_ngram(target.logprobs, k, ngram)
    if target.mean_logprob and target.std_logprob:
        for k in MIN_K_PERCENTS:
            vals[f"min_k_pp_{k}"] = min_k_plus_plus(
                target.logprobs, target.mean_logprob, target.std_logprob, k)
    if reference is not None:
        vals["reference"] = nll - mean_nll(reference)
    return [DetectorScore(sample_id, name, float(v),
                          WHITEBOX_DIRECTIONS[name.split("_ngram")[0]])
            for name, v in vals.items()]
