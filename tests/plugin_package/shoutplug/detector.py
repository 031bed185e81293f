"""The ``shout`` detector family: the share of a sample's words that start with a letter
(its option ``letter``), times ``weight``, and the mean log-probability of its tokens.

Its metadata (``SHOUT``) is what the ``recitation.methods`` entry point names; its options
are a pydantic model, given as ``--detector-option shout.letter=c`` and read by the runner
as ``ctx.options("shout")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from recitation.detect.scoring import DetectorScore, SampleResult
from recitation.methods import Access, AuditUse, Calls, MethodInfo


class ShoutOptions(BaseModel):
    """The family's own options (defaults: words starting with t, weight 1)."""

    model_config = ConfigDict(extra="forbid")

    letter: str = Field("t", min_length=1, max_length=1)
    weight: float = Field(1.0, gt=0)


class ShoutDetector:
    family = "shout"

    def companion_texts(self, ctx: Any, samples: Sequence[Any]) -> list[str]:
        return []  # only the samples' plain texts, scored in the job's shared call

    async def score(self, ctx: Any, samples: Sequence[Any], plain: Sequence[Any],
                    companions: Sequence[Any], model: Any) -> dict[str, SampleResult]:
        opts: ShoutOptions = ctx.options(self.family)
        out = {}
        for s, scores in zip(samples, plain, strict=True):
            words = s.text.split()
            share = sum(w.startswith(opts.letter) for w in words) / max(1, len(words))
            lps = list(scores.logprobs)
            mean = sum(lps) / len(lps) if lps else 0.0
            out[s.id] = SampleResult(
                [DetectorScore(s.id, "shout_share", opts.weight * share, True),
                 DetectorScore(s.id, "shout_logprob", mean, True)],
                fields={"shout_letter": opts.letter})
        return out


SHOUT = MethodInfo(
    name="shout", kind="detector", title="shout share", paper="Nobody et al. 2099",
    access=frozenset({Access.LOGPROBS}), writes=("shout_share", "shout_logprob"),
    calls=lambda p: Calls(score=frozenset({"text"})), calls_formula="1 score (shared)",
    job="detect", family="shout", summary="share of words starting with a letter",
    runner="shoutplug.detector:ShoutDetector", option_model=ShoutOptions,
    audit=AuditUse(run="detect", order=45, primary=("shout_share",)))
