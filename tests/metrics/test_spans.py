"""Verbatim spans: both counting modes, mismatch sweep and token profiles."""

from __future__ import annotations

import random

from recitation.metrics.spans import (
    find_spans,
    grow_spans,
    longest_common_span,
    matching_blocks,
    max_passage_spans,
    mismatch_sweep,
    span_stats,
    span_tokens,
    verbatim_passages,
)


def _two_substitutions() -> tuple[list[str], list[str]]:
    gold = [f"w{i}" for i in range(100)]
    cand = list(gold)
    cand[30], cand[60] = "x", "y"
    return gold, cand


def test_recap_compat_counts_overlaps_dedup_does_not() -> None:
    gold, cand = _two_substitutions()
    # blocks: [0,30) [31,60) [61,100) -> from block 0: 98 matched; from block 1: 68; block 2: 39
    compat = find_spans(gold, cand, mode="recap-compat")
    assert [s.length for s in compat] == [98, 68]
    assert span_stats(compat).passage_count == 2 + 1
    dedup = find_spans(gold, cand, mode="dedup")
    assert [s.length for s in dedup] == [98]
    assert span_stats(dedup).passage_count == 2


def test_mismatch_budget_sweep() -> None:
    gold, cand = _two_substitutions()
    sweep = mismatch_sweep(" ".join(gold), " ".join(cand), mode="recap-compat")
    assert sweep[0].span_count == 0  # no block alone reaches 40 tokens
    assert [sweep[1].span_count, sweep[1].passage_count] == [2, 2]  # 59 and 68
    assert all(sweep[n].passage_count == 3 for n in range(2, 6))


def test_gap_is_the_larger_side() -> None:
    gold = [f"g{i}" for i in range(50)]
    cand = gold[:20] + ["i1", "i2", "i3"] + gold[20:]  # 3 insertions on the candidate side
    assert [s.length for s in find_spans(gold, cand, max_mismatches=3)] == [50]
    assert find_spans(gold, cand, max_mismatches=2) == []


def test_dedup_spans_are_disjoint_and_monotone() -> None:
    rng = random.Random(0)
    for _ in range(200):
        gold = [rng.choice("abcdefgh") for _ in range(rng.randint(50, 300))]
        cand = [t if rng.random() > 0.06 else "z" for t in gold]
        blocks = matching_blocks(gold, cand)
        previous = -1
        for budget in range(6):
            kept = max_passage_spans(blocks, min_tokens=10, max_mismatches=budget)
            ordered = sorted(kept, key=lambda s: s.gold_start)
            for a, b in zip(ordered, ordered[1:], strict=False):
                assert a.gold_end <= b.gold_start and a.cand_end <= b.cand_start
            assert sum(s.length for s in kept) <= sum(b[2] for b in blocks)
            passages = span_stats(kept, min_tokens=10).passage_count
            assert passages >= previous  # never fewer passages with a larger budget
            previous = passages
            compat = grow_spans(blocks, min_tokens=10, max_mismatches=budget)
            assert passages <= span_stats(compat, min_tokens=10).passage_count


def test_token_profiles() -> None:
    gold, model = "“Don’t,” said he.", '"Don\'t," said he.'
    assert (
        span_tokens(gold, profile="folded")
        == span_tokens(model, profile="folded")
        == ["dont", "said", "he"]
    )
    assert span_tokens(gold, profile="recap-v1") == ["“", "don", "’", "t", "”", "said", "he"]
    assert span_tokens(model, profile="recap-v1") == ["dont", "said", "he"]
    assert span_tokens(gold, profile="recap-v2") == ["dont", "said", "he"]
    assert span_tokens(model, profile="recap-v2") != [
        "dont",
        "said",
        "he",
    ]  # straight apostrophe kept


def test_verbatim_passages_on_text() -> None:
    text = " ".join(f"word{i}" for i in range(130))
    stats = verbatim_passages(text, "Preamble. " + text + " Trailer.")
    assert (stats.span_count, stats.passage_count, stats.max_span_length) == (1, 3, 130)


def test_max_passage_spans_is_optimal_by_exhaustive_search() -> None:
    from itertools import combinations

    rng = random.Random(5)
    for _ in range(150):
        blocks, g, c = [], 0, 0
        for _k in range(rng.randint(1, 7)):
            g += rng.randint(0, 3)
            c += rng.randint(0, 3)
            size = rng.randint(1, 30)
            blocks.append((g, c, size))
            g, c = g + size, c + size
        budget, mt = rng.randint(0, 5), 20
        runs = []
        for i in range(len(blocks)):
            matched, mism = blocks[i][2], 0
            runs.append((i, i, matched))
            for j in range(i + 1, len(blocks)):
                mism += max(
                    blocks[j][0] - blocks[j - 1][0] - blocks[j - 1][2],
                    blocks[j][1] - blocks[j - 1][1] - blocks[j - 1][2],
                )
                if mism > budget:
                    break
                matched += blocks[j][2]
                runs.append((i, j, matched))
        best = 0
        for r in range(len(runs) + 1):
            for combo in combinations(runs, r):
                ordered = sorted(combo)
                if all(a[1] < b[0] for a, b in zip(ordered, ordered[1:], strict=False)):
                    best = max(best, sum(m // mt for _, _, m in combo))
        got = span_stats(
            max_passage_spans(blocks, min_tokens=mt, max_mismatches=budget), min_tokens=mt
        )
        assert got.passage_count == best


def _brute_longest(a: list[str], b: list[str]) -> int:
    """Every start pair, extended while equal: O(n m min(n, m)), obviously right."""
    best = 0
    for i in range(len(a)):
        for j in range(len(b)):
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            best = max(best, k)
    return best


def test_longest_common_span_against_brute_force_on_random_inputs() -> None:
    rng = random.Random(0)
    for trial in range(300):
        alphabet = "ab" if trial % 3 == 0 else "abcdefgh"  # long runs and sparse matches
        a = [rng.choice(alphabet) for _ in range(rng.randint(0, 40))]
        b = [rng.choice(alphabet) for _ in range(rng.randint(0, 40))]
        if trial % 5 == 0 and a:  # plant a copy of a slice of a inside b
            i = rng.randrange(len(a))
            b[len(b) // 2 : len(b) // 2] = a[i : i + rng.randint(1, 25)]
        assert longest_common_span(a, b) == _brute_longest(a, b), (a, b)
        assert longest_common_span(b, a) == longest_common_span(a, b)


def test_longest_common_span_of_repetitive_word_lists() -> None:
    # the case difflib's junk heuristic would get wrong: a very common word ("the") that
    # autojunk=True discards from sequences of 200+ items
    gold = ["the", "x"] * 150 + ["the"] * 5
    hint = ["y"] + ["the"] * 5 + ["y"]
    assert longest_common_span(hint, gold) == 5
    assert longest_common_span([], gold) == 0 == longest_common_span(gold, [])
