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


def _gap_k_as_the_authors(model, tok, text: str) -> float:  # type: ignore[no-untyped-def]
    """Gap-K% at 20% as the authors' wikimia.py computes it (meaoww/gap-k): float32 logits,
    the variance clamped at 1e-8, the normalized gaps smoothed by np.convolve over windows of
    3, the mean of the lowest max(1, int(n * 0.2)) (written from their code here)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    ids = torch.tensor(tok.encode(text)).unsqueeze(0)
    with torch.no_grad():
        logits_tv = model(ids).logits[0, :-1].to(torch.float32)
    probs, log_probs = F.softmax(logits_tv, dim=-1), F.log_softmax(logits_tv, dim=-1)
    token_lp = log_probs.gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1)
    mu = (probs * log_probs).sum(-1)
    sigma = torch.clamp((probs * torch.square(log_probs)).sum(-1) - torch.square(mu), min=1e-8)
    top1 = log_probs.gather(-1, torch.argmax(logits_tv, dim=-1).unsqueeze(-1)).squeeze(-1)
    x = ((token_lp - top1) / sigma.sqrt()).numpy().astype(np.float64)
    smoothed = x if x.size < 3 else np.convolve(x, np.ones(3) / 3, mode="valid")
    k = max(1, int(len(smoothed) * 0.2))
    return float(np.mean(np.sort(smoothed)[:k]))


@pytest.mark.model
def test_gap_k_matches_the_authors_computation_from_logits(local_model) -> None:  # type: ignore[no-untyped-def]
    loaded = local_model.load()
    batch = local_model.score_sync(TEXTS)
    for text, ts in zip(TEXTS, batch, strict=True):
        got = {d.detector: d.score for d in whitebox_scores("x", text, ts)}
        want = _gap_k_as_the_authors(loaded.model, loaded.tokenizer, text)
        assert got["gap_k_20"] == pytest.approx(want, abs=2e-4), text
        assert got["gap_k_20"] <= 0  # the gold token is never likelier than the top one


def test_gap_k_smooths_then_takes_the_lowest_by_hand() -> None:
    from recitation.detect.whitebox import gap_k

    lps, top, sd = [-1.0, -2.0, -3.0, -4.0, -0.5], [-0.5] * 5, [1.0, 1.0, 1.0, 1.0, 0.0]
    # gaps -0.5, -1.5, -2.5, -3.5, and 0 / sqrt(1e-8) = 0; windows of 3: -1.5, -2.5, -2.0
    assert gap_k(lps, top, sd, 20) == pytest.approx(-2.5)  # floor(3 * 0.2) -> 1 lowest
    assert gap_k(lps, top, sd, 100) == pytest.approx(-2.0)
    assert gap_k(lps[:2], top[:2], sd[:2], 50) == pytest.approx(-1.5)  # under 3: no smoothing
    with pytest.raises(ValueError, match="aligned"):
        gap_k(lps, top[:2], sd, 20)


@pytest.mark.model
def test_the_top_token_is_aligned_when_texts_share_a_prefix(local_model) -> None:  # type: ignore[no-untyped-def]
    """Texts sharing a long prefix are scored with one prefix pass (models/_decode.py): their
    top-1 log-probabilities, like the rest, equal each text scored alone."""
    prefix = TEXTS[1]
    texts = [prefix + " And it came to pass.", prefix + " Selah."]
    shared = local_model.score_sync(texts)
    for text, ts in zip(texts, shared, strict=True):
        (alone,) = local_model.score_sync([text])
        assert ts.top_logprob is not None and alone.top_logprob is not None
        assert len(ts.top_logprob) == len(ts.logprobs)
        assert ts.top_logprob == pytest.approx(alone.top_logprob, abs=1e-4)
        assert all(t >= lp - 1e-6 for t, lp in zip(ts.top_logprob, ts.logprobs, strict=True))
