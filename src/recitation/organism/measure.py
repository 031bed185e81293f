"""How much a checkpoint has memorized, per dose: the two checks the organism must pass.

* LOSS: the mean token negative log-likelihood of each passage under the checkpoint
  (``LocalModel.score``); members should score lower than non-members, the more so the
  higher their dose. Reported as ROC AUC of ``-NLL`` (members of one dose vs all
  non-members).
* Verbatim continuation: the checkpoint is given a passage's first ``prefix_tokens`` tokens
  and decodes greedily; the passage counts as extracted when the continuation reproduces
  the true next ``suffix_tokens`` tokens exactly (compared as text, whitespace runs
  collapsed).

This is the organism's own acceptance check; the full benchmark (every detector and
extractor, intervals, costs) is ``recitation bench groundtruth``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from recitation.models.base import GenerationRequest
from recitation.organism.data import Passage

PREFIX_TOKENS = 32
SUFFIX_TOKENS = 32


@dataclass(frozen=True)
class PassageProbe:
    id: str
    dose: int
    nll: float
    verbatim: bool
    continuation: str


def _norm(text: str) -> str:
    return " ".join(text.split())


def prefix_and_truth(tok: Any, text: str, prefix_tokens: int,
                     suffix_tokens: int) -> tuple[str, str]:
    """The passage cut after its first ``prefix_tokens`` tokens, and the text of the next
    ``suffix_tokens`` tokens (character offsets of the tokenizer, so the prompt is the
    passage's own text)."""
    offs = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if len(offs) <= prefix_tokens:
        raise ValueError(f"passage of {len(offs)} tokens is too short for a "
                         f"{prefix_tokens}-token prefix")
    cut = int(offs[prefix_tokens - 1][1])
    end = int(offs[min(len(offs), prefix_tokens + suffix_tokens) - 1][1])
    return text[:cut], text[cut:end]


def probe(model: Any, passages: Sequence[Passage], *, prefix_tokens: int = PREFIX_TOKENS,
          suffix_tokens: int = SUFFIX_TOKENS) -> list[PassageProbe]:
    """LOSS and greedy verbatim continuation of every passage under ``model`` (a loaded
    :class:`~recitation.models.local.LocalModel`)."""
    tok = model.load().tokenizer
    scores = model.score_sync([p.text for p in passages])
    cuts = [prefix_and_truth(tok, p.text, prefix_tokens, suffix_tokens) for p in passages]
    gens = model.generate_sync([GenerationRequest(prompt=pre, max_tokens=suffix_tokens + 4)
                                for pre, _ in cuts])
    out = []
    for p, s, (_, truth), g in zip(passages, scores, cuts, gens, strict=True):
        nll = -sum(s.logprobs) / max(1, len(s.logprobs))
        out.append(PassageProbe(p.id, p.dose, nll, _norm(g.text).startswith(_norm(truth)),
                                g.text))
    return out


def by_dose(probes: Sequence[PassageProbe]) -> list[dict[str, Any]]:
    """One row per dose (0 = non-members): count, mean NLL, AUC of -NLL against the
    non-members (members only), share extracted verbatim."""
    from recitation.metrics.stats import roc_auc

    nonmember = [p.nll for p in probes if p.dose == 0]
    rows = []
    for dose in sorted({p.dose for p in probes}):
        group = [p for p in probes if p.dose == dose]
        nll = [p.nll for p in group]
        auc = (roc_auc([1] * len(nll) + [0] * len(nonmember),
                       [-x for x in nll + nonmember]) if dose and nonmember else None)
        rows.append({"dose": dose, "n": len(group), "mean_nll": sum(nll) / len(nll),
                     "loss_auc": auc,
                     "verbatim": sum(p.verbatim for p in group) / len(group)})
    return rows


def measure_checkpoint(path: Path | str, passages: Sequence[Passage], *,
                       threads: int | None = None) -> dict[str, Any]:
    """Probe the checkpoint at ``path`` (a transformers directory or model spec)."""
    from recitation.models.local import LocalModel

    model = LocalModel(str(path), threads=threads)
    probes = probe(model, passages)
    return {"by_dose": by_dose(probes), "passages": [asdict(p) for p in probes]}
