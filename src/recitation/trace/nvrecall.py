"""Near-verbatim recall (NVR) as the PROPME authors compute it (the default).

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
"""

from __future__ import annotations

import re
import unicodedata
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


def words(text: str) -> list[str]:
    """The normalized, whitespace-split words NVR compares (module docstring)."""
    norm = unicodedata.normalize("NFKC", text).translate(_TABLE)
    norm = _SPACED_DOTS.sub("...", norm)
    norm = _GLUED_DOTS.sub("... ", norm)
    norm = _EMPHASIS.sub(r"\1", norm)
    return norm.lower().split()


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


Block = tuple[int, int, int, int, int]
"""(reference start, reference end, candidate start, candidate end, matched words)."""


def _merge(blocks: list[Block], gap: int, align: int) -> list[Block]:
    out: list[Block] = []
    for b in blocks:
        if out:
            a0, a1, b0, b1, m = out[-1]
            g_ref, g_cand = b[0] - a1, b[2] - b1
            if max(g_ref, g_cand) <= gap and abs(g_ref - g_cand) <= align:
                out[-1] = (a0, b[1], b0, b[3], m + b[4])
                continue
        out.append(b)
    return out


def nv_recall(reference: str, candidate: str) -> NVR:
    """Near-verbatim recall of ``reference`` in ``candidate`` (module docstring)."""
    ref, cand = words(reference), words(candidate)
    n = len(ref)
    if not n:
        return NVR(0.0, 0, 0, len(cand))
    t = Thresholds.for_length(n)
    blocks: list[Block] = [(m.a, m.a + m.size, m.b, m.b + m.size, m.size) for m in
                           SequenceMatcher(a=ref, b=cand).get_matching_blocks() if m.size]
    blocks = [b for b in _merge(blocks, t.tau1_gap, t.tau1_align) if b[4] >= t.l1]
    blocks = [b for b in _merge(blocks, t.tau2_gap, t.tau2_align) if b[4] >= t.l2]
    matched = sum(b[4] for b in blocks)
    return NVR(round_half_up(matched / n), matched, n, len(cand))
