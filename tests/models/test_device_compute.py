"""What a GPU needs of the scoring and decoding loops, checked on the CPU: per-position
vocabulary statistics taken in chunks equal one pass and an independent float64 reference
(scipy), and a batch that runs out of memory is answered in halves with the same scores
and texts (the real SmolLM2, whose forward raises torch's out-of-memory error above a batch
size)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
special = pytest.importorskip("scipy.special")

from recitation.models import _decode  # noqa: E402
from recitation.models.base import GenerationRequest  # noqa: E402
from recitation.models.device import is_out_of_memory, split_on_oom  # noqa: E402
from recitation.models.local import LocalModel  # noqa: E402


def _reference(logits: np.ndarray, gold: np.ndarray) -> dict[str, np.ndarray]:
    """The statistics in float64 from scipy's log-softmax, by their definitions."""
    logp = special.log_softmax(logits.astype(np.float64), axis=-1)
    p = np.exp(logp)
    mean = (p * logp).sum(-1)
    std = np.sqrt(np.maximum((p * (logp - mean[:, None]) ** 2).sum(-1), 0))
    lp = logp[np.arange(len(gold)), gold]
    rank = (logp > lp[:, None]).sum(-1) + 1
    return {"lp": lp, "mean": mean, "std": std, "top": logp.max(-1), "rank": rank}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_vocabulary_statistics_in_chunks_equal_one_pass_and_scipy(dtype: str) -> None:
    gen = torch.Generator().manual_seed(0)
    logits = (torch.randn(37, 1000, generator=gen) * 4).to(getattr(torch, dtype))
    gold = torch.randint(0, 1000, (37,), generator=gen)
    whole = _decode.position_stats(logits, gold, elements=10**9)
    for elements in (1, 1000, 3 * 1000 + 1, 36 * 1000):  # 1 position a chunk ... 36 + 1
        chunked = _decode.position_stats(logits, gold, elements=elements)
        for a, b in zip(whole, chunked, strict=True):
            assert torch.equal(a, b)
    ref = _reference(logits.float().numpy(), gold.numpy())
    lp, mean, std, top, rank = (t.numpy() for t in whole)
    for ours, theirs in ((lp, ref["lp"]), (mean, ref["mean"]), (std, ref["std"]),
                         (top, ref["top"])):
        np.testing.assert_allclose(ours, theirs, atol=2e-5, rtol=0)
    assert (rank == ref["rank"]).all()


def test_an_empty_row_has_empty_statistics() -> None:
    out = _decode.position_stats(torch.zeros(0, 50), torch.zeros(0, dtype=torch.long))
    assert all(t.shape == (0,) for t in out)


def test_split_on_oom_halves_until_it_fits_and_keeps_order() -> None:
    seen: list[int] = []

    def run(items: list[int]) -> list[int]:
        seen.append(len(items))
        if len(items) > 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [i * 10 for i in items]

    told: list[int] = []
    assert split_on_oom(run, list(range(10)), told.append) == [i * 10 for i in range(10)]
    assert told == [10, 5, 5] and seen == [10, 5, 2, 3, 5, 2, 3]
    with pytest.raises(torch.OutOfMemoryError):  # one item that does not fit: torch's error
        split_on_oom(lambda items: run(items * 4), [1])
    with pytest.raises(ValueError):  # other errors are not retried
        split_on_oom(lambda items: (_ for _ in ()).throw(ValueError("bad")), [1, 2])
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


TEXTS = [
    "In the beginning God created the heaven and the earth.",
    "And the earth was without form, and void; and darkness was upon the face of the deep.",
    "Call me Ishmael.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
    "the age of foolishness, it was the epoch of belief.",
    "Happy families are all alike; every unhappy family is unhappy in its own way.",
    "The LORD is my shepherd; I shall not want.",
]
SHARED = "It is a truth universally acknowledged, that a single man in possession of a good "
CANDIDATES = [SHARED + end for end in ("fortune, must be in want of a wife.",
                                       "house, must be in want of a garden.",
                                       "horse, must be in want of a saddle.",
                                       "name, must be in want of a title.")]


def _failing_above(model: Any, limit: int, calls: list[int]) -> Any:
    """``model.forward`` that raises torch's out-of-memory error on more than ``limit``
    rows, as a GPU does on a batch too large for it."""
    forward = model.forward

    def guarded(*args: Any, **kwargs: Any) -> Any:
        ids = kwargs.get("input_ids", args[0] if args else None)
        calls.append(int(ids.shape[0]))
        if ids.shape[0] > limit:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(*args, **kwargs)

    return guarded


def _flat(scores: list[Any]) -> list[tuple[float, ...]]:
    return [s.logprobs + s.mean_logprob + s.std_logprob + s.top_logprob for s in scores]


@pytest.mark.model
@pytest.mark.parametrize("budget", [None, 60])
def test_scoring_backs_off_on_out_of_memory_with_the_same_scores(
        local_model: LocalModel, monkeypatch: pytest.MonkeyPatch, budget: int | None) -> None:
    loaded = local_model.load()
    texts = TEXTS + CANDIDATES  # alone, and one shared-prefix group of 4
    with loaded.lock:
        ref = _decode.score_many(loaded.model, loaded.tokenizer, texts, 8)
        calls: list[int] = []
        monkeypatch.setattr(loaded.model, "forward", _failing_above(loaded.model, 2, calls))
        got = _decode.score_many(loaded.model, loaded.tokenizer, texts, 8,
                                 token_budget=budget)
    assert max(calls) > 2 and calls.count(1) + calls.count(2) > 0  # it failed, then fitted
    assert [s.token_ids for s in got] == [s.token_ids for s in ref]
    assert [s.rank for s in got] == [s.rank for s in ref]
    for a, b in zip(_flat(got), _flat(ref), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=0)


@pytest.mark.model
def test_generation_backs_off_on_out_of_memory_with_the_same_texts(
        local_model: LocalModel, monkeypatch: pytest.MonkeyPatch) -> None:
    reqs = [GenerationRequest(prompt=t, max_tokens=8) for t in TEXTS[:4]]
    reqs.append(GenerationRequest(prompt=TEXTS[4], max_tokens=8, temperature=0.8, seed=3))
    ref = local_model.generate_sync(reqs)
    calls: list[int] = []
    loaded = local_model.load()
    monkeypatch.setattr(loaded.model, "forward", _failing_above(loaded.model, 2, calls))
    got = local_model.generate_sync(reqs)
    assert max(calls) == 5 and max(c for c in calls if c <= 2) == 2
    assert [g.text for g in got] == [g.text for g in ref]


def test_token_budget_batches() -> None:
    assert _decode._batch_len([10, 9, 8, 2], None) == 4
    assert _decode._batch_len([10, 9, 8, 2], 30) == 3  # 3 x 10 fits, 4 x 10 does not
    assert _decode._batch_len([50, 9], 30) == 1  # one text over the budget goes alone
