"""Whole-book near-verbatim recall against an independent brute force.

The brute force restates the definition without difflib or numpy: the longest common run of
words found by an O(n m) table (ties: earliest in the book, then earliest in the
generation, as ``difflib`` documents), recursing left and right of it; adjacent runs joined;
the two merge-and-filter passes of the PROPME authors' ``_compute_nv_recall_with_params``
defaults (gaps 2/1 then 10/3, at least 20 then 100 matched words); covered book positions
as a set, united over generations. Generations stay under 200 words, where ``difflib``'s
autojunk heuristic is off, so the two must agree exactly."""

from __future__ import annotations

import random

import pytest

from recitation.metrics.book_recall import BookText, book_recall, longest_true_run
from recitation.metrics.nvrecall import WHOLE_TEXT, nv_recall, words


def _longest(a: list[str], b: list[str], alo: int, ahi: int, blo: int, bhi: int
             ) -> tuple[int, int, int]:
    best = (alo, blo, 0)
    prev = [0] * (bhi - blo + 1)
    for i in range(alo, ahi):
        cur = [0] * (bhi - blo + 1)
        for j in range(blo, bhi):
            if a[i] == b[j]:
                k = cur[j - blo + 1] = prev[j - blo] + 1
                start = (i - k + 1, j - k + 1)
                if k > best[2] or (k == best[2] and start < (best[0], best[1])):
                    best = (start[0], start[1], k)
        prev = cur
    return best


def _runs(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        i, j, k = _longest(a, b, alo, ahi, blo, bhi)
        if k:
            out.append((i, j, k))
            todo += [(alo, i, blo, j), (i + k, ahi, j + k, bhi)]
    out.sort()
    joined: list[tuple[int, int, int]] = []
    for i, j, k in out:
        if joined and joined[-1][0] + joined[-1][2] == i and joined[-1][1] + joined[-1][2] == j:
            joined[-1] = (joined[-1][0], joined[-1][1], joined[-1][2] + k)
        else:
            joined.append((i, j, k))
    return joined


def _pass(groups: list[list[tuple[int, int, int]]], gap: int, align: int, least: int
          ) -> list[list[tuple[int, int, int]]]:
    merged: list[list[tuple[int, int, int]]] = []
    for g in groups:
        if merged:
            last = merged[-1][-1]
            ga, gb = g[0][0] - (last[0] + last[2]), g[0][1] - (last[1] + last[2])
            if max(ga, gb) <= gap and abs(ga - gb) <= align:
                merged[-1] = merged[-1] + g
                continue
        merged.append(list(g))
    return [g for g in merged if sum(k for _, _, k in g) >= least]


def _brute_covered(book: list[str], gens: list[list[str]]) -> set[int]:
    covered: set[int] = set()
    for gen in gens:
        groups = [[r] for r in _runs(book, gen)]
        groups = _pass(_pass(groups, 2, 1, 20), 10, 3, 100)
        covered |= {i + d for g in groups for i, _, k in g for d in range(k)}
    return covered


VOCAB = [f"w{i}" for i in range(40)] + ["the", "a", "and", "said", "of"]


def _case(rng: random.Random) -> tuple[list[str], list[list[str]]]:
    book = [rng.choice(VOCAB) for _ in range(rng.randint(150, 320))]
    gens = []
    for _ in range(rng.randint(1, 3)):
        gen: list[str] = []
        i, size = rng.randrange(len(book) // 2), rng.randint(60, 195)
        while len(gen) < size and i < len(book):
            step = rng.randint(3, 60)
            part = book[i:i + step]
            if rng.random() < 0.3 and part:
                part[rng.randrange(len(part))] = "X"
            gen += part + ["Y"] * rng.choice([0, 0, 0, 1, 2, 4, 12])
            i += step + rng.choice([0, 0, 0, 0, 1, 3, 11])
        gens.append(gen[:199])
    return book, gens


def test_equals_the_brute_force_on_120_seeded_books() -> None:
    rng = random.Random(20261128)
    nonzero = 0
    for _ in range(120):
        book_words, gens = _case(rng)
        book = BookText.of([("one", " ".join(book_words))])
        got = book_recall(book, [" ".join(g) for g in gens])
        expected = _brute_covered(book_words, gens)
        assert got.covered == len(expected), (book_words, gens)
        assert set(map(int, got.mask.nonzero()[0])) == expected
        nonzero += bool(expected)
    assert 20 < nonzero < 120  # both sides of the 100-word filter


def test_one_generation_is_the_papers_nv_recall() -> None:
    """The one-element case: matched words of the fixed-threshold NVR over book words."""
    rng = random.Random(7)
    for _ in range(40):
        book_words, gens = _case(rng)
        text, gen = " ".join(book_words), " ".join(gens[0])
        got = book_recall(BookText.of([("", text)]), [gen])
        nvr = nv_recall(text, gen, WHOLE_TEXT)
        assert (got.covered, got.nv_recall) == (nvr.matched, nvr.recall)


def test_hand_worked_book() -> None:
    one = " ".join(f"a{i}" for i in range(300))
    two = " ".join(f"b{i}" for i in range(200))
    book = BookText.of([("I", one), ("II", two)])
    # 150 words of chapter I, two unrelated words, 120 of chapter II, in one generation
    gen = " ".join([f"a{i}" for i in range(50, 200)] + ["x", "y"] + [f"b{i}" for i in range(120)])
    r = book_recall(book, [gen])
    assert (r.book_words, r.covered, r.nv_recall) == (500, 270, 0.54)
    assert r.by_chapter(book) == [("I", 300, 150), ("II", 200, 120)]
    assert r.longest_block == 150 and r.longest_run == 150
    # one substituted word inside 110 words: one block, 109 matched, the gap not covered
    sub = [f"a{i}" for i in range(110)]
    sub[55] = "z"
    r = book_recall(book, [" ".join(sub)])
    assert (r.covered, r.longest_block, r.longest_run) == (109, 109, 55)
    # 99 words: below the 100-word filter; two generations of 99 each joined do not count
    short = " ".join(f"a{i}" for i in range(99))
    assert book_recall(book, [short]).covered == 0
    # the same passage twice counts once; two pieces from two generations are united
    piece = " ".join(f"a{i}" for i in range(100, 220))
    r = book_recall(book, [piece, piece, " ".join(f"a{i}" for i in range(200, 300))])
    assert r.covered == 200 and r.longest_run == 200 and r.longest_block == 120


def test_passages_are_shown_from_the_normalized_text() -> None:
    book = BookText.of([("I", "“Well,” she said…\n\n_So_ it  was."), ("II", "")])
    assert words("“Well,” she said…\n\n_So_ it  was.") == list(book.words)
    assert book.passage(1, 4) == "she said...\n\nSo"
    assert book.chapters == (("I", 0, 6),)


@pytest.mark.parametrize(("mask", "run"), [([], 0), ([0, 0], 0), ([1, 1, 0, 1], 2),
                                           ([0, 1, 1, 1], 3)])
def test_longest_true_run(mask: list[int], run: int) -> None:
    import numpy as np

    assert longest_true_run(np.array(mask, dtype=bool)) == run
