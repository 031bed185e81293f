"""Runner: resume without repeating calls or losing results; failures isolated; budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from recitation.errors import MalformedResponseError
from recitation.models.base import GenerationRequest, Model
from recitation.models.scripted import ScriptedModel
from recitation.runs import runner
from recitation.runs.config import parse_config
from recitation.runs.jobs import JOBS, Job, Table, WorkItem
from recitation.runs.store import RunStore


class CountParams(BaseModel):
    n: int = 10
    fail_on: list[int] = []
    crash_after: int | None = None  # raise Crash after this many model calls


CALLS: list[str] = []


class Crash(Exception):
    """Stands in for the process dying mid-run."""


class CountJob(Job):
    name = "count"
    description = "test job"
    Params = CountParams
    params: CountParams

    def items(self) -> list[WorkItem]:
        return [WorkItem(f"item-{i}", {"i": i}) for i in range(self.params.n)]

    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        reqs = [GenerationRequest(prompt=f"number {it.payload['i']}", max_tokens=2)
                for it in items]
        gens = await model.generate(reqs)
        return [{"i": it.payload["i"], "text": g.text} for it, g in zip(items, gens, strict=True)]

    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        return Table("count", ["id", "text"], [[k, r["text"]] for k, r in records])


@pytest.fixture
def count_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(JOBS, "count", "test_runner:CountJob")
    CALLS.clear()


def scripted_with(params: CountParams) -> Any:
    def responder(req: GenerationRequest) -> str | BaseException:
        i = int((req.prompt or "").split()[1])
        CALLS.append(req.prompt or "")
        if params.crash_after is not None and len(CALLS) > params.crash_after:
            raise Crash
        if i in params.fail_on:
            return MalformedResponseError(f"garbage for {i}")
        return f"answer {i}"

    return responder


def patch_backend(monkeypatch: pytest.MonkeyPatch, params: CountParams) -> None:
    monkeypatch.setattr("recitation.models.registry.build_backend",
                        lambda cfg: ScriptedModel(scripted_with(params)))


def config(**params: Any) -> Any:
    return parse_config({"job": "count", "model": {"backend": "scripted", "batch_size": 2,
                                                   "concurrency": 1, "retry_base_delay": 0},
                         "params": params})


async def test_resume_after_interruption(count_job: None, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    run_dir = runner.create_run(config(n=10), tmp_path)
    patch_backend(monkeypatch, CountParams(n=10, crash_after=5))
    with pytest.raises(Crash):
        await runner.execute(run_dir, use_cache=False)
    with RunStore(run_dir) as s:
        assert s.get_meta("status") == "running"  # as after kill -9
        done_before = s.done_items()
        assert 0 < len(done_before) < 10
    first_calls = list(CALLS)
    patch_backend(monkeypatch, CountParams(n=10))
    CALLS.clear()
    out = await runner.execute(run_dir, use_cache=False)
    assert out.status == "completed" and out.done_items == 10
    # completed calls are never repeated; only the call that was cut off is
    assert set(CALLS) & set(first_calls[:5]) == set()
    with RunStore(run_dir) as s:
        recs = dict(s.results("count"))
        assert sorted(r["i"] for r in recs.values()) == list(range(10))
        assert all(r["text"] == f"answer {r['i']}" for r in recs.values())


async def test_one_bad_reply_does_not_kill_the_run(count_job: None, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    patch_backend(monkeypatch, CountParams(n=6, fail_on=[3]))
    run_dir = runner.create_run(config(n=6), tmp_path)
    out = await runner.execute(run_dir, use_cache=False)
    assert out.status == "incomplete" and out.failed_items == ["item-3"]
    assert out.done_items == 5
    with RunStore(run_dir) as s:
        ev = s.events()
        assert any("garbage for 3" in e["message"] and e["item_id"] == "item-3" for e in ev)
    patch_backend(monkeypatch, CountParams(n=6))
    CALLS.clear()
    out = await runner.execute(run_dir, use_cache=False)
    assert out.status == "completed" and CALLS == ["number 3"]


async def test_budget_stops_run_cleanly_and_resume_continues(
        count_job: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    patch_backend(monkeypatch, CountParams(n=10))
    cfg = parse_config({"job": "count", "budget": {"max_tokens": 12},
                        "model": {"backend": "scripted", "batch_size": 1, "concurrency": 1},
                        "params": {"n": 10}})
    run_dir = runner.create_run(cfg, tmp_path)
    out = await runner.execute(run_dir, use_cache=False)
    assert out.status == "budget_exhausted" and 0 < out.done_items < 10
    with RunStore(run_dir) as s:
        assert s.get_meta("status") == "budget_exhausted"
        assert any("token budget reached" in e["message"] for e in s.events())


def test_find_and_list_runs(count_job: None, tmp_path: Path) -> None:
    run_dir = runner.create_run(config(n=2), tmp_path)
    assert runner.find_run(run_dir.name, tmp_path) == run_dir
    assert runner.find_run(str(run_dir)) == run_dir
    listed = runner.list_runs(tmp_path)
    assert listed[0]["run_id"] == run_dir.name and listed[0]["status"] == "created"
    with RunStore(run_dir) as s:
        assert s.get_meta("versions")["recitation"]


def test_a_run_appears_whole(count_job: None, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader listing the runs while one is being created (its config stored, its items
    not yet) never sees it half-made (`runs show` read a run with no config and failed);
    once created it is listed whole, and nothing else is left in the runs folder."""
    seen: list[list[dict[str, Any]]] = []
    store_inputs = runner._store_inputs

    def watched(store: RunStore, *args: Any) -> None:
        assert store.get_meta("config") is not None
        seen.append(runner.list_runs(tmp_path))
        store_inputs(store, *args)

    monkeypatch.setattr(runner, "_store_inputs", watched)
    run_dir = runner.create_run(config(n=2), tmp_path)
    assert seen == [[]]  # mid-creation: no run listed
    assert [r["run_id"] for r in runner.list_runs(tmp_path)] == [run_dir.name]
    assert [p.name for p in tmp_path.iterdir()] == [run_dir.name]


async def test_context_builds_a_second_model_sharing_store_and_budget(
        count_job: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recitation.runs.config import ModelConfig

    patch_backend(monkeypatch, CountParams(n=2))
    run_dir = runner.create_run(config(n=2), tmp_path)
    seen = {}

    async def run_items(self: CountJob, items: list[WorkItem], model: Model) -> Any:
        assert self.context is not None
        judge = self.context.model_for(ModelConfig(backend="scripted", model="judge"))
        assert self.context.model_for(ModelConfig(backend="scripted", model="judge")) is judge
        await judge.generate([GenerationRequest(prompt="number 99", max_tokens=2)])
        seen["same_budget"] = judge.budget is model.budget  # type: ignore[attr-defined]
        return [{"i": it.payload["i"], "text": "x"} for it in items]

    monkeypatch.setattr(CountJob, "run_items", run_items)
    out = await runner.execute(run_dir, use_cache=False)
    assert out.status == "completed" and seen["same_budget"]
    with RunStore(run_dir) as s:
        assert s.call_totals()["calls"] == 1  # the judge's call is in the run store
