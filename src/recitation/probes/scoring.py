"""Scoring variants of name cloze and CSG for white-box models (ours, not the paper's).

The paper asks the model to *generate* the name (``<name>..</name>``, ``<speaker>..</speaker>``)
and counts an exact match. A small model often gives no parsable answer at all (SmolLM2-135M
gives none before or after fine-tuning on the very passages: docs/probes.md), so the probe
then measures instruction following, not memory. With ``scoring="logprob"`` each candidate
name is filled in and the whole text scored by the model (the sum of its token
log-probabilities); the most likely candidate is the prediction. The texts of one item differ
only in the name, so this ranks the names by the model's joint likelihood of the passage
with each. Candidates: name cloze, every single-word name of the novel's characters (the
answer is one of them); CSG, every name and alias of the novel's non-minor characters plus
the replacement names, appended after the authors' prompt as ``<speaker>NAME</speaker>``.

``scoring="fill"`` (CSG's cloze variant, for white-box models): explicit quotes whose
corrupted passage names the replacement before the mask (``... Mrs Stone ... said [MASK]``);
each candidate is put at the ``[MASK]`` after the passage before it, followed by the word
after the mask (which ends the name), and that text is scored: the ranking is that of log
p(name | the passage before the mask), what a causal model puts at the mask. The context
before the mask points to the replacement (reasoning); a model that remembers the passage
puts the true name there (memorization). Scoring the whole passage instead lets the
replacement's later mentions vote for the replacement (measured: docs/probes.md). The paper
(appendix D) finds the cloze variant of CSG-Memorization alone a usable measure of book
memorization. For name cloze ``fill`` is ``logprob``.

Differences from the paper (docs/probes.md): a closed candidate set (chance is 1 / the
number of candidates, not ~0), no chat template (raw text scored), needs log-probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from recitation.errors import ConfigError
from recitation.models.base import Model

Scoring = Literal["generate", "logprob", "fill"]
SCORINGS: tuple[str, ...] = get_args(Scoring)


def scored(scoring: str) -> bool:
    """True for the white-box variants (``logprob``, ``fill``)."""
    return scoring != "generate"


def require_logprobs(model: Model, probe: str) -> None:
    if not model.capabilities.logprobs:
        raise ConfigError(f"{probe} with a scoring variant needs log-probabilities; backend "
                          f"'{model.backend}' does not offer them (use scoring 'generate')")


async def best_candidates(model: Model, texts: Sequence[Sequence[str]]) -> list[int]:
    """For each item's candidate texts, the index of the most likely one (ties: the first)
    under ``model`` (the sum of its token log-probabilities)."""
    flat = [t for group in texts for t in group]
    if any(not group for group in texts):
        raise ConfigError("a probe item has no candidate names")
    scores = await model.score(flat)
    out, k = [], 0
    for group in texts:
        lp = [sum(s.logprobs) for s in scores[k:k + len(group)]]
        k += len(group)
        out.append(max(range(len(lp)), key=lambda i: (lp[i], -i)))
    return out
