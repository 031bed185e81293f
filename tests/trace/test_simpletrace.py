"""SimpleTrace against brute force: maximal spans found by scanning the documents' text, the
rarity filter against unigram counts taken by hand, match tiers, the document cap, merging,
the metrics on hand-worked cases, and the paper's validation on PDNC text (rates 1.00)."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest

from recitation.trace import infinigram
from recitation.trace.build import build_index
from recitation.trace.index import CorpusIndex, open_index
from recitation.trace.metrics import aggregate, generation_nv, nv_recall
from recitation.trace.simpletrace import (
    SimpleTrace,
    TraceConfig,
    maximal_spans,
    merge,
    retrieve,
    units_of,
)
from recitation.trace.sources import SourceDoc, iter_corpus
from recitation.trace.units import SENTENCE_ENDS, byte_units, is_word_char
from recitation.trace.validate import validate

# checked when a test is set up: not installed skips (fails under CI), a broken install errors
REC = TraceConfig(definitions="recitation")
"""Our definitions (a named option): the tests of our span rule, metrics and validation."""

ENGINES = ["numpy", pytest.param("infini-gram", marks=pytest.mark.requires(
    infinigram.available, "infini-gram is not installed: pip install 'recitation[trace]' "
    "(bash scripts/test.sh installs it)"))]

# public-domain text (KJV, Genesis 1 and Psalm 23)
DOCS = [
    "In the beginning God created the heaven and the earth. And the earth was without form, "
    "and void; and darkness was upon the face of the deep.",
    "And the Spirit of God moved upon the face of the waters. And God said, Let there be "
    "light: and there was light.",
    "The LORD is my shepherd; I shall not want. He maketh me to lie down in green pastures: "
    "he leadeth me beside the still waters.",
    "And God saw the light, that it was good: and God divided the light from the darkness.",
]


class PieceTokenizer:
    """Words with their leading whitespace and single punctuation marks as tokens."""

    PIECE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")

    def __init__(self, texts: list[str]) -> None:
        self.pieces: list[str] = []
        self.ids: dict[str, int] = {}
        for t in texts:
            self.encode(t)
        self.vocab_size = 1000

    def encode(self, text: str) -> list[int]:
        out = []
        for p in self.PIECE.findall(text):
            if p not in self.ids:
                self.ids[p] = len(self.pieces)
                self.pieces.append(p)
            out.append(self.ids[p])
        return out

    def decode(self, ids: list[int]) -> str:
        return "".join(self.pieces[i] for i in ids)

    def tokens(self, text: str) -> list[str]:
        return self.PIECE.findall(text)


def index_of(tmp: Path, docs: list[str], engine: str = "numpy",
             tokenizer: PieceTokenizer | None = None) -> CorpusIndex:
    out = tmp / f"idx-{engine}-{tokenizer is not None}"
    if not out.exists():
        build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(docs)], out,
                    tokenizer=tokenizer, tokenizer_name="pieces")
    return open_index(out, engine=engine, tokenizer=tokenizer)  # type: ignore[arg-type]


def brute_spans(docs: list[str], gen: str) -> list[tuple[int, int]]:
    """Maximal spans in characters, by scanning: from each word start, the longest piece
    that is in a document, holds a sentence end only last, ends at a word boundary and not on
    whitespace; then spans not ending past the previous kept one are dropped."""
    starts = [m.start() for m in re.finditer(r"\w+", gen)]
    out: list[tuple[int, int]] = []
    last = 0
    for a in starts:
        best = a
        for e in range(a + 1, len(gen) + 1):
            piece = gen[a:e]
            if any(c in SENTENCE_ENDS for c in piece[:-1]):
                break
            if not any(piece in d for d in docs):
                break
            inside = e < len(gen) and is_word_char(gen[e - 1]) and is_word_char(gen[e])
            if not inside and not gen[e - 1].isspace():
                best = e
        if best > last and best > a:
            out.append((a, best))
            last = best
    return out


def _chars(gen: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte spans of an ASCII/UTF-8 generation as character spans."""
    raw = gen.encode("utf-8")
    return [(len(raw[:a].decode()), len(raw[:b].decode())) for a, b in spans]


