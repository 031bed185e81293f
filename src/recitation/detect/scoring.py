"""Score-based detector families as plug-ins of the ``detect`` job.

A family that reads token log-probabilities (``whitebox``, ``recall``, ``dcpdd``) is one
module that declares its metadata (:class:`recitation.methods.MethodInfo`, with ``runner``
naming its plug-in class) and one line in :data:`recitation.methods.METHODS`; the job finds
the plug-in there and never names the family itself. For a chunk of samples the job

1. checks the access every method of the family needs (``MethodInfo.access``, from the
   registry; a backend without token log-probabilities gets a recorded error per sample,
   naming what is missing);
2. makes **one** ``score`` call for the samples' plain texts and every family's
   :meth:`~ScoringDetector.companion_texts` (e.g. the lower-cased texts of ``lowercase``),
   unless every family declares ``needs_scores = False`` (SaMIA: generation only, so it
   runs on backends without log-probabilities; its ``plain`` scores are then empty);
3. calls each family's :meth:`~ScoringDetector.score` with the plain scores and its own
   companions' scores (ReCaLL's: the texts after its prefix); a family may make its own calls
   on a secondary model (``ctx.reference``);
4. merges each :class:`SampleResult` into the sample's record: scores in the shared
   :class:`~recitation.detect.whitebox.DetectorScore` schema, ``"<family>: <error>"`` in
   ``errors``, extra fields (``n_tokens``, ``recall_prefix``, ``dcpdd``) at the top level.

A plug-in instance lives as long as its job (one per job), so what it computes once (ReCaLL's
prefix, DC-PDD's corpus counts) is kept on it. The built-in families' options live in
:class:`recitation.detect.job.DetectParams` (``ctx.params``); a family of another package
declares its own (``MethodInfo.option_model``) and reads them as ``ctx.options(family)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from recitation.detect.samples import Sample
from recitation.models.base import Model, TokenScores
from recitation.models.tokenizer import Tokenizer
from recitation.records import ScoreRecord

DetectorScore = ScoreRecord
"""The one output schema every detector shares: the record itself
(:class:`recitation.records.ScoreRecord`), so a score is one type from the detector to the
report; ``DetectorScore(sample_id, detector, score, higher_means_member)``."""


@dataclass
class SampleResult:
    """What a family found for one sample (no scores and no error: nothing to record)."""

    scores: list[DetectorScore] = field(default_factory=list)
    error: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


class ScoringContext(Protocol):
    """What a plug-in may use of its job (``DetectJob`` implements it)."""

    @property
    def params(self) -> Any:
        """The job's ``DetectParams`` (each family reads its own options)."""

    @property
    def seed(self) -> int: ...

    def samples(self) -> list[Sample]:
        """Every sample of the run, members then controls (not only this chunk's)."""

    def options(self, family: str) -> Any:
        """The family's own options, typed: an instance of the pydantic model its metadata
        declares (``MethodInfo.option_model``), from ``--detector-option FAMILY.key=value``
        (defaults for the keys not given)."""

    def reference(self, target: Model) -> Model | None:
        """The reference model (``params.reference_model``) sharing the run's store, cache
        and budget, or None when none is configured."""

    def target_tokenizer(self, model: Model) -> Tokenizer | None:
        """The target's tokenizer: its backend's own, else the one the user named
        (``params.tokenizer``), else None."""


class ScoringDetector(Protocol):
    """A score-based detector family."""

    family: str  # its MethodInfo.family

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        """Texts to score in the job's one shared call, after the plain texts."""

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        """Sample id -> result (samples without an entry get nothing recorded)."""

