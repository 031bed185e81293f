"""The vocabulary statistics' kernel choice (recitation.models._stats): rows picked by index
equal the same rows in order and scipy's float64 reference; ``torch.compile`` of the chunk
function (what a GPU runs; here inductor's CPU code) gives eager's numbers; a compile that
fails falls back to eager with a warning, and an out-of-memory error still reaches the
caller (who halves the batch)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
special = pytest.importorskip("scipy.special")

from recitation.models import _stats  # noqa: E402


def _case(rows: int = 40, vocab: int = 700, seed: int = 3) -> tuple[Any, Any, Any]:
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(rows, vocab, generator=gen) * 4).to(torch.bfloat16)
    index = torch.randperm(rows, generator=gen)[: rows * 3 // 4]
    gold = torch.randint(0, vocab, (len(index),), generator=gen)
    return logits, index, gold


def _scipy(logits: Any, index: Any, gold: Any) -> list[np.ndarray]:
    x = logits.float().numpy().astype(np.float64)[index.numpy()]
    logp = special.log_softmax(x, axis=-1)
    p = np.exp(logp)
    mean = (p * logp).sum(-1)
    std = np.sqrt((p * (logp - mean[:, None]) ** 2).sum(-1))
    lp = logp[np.arange(len(gold)), gold.numpy()]
    return [lp, mean, std, logp.max(-1), (logp > lp[:, None]).sum(-1) + 1]



def test_rows_by_index_equal_those_rows_in_order_and_scipy() -> None:
    logits, index, gold = _case()
    picked = _stats.position_stats(logits, gold, index=index, elements=5 * 700)
    in_order = _stats.position_stats(logits[index], gold)
    for a, b in zip(picked, in_order, strict=True):
        assert torch.equal(a, b)
    for ours, ref in zip(picked[:4], _scipy(logits, index, gold)[:4], strict=True):
        np.testing.assert_allclose(ours.numpy(), ref, atol=2e-5, rtol=0)
    assert (picked[4].numpy() == _scipy(logits, index, gold)[4]).all()


@pytest.mark.slow
def test_compiled_chunk_statistics_equal_eager() -> None:
    compiled = torch.compile(_stats.chunk_stats, dynamic=True)
    for rows, vocab, seed in ((40, 700, 3), (9, 1500, 4)):  # a second shape, no recompile
        logits, index, gold = _case(rows, vocab, seed)
        eager = _stats.chunk_stats(logits, index, gold)
        fused = compiled(logits, index, gold)
        for a, b in zip(fused[:4], eager[:4], strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
        assert torch.equal(fused[4], eager[4])


def test_a_failed_compile_falls_back_to_eager_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def broken(*args: Any) -> Any:
        calls.append(1)
        raise RuntimeError("triton: no compiler here")

    run = _stats._guarded(broken)
    logits, index, gold = _case()
    with caplog.at_level(logging.WARNING, logger="recitation.models._stats"):
        first = run(logits, index, gold)
        second = run(logits, index, gold)
    eager = _stats.chunk_stats(logits, index, gold)
    assert all(torch.equal(a, b) for a, b in zip(first, eager, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(second, eager, strict=True))
    assert calls == [1]  # not tried again
    assert "no compiler here" in caplog.text and "eager" in caplog.text


def test_out_of_memory_reaches_the_caller() -> None:
    def oom(*args: Any) -> Any:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    with pytest.raises(RuntimeError, match="out of memory"):
        _stats._guarded(oom)(*_case())


def test_the_kernel_is_eager_on_a_cpu_or_when_turned_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _stats._kernel(torch.device("cpu")) is _stats.chunk_stats
    monkeypatch.setenv("RECITATION_COMPILE_STATS", "0")
    assert _stats._kernel(torch.device("cuda")) is _stats.chunk_stats
    monkeypatch.delenv("RECITATION_COMPILE_STATS")
    monkeypatch.setattr(_stats, "_COMPILED", {})
    assert _stats._kernel(torch.device("cuda")) is not _stats.chunk_stats
