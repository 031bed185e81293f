"""SaMIA (Kaneko et al., 2024, "Sampling-based Pseudo-Likelihood for Membership Inference
Attacks"), as the authors' code computes it (nlp-titech/samia: ``sampling.py``,
``eval_samia.py``): a black-box detector for models that give text but no log-probabilities.

For a sample of n words (split on any whitespace, as theirs ``get_prefix``):

* the prefix is its first ``int(n * 0.5)`` words joined by single spaces;
* the model continues the prefix ``samples`` times (default 10) by sampling at temperature
  1 among the 50 likeliest tokens (``top_k=50, top_p=1``), up to 1,024 tokens prompt
  included (``max_length=1024``; here ``1024 - `` the prompt's estimated tokens new tokens);
* each candidate is the prompt followed by its continuation (the authors decode the whole
  sequence), split on single spaces with empty strings dropped (``get_suffix``), less its
  first ``round(n * 0.5)`` words; the reference is the sample split the same way, less as
  many;
* ``samia`` is the mean over the candidates of ROUGE-1 recall (unigram counts clipped to the
  reference's, over the reference's length); ``samia_zlib`` multiplies each candidate's
  recall by the zlib-compressed length of its words joined by spaces. Higher means member.

The authors' ``text_length`` is the WikiMIA length bucket (32, 64, ...); here it is the
sample's own word count, so the candidate and reference drop the same number of words as
the prompt holds (the two coincide on WikiMIA). Differences are listed in docs/detection.md.

``samia_words`` chooses how the candidates and the reference are split into words:
``"authors"`` (the default) as ``get_suffix``, ``split(" ")``, so a newline joins the words on
either side of it into one and hard-wrapped text loses words from the comparison (and the
count of words dropped, taken from the whitespace split, falls further into the second half);
``"whitespace"`` (ours) splits on any whitespace, as the prefix and ``n`` are counted.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from recitation.corpus.tokenize import estimate_tokens
from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore, SampleResult, ScoringContext
from recitation.methods import Access, Calls, MethodInfo
from recitation.models.base import GenerationRequest, Model, TokenScores

DEFAULT_SAMPLES = 10
PREFIX_RATIO = 0.5
MAX_LENGTH = 1024  # prompt and continuation, as the authors' generate(max_length=1024)
TOP_K = 50
SamiaWords = Literal["authors", "whitespace"]
DEFAULT_WORDS: SamiaWords = "authors"


def prefix_of(text: str, ratio: float = PREFIX_RATIO) -> str:
    """The first ``int(n * ratio)`` whitespace-separated words, joined by spaces."""
    words = text.split()
    return " ".join(words[: int(len(words) * ratio)])


def words_of(text: str, words: SamiaWords = DEFAULT_WORDS) -> list[str]:
    """``text``'s words: split on single spaces, empty strings dropped (``"authors"``: a
    newline or tab stays inside a word), or on any whitespace (``"whitespace"``)."""
    if words == "whitespace":
        return text.split()
    if words == "authors":
        return [w for w in text.split(" ") if w != ""]
    raise ValueError(f"samia_words: {words!r} is not 'authors' or 'whitespace'")


def suffix_words(text: str, ratio: float, length: int, words: SamiaWords = DEFAULT_WORDS
                 ) -> list[str]:
    """``text``'s words (:func:`words_of`), less its first ``round(length * ratio)``
    (Python's rounding, as theirs)."""
    return words_of(text, words)[round(length * ratio):]


def rouge1_recall(candidate: Sequence[str], reference: Sequence[str]) -> float:
    """Unigram overlap (counts clipped) over the reference's length; 0 when either is empty."""
    if not candidate or not reference:
        return 0.0
    overlap = Counter(reference) & Counter(candidate)
    return sum(overlap.values()) / len(reference)


def samia_scores(text: str, continuations: Sequence[str], ratio: float = PREFIX_RATIO,
                 words: SamiaWords = DEFAULT_WORDS) -> dict[str, float]:
    """``samia`` and ``samia_zlib`` of one sample from its sampled continuations, the
    candidates and the reference split into words as ``words`` says."""
    if not continuations:
        raise ValueError("SaMIA needs at least one sampled continuation")
    n = len(text.split())
    prefix = prefix_of(text, ratio)
    ref = suffix_words(text, ratio, n, words)
    plain, zipped = [], []
    for cont in continuations:
        cand = suffix_words(prefix + cont, ratio, n, words)
        r = rouge1_recall(cand, ref)
        plain.append(r)
        zipped.append(r * len(zlib.compress(" ".join(cand).encode("utf-8"))))
    return {"samia": sum(plain) / len(plain), "samia_zlib": sum(zipped) / len(zipped)}


class SamiaDetector:
    """The ``samia`` family: ``samia_samples`` sampled continuations of each sample's
    prefix (generation only: no log-probabilities needed)."""

    family = "samia"
    needs_scores = False  # the job's shared score call is not needed

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        return []

    def requests(self, ctx: ScoringContext, sample: Sample) -> list[GenerationRequest]:
        p = ctx.params
        prefix = prefix_of(sample.text, PREFIX_RATIO)
        room = p.samia_max_tokens or max(1, MAX_LENGTH - estimate_tokens(prefix))
        return [GenerationRequest(prompt=prefix, max_tokens=room, temperature=1.0, top_p=1.0,
                                  top_k=TOP_K, seed=_seed(ctx.seed, sample.id, i))
                for i in range(p.samia_samples)]

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        reqs = [self.requests(ctx, s) for s in samples]
        gens = await model.generate([r for rs in reqs for r in rs])
        out: dict[str, SampleResult] = {}
        start = 0
        for s, rs in zip(samples, reqs, strict=True):
            texts = [g.text for g in gens[start:start + len(rs)]]
            start += len(rs)
            try:
                vals = samia_scores(s.text, texts, words=ctx.params.samia_words)
            except ValueError as e:
                out[s.id] = SampleResult(error=str(e))
                continue
            out[s.id] = SampleResult([DetectorScore(s.id, k, v, True) for k, v in vals.items()],
                                     fields={"samia_continuations": len(texts)})
        return out


def _seed(seed: int, sample_id: str, i: int) -> int:
    """A stable seed per (run seed, sample, draw): sampled calls are cached and resumed."""
    h = hashlib.sha256(f"samia:{seed}:{sample_id}:{i}".encode()).hexdigest()
    return int(h[:8], 16)


def _calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=int(p.get("samia_samples", DEFAULT_SAMPLES)))


SAMIA = MethodInfo(
    name="samia", kind="detector", title="SaMIA",
    paper="Kaneko et al. 2024 (SaMIA: sampling-based pseudo-likelihood); the authors' code "
    "nlp-titech/samia", access=frozenset({Access.GENERATE}), writes=("samia", "samia_zlib"),
    calls=_calls, calls_formula="samia_samples generations (default 10) per sample",
    job="detect", family="samia",
    summary="ROUGE-1 recall of sampled continuations of the first half against the true "
    "second half (and x zlib length); higher means member; black-box",
    runner="recitation.detect.samia:SamiaDetector",
    options=("samia_samples", "samia_max_tokens", "samia_words"))
