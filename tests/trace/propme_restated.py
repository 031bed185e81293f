"""The PROPME authors' SimpleTrace, restated in our words from their code (N-essuno/PropMe
``03_tracing/simple_trace.py``, text mode: ``trace_generation``, ``_keep_span``,
``_retrieve_docs_for_ranks``, ``evaluate_results``), run through the infini-gram package's
own engine (``get_doc_by_rank`` with ``max_disp_len``) on an index's files: the reference
``--definitions propme`` must equal. Not their code: the same steps, written here.

Two points their code leaves to the run, fixed here as recitation fixes them (the parity is
of everything else): the random draw of a span's documents is seeded (``random.Random`` of
the seed, the generation and the span, sampling the flattened ranks), and the word marker is
``▁`` (SentencePiece) or ``Ġ`` (byte-level BPE, where their literal test, ``▁`` only, keeps no
span) with the first token always a start (SentencePiece marks it).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from recitation.trace.nvrecall import nv_recall  # equal to theirs: tests/trace/test_nvrecall.py

MARKERS = ("▁", "Ġ")


@dataclass
class Doc:
    doc_ix: int
    full: bool
    nv: float


@dataclass
class Segment:
    start: int
    end: int
    docs: list[Doc]


def _round9(x: float) -> float:
    return float(Decimal(str(float(x))).quantize(Decimal("1e-9"), rounding=ROUND_HALF_UP))


class Restated:
    """One index, its tokenizer (``tokenizers.Tokenizer``) and the corpus's unigram
    probabilities (counted from the documents' tokens, as their ``02_unigram_probs`` does)."""

    def __init__(self, index_dir: Path, raw: Any, docs: list[str], seed: int = 0) -> None:
        from infini_gram.engine import InfiniGramEngine

        self.engine = InfiniGramEngine(index_dir=[str(index_dir)], eos_token_id=0,
                                       vocab_size=65535, version=4, token_dtype="u16")
        self.raw, self.seed = raw, seed
        counts: Counter[int] = Counter()
        for d in docs:
            counts.update(raw.encode(d, add_special_tokens=False).ids)
        total = sum(counts.values())
        self.prob = {t: c / total for t, c in counts.items()}

    def tokens(self, ids: list[int]) -> list[str]:
        return [self.raw.id_to_token(i) for i in ids]

    def decode(self, ids: list[int]) -> str:
        return str(self.raw.decode(ids, skip_special_tokens=True))

    def longest_match(self, suffix: list[int], window_len: int) -> int:
        """Step 1 for one start: the whole suffix when found, else the longest prefix of it
        anywhere in the window of the next suffix-array entry (each shard)."""
        r = self.engine.find(input_ids=suffix)
        if r["cnt"] > 0:
            return len(suffix)
        best = 0
        for s, (rank, _) in enumerate(r["segment_by_shard"]):
            doc = self.engine.get_doc_by_rank(s=s, rank=rank, max_disp_len=window_len)
            got = doc["token_ids"]
            for i in range(len(got)):
                k = 0
                while k < len(suffix) and i + k < len(got) and got[i + k] == suffix[k]:
                    k += 1
                best = max(best, k)
        return best

    def spans(self, ids: list[int]) -> list[tuple[int, int]]:
        """Steps 1 and the two filter passes."""
        toks = self.tokens(ids)
        n = len(ids)
        word = [k == 0 or t.startswith(MARKERS) for k, t in enumerate(toks)]
        kept: list[tuple[int, int]] = []
        for a in range(n - 1):
            e = a + self.longest_match(ids[a:], 5 * n)
            if e == a or not word[a] or (e < n and not word[e]):
                continue
            if set(self.decode(ids[a:e])[:-1]) & set("!.?\n"):
                continue
            kept.append((a, e))
        out, right = [], -1
        for a, e in sorted(kept):
            if e > right:
                out.append((a, e))
                right = e
        return out

    def docs(self, gen: str, ids: list[int], a: int, e: int, limit: int) -> list[Doc]:
        """Step 3 for the span ``ids[a:e]``."""
        r = self.engine.find(input_ids=ids[a:e])
        ranks = [(s, k) for s, (lo, hi) in enumerate(r["segment_by_shard"])
                 for k in range(lo, hi)]
        if len(ranks) > limit:
            ranks = random.Random(f"{self.seed}\0{gen}\0{a}\0{e}").sample(ranks, limit)
        out, seen = [], set()
        for s, k in ranks:
            d = self.engine.get_doc_by_rank(s=s, rank=k, max_disp_len=5 * len(ids))
            if (s, d["doc_ix"]) in seen:
                continue
            seen.add((s, d["doc_ix"]))
            text = self.decode(d["token_ids"])
            out.append(Doc(int(d["doc_ix"]), bool(gen) and gen in text,
                           nv_recall(gen, text).recall))
        return out

    def trace(self, gen: str, docs_per_span: int = 10) -> list[Segment]:
        ids = self.raw.encode(gen, add_special_tokens=False).ids
        spans = self.spans(ids)
        k = max(math.ceil(0.05 * len(ids)), 1)
        rare = sorted(spans, key=lambda se: math.prod(self.prob.get(t, 1.0)
                                                      for t in ids[se[0]:se[1]]))[:k]
        rare.sort()
        found = [self.docs(gen, ids, a, e, docs_per_span) for a, e in rare]
        groups: list[list[int]] = []
        end = -1
        for i, (a, e) in enumerate(rare):
            if groups and a < end:
                groups[-1].append(i)
                end = max(end, e)
            else:
                groups.append([i])
                end = e
        out = []
        for g in groups:
            budget = math.ceil(docs_per_span / len(g))
            out.append(Segment(min(rare[i][0] for i in g), max(rare[i][1] for i in g),
                               [d for i in g for d in found[i][:budget]]))
        return out


def evaluate(traces: dict[str, list[Segment]], threshold: float = 0.5) -> dict[str, float]:
    """``evaluate_results``: the headline numbers over generations keyed by their text."""
    n = len(traces)
    docs = [d for segs in traces.values() for s in segs for d in s.docs]
    longest = [max((s.end - s.start for s in segs), default=0) for segs in traces.values()]
    return {
        "average_longest_span_length": _round9(sum(longest) / n),
        "full_match_ratio": _round9(sum(any(d.full for s in segs for d in s.docs)
                                        for segs in traces.values()) / n),
        "avg_nv_recall": _round9(sum(d.nv for d in docs) / len(docs)) if docs else 0.0,
        "max_nv_recall": max((d.nv for d in docs), default=0.0),
        "generations_above_nv_recall_threshold_ratio": _round9(sum(
            any(d.nv > threshold for s in segs for d in s.docs)
            for segs in traces.values()) / n),
        "total_docs": len(docs),
    }
