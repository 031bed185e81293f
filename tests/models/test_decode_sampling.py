"""The local backend's sampling step (models/_decode._pick) draws from the distribution the
request names: softmax at the temperature, cut to the ``top_k`` likeliest, then to the nucleus
``top_p``. Checked by chi-square (scipy) against probabilities worked out here in numpy."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from recitation.models.base import GenerationRequest

torch = pytest.importorskip("torch")
from recitation.models._decode import _pick  # noqa: E402

# distinct values, then a tail of ties (as bfloat16 logits often have): a cut of 10 falls
# among the distinct ones, a cut of 50 among the ties, which are kept as transformers keeps them
LOGITS = np.array([2.0, 1.5, 1.2, 0.7, 0.1, -0.3, -1.0, -2.5]
                  + [-3.0 - 0.05 * i for i in range(16)] + [-4.0] * 40)


def expected(temperature: float, top_k: int | None, top_p: float) -> np.ndarray:
    """The request's distribution, from its definition (HF's TopK then TopP warpers)."""
    z = LOGITS / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_k is not None:  # transformers' TopKLogitsWarper: below the k-th value removed
        p[p < np.sort(p)[::-1][top_k - 1]] = 0.0
        p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        before = np.cumsum(p[order]) - p[order]  # mass of the likelier tokens
        p[order[before >= top_p]] = 0.0
        p /= p.sum()
    return p


def draws(req: GenerationRequest, n: int, seed: int) -> Counter[int]:
    gen = torch.Generator()
    gen.manual_seed(seed)
    logits = torch.tensor(LOGITS, dtype=torch.float32)
    return Counter(_pick(logits, req, gen) for _ in range(n))


@pytest.mark.parametrize(("temperature", "top_k", "top_p"),
                         [(1.0, None, 1.0), (0.7, 5, 1.0), (1.0, 10, 1.0), (1.0, 50, 1.0),
                          (1.3, None, 0.8), (1.0, 6, 0.9)])
def test_draws_follow_the_requested_distribution(temperature: float, top_k: int | None,
                                                 top_p: float) -> None:
    req = GenerationRequest(prompt="x", temperature=temperature, top_k=top_k, top_p=top_p)
    n = 20_000
    got = draws(req, n, seed=11)
    p = expected(temperature, top_k, top_p)
    assert set(got) <= set(np.flatnonzero(p))  # nothing outside the cut is ever drawn
    support = np.flatnonzero(p)
    observed = np.array([got[int(i)] for i in support])
    # pool the rare tokens so every expected count is at least 5 (chi-square's condition)
    rare = p[support] * n < 5
    if rare.any():
        observed = np.append(observed[~rare], observed[rare].sum())
        exp = np.append(p[support][~rare], p[support][rare].sum()) * n
    else:
        exp = p[support] * n
    assert stats.chisquare(observed, exp).pvalue > 1e-3


def test_greedy_and_seeded_draws() -> None:
    logits = torch.tensor(LOGITS, dtype=torch.float32)
    assert _pick(logits, GenerationRequest(prompt="x"), None) == 0
    req = GenerationRequest(prompt="x", temperature=1.0, top_k=4)
    assert draws(req, 200, seed=3) == draws(req, 200, seed=3)
    assert draws(req, 200, seed=3) != draws(req, 200, seed=4)
