"""SimpleTrace's records: its configuration, a generation's trace, its spans and their
documents (both definitions, :mod:`recitation.trace.simpletrace` and
:mod:`recitation.trace.propme_rule`, build them)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Tier = Literal["exact_full_raw", "exact_full_normalized", "partial"]
TIERS: tuple[Tier, ...] = ("exact_full_raw", "exact_full_normalized", "partial")


Definitions = Literal["propme", "recitation"]
DEFINITIONS: tuple[str, ...] = get_args(Definitions)


@dataclass(frozen=True)
class TraceConfig:
    rarity: float = 0.05  # K = max(ceil(rarity * L), 1)
    max_docs: int = 10  # documents retrieved per kept span
    min_len: int = 1  # shortest span kept, in units
    text_mode: bool = True  # no interior sentence end
    definitions: Definitions = "recitation"  # ours; "propme": the authors' computation
    seed: int = 0  # propme: the draw of each span's documents


@dataclass(frozen=True)
class DocMatch:
    doc_ix: int
    tier: Tier
    metadata: dict[str, Any]
    nv: float | None = None  # propme: NVR of the generation in this document's window
    nv_matched: int = 0


@dataclass(frozen=True)
class Span:
    start: int  # index units (bytes or tokens) into the generation
    end: int
    length: int  # units: tokens, or words for a byte-level index
    text: str
    logprob: float  # joint unigram log-probability
    count: int = 0
    docs: tuple[DocMatch, ...] = ()


@dataclass(frozen=True)
class GenerationTrace:
    text: str
    units: int  # L
    unit: str  # "tokens" or "words"
    spans: tuple[Span, ...]  # kept spans, by start
    segments: tuple[tuple[int, int], ...]  # merged kept spans (index units)
    candidates: int = 0  # maximal spans before the rarity filter
    extra: dict[str, Any] = field(default_factory=dict)
    # propme: each merged segment's documents (its spans' documents under the group's
    # budget, ceil(max_docs / spans merged) each) and its length in units
    segment_docs: tuple[tuple[DocMatch, ...], ...] = ()
    segment_lengths: tuple[int, ...] = ()

    @property
    def longest(self) -> int:
        return max((s.length for s in self.spans), default=0)

    def docs(self) -> dict[int, DocMatch]:
        """Each retrieved document once, with its best tier."""
        best: dict[int, DocMatch] = {}
        for s in self.spans:
            for d in s.docs:
                if d.doc_ix not in best or TIERS.index(d.tier) < TIERS.index(
                        best[d.doc_ix].tier):
                    best[d.doc_ix] = d
        return best

    def has_tier(self, *tiers: Tier) -> bool:
        return any(d.tier in tiers for d in self.docs().values())


def metadata_of(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line) if line else {}
    except ValueError:
        return {"raw": line}
    return value if isinstance(value, dict) else {"raw": value}
