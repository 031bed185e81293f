"""Build backends from configuration; heavy SDKs are imported only when asked for.

The backend names themselves live in :data:`recitation.models.config.BACKENDS`;
:func:`backend_class` maps each to its class and :func:`capabilities_of` tells what a backend
can do (and whether it runs here, at no cost) before any model is built.
"""

from __future__ import annotations

from recitation.errors import ConfigError
from recitation.models.base import Capabilities, Model
from recitation.models.config import BACKENDS, ModelConfig

__all__ = ["BACKENDS", "backend_class", "build_backend", "capabilities_of"]


def backend_class(backend: str) -> type[Model]:
    """The class of the backend named ``backend`` (importing it loads no SDK and no torch)."""
    if backend == "local":
        from recitation.models.local import LocalModel

        return LocalModel
    if backend == "openai":
        from recitation.models.openai_backend import OpenAIModel

        return OpenAIModel
    if backend == "anthropic":
        from recitation.models.anthropic_backend import AnthropicModel

        return AnthropicModel
    if backend == "scripted":
        from recitation.models.scripted import ScriptedModel

        return ScriptedModel
    raise ConfigError(f"model.backend: unknown backend '{backend}'; choose from "
                      f"{', '.join(BACKENDS)}")


def capabilities_of(backend: str) -> Capabilities:
    """What every model of ``backend`` can do, without building one (no key, no weights)."""
    return backend_class(backend).capabilities


def build_backend(cfg: ModelConfig) -> Model:
    """The bare backend named by ``cfg.backend`` (no cache, retries or budget)."""
    cls = backend_class(cfg.backend)
    if cfg.backend == "local":
        from recitation.models.local import LocalModel

        return LocalModel(cfg.model)
    if cfg.backend in ("openai", "anthropic"):
        # The SDK is imported by the backend's constructor, which names the missing extra.
        from recitation.models._sdk import SDKModel

        assert issubclass(cls, SDKModel)
        default_env = f"{cfg.backend.upper()}_API_KEY"
        return cls(cfg.model, base_url=cfg.base_url, api_key_env=_key_env(cfg, default_env),
                   timeout=cfg.timeout, max_concurrency=cfg.concurrency)
    from recitation.models.scripted import ScriptedModel

    return ScriptedModel(name=cfg.model)


def _key_env(cfg: ModelConfig, default: str) -> str | None:
    if cfg.api_key_env is False:
        return None  # the server needs no key
    return cfg.api_key_env or default
