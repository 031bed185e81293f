"""SimpleTrace's aggregate metrics over a batch of traced generations (definitions in
docs/tracing.md).

By default (``definitions="propme"``) the authors' (:func:`propme_aggregate`, over the
merged segments and their documents, with the NVR of :mod:`recitation.trace.nvrecall`). The
rest of this docstring is the ``recitation`` definitions (:func:`aggregate`), a named option:

- **ALS** (average longest span): the mean, over generations with at least one kept span, of
  the longest kept span (units: tokens, or words for a byte-level index);
- **FMR** (full-match ratio): the share of generations with an ``exact_full_raw`` document
  (the whole generation verbatim in a corpus document); ``fmr_normalized`` also counts
  ``exact_full_normalized``;
- **NVR** (near-verbatim recall): per generation, the best over its retrieved documents of
  :func:`nv_recall` of the document window aligned on the generation's longest span; the
  mean over generations, and the share at or above ``nv_threshold``;
- the span-length distribution of kept spans, unique documents, and the share of
  generations whose longest span is at least ``n`` units.

Near-verbatim recall, as the authors' code computes it (NOTES): difflib matching blocks over
normalized words (NFKC, lower case, punctuation removed) of the reference ``R`` (``n``
words) and the candidate; pass 1 keeps blocks of at least ``l1 = clamp(0.15 n, 2, 20)``
words and merges consecutive kept blocks whose gaps are at most ``l1`` words on both sides;
pass 2 keeps merged runs with at least ``l2 = clamp(0.35 n, 4, 100)`` matched words. Recall =
matched words of the kept runs / ``n``. (How blocks merge is not in the notes: this rule is
recitation's choice.)
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recitation.records import TraceAggregate
from recitation.trace.index import CorpusIndex
from recitation.trace.nvrecall import clamp, round_half_up
from recitation.trace.nvrecall import words as nv_words_propme
from recitation.trace.simpletrace import GenerationTrace

_WORD = re.compile(r"\w+")


def nv_words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


@dataclass(frozen=True)
class NearVerbatim:
    recall: float
    matched: int
    reference_words: int
    candidate_words: int


def nv_recall(reference: str, candidate: str) -> NearVerbatim:
    """Near-verbatim recall of ``reference`` by ``candidate`` (module docstring)."""
    ref, cand = nv_words(reference), nv_words(candidate)
    n = len(ref)
    if not n or not cand:
        return NearVerbatim(0.0, 0, n, len(cand))
    l1, l2 = clamp(0.15 * n, 2, 20), clamp(0.35 * n, 4, 100)
    blocks = [b for b in difflib.SequenceMatcher(None, ref, cand, autojunk=False)
              .get_matching_blocks() if b.size >= l1]
    runs: list[list[int]] = []  # [a_end, b_end, matched]
    for b in blocks:
        if runs and 0 <= b.a - runs[-1][0] <= l1 and 0 <= b.b - runs[-1][1] <= l1:
            runs[-1] = [b.a + b.size, b.b + b.size, runs[-1][2] + b.size]
        else:
            runs.append([b.a + b.size, b.b + b.size, b.size])
    matched = sum(r[2] for r in runs if r[2] >= l2)
    return NearVerbatim(matched / n, matched, n, len(cand))


def generation_nv(index: CorpusIndex, trace: GenerationTrace, max_docs: int = 10
                  ) -> NearVerbatim:
    """The best near-verbatim recall over the documents of the longest kept span, each
    document window aligned on the generation and as long as it."""
    if not trace.spans:
        return NearVerbatim(0.0, 0, 0, len(nv_words(trace.text)))
    span = max(trace.spans, key=lambda s: (s.length, -s.start))
    ids = index.ids(trace.text)
    n = len(ids)
    found = index.engine.find(ids[span.start:span.end])
    best = NearVerbatim(0.0, 0, 0, len(nv_words(trace.text)))
    taken = 0
    for shard, (lo, hi) in enumerate(found.segments):
        for rank in range(lo, min(hi, lo + max_docs - taken)):
            taken += 1
            w = index.engine.doc_by_rank(shard, rank, span.end - span.start, n)
            a = max(0, w.needle_offset - span.start)
            ref = index.text(w.token_ids[a:a + n])
            nv = nv_recall(ref, trace.text)
            if nv.recall > best.recall:
                best = nv
    return best


def propme_aggregate(traces: Sequence[GenerationTrace], *, n_span: int = 60,
                     nv_threshold: float = 0.5) -> dict[str, Any]:
    """The batch metrics as the authors' ``evaluate_results`` computes them, over each
    generation's merged segments and their documents (``segment_docs``): ALS the mean over
    **all** generations of the longest segment (0 without one); FMR the share with an
    ``exact_full_raw`` document; ``avg_nv_recall`` the mean NVR over **every** retrieved
    document (``max``, and the share of generations with a document whose NVR is strictly
    above ``nv_threshold``); the share with a segment of at least ``n_span`` units.
    Identical generations count once (theirs keys the results by the generation's text)."""
    traces = list({t.text: t for t in traces}.values())
    total = len(traces)
    docs = [d for t in traces for seg in t.segment_docs for d in seg]
    lengths = [n for t in traces for n in t.segment_lengths]
    by_length: Counter[int] = Counter()  # theirs: documents per segment length
    for t in traces:
        for n, seg in zip(t.segment_lengths, t.segment_docs, strict=True):
            by_length[n] += len(seg)
    recalls = [float(d.nv or 0.0) for d in docs]

    def ratio(k: float) -> float:
        return round_half_up(k / total) if total else 0.0

    def has(t: GenerationTrace, *tiers: str) -> bool:
        return any(d.tier in tiers for seg in t.segment_docs for d in seg)

    return TraceAggregate.model_validate({
        "definitions": "propme",
        "total_generations": total,
        "generations_with_spans": sum(bool(t.segment_lengths) for t in traces),
        "unit": traces[0].unit if traces else "",
        "average_longest_span_length": ratio(sum(max(t.segment_lengths, default=0)
                                                 for t in traces)),
        "full_match_ratio": ratio(sum(has(t, "exact_full_raw") for t in traces)),
        "full_normalized_match_ratio": ratio(sum(
            has(t, "exact_full_raw", "exact_full_normalized") for t in traces)),
        "total_docs": len(docs),
        "avg_nv_recall": round_half_up(sum(recalls) / len(recalls)) if recalls else 0.0,
        "max_nv_recall": max(recalls, default=0.0),
        "nv_recall_threshold": nv_threshold,
        "generations_above_nv_recall_threshold_ratio": ratio(sum(
            any(float(d.nv or 0.0) > nv_threshold for seg in t.segment_docs for d in seg)
            for t in traces)),
        "n_token_span": n_span,
        "generations_with_n_token_span_ratio": ratio(sum(
            any(n >= n_span for n in t.segment_lengths) for t in traces)),
        "total_spans": len(lengths),
        "unique_total_docs": len({d.doc_ix for d in docs}),
        "spans_length_distribution": dict(sorted(by_length.items())),
    }).model_dump()


def propme_generation_nv(t: GenerationTrace) -> NearVerbatim:
    """A generation's best document by NVR (what its record shows)."""
    docs = [d for seg in t.segment_docs for d in seg]
    best = max(docs, key=lambda d: float(d.nv or 0.0), default=None)
    ref = len(nv_words_propme(t.text))
    if best is None:
        return NearVerbatim(0.0, 0, ref, 0)
    return NearVerbatim(float(best.nv or 0.0), best.nv_matched, ref, 0)


def aggregate(traces: Sequence[GenerationTrace], nvs: Sequence[NearVerbatim], *,
              n_span: int = 50, nv_threshold: float = 0.5) -> dict[str, Any]:
    """The batch metrics of the ``recitation`` definitions (module docstring)."""
    total = len(traces)
    with_spans = [t for t in traces if t.spans]
    lengths = [s.length for t in traces for s in t.spans]
    docs = {d for t in traces for d in t.docs()}
    recalls = [nv.recall for nv in nvs]

    def ratio(k: int) -> float:
        return k / total if total else 0.0

    return TraceAggregate.model_validate({
        "definitions": "recitation",
        "total_generations": total,
        "generations_with_spans": len(with_spans),
        "unit": traces[0].unit if traces else "",
        "average_longest_span_length": (sum(t.longest for t in with_spans) / len(with_spans)
                                        if with_spans else 0.0),
        "full_match_ratio": ratio(sum(t.has_tier("exact_full_raw") for t in traces)),
        "full_normalized_match_ratio": ratio(sum(
            t.has_tier("exact_full_raw", "exact_full_normalized") for t in traces)),
        "avg_nv_recall": sum(recalls) / len(recalls) if recalls else 0.0,
        "max_nv_recall": max(recalls, default=0.0),
        "nv_recall_threshold": nv_threshold,
        "generations_above_nv_recall_threshold_ratio": ratio(
            sum(r >= nv_threshold for r in recalls)),
        "n_token_span": n_span,
        "generations_with_n_token_span_ratio": ratio(
            sum(t.longest >= n_span for t in traces)),
        "total_spans": len(lengths),
        "unique_total_docs": len(docs),
        "spans_length_distribution": dict(sorted(Counter(lengths).items())),
    }).model_dump()
