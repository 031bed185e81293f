"""Hint-leak guard: how much of the gold passage a summary or a feedback hint gives away.

RECAP's summaries and feedback hints are written by a helper model that sees the gold
passage. If a hint quotes the passage, a "verbatim extraction" may only be the target model
copying its prompt. For every summary and hint this module measures verbatim overlap with the
gold text:

* ``longest_span`` - the longest run of consecutive words shared with the gold passage;
* ``shared_ngrams`` - how many distinct word ``n``-grams (default 8) of the hint occur in the
  gold passage, and ``ngram_ratio`` = shared / all distinct ``n``-grams of the hint.

A hint is *flagged* when ``longest_span >= max_span`` or ``shared_ngrams >= max_shared``.
With ``block=True`` flagged lines of a hint are removed before it reaches the target model
(:func:`guard`); a hint with nothing left is blocked entirely.

Words are :func:`recitation.corpus.tokenize.words` (lower-cased, punctuation and quote marks
ignored, typographic apostrophes folded), so typography does not hide a copy; the longest run
is :func:`recitation.metrics.spans.longest_common_span`. Text the prompt gives away by
design (the event's first sentence) can be excluded with ``allowed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.tokenize import words
from recitation.metrics.spans import longest_common_span


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


class LeakConfig(BaseModel):
    """Thresholds of the guard (job parameter ``leak``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    n: int = Field(8, ge=2, description="n-gram size")
    max_span: int = Field(12, ge=1, description="flag at a shared run of this many words")
    max_shared: int = Field(1, ge=1, description="flag at this many shared n-grams")
    block: bool = Field(False, description="remove flagged lines before the target sees them")


@dataclass(frozen=True)
class LeakStats:
    longest_span: int
    shared_ngrams: int
    total_ngrams: int
    flagged: bool

    @property
    def ngram_ratio(self) -> float:
        return self.shared_ngrams / self.total_ngrams if self.total_ngrams else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"ngram_ratio": self.ngram_ratio}


def _minus_allowed(tokens: list[str], allowed: Iterable[str], n: int) -> set[tuple[str, ...]]:
    grams = ngrams(tokens, n)
    for text in allowed:
        grams -= ngrams(words(text), n)
    return grams


def measure(hint: str, gold: str, cfg: LeakConfig | None = None,
            allowed: Iterable[str] = ()) -> LeakStats:
    """Leak statistics of ``hint`` against ``gold``; n-grams of ``allowed`` texts (given away
    on purpose) do not count, and the longest span ignores runs inside them."""
    cfg = cfg or LeakConfig()
    allowed = list(allowed)
    hw, gw = words(hint), words(gold)
    hint_grams = _minus_allowed(hw, allowed, cfg.n)
    shared = len(hint_grams & ngrams(gw, cfg.n))
    span = longest_common_span(hw, gw)
    if allowed and span:
        span = _span_outside_allowed(hw, gw, allowed)
    flagged = span >= cfg.max_span or shared >= cfg.max_shared
    return LeakStats(span, shared, len(hint_grams), flagged)


def _span_outside_allowed(hw: list[str], gw: list[str], allowed: list[str]) -> int:
    """Longest span after blanking words of the hint covered by an allowed text."""
    mask = [False] * len(hw)
    for text in allowed:
        aw = words(text)
        k = len(aw)
        for i in range(len(hw) - k + 1):
            if k and hw[i : i + k] == aw:
                mask[i : i + k] = [True] * k
    pieces: list[list[str]] = [[]]
    for w, m in zip(hw, mask, strict=True):
        if m:
            pieces.append([])
        else:
            pieces[-1].append(w)
    return max((longest_common_span(p, gw) for p in pieces if p), default=0)


@dataclass(frozen=True)
class Guarded:
    """A hint after the guard: what is sent, its stats before/after, what was removed."""

    text: str
    before: LeakStats
    after: LeakStats
    removed_lines: int
    blocked: bool

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before.to_dict(), "after": self.after.to_dict(),
                "removed_lines": self.removed_lines, "blocked": self.blocked}


def guard(hint: str, gold: str, cfg: LeakConfig, allowed: Iterable[str] = ()) -> Guarded:
    """Measure ``hint``; when ``cfg.block`` and it is flagged, drop the lines that leak."""
    allowed = list(allowed)
    before = measure(hint, gold, cfg, allowed)
    if not (cfg.block and before.flagged):
        return Guarded(hint, before, before, 0, False)
    kept = [ln for ln in hint.splitlines() if not measure(ln, gold, cfg, allowed).flagged]
    removed = len(hint.splitlines()) - len(kept)
    text = "\n".join(kept).strip()
    after = measure(text, gold, cfg, allowed)
    if not text or after.flagged:
        return Guarded("", before, after, removed, True)
    return Guarded(text, before, after, removed, False)


def summarize_leaks(stats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate per-hint stats dicts (``LeakStats.to_dict`` shape) for reports."""
    if not stats:
        return {"count": 0, "flagged": 0, "max_longest_span": 0, "mean_longest_span": 0.0,
                "shared_ngrams": 0}
    spans = [int(s["longest_span"]) for s in stats]
    return {"count": len(stats), "flagged": sum(bool(s["flagged"]) for s in stats),
            "max_longest_span": max(spans), "mean_longest_span": sum(spans) / len(spans),
            "shared_ngrams": sum(int(s["shared_ngrams"]) for s in stats)}
