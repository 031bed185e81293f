"""Each answer carries its cost, priced by the managed model that gave it.

Chosen semantics (``recitation.models.managed``): ``cost_usd`` is the call's usage at this
model's price table ($0 on a local backend); answers replayed from the run store or the
cache carry that price too, while only calls sent to the backend are paid (budget, stats,
the store's totals). Expected dollars are worked out by hand from the scripted model's word
counts and round prices, not by calling the price table.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recitation.extract.records import Ledger, Tally
from recitation.models.base import GenerationRequest
from recitation.models.local import LocalModel
from recitation.models.managed import Budget, ManagedModel
from recitation.models.openai_backend import OpenAIModel
from recitation.models.pricing import Price, PriceTable
from recitation.models.scripted import ScriptedModel
from recitation.runs.store import ResponseCache, RunStore
from recitation.serve import ServerHandle, start_server

# $1 per input token, $2 per output token
PRICES = PriceTable({"scripted": Price(input=1_000_000.0, output=2_000_000.0)})
# five words in; the echo model answers the first three: 5 * $1 + 3 * $2
REQS = [GenerationRequest(prompt=f"one two three four {w}", max_tokens=3)
        for w in ("five", "six")]
ONE_CALL = 11.0


def refusing() -> ScriptedModel:
    """A backend a resumed run must not call."""
    return ScriptedModel(lambda r: RuntimeError(f"backend called for {r.prompt!r}"))


async def test_each_generation_carries_its_price() -> None:
    m = ManagedModel(ScriptedModel(), prices=PRICES, budget=Budget(max_dollars=1e9))
    out = await m.generate(REQS)
    assert [g.cost_usd for g in out] == [ONE_CALL, ONE_CALL]
    assert [g.text for g in out] == ["one two three"] * 2
    assert m.stats.cost_usd == m.budget.dollars == 2 * ONE_CALL


async def test_scores_carry_their_price() -> None:
    [s] = await ManagedModel(ScriptedModel(), prices=PRICES).score(["alpha beta gamma delta"])
    assert s.cost_usd == 4.0  # four tokens in, none out


async def test_unpriced_model_and_bare_backend_cost_nothing() -> None:
    [g] = await ManagedModel(ScriptedModel(name="not-in-table"), prices=PRICES).generate(REQS[:1])
    assert g.usage.total == 8 and g.cost_usd == 0.0
    [bare] = await ScriptedModel().generate(REQS[:1])
    assert bare.cost_usd == 0.0


async def test_a_resumed_run_replays_calls_at_their_price_without_paying(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run", create=True)
    sampled = GenerationRequest(prompt="one two three four seven", max_tokens=3, temperature=1.0)
    first = await ManagedModel(ScriptedModel(), store=store, prices=PRICES).generate(
        [*REQS, sampled])
    assert [g.cost_usd for g in first] == [ONE_CALL] * 3
    assert store.call_totals()["cost_usd"] == 3 * ONE_CALL

    inner = refusing()
    resumed = ManagedModel(inner, store=store, prices=PRICES)
    again = await resumed.generate([*REQS, sampled])
    assert inner.requests == [] and all(g.cached for g in again)
    assert [g.cost_usd for g in again] == [ONE_CALL] * 3  # the method's calls cost the same
    assert resumed.stats.cost_usd == 0.0 and resumed.budget.dollars == 0.0  # nothing paid
    assert store.call_totals()["cost_usd"] == 3 * ONE_CALL  # and nothing booked twice


async def test_cache_hits_are_priced_at_this_runs_table(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    await ManagedModel(ScriptedModel(), cache=cache, prices=PRICES).generate(REQS)
    dearer = PriceTable({"scripted": Price(input=3_000_000.0, output=0.0)})
    inner = refusing()
    out = await ManagedModel(inner, cache=cache, prices=dearer).generate(REQS)
    assert inner.requests == [] and all(g.cached for g in out)
    assert [g.cost_usd for g in out] == [15.0, 15.0]  # 5 * $3: this run's prices, not stored


async def test_ledger_books_the_generation_cost_fresh_or_replayed(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run", create=True)
    for inner in (ScriptedModel(), refusing()):  # a run, then its resume
        a, b = Ledger(), Ledger()
        tally = Tally(ManagedModel(inner, store=store, prices=PRICES), "dsp")
        await tally.generate_for(REQS, [a, b])
        for ledger in (a, b):
            assert ledger.to_dict() == {"dsp": {"prompts": 1, "input_tokens": 5,
                                                "output_tokens": 3, "dollars": ONE_CALL}}


# -- real backends -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_server(local_model: LocalModel) -> Iterator[ServerHandle]:
    with start_server(local_model) as h:
        yield h


@pytest.mark.model
async def test_openai_generation_cost_from_the_price_table(local_server: ServerHandle,
                                                           local_model: LocalModel) -> None:
    prompt = "In the beginning God created"
    remote = OpenAIModel("smollm2", base_url=local_server.url, api_key_env=None)
    prices = PriceTable({"smollm2": Price(input=1_000_000.0, output=3_000_000.0)})
    [g] = await ManagedModel(remote, prices=prices).generate(
        [GenerationRequest(prompt=prompt, max_tokens=5)])
    await remote.aclose()
    n_in = len(local_model.tokenizer().encode(prompt))
    assert g.finish_reason == "length" and g.usage.output_tokens == 5
    assert g.usage.input_tokens == n_in
    assert g.cost_usd == pytest.approx(n_in * 1.0 + 5 * 3.0)


@pytest.mark.model
async def test_a_local_model_costs_nothing_whatever_the_table_says(
        local_model: LocalModel) -> None:
    prices = PriceTable({local_model.name: Price(input=1_000_000.0, output=1_000_000.0)})
    assert prices.lookup(local_model.name) is not None
    m = ManagedModel(local_model, prices=prices)
    [g] = await m.generate([GenerationRequest(prompt="In the beginning", max_tokens=3)])
    [s] = await m.score(["In the beginning"])
    assert g.usage.total > 0 and s.usage.total > 0
    assert g.cost_usd == 0.0 and s.cost_usd == 0.0 and m.stats.cost_usd == 0.0
