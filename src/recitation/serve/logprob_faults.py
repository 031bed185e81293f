"""Wrong log-probabilities on purpose: ``recitation serve --logprob-fault KIND`` answers
prompt log-probabilities the way a broken serving engine does, so that the log-probability
integrity check (:mod:`recitation.models.integrity`) and whatever relies on it can be tested
against a real HTTP server. A test aid, never for use.

* ``shift``: each scored log-probability is reported one position late (an off-by-one
  between tokens and the distributions they are read from); the first is repeated.
* ``offset``: a constant (-3 nats) is added to every prompt log-probability (vLLM issue
  #51594 reported -6.63 against -0.009 nats per token with a LoRA adapter loaded).
* ``scale``: prompt log-probabilities are halved, as from weights merged wrongly for the
  prompt pass only (vLLM's LoRA prompt-logprob bugs); generation is untouched.
* ``batch``: answers depend on what else the server is scoring: a shorter text scored in
  the same call as a longer one, or just after it, is shifted by up to -1 nat per token
  (padding leaking into attention), so the same text gives other numbers in other company.

Generation is never touched: only ``score``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, get_args

from recitation.models.base import Generation, GenerationRequest, Model, TokenScores
from recitation.models.tokenizer import Tokenizer

LogprobFault = Literal["shift", "offset", "scale", "batch"]
FAULTS: tuple[str, ...] = get_args(LogprobFault)
OFFSET = -3.0
SCALE = 0.5
BATCH_LEAK = -1.0


def _shift(s: TokenScores) -> TokenScores:
    def late(xs: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        return (xs[0], *xs[:-1]) if xs else xs

    return replace(s, logprobs=late(s.logprobs) or (), top_logprob=late(s.top_logprob),
                   rank=late(s.rank), mean_logprob=late(s.mean_logprob),
                   std_logprob=late(s.std_logprob))


def _add(s: TokenScores, delta: float, factor: float = 1.0) -> TokenScores:
    def move(xs: tuple[float, ...] | None) -> tuple[float, ...] | None:
        return tuple(x * factor + delta for x in xs) if xs is not None else None

    return replace(s, logprobs=move(s.logprobs) or (), top_logprob=move(s.top_logprob),
                   mean_logprob=move(s.mean_logprob))


class LogprobFaultModel(Model):
    """``inner`` with wrong prompt log-probabilities of one :data:`LogprobFault` kind."""

    def __init__(self, inner: Model, fault: LogprobFault) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown log-probability fault '{fault}' (one of {FAULTS})")
        self.inner, self.fault = inner, fault
        self.backend, self.name = inner.backend, inner.name
        self.capabilities = inner.capabilities
        self._previous: list[str] = []  # the texts of the call before this one

    def identity(self) -> dict[str, Any]:
        return self.inner.identity() | {"logprob_fault": self.fault}

    def tokenizer(self) -> Tokenizer | None:
        return self.inner.tokenizer()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return await self.inner.generate(requests)

    async def score(self, texts: list[str]) -> list[TokenScores]:
        company = [*texts, *self._previous]  # taken on entry: the order calls arrive in
        self._previous = list(texts)
        scores = await self.inner.score(texts)
        if self.fault == "shift":
            return [_shift(s) for s in scores]
        if self.fault == "offset":
            return [_add(s, OFFSET) for s in scores]
        if self.fault == "scale":
            return [_add(s, 0.0, SCALE) for s in scores]
        longest = max(len(t) for t in company) if company else 1
        return [_add(s, BATCH_LEAK * (1 - len(t) / longest))
                for t, s in zip(texts, scores, strict=True)]


__all__ = ["FAULTS", "LogprobFault", "LogprobFaultModel"]
