"""White-box scores: Min-K% and Min-K%++ through the local backend against a direct
computation from the real SmolLM2's logits; the other scores on hand-made token scores."""

from __future__ import annotations

import math
import zlib

import pytest

from recitation.detect.whitebox import (
    MIN_K_PERCENTS,
    mean_nll,
    min_k_percent,
    min_k_plus_plus,
    whitebox_scores,
)
from recitation.models.base import TokenScores

TEXTS = [
    "The LORD is my shepherd; I shall not want.",
    "And the clockmaker said unto his apprentice, Why weepest thou? And he answered, Because "
    "the wheel that I have made turneth not.",
    "def add(a, b):\n    return a + b\n",
]


def _direct(model, tok, text: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Min-K% / Min-K%++ computed here from the logits, one text at a time (no padding)."""
    import torch

    ids = tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, :-1].double()
    logp = torch.log_softmax(logits, dim=-1)
    target = ids[0, 1:]
    lp = logp[torch.arange(len(target)), target]
    probs = logp.exp()
    mu = (probs * logp).sum(-1)
    sigma = torch.sqrt((probs * (logp - mu[:, None]) ** 2).sum(-1))
    z = (lp - mu) / sigma
    out = {"loss": float(-lp.mean())}
    for k in MIN_K_PERCENTS:
        n = max(1, int(len(lp) * k / 100))
        out[f"min_k_{k}"] = float(torch.topk(lp, n, largest=False).values.mean())
        out[f"min_k_pp_{k}"] = float(torch.topk(z, n, largest=False).values.mean())
    return out


@pytest.mark.model
def test_min_k_and_min_k_pp_match_a_direct_computation_from_logits(local_model) -> None:  # type: ignore[no-untyped-def]
    loaded = local_model.load()
    batch = local_model.score_sync(TEXTS)  # batched, left-padded: exercises the alignment
    for text, ts in zip(TEXTS, batch, strict=True):
        got = {d.detector: d.score for d in whitebox_scores("x", text, ts)}
        want = _direct(loaded.model, loaded.tokenizer, text)
        for name, value in want.items():
            assert got[name] == pytest.approx(value, abs=2e-4), (name, text)


def _ts(lps: list[float], mu: list[float] | None = None,
        sd: list[float] | None = None) -> TokenScores:
    toks = tuple(f"t{i}" for i in range(len(lps) + 1))
    return TokenScores(toks, tuple(lps), tuple(mu) if mu else None, tuple(sd) if sd else None)


def test_min_k_takes_the_floor_of_k_percent_but_at_least_one() -> None:
    lps = [-0.1 * i for i in range(1, 21)]  # 20 tokens: -0.1 .. -2.0
    assert min_k_percent(lps, 10) == pytest.approx((-2.0 - 1.9) / 2)
    assert min_k_percent(lps[:5], 10) == pytest.approx(-0.5)  # floor(0.5) -> 1 token
    assert min_k_plus_plus([-1.0, -3.0], [-2.0, -2.0], [0.5, 2.0], 50) == pytest.approx(-0.5)


def test_loss_zlib_lowercase_reference() -> None:
    text = "Alpha Beta"
    target, lower, ref = _ts([-1.0, -3.0]), _ts([-3.0, -5.0]), _ts([-0.5, -0.5])
    got = {d.detector: d for d in whitebox_scores("s", text, target, lower, ref)}
    assert got["loss"].score == pytest.approx(2.0) and not got["loss"].higher_means_member
    assert got["zlib"].score == pytest.approx(2.0 / len(zlib.compress(text.encode())))
    assert got["lowercase"].score == pytest.approx(4.0 / 2.0)
    assert got["lowercase"].higher_means_member
    assert got["reference"].score == pytest.approx(2.0 - 0.5)
    assert "min_k_pp_10" not in got  # no vocabulary statistics from this backend
    assert {d.sample_id for d in got.values()} == {"s"}
    assert all(math.isfinite(d.score) for d in got.values())


def test_a_single_token_text_has_no_scores() -> None:
    with pytest.raises(ValueError):
        mean_nll(_ts([]))
