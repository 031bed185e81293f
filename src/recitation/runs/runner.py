"""Create, execute and resume runs.

A run directory holds ``run.sqlite`` (see :mod:`recitation.runs.store`). Execution walks the
job's items in chunks (API backends: one item per chunk, a window of ``batch_size *
concurrency`` under way, so one hung request holds back only its own item; batching local
backends: chunks of that size, one at a time); each finished chunk's records are committed at
once, and every model call is committed as it completes, so a run killed at any point (even
``kill -9``) resumes with ``recitation resume RUN`` without repeating a completed call or
losing a result.

One failing item never kills a run: when a chunk fails, its items are retried one by one
(their completed calls are served from the store); items that still fail are recorded as
events and left for a later resume. Only an error that every item would meet alike (a
``fatal`` backend error: a wrong base URL or model name) stops the run, with status
``failed``, once the items under way have finished. A budget that runs out stops the run
cleanly with status ``budget_exhausted``.

The run keeps what it needs (see :mod:`recitation.runs.jobs`): the work items with their
inputs, the job's snapshot and a fingerprint of its input files are stored when the run is
created; every later execute, summary or export restores the job from the store and never
reads the user's files again, except to check on resume that a file still there has not
changed (:mod:`recitation.runs.inputs`). At the end of every execute (first run and every
resume, also on a budget stop or with failed items) the job's ``finalize`` builds the run's
report once, stored as meta ``<job>_report``; summaries show the stored report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recitation import __version__
from recitation.errors import BackendError, BudgetExceeded, ConfigError, StoreError
from recitation.models import registry
from recitation.models.config import ModelConfig
from recitation.models.managed import CallStats, ManagedModel
from recitation.runs.config import RunConfig, parse_config
from recitation.runs.factory import ModelSet, build_managed
from recitation.runs.inputs import check_inputs, fingerprint
from recitation.runs.jobs import Job, Table, WorkItem, make_job
from recitation.runs.store import ResponseCache, RunStore, default_cache_path

__all__ = ["RunOutcome", "build_managed", "create_run", "default_runs_dir", "execute",
           "finalize_run", "find_run", "list_runs", "load_job", "report_key", "stored_report",
           "summarize_run"]

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)


def default_runs_dir() -> Path:
    return Path(os.environ.get("RECITATION_RUNS_DIR", "runs"))


def _versions() -> dict[str, str]:
    from recitation._pkgdata import installed_version

    out = {"recitation": __version__, "python": platform.python_version()}
    for mod in ("torch", "transformers", "openai", "anthropic"):
        if (v := installed_version(mod)) is not None:  # optional: left out when absent
            out[mod] = v
    return out


def _git_commit() -> str | None:
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=Path(__file__).parent)
        return res.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def create_run(cfg: RunConfig, runs_dir: Path | None = None) -> Path:
    """A new run directory for ``cfg``, with the job's items, snapshot and input
    fingerprint stored: the only time the job reads the user's files."""
    # Validate everything that can fail early (job params, inputs, backend, API key) before
    # the run directory exists, so a bad config leaves nothing behind.
    job = make_job(cfg.job, cfg.params, cfg.seed)
    items = job.items()  # reads the inputs: errors surface now
    _check_ids(cfg.job, items)
    snapshot, prints = job.snapshot(), fingerprint(job.input_files())
    model_provenance = _check_models(cfg, job)
    runs_dir = runs_dir or default_runs_dir()
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{cfg.name or cfg.job}-{secrets.token_hex(3)}"
    run_dir = runs_dir / run_id
    # built aside, then moved into place whole: a reader listing the runs meanwhile never
    # meets a run without its config (runs_dir/.creating is not a run: no run.sqlite)
    building = runs_dir / ".creating" / run_id
    try:
        _write_new_run(building, run_id, cfg, items, snapshot, prints, model_provenance)
        os.replace(building, run_dir)
    finally:
        shutil.rmtree(building, ignore_errors=True)
        with contextlib.suppress(OSError):  # left only while another run is being created
            building.parent.rmdir()
    return run_dir


