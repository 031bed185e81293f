"""Create, execute and resume runs.

A run directory holds ``run.sqlite`` (see :mod:`recitation.runs.store`). Execution walks the
job's items in chunks; each finished chunk's records are committed at once, and every model
call is committed as it completes, so a run killed at any point (even ``kill -9``) resumes
with ``recitation resume RUN`` without repeating a completed call or losing a result.

One failing item never kills a run: when a chunk fails, its items are retried one by one
(their completed calls are served from the store); items that still fail are recorded as
events and left for a later resume. A budget that runs out stops the run cleanly with
status ``budget_exhausted``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import secrets
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation import __version__
from recitation.errors import BackendError, BudgetExceeded, ConfigError, StoreError
from recitation.models import registry
from recitation.models.managed import Budget, CallStats, Limits, ManagedModel, RetryPolicy
from recitation.models.pricing import Price, PriceTable
from recitation.runs.config import ModelConfig, RunConfig, parse_config
from recitation.runs.jobs import Job, Table, WorkItem, make_job
from recitation.runs.store import ResponseCache, RunStore, default_cache_path

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)


def default_runs_dir() -> Path:
    return Path(os.environ.get("RECITATION_RUNS_DIR", "runs"))


def _versions() -> dict[str, str]:
    out = {"recitation": __version__, "python": platform.python_version()}
    for mod in ("torch", "transformers", "openai", "anthropic"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional
            continue
    return out


def _git_commit() -> str | None:
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).parent)
        return res.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def build_managed(cfg: RunConfig, *, store: RunStore | None,
                  cache: ResponseCache | None) -> ManagedModel:
    """The run's model: the backend wrapped with the run's store, cache, limits, budget and
    prices (the store and cache are the models' call log and response store)."""
    m = cfg.model
    return ManagedModel(
        registry.build_backend(m),  # looked up at call time: tests replace it
        store=store,
        cache=cache if cfg.cache else None,
        retry=RetryPolicy(max_attempts=m.max_attempts, base_delay=m.retry_base_delay),
        limits=Limits(concurrency=m.concurrency, batch_size=m.batch_size,
                      requests_per_minute=m.requests_per_minute,
                      tokens_per_minute=m.tokens_per_minute),
        budget=Budget(max_tokens=cfg.budget.max_tokens, max_dollars=cfg.budget.max_dollars),
        prices=PriceTable({k: Price(v.input, v.output) for k, v in cfg.prices.items()}),
    )


def create_run(cfg: RunConfig, runs_dir: Path | None = None) -> Path:
    # Validate everything that can fail early (job params, backend, API key) before the run
    # directory exists, so a bad config leaves nothing behind.
    make_job(cfg.job, cfg.params, cfg.seed).items()  # reads the inputs: errors surface now
    registry.build_backend(cfg.model)
    runs_dir = runs_dir or default_runs_dir()
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{cfg.name or cfg.job}-{secrets.token_hex(3)}"
    run_dir = runs_dir / run_id
    with RunStore(run_dir, create=True) as store:
        store.set_meta("run_id", run_id)
        store.set_meta("config", cfg.model_dump(mode="json"))
        store.set_meta("job", cfg.job)
        store.set_meta("seed", cfg.seed)
        store.set_meta("created", time.time())
        store.set_meta("versions", _versions())
        store.set_meta("git_commit", _git_commit())
        store.set_meta("status", "created")
    return run_dir


def find_run(ref: str, runs_dir: Path | None = None) -> Path:
    """A run by directory path or by id under the runs directory."""
    p = Path(ref)
    if (p / "run.sqlite").exists():
        return p
    q = (runs_dir or default_runs_dir()) / ref
    if (q / "run.sqlite").exists():
        return q
    raise StoreError(f"no run '{ref}': not a run directory, and not under {q.parent}")


@dataclass
class RunOutcome:
    run_dir: Path
    status: str
    total_items: int
    done_items: int
    failed_items: list[str]
    stats: CallStats
    model_seconds: float
    message: str = ""


async def execute(run_dir: Path, *, progress: Progress | None = None,
                  use_cache: bool | None = None) -> RunOutcome:
    """Run (or resume) every unfinished item of the run in ``run_dir``."""
    with RunStore(run_dir) as store:
        cfg = parse_config(store.get_meta("config"), source=f"{run_dir} config")
        job = make_job(cfg.job, cfg.params, cfg.seed)
        want_cache = cfg.cache if use_cache is None else use_cache
        cache = ResponseCache(default_cache_path()) if want_cache else None
        model = build_managed(cfg, store=store, cache=cache)
        context = _Context(run_dir, cfg, store, cache, model)
        job.bind(context)
        try:
            return await _execute(run_dir, store, cfg, job, context, progress)
        finally:
            await context.aclose()
            if cache is not None:
                cache.close()


class _Context:
    """The runner's :class:`~recitation.runs.jobs.RunContext`."""

    def __init__(self, run_dir: Path, cfg: RunConfig, store: RunStore,
                 cache: ResponseCache | None, target: ManagedModel) -> None:
        self.run_dir = run_dir
        self.seed = cfg.seed
        self._cfg, self._store, self._cache, self.target = cfg, store, cache, target
        self._models: dict[str, ManagedModel] = {}

    def model_for(self, config: ModelConfig) -> ManagedModel:
        key = config.model_dump_json()
        if key == self._cfg.model.model_dump_json():
            return self.target
        if key not in self._models:
            m = build_managed(self._cfg.model_copy(update={"model": config}),
                              store=self._store, cache=self._cache)
            m.budget = self.target.budget  # one budget for the whole run
            self._models[key] = m
        return self._models[key]

    def stats(self) -> CallStats:
        """Call statistics summed over the target and every extra model."""
        total = CallStats()
        for m in [self.target, *self._models.values()]:
            s = m.stats
            total.backend_calls += s.backend_calls
            total.served_from_store += s.served_from_store
            total.served_from_cache += s.served_from_cache
            total.failures += s.failures
            total.usage = total.usage + s.usage
            total.cost_usd += s.cost_usd
            total.backend_seconds += s.backend_seconds
        return total

    async def aclose(self) -> None:
        for m in [self.target, *self._models.values()]:
            await m.aclose()


def _chunk_size(cfg: RunConfig) -> int:
    return max(1, cfg.model.batch_size * cfg.model.concurrency)


async def _execute(run_dir: Path, store: RunStore, cfg: RunConfig, job: Job,
                   context: _Context, progress: Progress | None) -> RunOutcome:
    model = context.target
    items = job.items()
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"job '{cfg.job}' produced duplicate item ids")
    done = store.done_items()
    todo = [it for it in items if it.id not in done]
    store.set_meta("status", "running")
    store.set_meta("total_items", len(items))
    failed: list[str] = []
    status, message = "completed", ""
    t_model = 0.0
    if progress:
        progress(len(items) - len(todo), len(items))
    size = _chunk_size(cfg)
    try:
        for start in range(0, len(todo), size):
            chunk = todo[start : start + size]
            t0 = time.perf_counter()
            failed += await _run_chunk(store, job, model, chunk)
            t_model += time.perf_counter() - t0
            if progress:
                progress(len(items) - len(todo) + start + len(chunk), len(items))
    except BudgetExceeded as e:
        status, message = "budget_exhausted", str(e)
        store.log_event("warning", f"run stopped: {e}")
    except (KeyboardInterrupt, asyncio.CancelledError):
        store.set_meta("status", "interrupted")
        raise
    if status == "completed" and failed:
        status = "incomplete"
        message = f"{len(failed)} item(s) failed; 'recitation resume' retries them"
    store.set_meta("status", status)
    store.set_meta("model_seconds_last", t_model)
    store.set_meta("finished", time.time())
    return RunOutcome(run_dir, status, len(items), len(store.done_items()), failed,
                      context.stats(), t_model, message)


