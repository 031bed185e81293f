"""The reproduction null's rule (metrics/null.py): a span is reproduced beyond chance when the
reference model's probability of it is at most alpha / N (Bonferroni over the N passages
probed). Checked against the rule written with probabilities (not logs), at and around its
boundary, so that a dropped or loosened correction fails here."""

from __future__ import annotations

import math

import pytest

from recitation.metrics.null import DEFAULT_ALPHA, beyond_chance


def bonferroni(p: float, n: int, alpha: float) -> bool:
    """Reject when p <= alpha / n (Bonferroni, family-wise level alpha over n tests)."""
    return p <= alpha / n


@pytest.mark.parametrize("n", [1, 2, 7, 20, 1000])
@pytest.mark.parametrize("alpha", [0.01, DEFAULT_ALPHA, 0.2])
def test_beyond_chance_is_bonferroni_around_the_bound(n: int, alpha: float) -> None:
    bound = alpha / n
    for p in (bound * 0.5, bound * 0.999, bound * 1.001, bound * 2, alpha, 0.9, 1e-300):
        assert beyond_chance(math.log(p), n, alpha) is bonferroni(p, n, alpha), (p, n, alpha)


def test_exactly_at_the_bound_is_beyond_chance() -> None:
    assert beyond_chance(math.log(DEFAULT_ALPHA / 20), 20, DEFAULT_ALPHA) is True
    assert beyond_chance(math.log(0.05), 1, 0.05) is True  # one passage: no correction


def test_bonferroni_dropped_fails() -> None:
    """p between alpha / N and alpha: beyond chance without the correction, not with it."""
    p = DEFAULT_ALPHA / 4  # N = 10: the bound is alpha / 10
    assert not beyond_chance(math.log(p), 10, DEFAULT_ALPHA)
    assert beyond_chance(math.log(p), 4, DEFAULT_ALPHA)


def test_no_probability_or_no_passage_is_never_beyond_chance() -> None:
    assert beyond_chance(None, 20, DEFAULT_ALPHA) is False
    assert beyond_chance(-1000.0, 0, DEFAULT_ALPHA) is False
    assert beyond_chance(-1000.0, -3, DEFAULT_ALPHA) is False
    assert beyond_chance(-1000.0, 1, DEFAULT_ALPHA) is True
    assert DEFAULT_ALPHA == 0.05
