"""Everything that wraps a backend: cache, run store, limits, retries, budget, cost.

:class:`ManagedModel` is itself a :class:`~recitation.models.base.Model`, so methods never
know whether they talk to a bare backend or a managed one. For each call it

1. hashes the call (backend identity, the digest of the code that answers in this process
   where there is one, every generation parameter, the prompt);
2. answers from the run store (a resumed run never repeats a completed call), then from the
   cross-run response cache — only for deterministic calls (greedy, or sampled with a seed);
3. otherwise checks the budget, waits for the rate limiter (requests and tokens per minute),
   sends the call under the concurrency limit, retrying 429 / 5xx / timeouts / connection
   errors / malformed replies with exponential backoff and full jitter (``Retry-After`` is
   honoured);
4. records the call (tokens, latency, cost, error) in the run store and the cache.

Every answer carries its cost (``Generation.cost_usd``, ``TokenScores.cost_usd``): its usage
at this model's price table, $0 on a backend whose ``capabilities.local`` is true. Answers
served from the run store or the cache carry the price of the call as well (what the method's
call costs at this run's prices, so a resumed run books the same dollars as an uninterrupted
one); only calls sent to the backend are paid, i.e. added to the budget and ``stats``.

Calls that do not reproduce (sampled without a seed, or on a backend whose
``capabilities.reproducible`` is false) never come from the cross-run cache; within a run,
the n-th identical such call is answered by the n-th recorded one, so a resumed run repeats
none of them either.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from recitation.corpus.tokenize import estimate_tokens
from recitation.errors import BackendError, BudgetExceeded
from recitation.models.base import (
    Generation,
    GenerationRequest,
    Model,
    TokenScores,
    Usage,
    request_key,
)
from recitation.models.calllog import CallLog, CallRecord, ResponseStore
from recitation.models.pricing import PriceTable
from recitation.models.tokenizer import Tokenizer

log = logging.getLogger(__name__)
T = TypeVar("T", Generation, TokenScores)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, error: BackendError) -> float:
        """Full-jitter exponential backoff; at least ``Retry-After`` when the server sent it."""
        backoff = random.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return min(max(float(retry_after), backoff), self.max_delay)
        return backoff


@dataclass(frozen=True)
class Limits:
    concurrency: int = 4
    batch_size: int = 8  # requests per backend call for backends that batch (local)
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


@dataclass
class Budget:
    """Stops a run cleanly once ``max_tokens`` or ``max_dollars`` is spent."""

    max_tokens: int | None = None
    max_dollars: float | None = None
    tokens: int = 0
    dollars: float = 0.0

    def check(self) -> None:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"token budget reached: {self.tokens} of {self.max_tokens} tokens spent"
            )
        if self.max_dollars is not None and self.dollars >= self.max_dollars:
            raise BudgetExceeded(
                f"dollar budget reached: ${self.dollars:.4f} of ${self.max_dollars:.4f} spent"
            )

    def add(self, usage: Usage, cost: float) -> None:
        self.tokens += usage.total
        self.dollars += cost


class RateLimiter:
    """Token buckets for requests and tokens per minute (asyncio)."""

    def __init__(self, rpm: float | None, tpm: float | None, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._buckets = [(rpm, "req"), (tpm, "tok")]
        self._clock, self._sleep = clock, sleep  # injectable for tests (a fake clock)
        now = clock()
        self._level = {"req": rpm or 0.0, "tok": tpm or 0.0}
        self._stamp = {"req": now, "tok": now}
        self._lock = asyncio.Lock()

    async def acquire(self, requests: int, tokens: int) -> None:
        async with self._lock:
            for cap, name in self._buckets:
                if cap:
                    amount = float(requests if name == "req" else tokens)
                    await self._take(name, cap, min(amount, cap))

    async def _take(self, name: str, cap: float, amount: float) -> None:
        while True:
            now = self._clock()
            rate = cap / 60.0
            self._level[name] = min(cap, self._level[name] + (now - self._stamp[name]) * rate)
            self._stamp[name] = now
            if self._level[name] >= amount:
                self._level[name] -= amount
                return
            await self._sleep((amount - self._level[name]) / rate)


@dataclass
class CallStats:
    backend_calls: int = 0
    served_from_store: int = 0
    served_from_cache: int = 0
    failures: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    backend_seconds: float = 0.0


class ManagedModel(Model):
    def __init__(
        self,
        inner: Model,
        *,
        store: CallLog | None = None,
        cache: ResponseStore | None = None,
        retry: RetryPolicy | None = None,
        limits: Limits | None = None,
        budget: Budget | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.name = inner.name
        self.capabilities = inner.capabilities
        self.store = store
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.limits = limits or Limits()
        self.budget = budget or Budget()
        self.prices = prices or PriceTable()
        self.stats = CallStats()
        self._seen: Counter[str] = Counter()  # occurrences of each non-reproducible call
        # deterministic calls under way: an identical call made meanwhile waits for the
        # answer instead of paying for it again ("single flight")
        self._inflight: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._sem = asyncio.Semaphore(self.limits.concurrency)
        self._rate = RateLimiter(self.limits.requests_per_minute, self.limits.tokens_per_minute)

    def uncached(self) -> ManagedModel:
        """The same backend with the same retries, limits, budget and prices, but no response
        cache or run store: every call reaches the backend (the log-probability integrity
        check scores a text twice and wants the backend's second answer, not a replay)."""
        return ManagedModel(self.inner, retry=self.retry, limits=self.limits,
                            budget=self.budget, prices=self.prices)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def answer_code(self) -> str | None:
        return self.inner.answer_code()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def tokenizer(self) -> Tokenizer | None:
        return self.inner.tokenizer()

    def cost(self, usage: Usage) -> float:
        """What a call with this usage costs: by the price table, or $0 for a local model."""
        if self.capabilities.local:
            return 0.0
        return self.prices.cost(self.name, usage.input_tokens, usage.output_tokens)

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        payloads = [r.to_dict() for r in requests]
        reproducible = self.capabilities.reproducible
        return await self._managed(
            "generate", payloads, [r.deterministic and reproducible for r in requests],
            lambda idx: self.inner.generate([requests[i] for i in idx]),
            Generation.from_dict,
            [estimate_tokens(r.text)
             + r.max_tokens for r in requests],
        )

    async def score(self, texts: list[str]) -> list[TokenScores]:
        return await self._managed(
            "score", [{"text": t} for t in texts], [True] * len(texts),
            lambda idx: self.inner.score([texts[i] for i in idx]),
            TokenScores.from_dict,
            [estimate_tokens(t) for t in texts],
        )

    async def _managed(
        self,
        kind: str,
        payloads: list[dict[str, Any]],
        deterministic: list[bool],
        call: Callable[[list[int]], Awaitable[Sequence[T]]],
        parse: Callable[..., T],
        token_estimates: list[int],
    ) -> list[T]:
        keyed = self.inner.answer_identity()
        keys = [request_key(keyed, kind, p) for p in payloads]
        out: list[T | None] = [None] * len(payloads)
        misses = self._served(kind, keys, payloads, deterministic, parse, out)
        waiting = {i: self._inflight[keys[i]] for i in misses
                   if deterministic[i] and keys[i] in self._inflight}
        misses = [i for i in misses if i not in waiting]
        owned = self._claim([keys[i] for i in misses if deterministic[i]])
        size = max(1, self.limits.batch_size if self.capabilities.batching else 1)
        chunks = [misses[j : j + size] for j in range(0, len(misses), size)]

        async def run_chunk(idx: list[int]) -> None:
            try:
                results = await self._send(kind, idx, keys, payloads, call,
                                           sum(token_estimates[i] for i in idx))
            except BaseException as e:
                self._settle(owned, [keys[i] for i in idx], error=e)
                raise
            for i, res in zip(idx, results, strict=True):
                out[i] = res
                if deterministic[i] and self.cache is not None:
                    self.cache.put(keys[i], kind, res.to_dict())
            self._settle(owned, [keys[i] for i in idx],
                         answers=[r.to_dict() for r in results])

        async def wait_for(i: int, fut: asyncio.Future[dict[str, Any]]) -> None:
            out[i] = parse(await asyncio.shield(fut), cached=True)

        await _gather_all([run_chunk(c) for c in chunks]
                          + [wait_for(i, f) for i, f in waiting.items()])
        assert all(o is not None for o in out), "every call is answered or raises"
        return [replace(o, cost_usd=self.cost(o.usage)) for o in out if o is not None]

    def _served(self, kind: str, keys: list[str], payloads: list[dict[str, Any]],
                deterministic: list[bool], parse: Callable[..., T],
                out: list[T | None]) -> list[int]:
        """Fill ``out`` with the answers the cache or the run store already holds; the
        indices left to send."""
        misses: list[int] = []
        for i, key in enumerate(keys):
            if deterministic[i]:
                hit = self._lookup(kind, key, payloads[i])
            else:  # the n-th identical call of a resumed run reuses the n-th recorded one
                hit = self._lookup_store(key, self._seen[key])
                self._seen[key] += 1
            if hit is not None:
                out[i] = parse(hit, cached=True)
            else:
                misses.append(i)
        return misses

    def _claim(self, keys: list[str]) -> set[str]:
        """Register these deterministic calls as under way; the keys this call owns."""
        loop = asyncio.get_running_loop()
        owned = set()
        for key in keys:
            if key not in self._inflight:
                self._inflight[key] = loop.create_future()
                owned.add(key)
        return owned

    def _settle(self, owned: set[str], keys: list[str], *,
                answers: list[dict[str, Any]] | None = None,
                error: BaseException | None = None) -> None:
        """Hand the answers (or the error) of owned calls to whoever waits for them."""
        for n, key in enumerate(keys):
            if key not in owned:
                continue
            owned.discard(key)
            fut = self._inflight.pop(key, None)
            if fut is None or fut.done():
                continue
            if answers is not None:
                fut.set_result(answers[n])
            else:
                fut.set_exception(error if isinstance(error, Exception)
                                  else BackendError(f"call abandoned: {error!r}"))
                fut.exception()  # retrieved: no warning when nobody was waiting

    def _lookup_store(self, key: str, nth: int = 0) -> dict[str, Any] | None:
        hit = self.store.lookup_call(key, nth) if self.store is not None else None
        if hit is not None:
            self.stats.served_from_store += 1
        return hit

    def _lookup(self, kind: str, key: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        hit = self._lookup_store(key)
        if hit is not None:
            return hit
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.served_from_cache += 1
                if self.store is not None:
                    self.store.record_call(CallRecord(
                        key, kind, self.backend, self.name, payload, hit, source="cache"))
                return hit
        return None

    async def _send(
        self,
        kind: str,
        idx: list[int],
        keys: list[str],
        payloads: list[dict[str, Any]],
        call: Callable[[list[int]], Awaitable[Sequence[T]]],
        token_estimate: int,
    ) -> Sequence[T]:
        async with self._sem:
            attempt = 0
            while True:
                attempt += 1
                self.budget.check()
                await self._rate.acquire(len(idx), token_estimate)
                t0 = time.perf_counter()
                try:
                    results = await call(idx)
                except BackendError as e:
                    if e.retryable and attempt < self.retry.max_attempts:
                        wait = self.retry.delay(attempt, e)
                        log.warning("%s/%s: %s (attempt %d of %d); retrying in %.2fs",
                                    self.backend, self.name, e, attempt,
                                    self.retry.max_attempts, wait)
                        await asyncio.sleep(wait)
                        continue
                    self._record_failure(kind, idx, keys, payloads, e, attempt)
                    raise type(e)(
                        f"{self.backend}/{self.name}: {kind} failed after {attempt} "
                        f"attempt(s): {e}",
                        status=e.status,
                    ) from e
                latency = time.perf_counter() - t0
                self._record_success(kind, idx, keys, payloads, results, latency, attempt)
                return results

    def _record_success(self, kind: str, idx: list[int], keys: list[str],
                        payloads: list[dict[str, Any]], results: Sequence[T],
                        latency: float, attempt: int) -> None:
        if len(results) != len(idx):
            raise BackendError(
                f"{self.backend}/{self.name} returned {len(results)} results for {len(idx)} calls")
        self.stats.backend_calls += len(idx)
        self.stats.backend_seconds += latency
        for i, res in zip(idx, results, strict=True):
            cost = self.cost(res.usage)
            self.budget.add(res.usage, cost)
            self.stats.usage = self.stats.usage + res.usage
            self.stats.cost_usd += cost
            if self.store is not None:
                self.store.record_call(CallRecord(
                    keys[i], kind, self.backend, self.name, payloads[i], res.to_dict(),
                    res.usage.input_tokens, res.usage.output_tokens, latency / len(idx), cost,
                    attempts=attempt))

    def _record_failure(self, kind: str, idx: list[int], keys: list[str],
                        payloads: list[dict[str, Any]], error: BackendError,
                        attempt: int) -> None:
        self.stats.failures += len(idx)
        if self.store is not None:
            for i in idx:
                self.store.record_call(CallRecord(
                    keys[i], kind, self.backend, self.name, payloads[i], None,
                    error=f"{type(error).__name__}: {error}", attempts=attempt))


async def _gather_all(coros: Sequence[Awaitable[None]]) -> None:
    """Run all; when one fails, let the others finish (their results are recorded) and
    re-raise the first failure."""
    results = await asyncio.gather(*coros, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
