"""Near-verbatim recall against the PROPME authors' definition: N-essuno/PropMe
``03_tracing/simple_trace.py``, ``compute_nv_recall`` (adaptive thresholds) over
``_compute_nv_recall_with_params`` (``_nv_normalize_text``, ``_nv_identify_blocks``,
``_nv_merge_blocks``, ``_nv_filter_blocks``, ``_round_metric_float``). The reference below is
written from that definition in its own shape (dict blocks, the steps as separate
functions), not from ours; hand-worked cases pin the thresholds."""

from __future__ import annotations

import random
import re
import unicodedata
from decimal import ROUND_HALF_UP, Decimal
from difflib import SequenceMatcher

import pytest

from recitation.trace.nvrecall import Thresholds, nv_recall, words


def _their_words(text: str) -> list[str]:
    table = {"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"',
             "„": '"', "‟": '"', "«": '"', "»": '"', "–": "—", "―": "—",
             "−": "—", "…": "..."}
    s = unicodedata.normalize("NFKC", text)
    s = "".join(table.get(c, c) for c in s)
    s = re.sub(r"\.\s+\.\s+\.", "...", s)
    s = re.sub(r"\.\.\.(?=[0-9A-Za-z])", "... ", s)
    s = re.sub(r"_([^_]+)_", r"\1", s)
    return s.lower().split()


def _their_merge(blocks: list[dict[str, int]], gap: int, align: int) -> list[dict[str, int]]:
    if not blocks:
        return []
    merged = [dict(blocks[0])]
    for nxt in blocks[1:]:
        cur = merged[-1]
        g_ref, g_cand = nxt["i_start"] - cur["i_end"], nxt["j_start"] - cur["j_end"]
        if max(g_ref, g_cand) <= gap and abs(g_ref - g_cand) <= align:
            cur["i_end"], cur["j_end"] = nxt["i_end"], nxt["j_end"]
            cur["matched_len"] += nxt["matched_len"]
        else:
            merged.append(dict(nxt))
    return merged


def _their_nv(reference: str, candidate: str) -> tuple[float, int]:
    ref, cand = _their_words(reference), _their_words(candidate)
    n = len(ref)
    if n == 0:
        return 0.0, 0

    def c(v: float, lo: int, hi: int) -> int:
        return max(lo, min(hi, v))

    l1, l2 = c(round(0.15 * n), 2, 20), c(round(0.35 * n), 4, 100)
    t1g, t1a = c(round(0.02 * n), 1, 6), c(round(0.01 * n), 1, 3)
    t2g, t2a = c(round(0.08 * n), 2, 12), c(round(0.03 * n), 1, 5)
    blocks = [{"i_start": m.a, "j_start": m.b, "i_end": m.a + m.size, "j_end": m.b + m.size,
               "matched_len": m.size}
              for m in SequenceMatcher(a=ref, b=cand).get_matching_blocks() if m.size > 0]
    blocks = [b for b in _their_merge(blocks, t1g, t1a) if b["matched_len"] >= l1]
    blocks = [b for b in _their_merge(blocks, t2g, t2a) if b["matched_len"] >= l2]
    matched = sum(b["matched_len"] for b in blocks)
    q = Decimal(str(matched / n)).quantize(Decimal("1e-9"), rounding=ROUND_HALF_UP)
    return (float(q) or 0.0), matched


VOCAB = ("the", "a", "of", "and", "he", "she", "said", "Mr.", "Darcy", "Elizabeth", "house",
         "walked", "into", "room", "“Well,”", "—", "it", "was", "not", "…", "quite", "so",
         "_very_", "much", "as", "I", "had", "thought", "’tis", "well", ". . .", "night")


def _pair(rng: random.Random) -> tuple[str, str]:
    """A generation and a document that copies parts of it with edits, insertions, case
    changes and noise around (lengths 1-400 words, so every clamp range is hit)."""
    n = rng.choice([rng.randint(1, 12), rng.randint(13, 80), rng.randint(81, 400)])
    gen = [rng.choice(VOCAB) for _ in range(n)]
    doc = [rng.choice(VOCAB) for _ in range(rng.randint(0, 60))]
    i = 0
    while i < n:
        step = rng.randint(1, 30)
        part = gen[i:i + step]
        if rng.random() < 0.8:
            part = [w.upper() if rng.random() < 0.05 else w for w in part]
            if rng.random() < 0.3 and part:
                part[rng.randrange(len(part))] = rng.choice(VOCAB)
            doc += part
        doc += [rng.choice(VOCAB) for _ in range(rng.choice([0, 0, 1, 2, 5, 15]))]
        i += step
    doc += [rng.choice(VOCAB) for _ in range(rng.randint(0, 60))]
    return " ".join(gen), " ".join(doc)


def test_equals_the_authors_definition_on_300_seeded_pairs() -> None:
    rng = random.Random(20261126)
    nonzero = 0
    for _ in range(300):
        gen, doc = _pair(rng)
        got = nv_recall(gen, doc)
        expected, matched = _their_nv(gen, doc)
        assert (got.recall, got.matched) == (expected, matched), (gen, doc)
        nonzero += expected > 0
    assert 100 < nonzero < 300  # the pairs cover both sides of the thresholds


@pytest.mark.parametrize(("n", "expected"), [
    (1, (2, 4, 1, 1, 2, 1)), (20, (3, 7, 1, 1, 2, 1)), (50, (8, 18, 1, 1, 4, 2)),
    (100, (15, 35, 2, 1, 8, 3)), (1000, (20, 100, 6, 3, 12, 5)),
])
def test_thresholds_scale_with_the_reference_and_clamp(
        n: int, expected: tuple[int, ...]) -> None:
    t = Thresholds.for_length(n)
    assert (t.l1, t.l2, t.tau1_gap, t.tau1_align, t.tau2_gap, t.tau2_align) == expected


def test_hand_worked_cases() -> None:
    ref = " ".join(f"w{i}" for i in range(20))  # n = 20: l1 = 3, l2 = 7, taus 1/1 and 2/1
    assert nv_recall(ref, f"x y {ref} z").recall == 1.0
    assert nv_recall(ref, " ".join(f"w{i}" for i in range(5))).recall == 0.0  # 5 < l2 = 7
    # 8 words, one substituted word, 8 words: the blocks merge (gaps 1 and 1) into 16 of 20
    cand = " ".join([f"w{i}" for i in range(8)] + ["X"] + [f"w{i}" for i in range(9, 17)])
    assert nv_recall(ref, cand).recall == 0.8 and nv_recall(ref, cand).matched == 16
    # a gap of 3 on the candidate side (> tau2_gap = 2): two runs of 8, each >= l2 = 7
    cand = " ".join([f"w{i}" for i in range(8)] + ["X", "Y", "Z"] + [f"w{i}" for i in range(8, 16)])
    assert nv_recall(ref, cand).matched == 16
    # the same 20 words differently punctuated and cased, curly quotes and a glued ellipsis
    assert words("“Well…yes,” she said — _so_") == ['"well...', 'yes,"', "she", "said", "—",
                                                  "so"]
    assert nv_recall("", "anything").recall == 0.0
