"""Verbatim passages: contiguous spans shared by a gold text and an extraction.

Both texts become normalized word tokens (:func:`span_tokens`). ``difflib`` finds the
matching blocks between the two token lists; a span starts at a block and absorbs the
following blocks while the summed gaps (for each gap, the larger of the gold-side and
extraction-side skip) stay within ``max_mismatches``. A span's length counts matched tokens
only; it counts ``length // min_tokens`` passages, and only spans with at least
``min_tokens`` matched tokens are kept (RECAP: 40 tokens, 5 mismatches; Appendix R sweeps
the mismatch budget from 0 to 5).

Two modes:

``"recap-compat"``
    the RECAP release: a span is grown from *every* matching block, so a long match
    with k absorbed blocks is counted again from each of its blocks whose remainder still
    reaches ``min_tokens``. Overlapping spans are not de-duplicated; counts are inflated.
``"dedup"`` (default)
    disjoint runs of consecutive matching blocks, each within the mismatch budget, chosen
    to give the largest number of passages (:func:`max_passage_spans`). Spans never
    overlap, every matched token counts at most once, and counts can only grow with the
    budget. A greedy "longest span first, drop overlaps" rule has neither of the last two
    properties: dropping a span that overlaps a longer one also drops its blocks that do
    not. On the 24 released EchoTrace files dedup reports 49-70% fewer passages than
    recap-compat (docs/reproduction.md).

Tokens (:func:`span_tokens`) come in three profiles. All lower-case, collapse whitespace,
delete a set of punctuation, then split with NLTK 3.8.1's ``word_tokenize`` rules
(:func:`recitation.corpus.tokenize.legacy_word_tokenize`, pinned so counts do not move with
NLTK releases):

``"recap-v1"``
    deletes straight quotes, dashes, ellipses and ``. , ; : ! ?``; typographic quotes
    (’ “ ”) survive as tokens. The first revision of the released code; it produced the
    released metrics of A Christmas Carol, Grimms' Fairy Tales and Tom Sawyer.
``"recap-v2"``
    deletes typographic quotes and the straight double quote but keeps the straight
    apostrophe, so a model's ``don't`` never matches the gold ``don’t``. The later
    revision; it produced the released metrics of the other books.
``"folded"`` (default outside recap-compat)
    maps typographic quotes to ASCII first, then deletes as ``"recap-v1"``: quote style
    never causes a mismatch.

The revision behind a released Metrics file is recognizable by its report's file name
(:func:`recitation.evaluate.scoring.release_revision`). docs/reproduction.md has the numbers.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from recitation.corpus.tokenize import legacy_word_tokenize

SpanMode = Literal["recap-compat", "dedup"]
TokenProfile = Literal["recap-v1", "recap-v2", "folded"]
TOKEN_PROFILES: tuple[str, ...] = ("recap-v1", "recap-v2", "folded")

_WS = re.compile(r"\s+")
_DELETE = {
    "recap-v1": re.compile("[\"'\u2014\u2013\u2026.,;:!?-]"),
    "recap-v2": re.compile('[\u201c\u201d\u2018\u2019"\u2014\u2013\u2026.,;:!?-]'),
}
_DELETE["folded"] = _DELETE["recap-v1"]
_TYPOGRAPHIC = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u00ab": '"',
        "\u00bb": '"',
    }
)


@dataclass(frozen=True)
class Span:
    """A verbatim span. Offsets index the token lists (end exclusive, gaps included);
    ``length`` counts matched tokens only."""

    gold_start: int
    gold_end: int
    cand_start: int
    cand_end: int
    length: int


@dataclass(frozen=True)
class SpanStats:
    """Counts for one (gold, extraction) pair or summed over many."""

    span_count: int
    passage_count: int
    lengths: tuple[int, ...]

    @property
    def avg_span_length(self) -> float:
        return sum(self.lengths) / len(self.lengths) if self.lengths else 0.0

    @property
    def max_span_length(self) -> int:
        return max(self.lengths) if self.lengths else 0


def default_profile(mode: SpanMode) -> TokenProfile:
    """``"recap-v2"`` (the later released revision) for recap-compat, else ``"folded"``."""
    return "recap-v2" if mode == "recap-compat" else "folded"


def span_tokens(text: str, *, profile: TokenProfile = "folded") -> list[str]:
    """Normalized word tokens for span matching (profiles: see the module docstring)."""
    if profile not in _DELETE:
        raise ValueError(f"unknown token profile {profile!r}; use one of {TOKEN_PROFILES}")
    t = text.lower()
    if profile == "folded":
        t = t.translate(_TYPOGRAPHIC)
    t = _WS.sub(" ", t)
    t = _DELETE[profile].sub("", t)
    return legacy_word_tokenize(t.strip())


def longest_common_span(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common contiguous run of two token sequences (the longest
    common substring over tokens): ``difflib``'s longest matching block without the junk
    heuristic, which visits only pairs of equal tokens (O(n + m + equal pairs))."""
    if not a or not b:
        return 0
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sm.find_longest_match(0, len(a), 0, len(b)).size


