"""Near-verbatim recall (NVR, "nv-recall") as the PROPME authors' code computes it.

The definition of N-essuno/PropMe ``03_tracing/simple_trace.py`` (``compute_nv_recall`` and
the ``_nv_*`` helpers it calls), restated:

- **Words.** NFKC, curly single quotes to ``'``, curly and angle double quotes to ``"``, en
  dash / horizontal bar / minus sign to an em dash, the ellipsis character to ``...``; spaced
  dots ``. . .`` to ``...``, a space after ``...`` glued to a letter or digit, ``_x_`` to
  ``x``; lower case; split on whitespace (punctuation stays in the words).
- **Blocks.** ``difflib.SequenceMatcher(a=reference, b=candidate)`` (autojunk on, its
  default) matching blocks.
- **Merge, filter, merge, filter.** With ``n`` the reference's word count: merge consecutive
  blocks whose gaps (reference and candidate side) are at most ``tau_gap`` and differ by at
  most ``tau_align`` (the matched length is the sum of the merged blocks' sizes), keep merged
  blocks of at least ``l1`` matched words, merge again with the second taus, keep those of at
  least ``l2``: ``l1 = clamp(round(0.15 n), 2, 20)``, ``l2 = clamp(round(0.35 n), 4, 100)``,
  ``tau1_gap = clamp(round(0.02 n), 1, 6)``, ``tau1_align = clamp(round(0.01 n), 1, 3)``,
  ``tau2_gap = clamp(round(0.08 n), 2, 12)``, ``tau2_align = clamp(round(0.03 n), 1, 5)``
  (Python's ``round``: halves to even).
- **Recall** = matched words / ``n``, rounded half up to 9 decimals; 0 for an empty reference.

In SimpleTrace (:mod:`recitation.trace.simpletrace`) the reference is the **generation** and
the candidate each retrieved **document window** (up to 5 L tokens around the span's
occurrence); a batch's ``avg_nv_recall`` is the mean over every retrieved document
(:mod:`recitation.trace.metrics`).

**Fixed thresholds** (:data:`WHOLE_TEXT`): the same code's ``_compute_nv_recall_with_params``
defaults, ``l1 = 20``, ``l2 = 100``, ``tau1 = (2, 1)``, ``tau2 = (10, 3)``, the whole-book
nv-recall of Ahmed, Cooper et al. (2026, "Extracting books from production language models"),
whose adaptive variant above clamps toward them for long references. Whole-book extraction
(:mod:`recitation.metrics.book_recall`) uses them: the reference is the **book**, the candidate
the extracted text. :func:`blocks` keeps each retained block's exact runs (``parts``), so that
the book positions several generations cover can be united.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from difflib import SequenceMatcher

_TABLE = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2013": "\u2014", "\u2015": "\u2014", "\u2212": "\u2014",
    "\u2026": "...",
})
_SPACED_DOTS = re.compile(r"\.\s+\.\s+\.")
_GLUED_DOTS = re.compile(r"\.\.\.(?=[0-9A-Za-z])")
_EMPHASIS = re.compile(r"_([^_]+)_")
DECIMALS = 9


def normalized(text: str) -> str:
    """The text as NVR reads it before lower-casing (module docstring); its whitespace-split
    words, lower-cased, are :func:`words` (lower-casing adds no whitespace)."""
    norm = unicodedata.normalize("NFKC", text).translate(_TABLE)
    norm = _SPACED_DOTS.sub("...", norm)
    norm = _GLUED_DOTS.sub("... ", norm)
    return _EMPHASIS.sub(r"\1", norm)


def words(text: str) -> list[str]:
    """The normalized, whitespace-split words NVR compares (module docstring)."""
    return normalized(text).lower().split()


def clamp(x: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, round(x)))


def round_half_up(value: float, places: int = DECIMALS) -> float:
    q = Decimal(str(float(value))).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return float(q) or 0.0


@dataclass(frozen=True)
class Thresholds:
    l1: int
    l2: int
    tau1_gap: int
    tau1_align: int
    tau2_gap: int
    tau2_align: int

    @classmethod
    def for_length(cls, n: int) -> Thresholds:
        """The length-adaptive thresholds for a reference of ``n`` words."""
        return cls(clamp(0.15 * n, 2, 20), clamp(0.35 * n, 4, 100), clamp(0.02 * n, 1, 6),
                   clamp(0.01 * n, 1, 3), clamp(0.08 * n, 2, 12), clamp(0.03 * n, 1, 5))


@dataclass(frozen=True)
class NVR:
    recall: float
    matched: int
    reference_words: int
    candidate_words: int


WHOLE_TEXT = Thresholds(l1=20, l2=100, tau1_gap=2, tau1_align=1, tau2_gap=10, tau2_align=3)
"""The fixed thresholds (module docstring): blocks of at least 100 matched words."""


@dataclass(frozen=True)
class Block:
    """A retained near-verbatim block: reference words ``[ref_start, ref_end)`` against
    candidate words ``[cand_start, cand_end)``; ``matched``: the words of its exact runs
    (``parts``: ``(ref_start, cand_start, size)`` each), the gaps between them not counted."""

    ref_start: int
    ref_end: int
    cand_start: int
    cand_end: int
    matched: int
    parts: tuple[tuple[int, int, int], ...]


def _merge(blocks: list[Block], gap: int, align: int) -> list[Block]:
    out: list[Block] = []
    for b in blocks:
        if out:
            cur = out[-1]
            g_ref, g_cand = b.ref_start - cur.ref_end, b.cand_start - cur.cand_end
            if max(g_ref, g_cand) <= gap and abs(g_ref - g_cand) <= align:
                out[-1] = Block(cur.ref_start, b.ref_end, cur.cand_start, b.cand_end,
                                cur.matched + b.matched, cur.parts + b.parts)
                continue
        out.append(b)
    return out


def blocks(ref: Sequence[str], cand: Sequence[str], t: Thresholds) -> list[Block]:
    """The retained blocks of two word lists: ``difflib`` matching blocks (autojunk on),
    merged and filtered twice (module docstring)."""
    found = [Block(m.a, m.a + m.size, m.b, m.b + m.size, m.size, ((m.a, m.b, m.size),))
             for m in SequenceMatcher(a=ref, b=cand).get_matching_blocks() if m.size]
    found = [b for b in _merge(found, t.tau1_gap, t.tau1_align) if b.matched >= t.l1]
    return [b for b in _merge(found, t.tau2_gap, t.tau2_align) if b.matched >= t.l2]


def nv_recall(reference: str, candidate: str, thresholds: Thresholds | None = None) -> NVR:
    """Near-verbatim recall of ``reference`` in ``candidate`` (module docstring); the
    thresholds scale with the reference unless given."""
    ref, cand = words(reference), words(candidate)
    n = len(ref)
    if not n:
        return NVR(0.0, 0, 0, len(cand))
    matched = sum(b.matched for b in blocks(ref, cand, thresholds or Thresholds.for_length(n)))
    return NVR(round_half_up(matched / n), matched, n, len(cand))
