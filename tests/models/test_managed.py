"""ManagedModel control flow with the scripted model: cache, store, retries, budget, limits."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from recitation.errors import (
    BudgetExceeded,
    MalformedResponseError,
    RateLimitError,
    ServerError,
    UnsupportedRequest,
)
from recitation.models.base import GenerationRequest, Usage
from recitation.models.managed import Budget, Limits, ManagedModel, RateLimiter, RetryPolicy
from recitation.models.pricing import Price, PriceTable
from recitation.models.scripted import ScriptedModel
from recitation.runs.store import ResponseCache, RunStore

FAST = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01)


def reqs(n: int, **kw: object) -> list[GenerationRequest]:
    return [GenerationRequest(prompt=f"prompt number {i} with words", max_tokens=3, **kw)
            for i in range(n)]


async def test_cache_serves_deterministic_calls_across_runs(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = ScriptedModel()
    first = await ManagedModel(inner, cache=cache).generate(reqs(4))
    again = ManagedModel(ScriptedModel(), cache=cache)
    second = await again.generate(reqs(4))
    assert [g.text for g in first] == [g.text for g in second]
    assert all(g.cached for g in second) and not any(g.cached for g in first)
    assert again.stats.backend_calls == 0 and again.stats.served_from_cache == 4


async def test_answers_of_other_code_are_never_reused(tmp_path: Path) -> None:
    """A backend that answers in this process (the local model) puts a digest of its
    answering code in the key: the cache written by one version is not read by another."""
    class Versioned(ScriptedModel):
        def __init__(self, code: str | None) -> None:
            super().__init__()
            self.code = code

        def answer_code(self) -> str | None:
            return self.code

    cache = ResponseCache(tmp_path / "c.sqlite")
    await ManagedModel(Versioned("v1"), cache=cache).generate(reqs(2))
    for code, hits in (("v1", 2), ("v2", 0), (None, 0), ("v2", 2)):
        m = ManagedModel(Versioned(code), cache=cache)
        await m.generate(reqs(2))
        assert m.stats.served_from_cache == hits, (code, m.stats)


def test_local_answer_code_follows_the_decoding_code_and_libraries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The local backend's digest changes with its decoding module's source and with the
    torch / transformers versions (read from the installed packages' metadata)."""
    import importlib.metadata

    from recitation.models import local

    def digest() -> str:
        local.answer_code.cache_clear()
        return local.answer_code()

    try:
        first = digest()
        assert first == digest() and len(first) == 16
        monkeypatch.setattr(local, "ANSWER_CODE", ("recitation.models._decode",))
        assert digest() != first  # the conversion code (local.py) left out
        monkeypatch.undo()
        real = importlib.metadata.version
        monkeypatch.setattr(importlib.metadata, "version",
                            lambda lib: "0.0" if lib == "torch" else real(lib))
        assert digest() != first
        monkeypatch.undo()
        assert digest() == first
    finally:
        local.answer_code.cache_clear()