GENERATIONS = [
    "And God said, Let there be light: and the earth was without form. He maketh me glad.",
    "The face of the deep was dark; the LORD is my shepherd; I shall not want. In green "
    "pastures: he leadeth me beside the still waters and the light.",
    "Nothing here matches “exactly” — café society, and God divided the light.",
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("gen", GENERATIONS)
def test_maximal_spans_equal_brute_force(gen: str, engine: str, tmp_path: Path) -> None:
    ix = index_of(tmp_path, DOCS, engine)
    found = maximal_spans(ix, units_of(ix, gen), REC)
    assert _chars(gen, found) == brute_spans(DOCS, gen)


def test_maximal_spans_on_random_text_equal_brute_force(tmp_path: Path) -> None:
    rng = random.Random(11)
    words = "the earth light God and was face of deep waters . , ; !".split()
    docs = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(8)]
    ix = index_of(tmp_path, docs)
    for _ in range(25):
        gen = " ".join(rng.choice(words) for _ in range(30))
        found = maximal_spans(ix, byte_units(gen), REC)
        assert _chars(gen, found) == brute_spans(docs, gen), gen


def test_token_level_spans_and_tiers(tmp_path: Path) -> None:
    tok = PieceTokenizer(DOCS)
    ix = index_of(tmp_path, DOCS, tokenizer=tok)
    gen = "And the Spirit of God moved upon the face of the waters. And God said, Let there be"
    t = SimpleTrace(ix, TraceConfig(rarity=1.0, definitions="recitation")).trace(gen)
    n = len(tok.encode(gen))
    assert t.unit == "tokens" and t.units == n
    # two sentences: two spans (the second from " And", a token with its space)
    assert [(s.text, s.length) for s in t.spans] == [
        ("And the Spirit of God moved upon the face of the waters.", 13),
        (" And God said, Let there be", n - 13)]
    assert t.docs()[1].tier == "exact_full_raw" and len(t.docs()) == 1
    # a generation's first word has no leading space: "And" + " God" is not in the corpus
    t = SimpleTrace(ix, REC).trace("And God said, Let there be light.")
    assert t.spans[0].text == " God said, Let there be light"  # the corpus has "light:"


def test_rarity_filter_keeps_the_k_least_probable(tmp_path: Path) -> None:
    ix = index_of(tmp_path, DOCS)
    gen = GENERATIONS[1]
    counts: dict[int, int] = {}
    for d in DOCS:
        for b in d.encode():
            counts[b] = counts.get(b, 0) + 1
    total = sum(counts.values())
    cfg = TraceConfig(rarity=0.1)
    t = SimpleTrace(ix, cfg).trace(gen)
    u = byte_units(gen)
    cands = maximal_spans(ix, u, cfg)
    lp = {c: sum(math.log(counts[b] / total) for b in u.ids[c[0]:c[1]]) for c in cands}
    k = max(math.ceil(0.1 * len(u.starts)), 1)
    want = sorted(sorted(cands, key=lambda c: lp[c])[:k])
    assert [(s.start, s.end) for s in t.spans] == want and t.candidates == len(cands)
    for s in t.spans:
        assert s.logprob == pytest.approx(lp[(s.start, s.end)])
    assert TraceConfig().rarity == 0.05  # the paper's K = max(ceil(0.05 L), 1)


def test_match_tiers(tmp_path: Path) -> None:
    gen = "He maketh me to lie down in green pastures: he leadeth me beside the still waters."
    docs = [DOCS[2],  # raw
            "Psalm. He maketh me to lie down\nin green  pastures: he leadeth me beside the "
            "still waters.",  # whitespace differs: normalized
            "he leadeth me beside the still waters. Amen."]  # a part: partial
    ix = index_of(tmp_path, docs)
    u = units_of(ix, gen)
    a = gen.index("he leadeth")  # a span all three documents hold
    count, found = retrieve(ix, u, gen, a, len(gen), 10)
    tiers = {d.metadata["metadata"]["n"]: d.tier for d in found}
    assert count == 3
    assert tiers == {0: "exact_full_raw", 1: "exact_full_normalized", 2: "partial"}
    # the trace itself keeps the maximal span, which only the first document holds
    t = SimpleTrace(ix).trace(gen)
    assert [(s.start, s.end) for s in t.spans] == [(0, len(gen))]
    assert {d: m.tier for d, m in t.docs().items()} == {0: "exact_full_raw"}