async def _run_chunk(store: RunStore, job: Job, model: ManagedModel,
                     chunk: list[WorkItem]) -> list[str]:
    """Run a chunk; on a backend error fall back to one item at a time. Returns failed ids."""
    try:
        records = await job.run_items(chunk, model)
    except BackendError as e:
        if len(chunk) == 1:
            store.log_event("error", f"item failed: {e}", item_id=chunk[0].id)
            log.warning("item %s failed: %s", chunk[0].id, e)
            return [chunk[0].id]
        failed: list[str] = []
        for item in chunk:
            failed += await _run_chunk(store, job, model, [item])
        return failed
    for item, rec in zip(chunk, records, strict=True):
        store.put_result(item.id, job.name, rec)
    return []


def summarize_run(run_dir: Path) -> tuple[Table, dict[str, Any]]:
    with RunStore(run_dir) as store:
        cfg = parse_config(store.get_meta("config"), source=f"{run_dir} config")
        job = make_job(cfg.job, cfg.params, cfg.seed)
        table = job.summarize(list(store.results(job.name)))
        info = store.all_meta() | {"calls": store.call_totals(), "events": store.events()}
    return table, info


def list_runs(runs_dir: Path | None = None) -> list[dict[str, Any]]:
    runs_dir = runs_dir or default_runs_dir()
    out = []
    for d in sorted(runs_dir.glob("*/run.sqlite")):
        try:
            with RunStore(d.parent) as store:
                meta = store.all_meta()
                out.append({
                    "run_id": meta.get("run_id", d.parent.name), "job": meta.get("job"),
                    "status": meta.get("status"), "created": meta.get("created"),
                    "items": f"{len(store.done_items())}/{meta.get('total_items', '?')}",
                    "model": (meta.get("config") or {}).get("model", {}).get("model"),
                    "cost_usd": store.call_totals()["cost_usd"], "path": str(d.parent),
                })
        except StoreError as e:
            out.append({"run_id": d.parent.name, "status": f"unreadable: {e}",
                        "path": str(d.parent)})
    return out
