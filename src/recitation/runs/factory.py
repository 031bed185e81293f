"""The one place that builds managed models: a run's target and every secondary model
(helper, judge, reference).

The target (:func:`build_managed`) wraps the configured backend with the run's store,
response cache, limits, retries, budget and price table. A secondary model
(:func:`secondary_model`) gets its own backend, limits and retries from its
:class:`~recitation.models.config.ModelConfig`, and *shares* the target's store, cache,
budget and price table: every call it makes is recorded in the run, served on resume, counted
against the one budget and priced by the one table.

Jobs ask for a secondary model through their context (``Job.model_for``): the runner's
context (:class:`ModelSet` with the run directory) or, for a job used outside the runner,
:class:`StandaloneContext`; both come down to :func:`secondary_model`.
"""

from __future__ import annotations

from pathlib import Path

from recitation.models import registry
from recitation.models.base import Model
from recitation.models.calllog import CallLog, ResponseStore
from recitation.models.config import ModelConfig
from recitation.models.managed import Budget, CallStats, Limits, ManagedModel, RetryPolicy
from recitation.runs.config import RunConfig

__all__ = ["ModelSet", "StandaloneContext", "build_managed", "secondary_model"]


def _managed(inner: Model, m: ModelConfig, *, store: CallLog | None,
             cache: ResponseStore | None, budget: Budget, target: ManagedModel | None,
             cfg: RunConfig | None) -> ManagedModel:
    prices = target.prices if target is not None else (cfg.price_table() if cfg else None)
    return ManagedModel(
        inner, store=store, cache=cache,
        retry=RetryPolicy(max_attempts=m.max_attempts, base_delay=m.retry_base_delay),
        limits=Limits(concurrency=m.concurrency, batch_size=m.batch_size,
                      requests_per_minute=m.requests_per_minute,
                      tokens_per_minute=m.tokens_per_minute),
        budget=budget, prices=prices)


def build_managed(cfg: RunConfig, *, store: CallLog | None,
                  cache: ResponseStore | None) -> ManagedModel:
    """The run's target: the backend wrapped with the run's store, cache (when the config
    allows it), limits, retries, budget and price table."""
    budget = Budget(max_tokens=cfg.budget.max_tokens, max_dollars=cfg.budget.max_dollars)
    return _managed(registry.build_backend(cfg.model),  # looked up at call time: tests replace it
                    cfg.model, store=store, cache=cache if cfg.cache else None,
                    budget=budget, target=None, cfg=cfg)


def secondary_model(config: ModelConfig, target: ManagedModel) -> ManagedModel:
    """A helper, judge or reference model: its own backend, limits and retries, the
    target's store, cache, budget and price table."""
    return _managed(registry.build_backend(config), config, store=target.store,
                    cache=target.cache, budget=target.budget, target=target, cfg=None)


class ModelSet:
    """A target and the secondary models built around it (one per distinct config)."""

    def __init__(self, target: ManagedModel, seed: int, run_dir: Path | None = None,
                 target_config: ModelConfig | None = None) -> None:
        self.target, self.seed, self.run_dir = target, seed, run_dir
        self._target_key = target_config.model_dump_json() if target_config else None
        self._models: dict[str, ManagedModel] = {}

    def model_for(self, config: ModelConfig) -> Model:
        """The target itself when ``config`` names it (or the same backend and model: one
        model, not two copies of its weights), else a :func:`secondary_model`."""
        key = config.model_dump_json()
        if key == self._target_key:
            return self.target
        if key not in self._models:
            model = secondary_model(config, self.target)
            same = model.identity() == self.target.identity()
            self._models[key] = self.target if same else model
        return self._models[key]

    def _all(self) -> list[ManagedModel]:
        return list({id(m): m for m in [self.target, *self._models.values()]}.values())

    def stats(self) -> CallStats:
        """Call statistics summed over the target and every secondary model."""
        total = CallStats()
        for m in self._all():
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
        for m in self._all():
            await m.aclose()


class StandaloneContext(ModelSet):
    """The context of a job used outside the runner (library use, tests): no run directory;
    secondary models share the target's store, cache, budget and price table when the target
    is managed, else a fresh unlimited budget and the built-in price table."""

    def __init__(self, target: Model, seed: int) -> None:
        managed = target if isinstance(target, ManagedModel) else ManagedModel(target)
        super().__init__(managed, seed)
        self.given = target

    def model_for(self, config: ModelConfig) -> Model:
        model = super().model_for(config)
        return self.given if model is self.target else model
