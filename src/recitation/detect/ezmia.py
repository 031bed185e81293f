"""EZ-MIA (Ilić, Stanojević and Cvejoski 2026, "Powerful Training-Free Membership Inference
Against Autoregressive Language Models", arXiv:2601.12104), as the authors' code computes it
(JetBrains-Research/ez-mia, ``mia/ez_score.py``: ``error_zone_pos_neg_sum_ratio``; the
per-token inputs from ``mia/models.py``): a reference-based attack on a fine-tuned model,
the pretrained base being the reference.

At every scored position t the target's likeliest token is compared with the true one; the
*error zone* E is the set of positions where they differ (the target got it wrong), and there

    delta_t = log p_target(x_t) - log p_reference(x_t)
    EZ(x)   = sum over E of max(delta_t, 0) / (sum over E of max(-delta_t, 0) + 1e-12)

A fine-tune raises the probability of the true token even where it does not make it the
likeliest, on the texts it was trained on: a **higher** EZ means member. As the authors' code:

* the first scored position (the second token's prediction) is never in E
  (``ignore_bos=True``, applied whether or not the tokenizer adds a BOS);
* texts are cut to their first 128 tokens (``sequence_length``), option ``ezmia_max_tokens``;
* EZ is 0.0 when E has fewer than 2 positions (``min_tokens=2``), when no delta in E is
  negative (every error-zone token got likelier: the most memorised texts can score 0.0, the
  lowest score; the record says which fallback applied), and when it is not a number.

The error zone needs the target's likeliest token at each position: the rank of the true
token (``TokenScores.rank``, from the local backend and vLLM's ``prompt_logprobs``), else its
log-probability against the likeliest token's (``top_logprob``). The reference scores the
same texts and must tokenize them alike (a fine-tune and its base do); otherwise the sample
gets an error. Differences: docs/detection.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore, SampleResult, ScoringContext
from recitation.methods import Access, Calls, MethodInfo
from recitation.models.base import Model, TokenScores

MAX_TOKENS = 128  # the authors' sequence_length
MIN_TOKENS = 2
EPS = 1e-12
NO_LOSS = "no error-zone token less likely than under the reference"
SATURATED = 1e15
"""``saturate``: the score of a text with fewer than two error-zone tokens, above any ratio
of log-probability gains over ``EPS`` (gains of a 128-token text stay far below 1,000)."""


def error_zone(target: TokenScores) -> list[bool]:
    """Per scored position: the target's likeliest token is not the true one."""
    if target.rank is not None:
        return [r > 1 for r in target.rank]
    if target.top_logprob is not None:
        return [lp < top for lp, top in zip(target.logprobs, target.top_logprob, strict=True)]
    raise ValueError("EZ-MIA needs the target's likeliest token at each position (rank or "
                     "top_logprob): a backend with full_distribution, e.g. the local one")


def ez_score(target_lp: Sequence[float], reference_lp: Sequence[float],
             wrong: Sequence[bool], *, ignore_first: bool = True,
             min_tokens: int = MIN_TOKENS, saturate: bool = False) -> tuple[float, str | None]:
    """EZ over aligned per-position inputs, and the fallback that applied (None: none).

    ``saturate`` (ours, not the authors'): where their code falls back to 0.0 because the
    target lost nowhere, the ratio is taken as it stands (the gains over 1e-12), and where
    fewer than ``min_tokens`` positions are wrong, the score is :data:`SATURATED`: the
    texts a fine-tune knows best score highest instead of lowest."""
    zone = [i for i, w in enumerate(wrong) if w and not (ignore_first and i == 0)]
    if len(zone) < min_tokens:
        why = f"fewer than {min_tokens} error-zone tokens"
        return (SATURATED, why) if saturate else (0.0, why)
    deltas = [target_lp[i] - reference_lp[i] for i in zone]
    pos = sum(d for d in deltas if d > 0)
    neg = sum(-d for d in deltas if d < 0)
    if neg == 0 and not saturate:
        return 0.0, NO_LOSS
    value = pos / (neg + EPS)
    if math.isnan(value) or value < 0:
        return 0.0, "not a number"
    return value, None if neg else NO_LOSS


def ezmia_from_scores(target: TokenScores, reference: TokenScores,
                      max_tokens: int = MAX_TOKENS, *, saturate: bool = False
                      ) -> tuple[float, str | None]:
    """EZ of one text from the target's and the reference's scores of it."""
    if tuple(target.tokens) != tuple(reference.tokens):
        raise ValueError("EZ-MIA: the reference tokenizes the text differently from the "
                         "target (it needs a reference with the same tokenizer, e.g. the "
                         "fine-tune's base model)")
    n = max(0, min(len(target.logprobs), max_tokens - 1))  # positions of the first max_tokens
    return ez_score(target.logprobs[:n], reference.logprobs[:n], error_zone(target)[:n],
                    saturate=saturate)


class EzmiaDetector:
    """The ``ezmia`` family (a plug-in of the detect job): the target's shared scores, and
    the reference model's scores of the same texts."""

    family = "ezmia"

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        return []

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        reference = ctx.reference(model)
        if reference is None:  # the job's access check stops this first
            raise RuntimeError("ezmia runs only with a reference model")
        ref = await reference.score([s.text for s in samples])
        out: dict[str, SampleResult] = {}
        for i, s in enumerate(samples):
            try:
                v, fallback = ezmia_from_scores(plain[i], ref[i], ctx.params.ezmia_max_tokens,
                                                saturate=ctx.params.ezmia_saturate)
            except ValueError as e:
                out[s.id] = SampleResult(error=str(e))
                continue
            out[s.id] = SampleResult([DetectorScore(s.id, "ezmia", v, True)],
                                     fields={"ezmia_fallback": fallback} if fallback else {})
        return out


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"text"}), reference=1)


EZMIA = MethodInfo(
    name="ezmia", kind="detector", title="EZ-MIA",
    paper="Ilić, Stanojević and Cvejoski 2026 (EZ-MIA, arXiv:2601.12104); the authors' code, "
    "JetBrains-Research/ez-mia (mia/ez_score.py)",
    access=frozenset({Access.LOGPROBS, Access.FULL_DISTRIBUTION, Access.REFERENCE_MODEL}),
    writes=("ezmia",), calls=_calls,
    calls_formula="1 score (the text, shared) + 1 reference-model score",
    job="detect", family="ezmia",
    summary="over the positions where the target's likeliest token is wrong: the summed "
    "gains of log p(true token) over the reference / the summed losses; higher means member",
    runner="recitation.detect.ezmia:EzmiaDetector", options=("reference_model",
                                                             "ezmia_max_tokens",
                                                             "ezmia_saturate"))