def matching_blocks(gold: Sequence[str], cand: Sequence[str]) -> list[tuple[int, int, int]]:
    """``difflib.SequenceMatcher(None, gold, cand, autojunk=False)`` blocks, without the
    final zero-length sentinel."""
    sm = difflib.SequenceMatcher(None, gold, cand, autojunk=False)
    return [(b.a, b.b, b.size) for b in sm.get_matching_blocks()[:-1]]


def grow_spans(
    blocks: Sequence[tuple[int, int, int]], *, min_tokens: int = 40, max_mismatches: int = 5
) -> list[Span]:
    """One span grown from every block (the release's loop), longest first."""
    spans: list[Span] = []
    for i, (start_g, start_c, size) in enumerate(blocks):
        end_g, end_c, matched, mismatches = start_g + size, start_c + size, size, 0
        for next_g, next_c, next_size in blocks[i + 1 :]:
            gap = max(next_g - end_g, next_c - end_c)
            if mismatches + gap > max_mismatches:
                break
            mismatches += gap
            matched += next_size
            end_g, end_c = next_g + next_size, next_c + next_size
        if matched >= min_tokens:
            spans.append(Span(start_g, end_g, start_c, end_c, matched))
    spans.sort(key=lambda s: s.length, reverse=True)  # stable, as the release's sorted()
    return spans


def _runs_ending_at(
    blocks: Sequence[tuple[int, int, int]], j: int, max_mismatches: int
) -> list[tuple[int, int]]:
    """(start block i, matched tokens) of every budget-feasible run of blocks i..j."""
    out = [(j, blocks[j][2])]
    matched, mismatches = blocks[j][2], 0
    for i in range(j - 1, -1, -1):
        gap = max(
            blocks[i + 1][0] - (blocks[i][0] + blocks[i][2]),
            blocks[i + 1][1] - (blocks[i][1] + blocks[i][2]),
        )
        mismatches += gap
        if mismatches > max_mismatches:
            break
        matched += blocks[i][2]
        out.append((i, matched))
    return out