def _write_new_run(run_dir: Path, run_id: str, cfg: RunConfig, items: list[WorkItem],
                   snapshot: dict[str, Any], prints: dict[str, dict[str, Any]],
                   model_provenance: dict[str, Any]) -> None:
    with RunStore(run_dir, create=True) as store:
        store.set_meta("run_id", run_id)
        store.set_meta("config", cfg.model_dump(mode="json"))
        store.set_meta("job", cfg.job)
        store.set_meta("seed", cfg.seed)
        store.set_meta("created", time.time())
        store.set_meta("versions", _versions())
        store.set_meta("git_commit", _git_commit())
        store.set_meta("model_provenance", model_provenance)
        _store_inputs(store, items, snapshot, prints)
        store.set_meta("status", "created")


def _check_models(cfg: RunConfig, job: Job) -> dict[str, Any]:
    """Build the target's backend (SDK, key, local weights' path), and the backend of every
    local model among the job's parameters (a helper or reference model: its path or
    organism checkpoint must exist), before the run exists and any model is called."""
    out = {"target": _provenance(registry.build_backend(cfg.model))}
    for key, value in dict(job.params).items():
        if isinstance(value, ModelConfig) and registry.capabilities_of(value.backend).local:
            out[key] = _provenance(registry.build_backend(value))
    return out


def _provenance(model: Any) -> dict[str, Any]:
    try:
        return dict(model.provenance())
    except OSError as exc:  # the weights cannot be read: the run's first call will say so
        return dict(model.identity()) | {"error": f"cannot hash the weights: {exc}"}


def _check_ids(job: str, items: list[WorkItem]) -> None:
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"job '{job}' produced duplicate item ids")


def _store_inputs(store: RunStore, items: list[WorkItem], snapshot: dict[str, Any],
                  prints: dict[str, dict[str, Any]]) -> None:
    store.put_items([(it.id, it.payload) for it in items])
    store.set_snapshot(snapshot)
    store.set_meta("input_files", prints)  # written last: marks the inputs as stored


def load_job(store: RunStore, *, check: bool = False) -> tuple[RunConfig, Job]:
    """The run's config and its job, restored from the store (stored items and snapshot;
    the user's files are not read). ``check``: on resume, refuse when an input file that is
    still readable has changed (:func:`recitation.runs.inputs.check_inputs`), and note the
    inputs that are gone. A run created before items were stored gets them now."""
    cfg = parse_config(store.get_meta("config"), source=f"{store.run_dir} config")
    job = make_job(cfg.job, cfg.params, cfg.seed)
    prints = store.get_meta("input_files")
    if prints is None:  # an older run: store its inputs as they are now
        items = job.items()
        _check_ids(cfg.job, items)
        _store_inputs(store, items, job.snapshot(), fingerprint(job.input_files()))
        prints = store.get_meta("input_files")
    stored = [WorkItem(i, p) for i, p in store.items()]
    if check:
        gone = check_inputs(prints, lambda: _item_diff(cfg, stored))
        for label in gone:
            msg = (f"{label} ({prints[label]['path']}) is gone; resuming from the run's "
                   "stored items")
            log.warning(msg)
            store.log_event("warning", msg)
    job.restore(stored, store.snapshot())
    return cfg, job


def _item_diff(cfg: RunConfig, stored: list[WorkItem]) -> str:
    """Which work items the changed inputs would change (for the refusal message)."""
    from recitation.errors import RecitationError

    try:
        now = {it.id: it.payload for it in make_job(cfg.job, cfg.params, cfg.seed).items()}
    except RecitationError as e:
        return f"the job cannot read its inputs now: {e}"
    before = {it.id: it.payload for it in stored}
    differ = [i for i in before if i in now and now[i] != before[i]]
    added, removed = [i for i in now if i not in before], [i for i in before if i not in now]
    parts = [f"{len(xs)} {what} ({', '.join(xs[:3])}{', ...' if len(xs) > 3 else ''})"
             for xs, what in ((differ, "work item(s) differ"), (added, "new"),
                              (removed, "gone")) if xs]
    return ("of the run's work items: " + "; ".join(parts)) if parts else \
        "the work items are unchanged, but the job may read more of the file"


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


