"""Per-book weighted ROUGE-L (RECAP eq. 2) and bootstrap group means over books.

RECAP scores a book by the ROUGE-L *recall* of each event's extraction against its gold
text, micro-averaged with weights ``w`` = number of NLTK ``word_tokenize`` tokens of the gold
text:  ``R = sum_j w_j r_j / sum_j w_j``. The denominator runs over *every* event with a
non-empty gold text, so an event without a candidate contributes 0 (not a missing value).
Before scoring, the gold text loses its first sentence when it starts with it (difflib
ratio > 0.9 over ``len(first_sentence)`` characters): the extraction prompt gives that
sentence away. Group means are bootstrapped over books (1,000 resamples, seeded).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from recitation.corpus.tokenize import legacy_word_tokenize


def strip_given_first_sentence(gold: str, first_sentence: str, *, threshold: float = 0.9) -> str:
    """``gold`` without its leading ``first_sentence`` when it starts with it (as released).

    The test is ``difflib.SequenceMatcher(None, first_sentence, gold[:len(first_sentence)])
    .ratio() > threshold``; the cut is at ``len(first_sentence)`` characters, then leading
    whitespace is stripped.
    """
    if not first_sentence or not gold:
        return gold
    head = gold[: len(first_sentence)]
    if difflib.SequenceMatcher(None, first_sentence, head).ratio() > threshold:
        return gold[len(first_sentence) :].lstrip()
    return gold


def gold_word_count(gold: str) -> int:
    """The event weight of eq. 2: ``len(nltk.word_tokenize(gold))`` under NLTK 3.8.1's rules.

    The release ran NLTK 3.8.1; later NLTK tokenizes curly quotes, dashes and leading
    apostrophes differently, which moved the weighted ROUGE-L by up to 1e-3. With the pinned
    rules (:func:`recitation.corpus.tokenize.legacy_word_tokenize`) it reproduces exactly.
    """
    return len(legacy_word_tokenize(gold))


@dataclass
class WeightedMean:
    """Accumulates ``sum w r / sum w`` where some items add weight without a score."""

    weighted_sum: float = 0.0
    total_weight: float = 0.0

    def add(self, score: float | None, weight: float) -> None:
        """Add an item; ``score=None`` (no candidate) still adds to the denominator."""
        self.total_weight += weight
        if score is not None:
            self.weighted_sum += score * weight

    @property
    def value(self) -> float:
        """The weighted mean; 0.0 when no weight was added (as released)."""
        return self.weighted_sum / self.total_weight if self.total_weight > 0 else 0.0


def weighted_rouge(scores: Sequence[float | None], weights: Sequence[float]) -> float:
    """Eq. 2 for one book: ``None`` scores count as 0 but keep their weight."""
    if len(scores) != len(weights):
        raise ValueError(f"{len(scores)} scores but {len(weights)} weights")
    acc = WeightedMean()
    for s, w in zip(scores, weights, strict=True):
        acc.add(s, w)
    return acc.value


@dataclass(frozen=True)
class BootstrapMean:
    """Mean and standard deviation of bootstrap means (RECAP group tables)."""

    mean: float
    std: float
    n_items: int
    n_resamples: int
    seed: int


def bootstrap_group_mean(
    values: Iterable[float], *, n_resamples: int = 1000, seed: int = 0
) -> BootstrapMean:
    """Resample books with replacement ``n_resamples`` times; report mean and std of means.

    Uses ``numpy.random.default_rng(seed)`` (PCG64); the std is the population std
    (``ddof=0``) of the resampled means. Results depend on the seed and on numpy's generator;
    with 1,000 resamples the std itself carries about 2% Monte-Carlo noise.
    """
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        raise ValueError("bootstrap_group_mean needs at least one value")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(n_resamples, arr.size))
    means = arr[idx].mean(axis=1)
    return BootstrapMean(float(means.mean()), float(means.std()), int(arr.size), n_resamples, seed)
