"""The rendezvous: concurrent clients' calls to one batching backend merged into one batch,
deterministically (which calls merge depends only on each client's calls, not on timing),
each client answered with its own results, one client's failure kept its own."""

from __future__ import annotations

import asyncio
import random
import threading

import pytest

from recitation.models.rendezvous import batched, run_together


class Recorder:
    """A backend call that records each batch it is given and answers ``x -> x * 10``
    (raising on "bad")."""

    def __init__(self) -> None:
        self.batches: list[list[object]] = []
        self.lock = threading.Lock()

    def __call__(self, args: list[object]) -> list[object]:
        with self.lock:
            self.batches.append(list(args))
        if "bad" in args:
            raise ValueError("bad request")
        return [a * 10 if isinstance(a, int) else a for a in args]  # type: ignore[operator]


async def _client(fn: Recorder, calls: list[list[object]], rng: random.Random | None = None
                  ) -> list[list[object]]:
    out = []
    for args in calls:
        for _ in range(rng.randint(0, 5) if rng else 0):  # other work between calls
            await asyncio.sleep(0)
        if rng and rng.random() < 0.5:
            await asyncio.to_thread(lambda: None)
        out.append(await batched(fn, args))
    return out


def test_two_clients_calls_meet_in_one_batch_in_client_order() -> None:
    fn = Recorder()
    a = [[1, 2, 3], [4], [5, 6]]
    b = [[7, 8, 9], [10, 11], [12]]
    (ra, rb), table = asyncio.run(run_together([_client(fn, a), _client(fn, b)]))
    assert fn.batches == [[1, 2, 3, 7, 8, 9], [4, 10, 11], [5, 6, 12]]
    assert table.batches == [[3, 3], [1, 2], [2, 1]]
    assert ra == [[10, 20, 30], [40], [50, 60]]  # each client gets its own answers
    assert rb == [[70, 80, 90], [100, 110], [120]]


def test_a_client_that_finishes_is_no_longer_waited_for() -> None:
    fn = Recorder()
    (ra, rb), _ = asyncio.run(run_together([_client(fn, [[1]]),
                                            _client(fn, [[2], [3], [4]])]))
    assert fn.batches == [[1, 2], [3], [4]]
    assert (ra, rb) == ([[10]], [[20], [30], [40]])


@pytest.mark.parametrize("seed", range(5))
def test_what_merges_does_not_depend_on_what_clients_do_between_calls(seed: int) -> None:
    """Clients that yield, hop to threads and so on between calls still meet call for call:
    the batches are those of clients that call in step."""
    rng = random.Random(seed)
    fn = Recorder()
    a, b, c = [[1], [2, 3], [4]], [[5], [6]], [[7, 8], [9], [10], [11]]
    asyncio.run(run_together([_client(fn, a, rng), _client(fn, b, rng),
                              _client(fn, c, rng)]))
    assert fn.batches == [[1, 5, 7, 8], [2, 3, 6, 9], [4, 10], [11]]


def test_a_failed_batch_is_sent_again_per_client_so_errors_stay_their_own() -> None:
    fn = Recorder()

    async def main() -> list[object]:
        async def bad() -> object:
            try:
                await batched(fn, ["bad"])
            except ValueError as e:
                return str(e)
            return "no error"

        outs, _ = await run_together([bad(), _client(fn, [[1], [2]])])
        return outs

    outs = asyncio.run(main())
    assert outs == ["bad request", [[10], [20]]]
    assert fn.batches == [["bad", 1], ["bad"], [1], [2]]  # merged, then once per client


def test_an_error_in_one_client_is_raised_after_the_others_end() -> None:
    fn = Recorder()
    done: list[str] = []

    async def boom() -> None:
        await batched(fn, [1])
        raise RuntimeError("client failed")

    async def other() -> None:
        await batched(fn, [2])
        await batched(fn, [3])
        done.append("other")

    with pytest.raises(RuntimeError, match="client failed"):
        asyncio.run(run_together([boom(), other()]))
    assert done == ["other"]
    assert fn.batches == [[1, 2], [3]]


def test_outside_run_together_each_call_goes_alone() -> None:
    fn = Recorder()

    async def main() -> list[list[object]]:
        return list(await asyncio.gather(batched(fn, [1]), batched(fn, [2])))

    assert asyncio.run(main()) == [[10], [20]]
    assert sorted(fn.batches) == [[1], [2]]