async def test_sampled_without_seed_is_never_reused(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = ScriptedModel()
    m = ManagedModel(inner, cache=cache)
    await m.generate(reqs(2, temperature=0.7))
    await m.generate(reqs(2, temperature=0.7))
    assert len(inner.requests) == 4
    await m.generate(reqs(2, temperature=0.7, seed=1))
    await m.generate(reqs(2, temperature=0.7, seed=1))
    assert len(inner.requests) == 6  # seeded: second call served from cache


async def test_key_covers_every_parameter(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = ScriptedModel()
    m = ManagedModel(inner, cache=cache)
    base = GenerationRequest(prompt="x y z", max_tokens=3)
    variants = [base, GenerationRequest(prompt="x y z", max_tokens=4),
                GenerationRequest(prompt="x y z", max_tokens=3, stop=("\n",)),
                GenerationRequest(prompt="x y z", max_tokens=3, temperature=0.5, seed=2),
                GenerationRequest.chat("x y z", max_tokens=3)]
    for v in variants:
        await m.generate([v])
    assert len(inner.requests) == len(variants)
    await ManagedModel(ScriptedModel(name="other"), cache=cache).generate([base])
    # another model name is another key


async def test_retries_then_succeeds_and_honours_retry_after() -> None:
    calls = {"n": 0}

    def flaky(req: GenerationRequest) -> str | BaseException:
        calls["n"] += 1
        if calls["n"] == 1:
            return RateLimitError("slow down", retry_after=0.2)
        if calls["n"] == 2:
            return ServerError("boom", status=500)
        return "ok"

    m = ManagedModel(ScriptedModel(flaky), retry=RetryPolicy(4, 0.001, 1.0))
    t0 = time.perf_counter()
    out = await m.generate(reqs(1))
    assert out[0].text == "ok" and calls["n"] == 3
    assert time.perf_counter() - t0 >= 0.2  # waited for Retry-After


async def test_persistent_fault_is_reported_and_recorded(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run", create=True)
    m = ManagedModel(ScriptedModel(lambda r: MalformedResponseError("not JSON")),
                     store=store, retry=FAST)
    with pytest.raises(MalformedResponseError, match=r"scripted/scripted: generate failed "
                       r"after 3 attempt\(s\): not JSON"):
        await m.generate(reqs(1))
    calls = store.calls()
    assert len(calls) == 1 and "MalformedResponseError" in calls[0]["error"]
    assert calls[0]["attempts"] == 3


async def test_non_retryable_is_not_retried() -> None:
    inner = ScriptedModel(lambda r: UnsupportedRequest("nope"))
    with pytest.raises(UnsupportedRequest):
        await ManagedModel(inner, retry=FAST).generate(reqs(1))
    assert len(inner.requests) == 1


async def test_budget_stops_calls() -> None:
    inner = ScriptedModel()
    m = ManagedModel(inner, budget=Budget(max_tokens=20), limits=Limits(concurrency=1))
    with pytest.raises(BudgetExceeded, match="token budget reached"):
        for r in reqs(10):
            await m.generate([r])
    assert 0 < len(inner.requests) < 10
    assert m.budget.tokens >= 20


async def test_cost_accounting_from_extended_price_table(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run", create=True)
    prices = PriceTable({"scripted": Price(input=1_000_000.0, output=2_000_000.0)})
    m = ManagedModel(ScriptedModel(), store=store, prices=prices,
                     budget=Budget(max_dollars=1e9))
    out = await m.generate(reqs(2))
    usage = out[0].usage + out[1].usage
    expected = usage.input_tokens * 1.0 + usage.output_tokens * 2.0
    assert m.stats.cost_usd == pytest.approx(expected)
    assert store.call_totals()["cost_usd"] == pytest.approx(expected)
    assert PriceTable().lookup("gpt-4.1-2025-04-14") == Price(2.0, 8.0)
    assert PriceTable().cost("unknown-model", 10, 10) == 0.0
    assert Usage(1, 2) + Usage(3, 4) == Usage(4, 6)


async def test_concurrency_limit_is_respected() -> None:
    live = {"now": 0, "max": 0}

    class Slow(ScriptedModel):
        async def generate(self, requests):  # type: ignore[no-untyped-def]
            live["now"] += 1
            live["max"] = max(live["max"], live["now"])
            await asyncio.sleep(0.02)
            live["now"] -= 1
            return await super().generate(requests)

    await ManagedModel(Slow(), limits=Limits(concurrency=2)).generate(reqs(8))
    assert live["max"] == 2


async def test_rate_limiter_spaces_requests() -> None:
    """On a fake clock (the machine's load cannot change the outcome): from an empty bucket
    at 600 requests per minute, 3 requests need exactly 0.3 s of refill, waited in sleeps."""
    clock = {"now": 1000.0}
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        clock["now"] += seconds + 1e-9  # a real sleep never ends early (no float stall)

    # 10 per second, bucket starts full (600)
    lim = RateLimiter(rpm=600, tpm=None, clock=lambda: clock["now"], sleep=fake_sleep)
    lim._level["req"] = 0.0  # start empty to measure the refill rate
    for _ in range(3):
        await lim.acquire(1, 0)
    assert clock["now"] - 1000.0 == pytest.approx(0.3, abs=1e-6)
    assert slept == pytest.approx([0.1, 0.1, 0.1], abs=1e-6)
    clock["now"] += 60.0  # a minute idle refills the bucket to its cap, no further
    slept.clear()
    for _ in range(600):
        await lim.acquire(1, 0)
    assert slept == []
    await lim.acquire(1, 0)
    assert slept == pytest.approx([0.1], abs=1e-6)


async def test_score_goes_through_cache(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = ScriptedModel()
    m = ManagedModel(inner, cache=cache)
    a = await m.score(["one two three", "four five"])
    b = await m.score(["one two three", "four five"])
    assert a[0].logprobs == b[0].logprobs and b[0].cached and len(inner.scored) == 2


async def test_non_reproducible_calls_resume_by_occurrence(tmp_path: Path) -> None:
    """Sampled calls without a seed are not cached, but a resumed run reuses the n-th
    recorded identical call for its n-th occurrence, so no completed call is repeated."""
    store = RunStore(tmp_path / "run", create=True)
    counter = {"n": 0}

    def numbered(req: GenerationRequest) -> str:
        counter["n"] += 1
        return f"sample {counter['n']}"

    same = [GenerationRequest(prompt="a b", max_tokens=2, temperature=1.0)] * 3
    first = await ManagedModel(ScriptedModel(numbered), store=store).generate(same)
    assert [g.text for g in first] == ["sample 1", "sample 2", "sample 3"]
    resumed = ManagedModel(ScriptedModel(numbered), store=store)
    again = await resumed.generate(same + same[:1])
    assert [g.text for g in again] == ["sample 1", "sample 2", "sample 3", "sample 4"]
    assert resumed.stats.served_from_store == 3 and resumed.stats.backend_calls == 1


async def test_unreproducible_backend_is_never_served_from_cache(tmp_path: Path) -> None:
    from dataclasses import replace

    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = ScriptedModel()
    inner.capabilities = replace(inner.capabilities, reproducible=False)
    m = ManagedModel(inner, cache=cache)
    await m.generate(reqs(2))
    await ManagedModel(inner, cache=cache).generate(reqs(2))
    assert len(inner.requests) == 4