CALL_SETTINGS = frozenset({"timeout", "concurrency", "requests_per_minute",
                           "tokens_per_minute", "max_attempts", "retry_base_delay",
                           "resend_timeouts"})
"""The model settings a resumed run may change: how calls are sent, never what answers
them (``recitation audit --resume AUDIT --timeout 300``)."""


async def execute(run_dir: Path, *, progress: Progress | None = None,
                  use_cache: bool | None = None,
                  call_settings: dict[str, Any] | None = None) -> RunOutcome:
    """Run (or resume) every unfinished item of the run in ``run_dir``, then finalize it;
    ``call_settings`` (of :data:`CALL_SETTINGS`) replace the stored model's for this
    execution."""
    with RunStore(run_dir) as store:
        cfg, job = load_job(store, check=True)  # a changed input: refused, nothing written
        if call_settings:
            cfg = with_call_settings(cfg, call_settings)
        want_cache = cfg.cache if use_cache is None else use_cache
        cache = ResponseCache(default_cache_path()) if want_cache else None
        model = build_managed(cfg, store=store, cache=cache)
        context = _Context(run_dir, cfg, model)
        job.bind(context)
        try:
            return await _execute(run_dir, store, cfg, job, context, progress)
        finally:
            await context.aclose()
            if cache is not None:
                cache.close()


def with_call_settings(cfg: RunConfig, update: dict[str, Any]) -> RunConfig:
    """``cfg`` with its model's call settings replaced (checked; others refused by name)."""
    if bad := sorted(set(update) - CALL_SETTINGS):
        raise ConfigError(f"a run's model may change only how calls are sent "
                          f"({', '.join(sorted(CALL_SETTINGS))}), not {', '.join(bad)}")
    model = ModelConfig.model_validate(cfg.model.model_dump() | update)
    return cfg.model_copy(update={"model": model})


class _Context(ModelSet):
    """The runner's :class:`~recitation.runs.jobs.RunContext`: the run's target and its
    secondary models (:func:`recitation.runs.factory.secondary_model`)."""

    def __init__(self, run_dir: Path, cfg: RunConfig, target: ManagedModel) -> None:
        super().__init__(target, cfg.seed, run_dir, cfg.model)


def _chunking(cfg: RunConfig, model: ManagedModel) -> tuple[int, int]:
    """``(items per chunk, chunks under way at once)``.

    A backend that batches (local) gets chunks of ``batch_size * concurrency`` items, one at
    a time. Other backends (APIs) get one item per chunk and a window of that many items
    under way: a slow or hung request then holds back only its own item, not a whole chunk
    (measured with recitation.serve.chaos: a chunk barrier halved throughput under 1% timeouts).
    """
    window = max(1, cfg.model.batch_size * cfg.model.concurrency)
    return (window, 1) if model.capabilities.batching else (1, window)


async def _execute(run_dir: Path, store: RunStore, cfg: RunConfig, job: Job,
                   context: _Context, progress: Progress | None) -> RunOutcome:
    model = context.target
    items = job.work_items()
    done = store.done_items()
    todo = [it for it in items if it.id not in done]
    store.set_meta("status", "running")
    store.set_meta("total_items", len(items))
    failed: list[str] = []
    if progress:
        progress(len(items) - len(todo), len(items))
    size, in_flight = _chunking(cfg, model)
    finished = len(items) - len(todo)
    window = asyncio.Semaphore(in_flight)

    async def one(chunk: list[WorkItem]) -> list[str]:
        nonlocal finished
        async with window:
            out = await _run_chunk(store, job, model, chunk)
        finished += len(chunk)
        if progress:
            progress(finished, len(items))
        return out

    t0 = time.perf_counter()
    status, message = await _run_to_end(
        store, [one(todo[s : s + size]) for s in range(0, len(todo), size)], failed)
    t_model = time.perf_counter() - t0
    if status == "completed" and failed:
        status = "incomplete"
        message = f"{len(failed)} item(s) failed; 'recitation resume' retries them"
    store.set_meta("status", status)
    store.set_meta("model_seconds_last", t_model)
    store.set_meta("finished", time.time())
    _finalize(store, job)
    return RunOutcome(run_dir, status, len(items), len(store.done_items()), failed,
                      context.stats(), t_model, message)


