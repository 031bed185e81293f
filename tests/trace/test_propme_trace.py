"""SimpleTrace's default definitions, the PROPME authors' (N-essuno/PropMe
``03_tracing/simple_trace.py``): documents drawn per span, the NVR of the generation in each
document's window (``_retrieve_docs_for_ranks`` with ``max_disp_len = 5 L``), the merged
segments' document budget (``trace_generation`` step 4) and the batch metrics
(``evaluate_results``), each on cases worked out by hand from that code."""

from __future__ import annotations

import pytest

from recitation.trace.build import build_index
from recitation.trace.index import open_index
from recitation.trace.metrics import propme_aggregate
from recitation.trace.nvrecall import nv_recall
from recitation.trace.propme_rule import segments_with_docs
from recitation.trace.simpletrace import (
    DocMatch,
    GenerationTrace,
    SimpleTrace,
    Span,
    TraceConfig,
)
from recitation.trace.sources import SourceDoc

VERSE = "And God saw the light, that it was good."  # KJV, Genesis 1:4
DOCS = [f"Verse {i}: {'and so on ' * i}{VERSE} {'Selah. ' * (i % 3)}" for i in range(15)]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> object:
    out = tmp_path_factory.mktemp("verses") / "idx"
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(DOCS)], out)
    return open_index(out, engine="numpy")


def test_documents_are_drawn_per_span_seeded_and_capped(index: object) -> None:
    def drawn(seed: int, max_docs: int = 10) -> list[int]:
        cfg = TraceConfig(max_docs=max_docs, seed=seed, definitions="propme")
        t = SimpleTrace(index, cfg).trace(VERSE)  # type: ignore[arg-type]
        assert [(s.start, s.end) for s in t.spans] == [(0, len(VERSE))]
        assert t.spans[0].count == 15
        return [d.metadata["metadata"]["n"] for d in t.spans[0].docs]

    first = drawn(0)
    assert len(first) == len(set(first)) == 10 and first == drawn(0)
    assert any(sorted(drawn(s)) != sorted(first) for s in range(1, 5))  # a draw, not a prefix
    assert sorted(drawn(0, max_docs=20)) == list(range(15))  # fewer than the cap: all


def test_each_document_gets_the_nvr_of_the_generation_in_its_window(index: object) -> None:
    """The window: ``5 L`` units centred on the span's occurrence (infini-gram's
    ``get_doc_by_rank``: ``M // 2`` before, ``(M + 1) // 2`` from it), cut at the document's
    edges; the NVR of the whole generation (reference) in it (candidate)."""
    gen = "Behold, it was evening. " + VERSE  # a first sentence no verse holds
    t = SimpleTrace(index, TraceConfig(max_docs=20, definitions="propme")).trace(gen)  # type: ignore[arg-type]
    m = 5 * len(gen.encode())
    docs = [d for seg in t.segment_docs for d in seg]
    assert len(docs) == 15
    for d in docs:
        text = DOCS[d.metadata["metadata"]["n"]]
        occ = text.index(VERSE)
        window = text[max(0, occ - m // 2): occ + (m + 1) // 2]
        want = nv_recall(gen, window)
        assert (d.nv, d.nv_matched) == (want.recall, want.matched), text
    assert {d.nv for d in docs} == {0.692307692}  # 9 of its 13 words (the verse), rounded


def _doc(i: int, nv: float = 0.0, tier: str = "partial") -> DocMatch:
    return DocMatch(i, tier, {}, nv)  # type: ignore[arg-type]


def _span(a: int, b: int, docs: list[DocMatch]) -> Span:
    return Span(a, b, b - a, "", 0.0, len(docs), tuple(docs))


def test_merged_segments_share_the_document_budget() -> None:
    a = [_doc(i) for i in range(10)]
    b = [_doc(100 + i) for i in range(10)]
    c = [_doc(200 + i) for i in range(4)]
    segs = segments_with_docs([_span(0, 5, a), _span(3, 8, b), _span(8, 12, c)], 10)
    # the first two overlap: ceil(10 / 2) = 5 documents of each; the third starts at the end
    # of the second, so it is a segment of its own (theirs: start < current end merges)
    assert [(x, y, [d.doc_ix for d in ds]) for x, y, ds in segs] == [
        (0, 8, [0, 1, 2, 3, 4, 100, 101, 102, 103, 104]), (8, 12, [200, 201, 202, 203])]
    segs = segments_with_docs([_span(0, 5, a), _span(1, 6, b), _span(2, 7, c)], 10)
    assert [len(ds) for _, _, ds in segs] == [4 + 4 + 4]  # ceil(10 / 3) = 4 of each


def _trace(lengths: list[int], docs: list[list[DocMatch]], text: str = "") -> GenerationTrace:
    text = text or f"generation {lengths} {len(docs)}"
    return GenerationTrace(text, 3, "tokens", (), (), segment_docs=tuple(
        tuple(d) for d in docs), segment_lengths=tuple(lengths))


def test_batch_metrics_as_their_evaluate_results() -> None:
    t1 = _trace([5, 12], [[_doc(1, 0.9, "exact_full_raw"), _doc(2, 0.2)], [_doc(3, 0.6)]])
    t2 = _trace([], [])
    t3 = _trace([70], [[_doc(1, 0.5)]])
    m = propme_aggregate([t1, t2, t3], n_span=60, nv_threshold=0.5)
    assert m["total_docs"] == 4 and m["unique_total_docs"] == 3
    assert m["avg_nv_recall"] == 0.55  # every document: (0.9 + 0.2 + 0.6 + 0.5) / 4
    assert m["max_nv_recall"] == 0.9
    # strictly above 0.5: t1 (0.9); t3's 0.5 does not count
    assert m["generations_above_nv_recall_threshold_ratio"] == 0.333333333
    assert m["average_longest_span_length"] == 27.333333333  # (12 + 0 + 70) / 3: all of them
    assert m["generations_with_n_token_span_ratio"] == 0.333333333  # t3's 70 >= 60
    assert m["full_match_ratio"] == 0.333333333 and m["generations_with_spans"] == 2
    assert m["spans_length_distribution"] == {5: 2, 12: 1, 70: 1}  # documents per length
    assert propme_aggregate([], n_span=60)["avg_nv_recall"] == 0.0
    # the same generation twice counts once (theirs: results keyed by the text)
    again = propme_aggregate([t1, t2, t3, t1], n_span=60, nv_threshold=0.5)
    assert again == m
