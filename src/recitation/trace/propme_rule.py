"""SimpleTrace as the PROPME authors compute it (``--definitions propme``; N-essuno/PropMe
``03_tracing/simple_trace.py``, text mode: ``trace_generation``, ``_keep_span``,
``_retrieve_docs_for_ranks``), step by step:

1. **Spans.** From every start but the last unit, the whole rest of the generation is looked
   up; found, the span runs to the end. Not found, the span is the longest prefix of that rest
   found anywhere in the ``5 L``-unit window (``get_doc_by_rank(max_disp_len = 5 L)``) of the
   suffix-array entry at its insertion point in each shard (the next entry only: a shorter
   span than the true longest match when the previous entry shares more). A span is dropped
   (never shortened) when it starts on a unit without the word marker, when the unit after
   it lacks the marker, or (text mode) when its text holds one of ``! . ? \\n`` before its
   last character. Then the spans reaching further right than every span before them.
2. **Rarity.** The ``K = max(ceil(0.05 L), 1)`` spans of lowest joint unigram probability, a
   product of ``count / corpus tokens`` in span order (ties: the earlier span).
3. **Documents.** Up to ``max_docs`` occurrences of each span drawn at random (theirs
   unseeded; ours seeded by ``seed``, the generation and the span), each document once, with
   the ``5 L``-unit window around the occurrence: its tier is ``exact_full_raw`` when the
   generation is a substring of the decoded window, else ``partial``; its NVR is the
   generation's in the decoded window.
4. **Segments.** Kept spans merged while the next starts before the segment's end; each span
   of a segment gives it ``ceil(max_docs / spans merged)`` documents.

**The word marker.** Theirs tests the token string's first character for SentencePiece's
``▁`` (a space before the token). Ours reads the same fact from the token's text in context
(:func:`recitation.trace.units.token_texts`): the token begins with a space character
(U+0020). On a SentencePiece index the two agree: a newline or tab piece (``<0x0A>``) has no
marker, so a span never ends before a line break nor starts after one; the first token
counts as marked (SentencePiece gives it ``▁``). On a byte-level BPE index (GPT-2's ``Ġ``)
their literal test keeps no span at all, every metric 0; ours keeps the spans their rule means
(``Ġ`` is the same space). On recitation's byte-level index the units are bytes: a span
starts at a word start that follows a space (or the start), and must be followed by a space
(or the end).
"""

from __future__ import annotations

import math
import random
from typing import Any

from recitation.errors import CorpusError
from recitation.trace.index import CorpusIndex
from recitation.trace.nvrecall import nv_recall
from recitation.trace.trace_types import DocMatch, Span, Tier, TraceConfig, metadata_of
from recitation.trace.units import Units, token_texts

SENTENCE_END_CHARS = "!.?\n"


def window_len(units: int) -> int:
    """Their ``max_doc_toks``: documents are read ``5 L`` units around the occurrence."""
    return 5 * units


def marked(index: CorpusIndex, u: Units) -> list[bool]:
    """Whether each unit carries the word marker (module docstring)."""
    if index.byte_level:
        return [b == 0x20 for b in u.ids]
    return [p.startswith(" ") for p in token_texts(list(u.ids), index.text)]


def longest_prefix_in(q: list[int], doc: tuple[int, ...]) -> int:
    """Their ``compute_longest_prefix``: the longest prefix of ``q`` found anywhere in ``doc``."""
    best, n = 0, len(q)
    for i, t in enumerate(doc):
        if t != q[0]:
            continue
        k = 1
        while k < n and i + k < len(doc) and doc[i + k] == q[k]:
            k += 1
        best = max(best, k)
        if best == n:
            break
    return best


