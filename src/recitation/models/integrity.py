"""The log-probability integrity check: before a run trusts a backend's log-probabilities,
a few public-domain texts are scored (and two greedy continuations generated) and the answers
are held to invariants any correct causal language model satisfies
(:mod:`recitation.models.integrity_invariants`): finite, at most 0 and not constant;
the same text scored twice, and alone or in a batch, gives the same numbers; a text's tokens
keep their log-probabilities when more text follows; a greedy generation's own
log-probabilities equal those of its tokens scored back, and each is the likeliest token;
the top log-probability bounds the token's; a random-word passage repeated is predicted.

Only the backend contract is used (``score``, ``generate``, ``capabilities``): any backend,
served or local, is checked the same way. The check costs 11 scored texts and two generations
of 16 tokens. It checks the answers' internal consistency, not that the weights are the ones
claimed: a model that is consistently wrong (another model, a consistent scale of every
number) can pass. ``recitation check MODEL`` runs it on demand; a detect run (and so an audit)
runs it once per model before its first scoring call (:mod:`recitation.detect.job`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from recitation.errors import UnsupportedRequest
from recitation.models import integrity_invariants as inv
from recitation.models.base import Generation, GenerationRequest, Model, TokenScores
from recitation.models.integrity_invariants import InvariantResult

CHECK_VERSION = 3  # 2: greedy_is_top tolerates a 0.25-nat near tie (bfloat16), was 0.05;
# 3: repeatable, batch_invariant and prefix_consistent at 0.1 nats (bfloat16), were 0.05

# Short public-domain texts of different lengths (King James Bible, Jane Austen).
GENESIS = ("In the beginning God created the heaven and the earth. And the earth was without "
           "form, and void; and darkness was upon the face of the deep.")
PSALM = ("The LORD is my shepherd; I shall not want. He maketh me to lie down in green "
         "pastures: he leadeth me beside the still waters. He restoreth my soul: he leadeth "
         "me in the paths of righteousness for his name's sake.")
EMMA = ("Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy "
        "disposition, seemed to unite some of the best blessings of existence; and had lived "
        "nearly twenty-one years in the world with very little to distress or vex her.")
PREACHER = "Vanity of vanities, saith the Preacher, vanity of vanities; all is vanity."
DASHWOOD = ("The family of Dashwood had long been settled in Sussex. Their estate was large, "
            "and their residence was at Norland Park, in the centre of their property, where, "
            "for many generations, they had lived in so respectable a manner as to engage the "
            "general good opinion of their surrounding acquaintance.")
DASHWOOD_PREFIX = ("The family of Dashwood had long been settled in Sussex. Their estate was "
                   "large, and their residence was at Norland Park,")
WORDS = ("river candle seven orchard copper whisper lantern meadow thunder basket silver "
         "harbour pepper journey marble falcon velvet chimney ladder autumn")
REPEATED = " ".join([f"{WORDS}."] * 4)  # SmolLM2-135M predicts a 4th copy, not a 2nd
PROMPTS = ("Mr. Bennet was among the earliest of those who waited on Mr. Bingley. He had "
           "always intended to visit him, though to the last always assuring his wife that",
           "And the LORD spake unto Moses, saying, Speak unto the children of Israel, and")
GEN_TOKENS = 16
BATCH = (GENESIS, PSALM, EMMA, PREACHER)
SCORED_TEXTS = 5 + len(BATCH) + len(PROMPTS)  # all of them, with the generations scored back
"""The texts the check scores (on a backend that completes text), before anything else it
asks: :data:`DASHWOOD` first. Tests that count a model's calls leave these out."""


class IntegrityReport(BaseModel):
    """The check's outcome for one model: each invariant's result and the calls it made."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    version: int = CHECK_VERSION
    model: str
    results: list[InvariantResult]
    score_calls: int
    texts_scored: int
    generations: int

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.results if r.outcome == "failed"]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @staticmethod
    def from_dict(d: dict[str, Any]) -> IntegrityReport:
        return IntegrityReport.model_validate(d, strict=False)


class _Calls:
    """The model's answers, one score call per list, counted."""

    def __init__(self, model: Model) -> None:
        self.model, self.calls, self.texts = model, 0, 0

    async def score(self, texts: list[str]) -> list[TokenScores]:
        self.calls += 1
        self.texts += len(texts)
        return await self.model.score(texts)


async def _greedy(model: Model) -> tuple[list[Generation], str]:
    """Two greedy continuations with their log-probabilities (or why there are none)."""
    if not model.capabilities.completion:
        return [], "the backend has no plain completion (a chat template would be scored)"
    reqs = [GenerationRequest(prompt=p, max_tokens=GEN_TOKENS, temperature=0.0, logprobs=True)
            for p in PROMPTS]
    try:
        return await model.generate(reqs), ""
    except UnsupportedRequest as e:  # e.g. a server that gives no generation log-probs
        return [], f"the backend refused greedy generation with log-probabilities: {e}"


async def check_logprobs(model: Model) -> IntegrityReport:
    """Run the check on ``model`` (which must score: ``capabilities.logprobs``)."""
    calls = _Calls(model)
    full = (await calls.score([DASHWOOD]))[0]
    once = (await calls.score([GENESIS]))[0]  # after a longer text ...
    twice = (await calls.score([GENESIS]))[0]  # ... and after itself
    batch = await calls.score(list(BATCH))
    prefix = (await calls.score([DASHWOOD_PREFIX]))[0]
    repeated = (await calls.score([REPEATED]))[0]
    gens, why_not = await _greedy(model)
    back = await calls.score([p + g.text for p, g in zip(PROMPTS, gens, strict=True)]) \
        if gens else []
    pairs = list(zip(gens, back, strict=True))
    every = [full, once, twice, *batch, prefix, repeated, *back]
    results = [*inv.well_formed(every),
               inv.same_numbers("repeatable", "the same text scored twice", once, twice),
               inv.same_numbers("batch_invariant", "alone and in a batch of four", twice,
                                batch[0]),
               inv.prefix_consistent(prefix, full),
               inv.repeat_predictable(repeated),
               inv.top_consistent(every)]
    if why_not:
        results += [inv.skipped("generation_matches_score", inv.GEN_MEASURES, inv.GEN_TOL,
                                inv.GEN_WHY, why_not),
                    inv.skipped("greedy_is_top", inv.TOP_MEASURES, 0.0, inv.TOP_WHY, why_not)]
    else:
        results += [inv.generation_matches(pairs), inv.greedy_is_top(pairs)]
    return IntegrityReport(model=model.name, results=results, score_calls=calls.calls,
                           texts_scored=calls.texts, generations=len(gens))


__all__ = ["CHECK_VERSION", "SCORED_TEXTS", "IntegrityReport", "InvariantResult",
           "check_logprobs"]
