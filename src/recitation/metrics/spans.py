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
    the same candidate spans, then kept greedily from the longest down, dropping any span
    that overlaps an already kept one on the gold side: each gold token is counted once.

Tokenization differs between modes by default: ``"recap-compat"`` keeps the release's
normalization exactly (lower-case; whitespace collapsed; ``" ' — – … . , ; : ! ? -``
deleted; NLTK word tokens), under which typographic quotes (’ “ ”) survive as tokens;
``"dedup"`` first folds typographic quotes to ASCII so they are deleted as well, which
keeps a model's straight apostrophes from counting as mismatches against curly ones.
Differences are measured in docs/reproduction.md.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from recitation.corpus.tokenize import word_tokenize

SpanMode = Literal["recap-compat", "dedup"]

_WS = re.compile(r"\s+")
_RECAP_DELETE = re.compile(r"[\"'—–….,;:!?-]")
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


def span_tokens(text: str, *, fold_typography: bool = False) -> list[str]:
    """Normalized word tokens as the RECAP release makes them (see module docstring)."""
    t = text.lower()
    if fold_typography:
        t = t.translate(_TYPOGRAPHIC)
    t = _WS.sub(" ", t)
    t = _RECAP_DELETE.sub("", t)
    return word_tokenize(t.strip())


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


def dedup_spans(spans: Iterable[Span]) -> list[Span]:
    """Keep spans longest first (ties: earlier gold start), dropping gold-side overlaps."""
    kept: list[Span] = []
    for span in sorted(spans, key=lambda s: (-s.length, s.gold_start)):
        if all(span.gold_end <= k.gold_start or span.gold_start >= k.gold_end for k in kept):
            kept.append(span)
    return kept


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
    spans = grow_spans(blocks, min_tokens=min_tokens, max_mismatches=max_mismatches)
    return spans if mode == "recap-compat" else dedup_spans(spans)


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
) -> SpanStats:
    """Spans and 40-token passages of ``candidate`` found verbatim in ``gold``."""
    fold = mode != "recap-compat"
    spans = find_spans(
        span_tokens(gold, fold_typography=fold),
        span_tokens(candidate, fold_typography=fold),
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
) -> dict[int, SpanStats]:
    """:func:`verbatim_passages` for each mismatch budget (RECAP Appendix R), one diff."""
    fold = mode != "recap-compat"
    g = span_tokens(gold, fold_typography=fold)
    c = span_tokens(candidate, fold_typography=fold)
    blocks = matching_blocks(g, c)
    return {
        n: span_stats(
            find_spans(g, c, min_tokens=min_tokens, max_mismatches=n, mode=mode, blocks=blocks),
            min_tokens=min_tokens,
        )
        for n in budgets
    }