async def _run_to_end(store: RunStore, chunks: list[Coroutine[Any, Any, list[str]]],
                      failed: list[str]) -> tuple[str, str]:
    """Run the chunks, adding the ids of failed items to ``failed``; ``(status, message)``:
    completed, or budget_exhausted with the budget's message. An interruption, and a fatal
    backend error (see :func:`_run_chunk`), store their status and are raised."""
    try:
        failed += await _run_all(chunks)
    except BudgetExceeded as e:
        store.log_event("warning", f"run stopped: {e}")
        return "budget_exhausted", str(e)
    except (KeyboardInterrupt, asyncio.CancelledError):
        store.set_meta("status", "interrupted")
        raise
    except BackendError as e:
        if e.fatal:  # every item would fail alike: the run stops, saying why
            store.set_meta("status", "failed")
            store.log_event("error", f"run stopped: {e}")
        raise
    return "completed", ""


async def _run_all(chunks: list[Coroutine[Any, Any, list[str]]]) -> list[str]:
    """Run every chunk (at most the window at once); the failed ids of all. A chunk that
    raises (budget used up, interrupted) stops the rest: those not started are cancelled,
    those under way finish first (their records are stored), then the error is re-raised."""
    tasks = [asyncio.ensure_future(c) for c in chunks]
    if not tasks:  # nothing left to do (a resumed run that had finished)
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for t in tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    failed: list[str] = []
    for t in tasks:
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]
    for t in tasks:
        if not t.cancelled():
            failed += t.result()
    return failed


async def _run_chunk(store: RunStore, job: Job, model: ManagedModel,
                     chunk: list[WorkItem]) -> list[str]:
    """Run a chunk; on a backend error fall back to one item at a time. Returns failed ids."""
    try:
        records = await job.run_items(chunk, model)
    except BackendError as e:
        if e.fatal:  # every item would fail alike (a wrong endpoint): the run stops
            raise
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


def report_key(job: Job) -> str:
    """The meta key of a job's stored report: ``<job>_report`` (``detect_report``)."""
    return f"{job.name}_report"


def _finalize(store: RunStore, job: Job) -> dict[str, Any] | None:
    """Build the job's report from every stored record, store it with the number of
    records it covers, and log its new warnings as events."""
    records = list(store.results(job.name))
    report = job.finalize(records)
    if report is None:
        return None
    store.set_meta(report_key(job), report)
    store.set_meta(report_key(job) + "_records", len(records))
    known = {e["message"] for e in store.events()}
    for w in report.get("warnings") or []:
        if w not in known:
            store.log_event("warning", w)
    return report


def finalize_run(run_dir: Path) -> dict[str, Any] | None:
    """(Re)build and store the report of the run in ``run_dir`` from its stored records
    (what every execute ends with); None when the job makes no report."""
    with RunStore(run_dir) as store:
        _, job = load_job(store)
        return _finalize(store, job)


def stored_report(run_dir: Path) -> dict[str, Any] | None:
    """The report the run's last execute stored, if any."""
    with RunStore(run_dir) as store:
        _, job = load_job(store)
        report: dict[str, Any] | None = store.get_meta(report_key(job))
    return report


def summarize_run(run_dir: Path) -> tuple[Table, dict[str, Any]]:
    """The run's table (from its stored report when that covers every stored record, else
    built from the records, without storing) and its meta, call totals and events."""
    with RunStore(run_dir) as store:
        _, job = load_job(store)
        records = list(store.results(job.name))
        report = store.get_meta(report_key(job))
        if store.get_meta(report_key(job) + "_records") != len(records):
            report = None  # stale (the run was killed after new results): not shown
        table = job.summary(records, report)
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