def test_documents_per_span_are_capped(tmp_path: Path) -> None:
    docs = [f"Verse {i}. And God saw the light, that it was good." for i in range(15)]
    ix = index_of(tmp_path, docs)
    t = SimpleTrace(ix, TraceConfig(max_docs=10)).trace("And God saw the light, that it was "
                                                         "good.")
    assert len(t.spans) == 1 and t.spans[0].count == 15 and len(t.spans[0].docs) == 10
    t = SimpleTrace(ix, TraceConfig(max_docs=20)).trace("And God saw the light, that it "
                                                         "was good.")
    assert len(t.spans[0].docs) == 15


def test_merge_overlapping_spans() -> None:
    assert merge([(5, 9), (0, 3), (2, 6), (9, 12), (20, 25), (21, 22)]) == [
        (0, 9), (9, 12), (20, 25)]
    assert merge([]) == []


def test_near_verbatim_recall_hand_worked() -> None:
    ref = " ".join(f"w{i}" for i in range(20))  # n = 20: l1 = 3, l2 = 7
    assert nv_recall(ref, ref).recall == 1.0
    # 10 words copied, 2 changed, 8 copied: blocks 10 and 8 merge (gaps 2 <= 3): 18 / 20
    cand = " ".join([f"w{i}" for i in range(10)] + ["x", "y"] + [f"w{i}" for i in range(12, 20)])
    assert nv_recall(ref, cand).recall == pytest.approx(18 / 20)
    # scattered copies of 2 words (< l1) count nothing
    assert nv_recall(ref, "w0 w1 a b w5 w6 c d w10 w11").recall == 0.0
    # one block of 6 (>= l1, < l2) alone is dropped in pass 2
    assert nv_recall(ref, "w0 w1 w2 w3 w4 w5 zzz").recall == 0.0
    assert nv_recall("", "x").recall == 0.0


def test_aggregate_metrics(tmp_path: Path) -> None:
    ix = index_of(tmp_path, DOCS)
    st = SimpleTrace(ix, REC)
    gens = [DOCS[1], "Let there be light: and the quick brown fox jumps.", "zzz qqq."]
    traces = [st.trace(g) for g in gens]
    nvs = [generation_nv(ix, t) for t in traces]
    m = aggregate(traces, nvs, n_span=20)
    assert m["total_generations"] == 3 and m["unit"] == "words"
    assert m["generations_with_spans"] == 2  # "zzz qqq." has no word in the corpus
    assert m["full_match_ratio"] == pytest.approx(1 / 3)
    assert nvs[0].recall == 1.0 and nvs[2].recall == 0.0
    assert m["average_longest_span_length"] == pytest.approx(
        (traces[0].longest + traces[1].longest) / 2)
    assert traces[0].longest == 12  # "And the Spirit of God moved upon the face of the waters."
    assert m["generations_with_n_token_span_ratio"] == 0.0
    assert sum(m["spans_length_distribution"].values()) == m["total_spans"]


def test_validation_on_pdnc_is_perfect(shared_data: Path, tmp_path: Path) -> None:
    """The paper's check: 25 sampled documents (PDNC chapters of six novels), a full query
    and three 128-word partial queries each; every rate 1.00 on text without duplicates."""
    novels = tmp_path / "pdnc"
    for name in ("WinnieThePooh", "AlicesAdventuresInWonderland", "TheInvisibleMan",
                 "Persuasion", "TheManWhoWasThursday", "NorthangerAbbey"):
        (novels / name).mkdir(parents=True)
        (novels / name / "novel_text.txt").write_bytes(
            (shared_data / "pdnc" / name / "novel_text.txt").read_bytes())
    out = tmp_path / "idx"
    m = build_index(iter_corpus(novels, chapters=True), out)
    assert m.documents > 100
    rates = validate(open_index(out, engine="numpy"), n_docs=25, size=128, seed=0, config=REC)
    for kind, r in rates.items():
        assert r["n"] == 25 and (r["retrieval"], r["exact"], r["pass"]) == (1.0, 1.0, 1.0), kind


