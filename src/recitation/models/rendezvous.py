"""One batch for the calls of several concurrent clients of a batching backend.

A local model decodes a batch of prompts in about the time of one (a step's cost is reading
the weights; measured: 30 continuations of SmolLM2 took 48.3 s in batches of 8 and 22.4 s in
one of 30), but RECAP's agentic loop hands it a few events at a time: an audit's two RECAP
runs (the passages and the controls) each send batches of 3. :func:`run_together` runs such
clients at once, and :func:`batched` (the local backend's ``generate``) merges their calls:
a call waits until every client still running has a call waiting too, then all waiting
calls to the same backend go to it as one batch, in client order, and each client gets its
own answers back.

Which calls merge depends only on the order of each client's calls, never on timing: a
client that is doing anything else (scoring, writing its store) is waited for, and one that
finishes leaves the table. When a merged batch fails, each client's calls are sent again on
their own, so one client's bad request never fails another's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Rendezvous", "batched", "run_together"]

R = TypeVar("R")
A = TypeVar("A")
T = TypeVar("T")

_SEAT: ContextVar[tuple[Rendezvous, int] | None] = ContextVar("recitation_rendezvous",
                                                              default=None)


@dataclass
class _Call:
    fn: Callable[[list[Any]], Sequence[Any]]
    args: list[Any]
    answer: asyncio.Future[Sequence[Any]]


class Rendezvous:
    """The table where the calls of ``clients`` concurrent clients meet (see the module)."""

    def __init__(self, clients: int) -> None:
        self._active = set(range(clients))
        self._waiting: dict[int, list[_Call]] = {}
        self.batches: list[list[int]] = []
        """For each batch sent: how many arguments each client put in it (client order)."""
        self._sending: set[asyncio.Task[None]] = set()  # held until done (not collected)

    async def seat(self, k: int, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` as client ``k``; when it ends, the others no longer wait for it."""
        _SEAT.set((self, k))  # this task's own context
        try:
            return await coro
        finally:
            self._active.discard(k)
            self._waiting.pop(k, None)
            self._flush_if_ready()

    async def call(self, k: int, fn: Callable[[list[A]], Sequence[R]], args: list[A]
                   ) -> list[R]:
        """``fn(args)`` in a thread, merged with the other clients' waiting calls to ``fn``."""
        answer: asyncio.Future[Sequence[Any]] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(k, []).append(_Call(fn, list(args), answer))
        self._flush_if_ready()
        return list(await answer)

    def _flush_if_ready(self) -> None:
        if not self._active or any(k not in self._waiting for k in self._active):
            return
        calls = [c for k in sorted(self._waiting) for c in self._waiting[k]]
        self.batches.append([sum(len(c.args) for c in self._waiting[k])
                             for k in sorted(self._waiting)])
        self._waiting.clear()
        groups: dict[Any, list[_Call]] = {}
        for c in calls:
            groups.setdefault(c.fn, []).append(c)
        for group in groups.values():
            task = asyncio.get_running_loop().create_task(_send(group))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)


async def _send(calls: list[_Call]) -> None:
    """One call of ``fn`` on every client's arguments; on failure, one call per client."""
    merged = [a for c in calls for a in c.args]
    try:
        out = await asyncio.to_thread(calls[0].fn, merged)
    except Exception as e:
        if len(calls) == 1:
            _settle(calls[0], error=e)
            return
        for c in calls:
            await _send([c])
        return
    start = 0
    for c in calls:
        _settle(c, answers=out[start : start + len(c.args)])
        start += len(c.args)


def _settle(call: _Call, *, answers: Sequence[Any] = (), error: Exception | None = None
            ) -> None:
    if call.answer.done():  # its client was cancelled meanwhile
        return
    if error is not None:
        call.answer.set_exception(error)
    else:
        call.answer.set_result(answers)


async def batched(fn: Callable[[list[A]], Sequence[R]], args: list[A]) -> list[R]:
    """``fn(args)`` in a worker thread; inside :func:`run_together`, merged with the other
    clients' calls to the same ``fn`` (a bound method: the same backend object)."""
    seat = _SEAT.get()
    if seat is None or not args:
        return list(await asyncio.to_thread(fn, args))
    table, k = seat
    return await table.call(k, fn, args)


async def run_together(coros: list[Coroutine[Any, Any, T]]) -> tuple[list[T], Rendezvous]:
    """Run ``coros`` at once, their batching-backend calls merged (see the module); their
    results in order (the first error is raised once all have ended) and the table, whose
    ``batches`` say what was merged."""
    table = Rendezvous(len(coros))
    tasks = [asyncio.ensure_future(table.seat(k, c)) for k, c in enumerate(coros)]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return list(results), table  # type: ignore[arg-type]