def max_passage_spans(
    blocks: Sequence[tuple[int, int, int]], *, min_tokens: int = 40, max_mismatches: int = 5
) -> list[Span]:
    """Disjoint runs of consecutive blocks giving the most passages, longest first.

    Dynamic programming over the blocks: ``best[j]`` is the best (passages, matched tokens)
    using blocks before ``j``; a run ``i..j-1`` is allowed when its summed gaps fit the
    budget. Every run feasible with budget N is feasible with N+1, so counts never drop as
    the budget grows; each gold and extraction token is counted at most once.
    """
    n = len(blocks)
    best: list[tuple[int, int]] = [(0, 0)] * (n + 1)
    choice: list[tuple[int, int] | None] = [None] * (n + 1)
    for j in range(1, n + 1):
        best[j], choice[j] = best[j - 1], None
        for i, matched in _runs_ending_at(blocks, j - 1, max_mismatches):
            if matched < min_tokens:
                continue
            cand = (best[i][0] + matched // min_tokens, best[i][1] + matched)
            if cand > best[j]:
                best[j], choice[j] = cand, (i, matched)
    spans: list[Span] = []
    j = n
    while j > 0:
        picked = choice[j]
        if picked is None:
            j -= 1
            continue
        i, matched = picked
        last = blocks[j - 1]
        first = blocks[i]
        spans.append(Span(first[0], last[0] + last[2], first[1], last[1] + last[2], matched))
        j = i
    spans.sort(key=lambda s: s.length, reverse=True)
    return spans


def find_spans(
    gold_tokens: Sequence[str],
    cand_tokens: Sequence[str],
    *,
    min_tokens: int = 40,
    max_mismatches: int = 5,
    mode: SpanMode = "dedup",
    blocks: Sequence[tuple[int, int, int]] | None = None,
) -> list[Span]:
    """Verbatim spans between two token lists (pass ``blocks`` to reuse a diff)."""
    if mode not in ("recap-compat", "dedup"):
        raise ValueError(f"unknown span mode {mode!r}; use 'recap-compat' or 'dedup'")
    if blocks is None:
        blocks = matching_blocks(gold_tokens, cand_tokens)
    if mode == "recap-compat":
        return grow_spans(blocks, min_tokens=min_tokens, max_mismatches=max_mismatches)
    return max_passage_spans(blocks, min_tokens=min_tokens, max_mismatches=max_mismatches)


def span_stats(spans: Sequence[Span], *, min_tokens: int = 40) -> SpanStats:
    """Span count, passage count (``sum(length // min_tokens)``) and lengths."""
    lengths = tuple(s.length for s in spans)
    return SpanStats(len(spans), sum(n // min_tokens for n in lengths), lengths)


def merge_stats(parts: Iterable[SpanStats]) -> SpanStats:
    """Sum counts and concatenate lengths (the release's per-book aggregation)."""
    items = list(parts)
    return SpanStats(
        sum(p.span_count for p in items),
        sum(p.passage_count for p in items),
        tuple(n for p in items for n in p.lengths),
    )


def verbatim_passages(
    gold: str,
    candidate: str,
    *,
    min_tokens: int = 40,
    max_mismatches: int = 5,
    mode: SpanMode = "dedup",
    profile: TokenProfile | None = None,
) -> SpanStats:
    """Spans and 40-token passages of ``candidate`` found verbatim in ``gold``.

    ``profile`` defaults to :func:`default_profile` of the mode.
    """
    prof = profile or default_profile(mode)
    spans = find_spans(
        span_tokens(gold, profile=prof),
        span_tokens(candidate, profile=prof),
        min_tokens=min_tokens,
        max_mismatches=max_mismatches,
        mode=mode,
    )
    return span_stats(spans, min_tokens=min_tokens)


def mismatch_sweep(
    gold: str,
    candidate: str,
    *,
    budgets: Iterable[int] = range(6),
    min_tokens: int = 40,
    mode: SpanMode = "dedup",
    profile: TokenProfile | None = None,
) -> dict[int, SpanStats]:
    """:func:`verbatim_passages` for each mismatch budget (RECAP Appendix R), one diff."""
    prof = profile or default_profile(mode)
    g = span_tokens(gold, profile=prof)
    c = span_tokens(candidate, profile=prof)
    blocks = matching_blocks(g, c)
    return {
        n: span_stats(
            find_spans(g, c, min_tokens=min_tokens, max_mismatches=n, mode=mode, blocks=blocks),
            min_tokens=min_tokens,
        )
        for n in budgets
    }