@pytest.mark.model
@pytest.mark.parametrize("engine", ENGINES)
def test_token_level_validation_with_smollm2(engine: str, local_model: object,
                                             tmp_path: Path) -> None:
    """A u16 index with the real SmolLM2 tokenizer (49,152 ids): 40 KJV chapters, the
    paper's validation on 10 of them (128-token partial queries), every rate 1.00."""
    from recitation.trace.sources import iter_kjv_docs

    tok = local_model.tokenizer()  # type: ignore[attr-defined]
    docs = [d for _, d in zip(range(40), iter_kjv_docs(), strict=False)]
    m = build_index(docs, tmp_path / "idx", tokenizer=tok, tokenizer_name="smollm2")
    assert (m.token_dtype, m.vocab_size) == ("u16", 49152)
    ix = open_index(tmp_path / "idx", engine=engine, tokenizer=tok)
    ids = tok.encode(docs[3].text)
    assert ix.engine.count(ids[5:25]) >= 1
    rates = validate(ix, n_docs=10, size=128, seed=1)
    assert all((r["retrieval"], r["exact"]) == (1.0, 1.0) for r in rates.values()), rates


def test_lcp_and_normalize_match_their_definitions() -> None:
    """The fast common prefix against a byte-by-byte loop; normalize against NFKC plus a
    regex whitespace collapse (the definition in docs/tracing.md)."""
    import re
    import unicodedata

    from recitation.trace.engine import lcp
    from recitation.trace.simpletrace import normalize

    rng = random.Random(11)
    for _ in range(2000):
        a = bytes(rng.choice(b"ab\x00\xff") for _ in range(rng.randint(0, 12)))
        b = a[:rng.randint(0, len(a))] + bytes(rng.choice(b"ab\x00") for _ in range(
            rng.randint(0, 5)))
        brute = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                     min(len(a), len(b)))
        assert lcp(a, b) == brute
    pieces = ["word", " ", "\t", "\n\n", "\u00a0", "\u2003", "\ufb01", "\u2028", "x\u0301",
              "\x1c", ""]
    for _ in range(500):
        t = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        assert normalize(t) == re.sub(r"\s+", " ", unicodedata.normalize("NFKC", t)).strip()


def test_prefix_lengths_skip_only_what_is_known(tmp_path: Path) -> None:
    """The rounds that skip starts whose match is implied give every start's true longest
    prefix (the engine asked about each start), and skip starts on copied sentences."""
    from recitation.trace.simpletrace import prefix_lengths

    rng = random.Random(12)
    words = "the earth light God and was face of deep waters . , ;".split()
    docs = [" ".join(rng.choice(words) for _ in range(80)) for _ in range(6)]
    ix = index_of(tmp_path, docs)
    asked = 0
    real = ix.engine.prefix_lengths

    def counting(ids: list[int], starts: list[int], ends: list[int]) -> list[int]:
        nonlocal asked
        asked += len(starts)
        return real(ids, starts, ends)

    total = 0
    for i in range(30):
        d = rng.choice(docs).split()
        a = rng.randrange(40)
        gen = " ".join(d[a:a + 30] if i % 2 else [rng.choice(words) for _ in range(30)])
        u = byte_units(gen)
        ids, starts = list(u.ids), list(u.starts)
        ends = [u.next_end[s] for s in starts]
        want = real(ids, starts, ends)
        ix.engine.prefix_lengths = counting  # type: ignore[method-assign]
        try:
            assert prefix_lengths(ix, ids, starts, ends) == want, gen
        finally:
            ix.engine.prefix_lengths = real  # type: ignore[method-assign]
        total += len(starts)
    assert 0 < asked < total  # the copied generations skipped starts
