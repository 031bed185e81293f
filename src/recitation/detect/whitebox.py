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
``gap_k_{10,20,30}``      mean of the k% lowest of (log p - log p_top1) / sigma,  higher
                          smoothed over 3-token windows (Gap-K%)
``reference``             NLL(target model) - NLL(reference model)               lower
========================  =====================================================  =========

"k% lowest" takes ``max(1, floor(n * k / 100))`` of the n scored tokens (the first token of
a text has no context and is not scored). The n-gram option (``min_k_ngram`` n > 1, as MIMIR's
``get_min_k_prob(window=n, stride=1)``) first averages the log-probabilities of every window
of n consecutive scored tokens (one window of all tokens when a text has fewer than n), then
takes the k% lowest windows; it adds ``min_k_{k}_ngram{n}`` beside the unchanged ``min_k_{k}``.

Gap-K% (ACL 2026; the authors' ``wikimia.py``, meaoww/gap-k): at every scored token the gap
between the gold token's log-probability and the most likely token's, divided by sigma (the
vocabulary standard deviation of log p, ``sqrt(max(variance, 1e-8))``); a moving average
over windows of 3 tokens (``np.convolve(..., "valid")``; the gaps as they are when a text
has fewer than 3); the mean of the lowest ``max(1, floor(n * k / 100))`` of the n smoothed
values. The authors report k = 20%; 10 and 30 are computed beside it as for Min-K%.

All NLLs are per-token means, so texts of different lengths (and the reference model's
different tokenizer) compare.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore as DetectorScore  # the shared schema
from recitation.detect.scoring import SampleResult, ScoringContext
from recitation.methods import Access, AuditUse, Calls, MethodInfo
from recitation.models.base import Model, TokenScores

log = logging.getLogger(__name__)

MIN_K_PERCENTS = (10, 20, 30)
_EPS = 1e-8


# name -> higher_means_member
WHITEBOX_DIRECTIONS: dict[str, bool] = {
    "loss": False, "zlib": False, "lowercase": True,
    **{f"min_k_{k}": True for k in MIN_K_PERCENTS},
    **{f"min_k_pp_{k}": True for k in MIN_K_PERCENTS},
    **{f"gap_k_{k}": True for k in MIN_K_PERCENTS},
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


GAP_WINDOW = 3
"""Gap-K%'s moving-average window (the authors' ``--window_size`` default)."""
_GAP_SIGMA = 1e-4
"""sqrt(1e-8): the authors clamp the variance at 1e-8 before its square root."""


def gap_k(logprobs: Sequence[float], top: Sequence[float], sigma: Sequence[float], k: float,
          window: int = GAP_WINDOW) -> float:
    """Gap-K% (module docstring): the k% lowest smoothed ``(log p - log p_top1) / sigma``."""
    if not (len(logprobs) == len(top) == len(sigma)):
        raise ValueError("logprobs, top-1 log-probabilities and sigma must be aligned")
    gaps = [(lp - t) / max(sd, _GAP_SIGMA) for lp, t, sd in zip(logprobs, top, sigma,
                                                                strict=True)]
    if len(gaps) >= window:
        gaps = [sum(gaps[i:i + window]) / window for i in range(len(gaps) - window + 1)]
    return _lowest_mean(gaps, k)


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
    if target.top_logprob and target.std_logprob:
        for k in MIN_K_PERCENTS:
            vals[f"gap_k_{k}"] = gap_k(target.logprobs, target.top_logprob,
                                       target.std_logprob, k)
    if reference is not None:
        vals["reference"] = nll - mean_nll(reference)
    return [DetectorScore(sample_id, name, float(v),
                          WHITEBOX_DIRECTIONS[name.split("_ngram")[0]])
            for name, v in vals.items()]


# -- the plug-in of the detect job (recitation.detect.scoring) ---------------------------
class WhiteboxDetector:
    """The ``whitebox`` family: every score above from one shared ``score`` call (texts and
    their lower-cased forms), plus the reference model's scores when one is configured."""

    family = "whitebox"

    def __init__(self) -> None:
        self._warned = False

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        return [s.text.lower() for s in samples]

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        p = ctx.params
        if not model.capabilities.full_distribution and not self._warned:
            self._warned = True
            log.warning("min_k_pp and gap_k are not computed: they need full_distribution (the "
                        "vocabulary mean and std of log p, its top token), which backend '%s' "
                        "does not give",
                        model.backend)
        ref: list[TokenScores] | None = None
        if (reference := ctx.reference(model)) is not None:
            ref = await reference.score([p.reference_prefix + s.text for s in samples])
        out: dict[str, SampleResult] = {}
        for i, s in enumerate(samples):
            try:
                ds = whitebox_scores(s.id, s.text, plain[i], companions[i],
                                     ref[i] if ref else None, p.min_k_ngram)
            except ValueError as e:
                out[s.id] = SampleResult(error=str(e))
                continue
            out[s.id] = SampleResult(ds, fields={"n_tokens": len(plain[i].tokens)})
        return out


# -- metadata (recitation.methods) ---------------------------------------------------------
def _text(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"text"}))


