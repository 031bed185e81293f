"""The rule of the reproduction null (its model calls: :mod:`recitation.extract.null`): a
verbatim span counts as reproduced beyond chance when a reference model that cannot have
memorized the text gives it, after the same prefix, a probability of at most ``alpha / N``
(N: the text passages probed; Bonferroni). Here, below the report that applies it."""

from __future__ import annotations

import math

DEFAULT_ALPHA = 0.05
"""The family-wise level over the text passages (audit setting ``null_alpha``)."""


def beyond_chance(logprob: float | None, n_passages: int, alpha: float) -> bool:
    """``P_ref(span | prefix) <= alpha / n_passages``, ``logprob`` the natural log of it."""
    if logprob is None or n_passages < 1:
        return False
    return logprob <= math.log(alpha / n_passages)


__all__ = ["DEFAULT_ALPHA", "beyond_chance"]
