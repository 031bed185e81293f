"""How much of a book a set of generations reproduces: whole-book near-verbatim recall.

The measure of Ahmed, Cooper et al. (2026, "Extracting books from production language
models"): nv-recall with the book as the reference and the extracted text as the candidate,
at the fixed thresholds (:data:`recitation.metrics.nvrecall.WHOLE_TEXT`: near-verbatim blocks
of at least 100 matched words, built from exact runs merged across gaps of at most 2, then 10
words). Their one extracted text (every response of a run, in order) is the one-element case
of :func:`book_recall`; given several generations (RECAP's events, prefix probes), each is
matched against the whole book on its own and the book words they cover are united, so that
out-of-order pieces all count and a passage produced twice counts once.

Figures (:class:`BookRecall`): ``nv_recall`` = book words inside an exact run of a retained
block / book words; ``longest_block``: the matched words of the largest block (one stretch
of near-verbatim text); ``longest_run``: the longest stretch of consecutive covered book
words (runs of several generations joined). Where they sit: :meth:`BookRecall.by_chapter`
and the blocks' book positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from recitation.metrics.nvrecall import WHOLE_TEXT, Thresholds, blocks, normalized, round_half_up

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class BookText:
    """A book as the measure reads it: its NVR-normalized text (cased, for showing
    passages), each word's character span in it, and the chapters' word ranges."""

    text: str
    spans: tuple[tuple[int, int], ...]
    words: tuple[str, ...]
    chapters: tuple[tuple[str, int, int], ...]  # (title, first word, end word)

    @classmethod
    def of(cls, chapters: list[tuple[str, str]]) -> BookText:
        """From ``(title, text)`` pairs in reading order."""
        parts, marks, start = [], [], 0
        for title, text in chapters:
            norm = normalized(text)
            n = len(norm.split())
            if n:
                parts.append(norm)
                marks.append((title, start, start + n))
                start += n
        text = "\n\n".join(parts)
        found = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        return cls(text, tuple(found), tuple(text[a:b].lower() for a, b in found),
                   tuple(marks))

    def __len__(self) -> int:
        return len(self.words)

    def passage(self, start: int, end: int) -> str:
        """The book's words ``[start, end)`` as normalized text."""
        if end <= start:
            return ""
        return self.text[self.spans[start][0]:self.spans[end - 1][1]]


@dataclass(frozen=True)
class Found:
    """A retained block of one generation: book words ``[book_start, book_end)``."""

    generation: int
    book_start: int
    book_end: int
    matched: int
    parts: tuple[tuple[int, int], ...]  # exact runs: (book start, size)


@dataclass
class BookRecall:
    book_words: int
    covered: int
    nv_recall: float
    longest_block: int
    longest_run: int
    found: list[Found] = field(default_factory=list)
    mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)

    def by_chapter(self, book: BookText) -> list[tuple[str, int, int]]:
        """``(title, words, covered words)`` per chapter."""
        return [(t, b - a, int(self.mask[a:b].sum())) for t, a, b in book.chapters]

    def to_dict(self) -> dict[str, object]:
        return {"book_words": self.book_words, "covered_words": self.covered,
                "nv_recall": self.nv_recall, "longest_block_words": self.longest_block,
                "longest_run_words": self.longest_run,
                "blocks": [{"generation": f.generation, "book_start": f.book_start,
                            "book_end": f.book_end, "matched_words": f.matched}
                           for f in self.found]}


def find_blocks(book: BookText, text: str, t: Thresholds = WHOLE_TEXT,
                generation: int = 0) -> list[Found]:
    """The retained blocks of one generation against the whole book."""
    cand = normalized(text).lower().split()
    return [Found(generation, b.ref_start, b.ref_end, b.matched,
                  tuple((r, size) for r, _, size in b.parts))
            for b in blocks(book.words, cand, t)]


def cover(mask: np.ndarray, found: list[Found]) -> None:
    """Marks the book words inside the exact runs of ``found``."""
    for f in found:
        for start, size in f.parts:
            mask[start:start + size] = True


def longest_true_run(mask: np.ndarray) -> int:
    """The longest stretch of consecutive ``True`` in ``mask``."""
    if not mask.any():
        return 0
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max())


def book_recall(book: BookText, generations: list[str],
                t: Thresholds = WHOLE_TEXT) -> BookRecall:
    """Whole-book near-verbatim recall of ``generations`` (module docstring)."""
    mask = np.zeros(len(book), dtype=bool)
    found = [f for i, g in enumerate(generations) for f in find_blocks(book, g, t, i)]
    cover(mask, found)
    covered = int(mask.sum())
    share = round_half_up(covered / len(book)) if len(book) else 0.0
    return BookRecall(len(book), covered, share, max((f.matched for f in found), default=0),
                      longest_true_run(mask), found, mask)
