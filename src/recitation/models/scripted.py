"""A scripted in-memory model for unit tests of control flow (never a stand-in for a real one).

``ScriptedModel(responder)`` answers each request with ``responder(request)``: a string, or an
exception instance to raise (e.g. ``RateLimitError(...)`` to test retries). Every request is
appended to ``.requests`` so tests can count calls. It stands in for any backend, an API
included: it is not ``local``, so a price table prices its calls (cost accounting tests).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

from recitation.models.base import (
    Capabilities,
    Generation,
    GenerationRequest,
    Model,
    TokenScores,
    Usage,
)
from recitation.models.config import ModelConfig

Responder = Callable[[GenerationRequest], "str | BaseException"]


def _last_user_text(req: GenerationRequest) -> str:
    if req.prompt is not None:
        return req.prompt
    return next((m.content for m in reversed(req.messages or ()) if m.role == "user"), "")


def echo_responder(req: GenerationRequest) -> str:
    """Default: repeat the prompt's last words, cut to ``max_tokens`` words."""
    return " ".join(_last_user_text(req).split()[: req.max_tokens])


class ScriptedModel(Model):
    backend = "scripted"
    capabilities = Capabilities(logprobs=True, full_distribution=False)

    @classmethod
    def from_config(cls, cfg: ModelConfig) -> Model:
        return cls(name=cfg.model)

    def __init__(self, responder: Responder = echo_responder, name: str = "scripted") -> None:
        self.responder = responder
        self.name = name
        self.requests: list[GenerationRequest] = []
        self.scored: list[str] = []

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        out = []
        for req in requests:
            self.requests.append(req)
            reply = self.responder(req)
            if isinstance(reply, BaseException):
                raise reply
            n_in = len(_last_user_text(req).split())
            n_out = len(reply.split())
            out.append(Generation(text=reply, usage=Usage(n_in, n_out),
                                  finish_reason="length" if n_out >= req.max_tokens else "stop"))
        return out

    async def score(self, texts: list[str]) -> list[TokenScores]:
        """Deterministic pseudo log-probabilities, one per word after the first: longer
        words are less likely, and a word that ends a run of :data:`INDUCTION` words seen
        twice before in the text is predicted (-0.01), as a causal model copies a passage
        repeated (only a text holding a run of 20 words three times). They depend on the words
        before only (prefix-consistent, batch-free), so the log-probability integrity check
        passes (recitation.models.integrity)."""
        out = []
        for t in texts:
            self.scored.append(t)
            words = t.split()
            out.append(TokenScores(tokens=tuple(words), logprobs=pseudo_logprobs(words),
                                   usage=Usage(len(words), 0)))
        return out


INDUCTION = 20  # words in a run that, seen twice before in the text, predicts its last


def pseudo_logprobs(words: list[str]) -> tuple[float, ...]:
    """:meth:`ScriptedModel.score`'s log-probabilities of ``words[1:]``."""
    seen: Counter[tuple[str, ...]] = Counter()
    out = []
    for i in range(1, len(words)):
        run = tuple(words[i + 1 - INDUCTION:i + 1]) if i + 1 >= INDUCTION else ()
        out.append(-0.01 if run and seen[run] >= 2 else -math.log(1 + len(words[i])))
        if run:
            seen[run] += 1
    return tuple(out)
