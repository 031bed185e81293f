"""SimpleTrace (propme-simpletrace.md, "The PROPME Framework"; NOTES.md): a generation traced
to the corpus documents it copies.

1. **Maximal spans.** From every word start ``i`` of the generation, the longest prefix of
   the generation from ``i`` that occurs in the corpus (:meth:`QueryEngine.prefix_lengths`:
   one suffix-array search and the common prefix with the two neighbouring suffixes). In text
   mode the query stops after the first sentence end (``. ! ? \\n``) — a span holds a sentence
   end only as its last unit — and the span backs off to a word boundary and off trailing
   whitespace. A span ending where an earlier span already ends or before is not maximal and
   is dropped, as are spans shorter than ``min_len`` units.
   Starts whose match is implied (an earlier start of the same sentence matched to its
   end) are not searched (:func:`prefix_lengths`).
2. **Rarity filter.** Keep the ``K = max(ceil(0.05 L), 1)`` spans with the lowest joint
   unigram probability, a sum of ``log(count / corpus tokens)`` (the product underflows).
   ``L`` is the generation's length in tokens (token-level index) or words (byte-level).
3. **Documents.** For each kept span, the first ``max_docs`` occurrences in the suffix array
   (duplicates can fill the cap; NOTES), each document labelled ``exact_full_raw`` (the
   whole generation is in it, aligned on the span), ``exact_full_normalized`` (the same after
   NFKC and collapsing whitespace) or ``partial`` (the span only).
4. **Merging.** Kept spans that overlap are merged greedily, left to right, into segments.

Lengths are in **units**: tokens for a token-level index, words for a byte-level one.
"""

from __future__ import annotations

import math
import unicodedata

from recitation.trace import propme_rule
from recitation.trace.index import CorpusIndex
from recitation.trace.trace_types import (
    DEFINITIONS,
    TIERS,
    Definitions,
    DocMatch,
    GenerationTrace,
    Span,
    Tier,
    TraceConfig,
    metadata_of,
)
from recitation.trace.units import Units, byte_units, token_units

__all__ = ["DEFINITIONS", "TIERS", "Definitions", "DocMatch", "GenerationTrace", "SimpleTrace",
           "Span", "Tier", "TraceConfig", "maximal_spans", "merge", "metadata_of", "normalize",
           "prefix_lengths", "rarest", "retrieve", "span_logprob", "unigram_logprobs",
           "units_of"]


def units_of(index: CorpusIndex, text: str) -> Units:
    if index.byte_level:
        return byte_units(text)
    return token_units(index.ids(text), index.text)


