"""What one run will cost, from its stored work, before its first model call
(:meth:`recitation.runs.jobs.Job.estimate`; the audit adds its runs up, ``extract --methods
continue`` prints its one). A model's calls are **paid** when it is not run on this machine
and either the price table prices it or its endpoint is not on this machine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from recitation.models.config import is_loopback
from recitation.runs.jobs import CallEstimate

if TYPE_CHECKING:
    from recitation.runs.config import RunConfig


@dataclass(frozen=True)
class ModelEstimate:
    """One audited model: its runs' calls together, their cost, and whether it is paid."""

    spec: str
    model: str
    calls: CallEstimate
    usd: float | None  # None: the price table does not know the model
    paid: bool
    unknown: tuple[str, ...] = ()  # runs whose calls cannot be told before they run

    def line(self) -> str:
        c = self.calls
        bound = "at most " if c.upper_bound else ""
        if not self.paid:
            cost = "$0 (runs on this machine)" if self.usd in (None, 0.0) else \
                f"${self.usd:.4f}"
        elif self.usd is None:
            cost = (f"unknown: '{self.model}' is not in the price table (prices: in a run "
                    "config adds it)")
        else:
            cost = f"about ${self.usd:.4f} (every reply at its limit)"
        extra = f"; not estimated: {', '.join(self.unknown)}" if self.unknown else ""
        return (f"estimate for {self.spec}: {bound}{c.calls:,} model calls, about "
                f"{c.input_tokens:,} input and at most {c.output_tokens:,} output tokens; "
                f"cost {cost}{extra}")


def paid_calls(cfg: RunConfig, usd: float | None) -> bool:
    from recitation.models.registry import backend_class

    model = cfg.model
    cls = backend_class(model.backend)
    if cls.capabilities.local:
        return False
    if usd:
        return True
    endpoint = model.base_url or getattr(cls, "default_base_url", None)
    return bool(endpoint) and not is_loopback(str(endpoint))


def run_estimate(run_dir: Path) -> tuple[RunConfig, CallEstimate | None]:
    from recitation.runs.runner import load_job
    from recitation.runs.store import RunStore

    with RunStore(run_dir) as store:
        cfg, job = load_job(store)
    return cfg, job.estimate()


def priced(spec: str, cfg: RunConfig, total: CallEstimate,
           unknown: tuple[str, ...] = ()) -> ModelEstimate:
    """``total`` calls of ``cfg``'s model, priced by its run's price table."""
    table, model = cfg.price_table(), cfg.model.model
    usd = (table.cost(model, total.input_tokens, total.output_tokens)
           if table.lookup(model) is not None else None)
    return ModelEstimate(spec, model, total, usd, paid_calls(cfg, usd), unknown)


def estimate_run(run_dir: Path, spec: str) -> ModelEstimate:
    """One run's calls and cost, from its stored work (no model is called)."""
    cfg, est = run_estimate(run_dir)
    return priced(spec, cfg, est or CallEstimate(), () if est is not None else (cfg.job,))
