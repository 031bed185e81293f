"""Build backends from configuration; heavy SDKs are imported only when asked for.

The backend registry itself is :data:`recitation.models.config.BACKENDS` (name ->
``module:Class``: the built-in :data:`~recitation.models.config.BACKEND_CLASSES`, then the
``recitation.backends`` entry points of other packages); :func:`backend_class` imports a
class, :func:`capabilities_of` tells what a backend can do (and whether it runs here, at no
cost) before any model is built, and :func:`build_backend` builds one
through the class's ``from_config``.

Within :func:`shared_backends` (an audit: every run of every model) a backend is built once
per distinct configuration and shared, so a local model is loaded once, not once per run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from recitation.errors import ConfigError
from recitation.models.base import Capabilities, Model
from recitation.models.config import (
    BACKEND_CLASSES,
    BACKENDS,
    ModelConfig,
    backend_names,
)

__all__ = ["BACKEND_CLASSES", "backend_class", "backend_for", "backend_names", "build_backend",
           "capabilities_of", "shared_backends"]

_BACKEND_FIELDS = {"backend", "model", "base_url", "api_key_env", "timeout", "concurrency",
                   "dtype", "device", "resend_timeouts"}
"""The config fields a backend object depends on (the others configure the managed wrapper:
batches, rate limits, retries)."""

_POOL: ContextVar[dict[str, Model] | None] = ContextVar("recitation_backends", default=None)


def backend_class(backend: str) -> type[Model]:
    """The class of the backend named ``backend`` (importing it loads no SDK and no torch)."""
    cls = BACKENDS.load(backend)
    if not (isinstance(cls, type) and issubclass(cls, Model)):
        where = BACKENDS.origin(backend) or f"'{BACKENDS.entry(backend)}'"
        raise ConfigError(f"backend registry: {where} is not a Model class")
    return cls


def capabilities_of(backend: str) -> Capabilities:
    """What every model of ``backend`` can do, without building one (no key, no weights)."""
    return backend_class(backend).capabilities


def build_backend(cfg: ModelConfig) -> Model:
    """The bare backend named by ``cfg.backend`` (no cache, retries or budget); inside
    :func:`shared_backends`, the one already built for the same configuration."""
    pool = _POOL.get()
    if pool is None:
        return backend_class(cfg.backend).from_config(cfg)
    key = _resolved(cfg).model_dump_json(include=_BACKEND_FIELDS)
    if key not in pool:
        pool[key] = backend_class(cfg.backend).from_config(cfg)
    return pool[key]


def _resolved(cfg: ModelConfig) -> ModelConfig:
    """A local config with its ``auto`` device and dtype resolved (``auto`` and what it
    resolves to are one backend)."""
    if cfg.backend != "local":
        return cfg
    from recitation.models.config import resolve_dtype
    from recitation.models.device import resolve_device

    device = resolve_device(cfg.device)
    return cfg.model_copy(update={"device": device,
                                  "dtype": resolve_dtype(cfg.dtype, device)})


def backend_for(spec: str) -> Model:
    """The bare backend of a model spec (``backend:model[@url]``)."""
    from recitation.models.config import parse_model_spec

    return build_backend(ModelConfig(**parse_model_spec(spec)))


@contextmanager
def shared_backends() -> Iterator[dict[str, Model]]:
    """Within this block :func:`build_backend` builds each distinct backend once (nested
    blocks share the outer one's): the runs of one audit share one backend per model, which
    stays separately resumable per run. Yields the pool (config key -> backend)."""
    pool = _POOL.get()
    if pool is not None:
        yield pool
        return
    fresh: dict[str, Model] = {}
    token = _POOL.set(fresh)
    try:
        yield fresh
    finally:
        _POOL.reset(token)
