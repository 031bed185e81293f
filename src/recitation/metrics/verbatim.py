"""The one definition of "reproduced verbatim", used by prefix probing, the reproduction null,
RECAP's summary, the whole-book estimate and the report's verdict.

An attempt **reproduces a gold text verbatim** when it contains at least ``min_words``
consecutive words of the gold text exactly, anywhere (or every word of a gold text shorter
than that). Words are those of :func:`recitation.corpus.tokenize.words`: lower-cased, with
punctuation dropped, so ``"Emma Woodhouse, handsome"`` matches ``emma woodhouse handsome``.
The span is the longest such run (the first in the gold text when several are as long), and
its place in both texts is kept, so the null can score exactly that span after exactly the
text that preceded it.

The rule's version (:data:`RULE_VERSION`) and ``min_words`` are fixed in an audit's manifest
when it is created (:mod:`recitation.verdict.pins`), so an old audit is judged by the rule it
was created under.

HELM's prefix-probing rule (the continuation's longest common *prefix* with the true
continuation, ``lcp_words``) is a special case: a prefix match of ``n`` words is a run of
``n`` words; it is still recorded beside the span (docs/extraction.md, differences).
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from recitation.corpus.tokenize import words

VERBATIM_WORDS = 8
"""``min_words`` by default: the prefix probe's (Karamolegkou et al. 2023 count
reproduction from 8 words on)."""

RULE_VERSION = 1


@dataclass(frozen=True)
class Verbatim:
    """The longest run of gold words an attempt repeats exactly, and whether it counts."""

    words: int  # its length in words (0: no word shared)
    gold_start: int  # its first word's index in the gold text's words
    attempt_start: int  # and in the attempt's
    gold_words: int  # the gold text's length in words
    min_words: int

    @property
    def reproduced(self) -> bool:
        """At least ``min_words`` words, or all of a shorter (non-empty) gold text."""
        return self.words > 0 and self.words >= min(self.min_words, self.gold_words)


def longest_run(gold: list[str], attempt: list[str]) -> tuple[int, int, int]:
    """``(length, gold_start, attempt_start)`` of the longest run of consecutive items both
    sequences share (``difflib.SequenceMatcher.find_longest_match`` with no junk
    heuristic: every word counts)."""
    m = SequenceMatcher(None, gold, attempt, autojunk=False).find_longest_match(
        0, len(gold), 0, len(attempt))
    return m.size, m.a, m.b


def verbatim(gold: str, attempt: str, min_words: int = VERBATIM_WORDS) -> Verbatim:
    """Whether ``attempt`` reproduces ``gold`` verbatim (module docstring)."""
    if min_words < 1:
        raise ValueError(f"min_words must be at least 1, got {min_words}")
    g = words(gold)
    n, gs, as_ = longest_run(g, words(attempt))
    return Verbatim(words=n, gold_start=gs if n else 0, attempt_start=as_ if n else 0,
                    gold_words=len(g), min_words=min_words)


__all__ = ["RULE_VERSION", "VERBATIM_WORDS", "Verbatim", "longest_run", "verbatim"]