def normalize(text: str) -> str:
    """NFKC, whitespace collapsed to single spaces, stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).split())  # split(): str.isspace


def maximal_spans(index: CorpusIndex, u: Units, cfg: TraceConfig) -> list[tuple[int, int]]:
    """Step 1: ``(start, end)`` of the maximal spans, by start."""
    if cfg.definitions == "propme":
        return propme_rule.propme_spans(index, u, cfg)
    n = len(u)
    starts = list(u.starts)
    ends = [u.next_end[a] if cfg.text_mode else n for a in starts]
    lengths = prefix_lengths(index, list(u.ids), starts, ends)
    spans: list[tuple[int, int]] = []
    last = 0
    for a, length in zip(starts, lengths, strict=True):
        e = a + length
        while e > a and (not u.boundary[e] or u.space[e - 1]):
            e -= 1
        size = (e - a) if not index.byte_level else u.words(a, e)
        if e > last and e > a and size >= cfg.min_len:
            spans.append((a, e))
            last = e
    return spans


def prefix_lengths(index: CorpusIndex, ids: list[int], starts: list[int],
                   ends: list[int]) -> list[int]:
    """The longest prefix in the corpus of each ``ids[start:end]``, as
    :meth:`QueryEngine.prefix_lengths`, without searching for what is already known: once
    the match from a start reaches its ``end``, the match from every later start with the
    same ``end`` reaches it too (a substring of an occurrence occurs). The starts of each run
    of equal ends are searched in rounds, one batched engine call per round."""
    out: list[int | None] = [None] * len(starts)
    nxt = [i for i in range(len(starts)) if i == 0 or ends[i] != ends[i - 1]]
    while nxt:
        found = index.engine.prefix_lengths(ids, [starts[i] for i in nxt],
                                            [ends[i] for i in nxt])
        pending = []
        for i, length in zip(nxt, found, strict=True):
            out[i] = length
            j = i + 1
            if starts[i] + length >= ends[i]:
                while j < len(starts) and ends[j] == ends[i]:
                    out[j] = ends[j] - starts[j]
                    j += 1
            elif j < len(starts) and ends[j] == ends[i]:
                pending.append(j)
        nxt = pending
    return [length for length in out if length is not None]


def span_logprob(ids: tuple[int, ...], logp: dict[int, float]) -> float:
    return sum(logp.get(t, -1e4) for t in ids)


def unigram_logprobs(counts: dict[int, int]) -> dict[int, float]:
    """Each token's ``log(count / corpus tokens)`` from the index's unigram counts."""
    total = sum(counts.values())
    return {t: math.log(c) - math.log(total) for t, c in counts.items() if c > 0}


def rarest(spans: list[Span], units: int, rarity: float) -> list[Span]:
    """Step 2: the ``max(ceil(rarity * units), 1)`` spans of lowest probability, by start."""
    k = max(math.ceil(rarity * units), 1)
    keep = sorted(spans, key=lambda s: (s.logprob, s.start))[:k]
    return sorted(keep, key=lambda s: s.start)


def merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Step 4: overlapping ``(start, end)`` intervals merged greedily, left to right."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _tier(index: CorpusIndex, u: Units, norm: str, shard: int, rank: int, a: int) -> Tier:
    """The tier of the document holding the span's occurrence at ``rank``: the generation
    aligned on the span (its start ``a`` units before the occurrence) is compared raw, then
    normalized (``norm``: the generation normalized) within a window with slack."""
    n = len(u)
    w = index.engine.doc_by_rank(shard, rank, max(0, n - 2 * a), a)  # [occ - a, occ - a + n)
    if w.needle_offset == a and w.token_ids[:n] == u.ids:
        return "exact_full_raw"
    slack = n // 4 + 16
    w = index.engine.doc_by_rank(shard, rank, n - a + slack, a + slack)
    if norm in normalize(index.text(w.token_ids)):
        return "exact_full_normalized"
    return "partial"


def retrieve(index: CorpusIndex, u: Units, text: str, a: int, b: int, max_docs: int,
             known: dict[int, DocMatch] | None = None,
             norm: str | None = None) -> tuple[int, tuple[DocMatch, ...]]:
    """Step 3: the span's corpus count and its documents (the first ``max_docs`` occurrences),
    each with its tier. ``known``: documents already found fully matching this generation
    (through another span), not compared again; ``norm``: ``normalize(text)`` if known."""
    known = {} if known is None else known
    norm = normalize(text) if norm is None else norm
    found = index.engine.find(list(u.ids[a:b]))
    out: dict[int, DocMatch] = {}
    taken = 0
    for shard, (lo, hi) in enumerate(found.segments):
        for rank in range(lo, min(hi, lo + max_docs - taken)):
            taken += 1
            w = index.engine.doc_by_rank(shard, rank, b - a, 0)
            if w.doc_ix in known:
                out[w.doc_ix] = known[w.doc_ix]
                continue
            tier = _tier(index, u, norm, shard, rank, a)
            prev = out.get(w.doc_ix)
            if prev is None or TIERS.index(tier) < TIERS.index(prev.tier):
                out[w.doc_ix] = DocMatch(w.doc_ix, tier, metadata_of(w.metadata))
            if tier == "exact_full_raw":
                known[w.doc_ix] = out[w.doc_ix]
    return found.count, tuple(out.values())


class SimpleTrace:
    """Traces generations against one opened index (unigram probabilities computed once)."""

    def __init__(self, index: CorpusIndex, config: TraceConfig | None = None) -> None:
        self.index = index
        self.config = config or TraceConfig()
        counts = index.unigram_counts()  # read once: both definitions' rarity from them
        self.logp = unigram_logprobs(counts)
        self.probs: dict[int, float] = {}
        if self.config.definitions == "propme":
            self.probs = propme_rule.unigram_probs(counts)

    def trace(self, text: str) -> GenerationTrace:
        idx, cfg = self.index, self.config
        u = units_of(idx, text)
        length = len(u.starts) if idx.byte_level else len(u)
        unit = "words" if idx.byte_level else "tokens"
        found = maximal_spans(idx, u, cfg)
        spans = [Span(a, b, u.words(a, b) if idx.byte_level else b - a,
                      idx.text(u.ids[a:b]), span_logprob(u.ids[a:b], self.logp))
                 for a, b in found]
        if cfg.definitions == "propme":
            return self._propme(text, u, spans, length, unit, len(found))
        kept = []
        known: dict[int, DocMatch] = {}
        norm = normalize(text)
        for s in rarest(spans, length, cfg.rarity):
            count, docs = retrieve(idx, u, text, s.start, s.end, cfg.max_docs, known, norm)
            kept.append(Span(s.start, s.end, s.length, s.text, s.logprob, count, docs))
        segments = merge([(s.start, s.end) for s in kept])
        return GenerationTrace(text, length, unit, tuple(kept), tuple(segments), len(found))

    def _propme(self, text: str, u: Units, spans: list[Span], length: int, unit: str,
                candidates: int) -> GenerationTrace:
        """Steps 2-4 as the authors compute them (:mod:`recitation.trace.propme_rule`)."""
        pr = propme_rule
        idx, cfg = self.index, self.config
        kept = []
        for s in pr.rarest(spans, u.ids, self.probs, length, cfg.rarity):
            count, docs = pr.retrieve(idx, u, text, s.start, s.end, cfg)
            kept.append(Span(s.start, s.end, s.length, s.text, s.logprob, count, docs))
        segs = pr.segments_with_docs(kept, cfg.max_docs)
        return GenerationTrace(
            text, length, unit, tuple(kept), tuple((a, b) for a, b, _ in segs), candidates,
            segment_docs=tuple(d for _, _, d in segs),
            segment_lengths=tuple(u.words(a, b) if idx.byte_level else b - a
                                  for a, b, _ in segs))
