"""Build backends from configuration; heavy SDKs are imported only when asked for."""

from __future__ import annotations

from recitation.errors import ConfigError
from recitation.models.base import Model
from recitation.models.config import BACKENDS, ModelConfig

__all__ = ["BACKENDS", "build_backend"]


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
