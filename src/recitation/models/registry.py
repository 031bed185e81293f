"""Build backends from configuration; heavy SDKs are imported only when asked for."""

from __future__ import annotations

from recitation.errors import ConfigError
from recitation.models.base import Model
from recitation.models.managed import Budget, Limits, ManagedModel, RetryPolicy
from recitation.models.pricing import Price, PriceTable
from recitation.runs.config import ModelConfig, RunConfig
from recitation.runs.store import ResponseCache, RunStore

BACKENDS = ("local", "openai", "anthropic", "scripted")


def build_backend(cfg: ModelConfig) -> Model:
    """The bare backend named by ``cfg.backend`` (no cache, retries or budget)."""
    if cfg.backend == "local":
        from recitation.models.local import LocalModel

        return LocalModel(cfg.model)
    if cfg.backend in ("openai", "anthropic"):
        # The SDK is imported by the backend's constructor, which names the missing extra.
        from recitation.models.anthropic_backend import AnthropicModel
        from recitation.models.openai_backend import OpenAIModel

        cls = OpenAIModel if cfg.backend == "openai" else AnthropicModel
        default_env = f"{cfg.backend.upper()}_API_KEY"
        return cls(cfg.model, base_url=cfg.base_url, api_key_env=_key_env(cfg, default_env),
                   timeout=cfg.timeout, max_concurrency=cfg.concurrency)
    if cfg.backend == "scripted":
        from recitation.models.scripted import ScriptedModel

        return ScriptedModel(name=cfg.model)
    raise ConfigError(f"model.backend: unknown backend '{cfg.backend}'; choose from {BACKENDS}")


def _key_env(cfg: ModelConfig, default: str) -> str | None:
    if cfg.api_key_env is False:
        return None  # the server needs no key
    return cfg.api_key_env or default


def build_managed(cfg: RunConfig, *, store: RunStore | None,
                  cache: ResponseCache | None) -> ManagedModel:
    m = cfg.model
    return ManagedModel(
        build_backend(m),
        store=store,
        cache=cache if cfg.cache else None,
        retry=RetryPolicy(max_attempts=m.max_attempts, base_delay=m.retry_base_delay),
        limits=Limits(concurrency=m.concurrency, batch_size=m.batch_size,
                      requests_per_minute=m.requests_per_minute,
                      tokens_per_minute=m.tokens_per_minute),
        budget=Budget(max_tokens=cfg.budget.max_tokens, max_dollars=cfg.budget.max_dollars),
        prices=PriceTable({k: Price(v.input, v.output) for k, v in cfg.prices.items()}),
    )