def _lowercase(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"text", "text.lower()"}))


def _reference(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"text"}), reference=int(p.get("reference_model") is not None))


_RUNNER = "recitation.detect.whitebox:WhiteboxDetector"
AUDIT = AuditUse(run="detect", order=40, primary=("min_k_pp_20", "min_k_20", "loss"),
                 catalogue=1,
                 why="Min-K%++ at k = 20% where the backend gives the full distribution, else "
                 "Min-K% at 20%, else LOSS: one score for the family, fixed before any run")
_LP = frozenset({Access.LOGPROBS})


def _info(name: str, title: str, paper: str, writes: tuple[str, ...], summary: str,
          calls: Any = _text, formula: str = "1 score (the text, shared by the family)",
          access: frozenset[Access] = _LP, options: tuple[str, ...] = ()) -> MethodInfo:
    return MethodInfo(name=name, kind="detector", title=title, paper=paper, access=access,
                      writes=writes, calls=calls, calls_formula=formula, job="detect",
                      family="whitebox", summary=summary, runner=_RUNNER, options=options,
                      audit=AUDIT)


METHODS: dict[str, MethodInfo] = {m.name: m for m in (
    _info("loss", "LOSS", "Yeom et al. 2018 (LOSS); as a baseline in Carlini et al. 2021",
          ("loss", "n_tokens"), "mean token NLL of the text; lower means member"),
    _info("zlib", "zlib ratio", "Carlini et al. 2021 (zlib entropy ratio)", ("zlib",),
          "mean NLL / zlib-compressed length of the text; lower means member"),
    _info("lowercase", "lowercase ratio", "Carlini et al. 2021 (lowercase ratio)",
          ("lowercase",), "NLL(lower-cased text) / NLL(text); higher means member",
          calls=_lowercase, formula="2 scores (the text, shared; its lower-cased form)"),
    _info("min_k", "Min-K%", "Shi et al. 2024 (Min-K% Prob)",
          tuple(f"min_k_{k}" for k in MIN_K_PERCENTS),
          "mean of the k% lowest token log-probabilities (k = 10, 20, 30); with "
          "min_k_ngram n > 1 also over n-token windows (min_k_{k}_ngram{n}, as MIMIR)",
          options=("min_k_ngram",)),
    _info("min_k_pp", "Min-K%++", "Zhang et al. 2024 (Min-K%++)",
          tuple(f"min_k_pp_{k}" for k in MIN_K_PERCENTS),
          "Min-K% over (log p - mu) / sigma, mu and sigma over the vocabulary",
          access=_LP | {Access.FULL_DISTRIBUTION}),
    _info("gap_k", "Gap-K%", "Kwak and Kim 2026 (Gap-K%, ACL 2026); the authors' code, "
          "meaoww/gap-k",
          tuple(f"gap_k_{k}" for k in MIN_K_PERCENTS),
          "Min-K% over (log p - log p_top1) / sigma, smoothed over 3-token windows",
          access=_LP | {Access.FULL_DISTRIBUTION}),
    _info("reference", "reference model", "Carlini et al. 2021 (comparison to a reference "
          "model)", ("reference",), "NLL(target) - NLL(reference model); lower means member",
          calls=_reference, formula="1 score (the text, shared) + 1 reference-model score",
          access=_LP | {Access.REFERENCE_MODEL}, options=("reference_model",
                                                           "reference_prefix")),
)}
