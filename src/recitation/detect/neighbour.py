"""The neighbourhood comparison attack (Mattern et al., 2023, "Membership Inference Attacks
against Language Models via Neighbourhood Comparison", Findings of ACL), as MIMIR computes
its score (``mimir/attacks/neighborhood.py``), with neighbours made offline.

    neighbourhood(x) = NLL(x) - mean over the neighbours x~ of NLL(x~)

NLL is the mean token negative log-likelihood (as ``loss``). A text the model was trained on
is likelier than texts that differ from it by one word, more so than a text it never saw
whose neighbours are about as likely as itself; so a **lower** score means member. The
comparison with the text's own neighbours replaces the reference model of Carlini et al.:
no other model and no data like the training data are needed.

Neighbours. The paper (and MIMIR's ``BertModel``, strategy "deterministic") makes each
neighbour by replacing **one word** with a candidate of a masked language model (BERT, with
dropout 0.7 on the replaced word's embedding so the word itself is not proposed), keeping
the n candidates BERT finds likeliest; n = 25 as in MIMIR's ``configs/mi.json``. That config
itself uses MIMIR's other strategy, "random" (each neighbour swaps 5% of the BERT tokens,
``pct_swap_bert``, each for its best candidate, and the 25 best-scoring of 1,000 random sets
of positions are kept); ours follows the paper's one-word strategy, not that config. No
masked language model can be downloaded here, so ours are made by the toolkit's offline
perturbation (:func:`recitation.detect.perturb.synonym_substitute`, WordNet): each
neighbour replaces one content word with one of its first three WordNet synonyms (case
kept), and the likeliest candidates are approximated by WordNet's sense order: every word's
first synonym comes before any word's second, and within a rank the positions are taken in
a seeded order. A text with fewer candidates than n gets all it has (the count is
recorded); one with none gets an error, not a score. Differences: docs/detection.md.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from recitation.detect.perturb import _match_case, synonym_candidates
from recitation.detect.samples import Sample
from recitation.detect.scoring import DetectorScore, SampleResult, ScoringContext
from recitation.detect.whitebox import mean_nll
from recitation.methods import Access, Calls, MethodInfo
from recitation.models.base import Model, TokenScores

DEFAULT_NEIGHBOURS = 25
"""MIMIR's ``n_perturbation_list: [25]`` (configs/mi.json; its strategy there is "random",
not the one-word strategy we follow: see the module docstring)."""
SYNONYMS_PER_WORD = 3  # as the synonym perturbation of PEARL


def neighbours(text: str, n: int, seed: int,
               synonyms: Callable[[str], Sequence[str]] | None = None) -> list[str]:
    """Up to ``n`` distinct texts that each differ from ``text`` in one word: rank r of
    every word's synonyms before rank r + 1; positions within a rank in a seeded order."""
    if n < 1:
        raise ValueError(f"the neighbourhood attack needs at least one neighbour, got {n}")
    if synonyms is None:
        from recitation.detect.wordnet import WordNet

        synonyms = WordNet.load().synonyms
    cands = synonym_candidates(text, synonyms)
    order = list(range(len(cands)))
    random.Random(f"neighbour:{seed}").shuffle(order)
    out: list[str] = []
    seen = {text}
    for rank in range(SYNONYMS_PER_WORD):
        for i in order:
            m = cands[i]
            options = list(synonyms(m.group().lower()))[:SYNONYMS_PER_WORD]
            if rank >= len(options):
                continue
            alt = text[: m.start()] + _match_case(options[rank], m.group()) + text[m.end():]
            if alt not in seen:
                seen.add(alt)
                out.append(alt)
                if len(out) == n:
                    return out
    return out


def neighbourhood_score(plain: TokenScores, neighbour_scores: Sequence[TokenScores]) -> float:
    """NLL(x) minus the mean NLL of its neighbours (lower means member)."""
    if not neighbour_scores:
        raise ValueError("no neighbours (no word of the text has a WordNet synonym)")
    nlls = [mean_nll(s) for s in neighbour_scores]
    return mean_nll(plain) - sum(nlls) / len(nlls)


class NeighbourhoodDetector:
    """The ``neighbourhood`` family (a plug-in of the detect job): each sample's neighbours
    scored in the job's shared call (or read from a signal store)."""

    family = "neighbourhood"

    def __init__(self) -> None:
        self._made: dict[tuple[str, str], list[str]] = {}

    def _of(self, ctx: ScoringContext, s: Sample) -> list[str]:
        key = (s.id, s.text)
        if key not in self._made:
            self._made[key] = neighbours(s.text, ctx.params.neighbours, ctx.seed)
        return self._made[key]

    def companion_texts(self, ctx: ScoringContext, samples: Sequence[Sample]) -> list[str]:
        return [t for s in samples for t in self._of(ctx, s)]

    async def score(self, ctx: ScoringContext, samples: Sequence[Sample],
                    plain: Sequence[TokenScores], companions: Sequence[TokenScores],
                    model: Model) -> dict[str, SampleResult]:
        out: dict[str, SampleResult] = {}
        start = 0
        for i, s in enumerate(samples):
            k = len(self._of(ctx, s))
            mine, start = companions[start : start + k], start + k
            try:
                v = neighbourhood_score(plain[i], mine)
            except ValueError as e:
                out[s.id] = SampleResult(error=str(e))
                continue
            out[s.id] = SampleResult([DetectorScore(s.id, "neighbourhood", v, False)],
                                     fields={"neighbours": k})
        if start != len(companions):
            raise RuntimeError(f"neighbourhood: {len(companions)} companion scores for "
                               f"{start} neighbours")
        return out


def _calls(p: Mapping[str, Any]) -> Calls:
    """The text and each neighbour: one scored text apiece (labels, counted by Calls)."""
    n = int(p.get("neighbours", DEFAULT_NEIGHBOURS))
    return Calls(score=frozenset({"text", *(f"neighbour {i + 1}" for i in range(n))}))


NEIGHBOURHOOD = MethodInfo(
    name="neighbourhood", kind="detector", title="neighbourhood comparison",
    paper="Mattern et al. 2023 (neighbourhood comparison, Findings of ACL), as MIMIR's "
    "neighborhood attack; neighbours from WordNet, not BERT",
    access=frozenset({Access.LOGPROBS}), writes=("neighbourhood", "neighbours"),
    calls=_calls, calls_formula="1 + neighbours scores (the text, shared; each one-word "
    "neighbour)", job="detect", family="neighbourhood",
    summary="NLL(x) - mean NLL of its one-word neighbours (each a content word replaced by a "
    "WordNet synonym; default 25, MIMIR's); lower means member",
    runner="recitation.detect.neighbour:NeighbourhoodDetector", options=("neighbours",))
