"""ReCaLL (Xie et al., 2024, "ReCaLL: Membership Inference via Relative Conditional
Log-Likelihoods"), as MIMIR implements it (``mimir/attacks/recall.py``).

    ReCaLL(x) = LL(x | P) / LL(x)

LL is the mean token log-likelihood of the sample ``x``; ``P`` a prefix made by concatenating
(with nothing between them, as MIMIR's ``"".join``) the first ``shots`` non-member texts, here
the first controls of the run. LL(x | P) averages over every token of ``x`` (its first token
is scored too, conditioned on the prefix); LL(x) over the tokens after the first (the first
has no context). Both LLs are negative, so the ratio equals NLL(x | P) / NLL(x): a
non-member prefix lowers a member's likelihood more than a non-member's (the paper's
finding), so a **higher** ratio means member. (MIMIR returns LL(x | P) / NLL(x), the
negative of this, under its lower-means-member convention: the same ordering.)

The conditional LL comes from one ``score`` call on the string ``P + x``: the last tokens of
that call must be the tokens of ``x`` scored alone (MIMIR tokenizes P and x apart and joins
the ids), or all of them but the first (a BOS, or a first token merged with the prefix's last
characters, e.g. ``"end." + "The"`` for a whitespace tokenizer), which then is not scored;
otherwise the sample gets an error, not a silently shifted score.

Leakage: the controls used in the prefix get no ReCaLL score (MIMIR keeps them among the
scored non-members), so ReCaLL's calibration and AUC use only the other controls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore, SampleResult, ScoringContext
from recitation.errors import ConfigError
from recitation.methods import Access, AuditUse, Calls, MethodInfo
from recitation.models.base import Model, TokenScores

DEFAULT_SHOTS = 3


def build_prefix(control_texts: Sequence[str], shots: int) -> str:
    """The non-member prefix: the first ``shots`` control texts, concatenated."""
    if shots < 1:
        raise ValueError(f"ReCaLL needs at least one shot, got {shots}")
    if len(control_texts) < shots:
        raise ValueError(f"ReCaLL needs {shots} control text(s) for its prefix, "
                         f"got {len(control_texts)}")
    return "".join(control_texts[:shots])


def conditional_logprobs(plain: TokenScores, conditioned: TokenScores) -> tuple[float, ...]:
    """The log-probabilities of the sample's tokens inside ``score(prefix + sample)``.

    The sample's tokens (as scored alone) must end the conditioned token list; failing
    that, all of them but the first (a BOS the tokenizer adds, or a first token that merged
    with the end of the prefix), which is then not scored."""
    ctoks = tuple(conditioned.tokens)
    for toks in (tuple(plain.tokens), tuple(plain.tokens[1:])):
        n = len(toks)
        if 0 < n < len(ctoks) and ctoks[-n:] == toks:
            return tuple(conditioned.logprobs[-n:])
    raise ValueError("the prefix and the sample tokenize differently at their boundary "
                     "(the sample's tokens do not end the conditioned text)")


def recall_score(plain: TokenScores, conditioned: TokenScores) -> float:
    """LL(x | P) / LL(x) from the sample's scores alone and after the prefix."""
    if not plain.logprobs:
        raise ValueError("no scored tokens (a text needs at least two tokens)")
    ll = sum(plain.logprobs) / len(plain.logprobs)
    cond = conditional_logprobs(plain, conditioned)
    ll_cond = sum(cond) / len(cond)
    if ll == 0.0:
        raise ValueError("LL(x) is 0: the ratio is undefined")
    return ll_cond / ll


class RecallDetector:
    """The ``recall`` family (a plug-in of the detect job, :mod:`recitation.detect.scoring`):
    one more ``score`` call per chunk, each sample's text after the non-member prefix."""

    family = "recall"

    def __init__(self) -> None:
        self._prefix: tuple[set[str], str] | None = None

    def prefix(self, ctx: ScoringContext) -> tuple[set[str], str]:
        """The ids of the controls in the prefix (the first ``recall_shots`` controls, as
        MIMIR's ``nonmember[:num_shots]``) and the prefix; those controls get no ReCaLL
        score, so they are not among ReCaLL's calibration controls."""
        if self._prefix is None:
            shots: int = ctx.params.recall_shots
            controls = [s for s in ctx.samples() if s.label == "control"]
            try:
                prefix = build_prefix([c.text for c in controls], shots)
            except ValueError as e:
                raise ConfigError(f"recall: {e} (lower recall_shots or add controls)") from e
            self._prefix = ({c.id for c in controls[:shots]}, prefix)
        return self._prefix

    def _todo(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[int]:
        """The samples ReCaLL scores: all but the controls in its prefix."""
        in_prefix = self.prefix(ctx)[0]
        return [i for i, s in enumerate(samples)
                if not (s.label == "control" and s.id in in_prefix)]

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        """Each scored sample after the non-member prefix (scored with the texts, in the
        same call, or read from a signal store)."""
        prefix = self.prefix(ctx)[1]
        return [prefix + samples[i].text for i in self._todo(ctx, samples)]

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        todo = self._todo(ctx, samples)
        out: dict[str, SampleResult] = {samples[i].id: SampleResult(
            fields={"recall_prefix": True}) for i in set(range(len(samples))) - set(todo)}
        for i, c in zip(todo, companions, strict=True):
            s = samples[i]
            try:
                out[s.id] = SampleResult([DetectorScore(s.id, "recall",
                                                        recall_score(plain[i], c), True)])
            except ValueError as e:
                out[s.id] = SampleResult(error=str(e))
        return out


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(score=frozenset({"text", "prefix + text"}))


RECALL = MethodInfo(
    name="recall", kind="detector", title="ReCaLL",
    paper="Xie et al. 2024 (ReCaLL), as MIMIR's recall attack",
    access=frozenset({Access.LOGPROBS}), writes=("recall", "recall_prefix"), calls=_calls,
    calls_formula="2 scores (the text, shared; the text after the non-member prefix)",
    job="detect", family="recall",
    summary="LL(x | non-member prefix) / LL(x); the prefix: the first recall_shots controls "
    "(which get no score); higher means member",
    runner="recitation.detect.recall:RecallDetector", options=("recall_shots",),
    audit=AuditUse(run="detect", order=50, primary=("recall",), verdict=False, catalogue=3,
                   min_controls=DEFAULT_SHOTS + 1,
                   why="reported, not in the verdict: it reads the same log-probabilities "
                   "as the white-box family, so a further Bonferroni test would lower the "
                   "verdict's power and add little; its prefix takes the first "
                   f"{DEFAULT_SHOTS} controls, which then calibrate nothing"))