def insertion_lengths(index: CorpusIndex, ids: list[int], starts: list[int]) -> list[int]:
    """Step 1's lookup, per start: ``n - start`` when the rest of the generation is in the
    corpus (and for every later start: a substring of an occurrence occurs), else the longest
    prefix of it in the window of each shard's insertion point."""
    n, m = len(ids), window_len(len(ids))
    out: list[int] = []
    whole = False
    for a in starts:
        q = ids[a:]
        if not whole:
            found = index.engine.find(q)
            whole = found.count > 0
        if whole:
            out.append(n - a)
            continue
        best = 0
        for shard, (lo, _hi) in enumerate(found.segments):
            try:
                w = index.engine.doc_by_rank(shard, lo, (m + 1) // 2 - m // 2, m // 2)
            except CorpusError:  # past the shard's last suffix: no entry to read
                continue
            best = max(best, longest_prefix_in(q, w.token_ids))
        out.append(best)
    return out


def propme_spans(index: CorpusIndex, u: Units, cfg: TraceConfig) -> list[tuple[int, int]]:
    """Step 1: ``(start, end)`` of the spans kept, by start."""
    n = len(u)
    mark = marked(index, u)
    if index.byte_level:
        starts = [a for a in u.starts if a < n - 1 and (a == 0 or mark[a - 1])]
    else:
        starts = [k for k in range(n - 1) if k == 0 or mark[k]]
    lengths = insertion_lengths(index, list(u.ids), starts)
    spans: list[tuple[int, int]] = []
    last = -1
    for a, length in zip(starts, lengths, strict=True):
        e = a + length
        if e <= a or (e < n and not mark[e]):
            continue
        if cfg.text_mode and any(c in SENTENCE_END_CHARS
                                 for c in index.text(u.ids[a:e])[:-1]):
            continue
        size = (e - a) if not index.byte_level else u.words(a, e)
        if e > last and size >= cfg.min_len:
            spans.append((a, e))
            last = e
    return spans


def unigram_probs(counts: dict[int, int]) -> dict[int, float]:
    """Each token's ``count / corpus tokens`` (their ``unigram_probs``), from the index's
    unigram counts."""
    total = sum(counts.values())
    return {t: c / total for t, c in counts.items() if c > 0}


def rarest(spans: list[Span], ids: tuple[int, ...], probs: dict[int, float],
           units: int, rarity: float) -> list[Span]:
    """Step 2: the ``K`` spans of lowest product probability (stable: earlier first)."""
    k = max(math.ceil(rarity * units), 1)
    keyed = [(math.prod(probs.get(t, 1.0) for t in ids[s.start:s.end]), s) for s in spans]
    keep = [s for _, s in sorted(keyed, key=lambda x: x[0])[:k]]
    return sorted(keep, key=lambda s: s.start)


def retrieve(index: CorpusIndex, u: Units, text: str, a: int, b: int,
             cfg: TraceConfig) -> tuple[int, tuple[DocMatch, ...]]:
    """Step 3 for the span ``[a, b)``: its corpus count and documents."""
    found = index.engine.find(list(u.ids[a:b]))
    flat = [(shard, lo, hi) for shard, (lo, hi) in enumerate(found.segments) if hi > lo]
    total = sum(hi - lo for _, lo, hi in flat)
    picks: Any = range(total)
    if total > cfg.max_docs:
        picks = random.Random(f"{cfg.seed}\0{text}\0{a}\0{b}").sample(range(total),
                                                                       cfg.max_docs)
    m = window_len(len(u))
    out: dict[int, DocMatch] = {}
    for k in picks:
        shard, rank = nth(flat, k)
        w = index.engine.doc_by_rank(shard, rank, (m + 1) // 2 - m // 2, m // 2)
        if w.doc_ix in out:
            continue
        window = index.text(w.token_ids)
        tier: Tier = "exact_full_raw" if text and text in window else "partial"
        nv = nv_recall(text, window)
        out[w.doc_ix] = DocMatch(w.doc_ix, tier, metadata_of(w.metadata), nv.recall,
                                 nv.matched)
    return found.count, tuple(out.values())


def nth(flat: list[tuple[int, int, int]], k: int) -> tuple[int, int]:
    """The ``k``-th occurrence of shards' rank ranges ``(shard, lo, hi)``, as (shard, rank)."""
    for shard, lo, hi in flat:
        if k < hi - lo:
            return shard, lo + k
        k -= hi - lo
    raise IndexError(k)


def segments_with_docs(spans: list[Span], max_docs: int
                       ) -> list[tuple[int, int, tuple[DocMatch, ...]]]:
    """Step 4: kept spans (by start) merged while the next starts before the current
    segment's end; each segment's documents are its spans' documents, ``ceil(max_docs /
    spans merged)`` of each (a document found through two spans counts twice, as theirs)."""
    groups: list[list[Span]] = []
    end = -1
    for sp in spans:
        if groups and sp.start < end:
            groups[-1].append(sp)
            end = max(end, sp.end)
        else:
            groups.append([sp])
            end = sp.end
    out = []
    for g in groups:
        budget = math.ceil(max_docs / len(g))
        docs = tuple(d for sp in g for d in sp.docs[:budget])
        out.append((min(sp.start for sp in g), max(sp.end for sp in g), docs))
    return out
