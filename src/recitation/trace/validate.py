"""SimpleTrace's end-to-end validation, as the paper runs it (propme-simpletrace.md, "Metric
Validation"): sample documents of the corpus, query each with its full text and with three
partial queries of 128 units (tokens, or words for a byte-level index) from its start,
middle and end, and count per query type

- **retrieval**: the source document is among the retrieved documents;
- **exact**: a document holding the whole query verbatim (``exact_full_raw``) is returned;
- **pass**: either.

On a corpus without duplicated text every rate is 1.00; a duplicate can push the source out
of the ``max_docs`` cap (the paper's 0.96), which is why "pass" accepts an exact match.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from recitation.trace.index import CorpusIndex
from recitation.trace.simpletrace import SimpleTrace, TraceConfig, units_of

QUERY_TYPES = ("full", "partial_start", "partial_middle", "partial_end")


@dataclass(frozen=True)
class QueryOutcome:
    doc_ix: int
    kind: str
    retrieved: bool
    exact: bool


def doc_text(index: CorpusIndex, doc_ix: int) -> str:
    length = index.engine.doc_by_ix(doc_ix, 1).doc_len
    return index.text(index.engine.doc_by_ix(doc_ix, max(1, length)).token_ids)


def partial_queries(index: CorpusIndex, text: str, size: int) -> dict[str, str]:
    """Start, middle and end pieces of ``size`` units (words on a byte-level index)."""
    u = units_of(index, text)
    if index.byte_level:
        starts = list(u.starts) + [len(u)]
        words = len(u.starts)
        if words <= size:
            return {k: text for k in QUERY_TYPES[1:]}
        cut = {"partial_start": 0, "partial_middle": (words - size) // 2,
               "partial_end": words - size}
        out = {}
        for kind, w in cut.items():
            a, b = starts[w], starts[w + size] if w + size < words else len(u)
            out[kind] = index.text(u.ids[a:b]).strip()
        return out
    n = len(u)
    cuts = {"partial_start": 0, "partial_middle": max(0, (n - size) // 2),
            "partial_end": max(0, n - size)}
    return {k: index.text(u.ids[a:a + size]) for k, a in cuts.items()}  # no strip: tokens


def validate(index: CorpusIndex, *, n_docs: int = 25, size: int = 128, seed: int = 0,
             config: TraceConfig | None = None,
             on_query: Callable[[QueryOutcome], None] | None = None) -> dict[str, dict[str, float]]:
    """Rates per query type: ``{"full": {"retrieval": .., "exact": .., "pass": .., "n": ..}}``."""
    tracer = SimpleTrace(index, config)
    total = index.engine.total_docs()
    docs = random.Random(seed).sample(range(total), min(n_docs, total))
    outcomes: list[QueryOutcome] = []
    for doc_ix in docs:
        text = doc_text(index, doc_ix)
        queries = {"full": text, **partial_queries(index, text, size)}
        for kind, query in queries.items():
            t = tracer.trace(query)
            o = QueryOutcome(doc_ix, kind, doc_ix in t.docs(), t.has_tier("exact_full_raw"))
            outcomes.append(o)
            if on_query:
                on_query(o)
    rates: dict[str, dict[str, float]] = {}
    for kind in QUERY_TYPES:
        of = [o for o in outcomes if o.kind == kind]
        n = len(of) or 1
        rates[kind] = {"n": float(len(of)), "retrieval": sum(o.retrieved for o in of) / n,
                       "exact": sum(o.exact for o in of) / n,
                       "pass": sum(o.retrieved or o.exact for o in of) / n}
    return rates
