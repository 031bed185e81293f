"""How a model is named and configured: :class:`ModelConfig` and the one spec grammar.

Every command names a model the same way (``recitation extract --target``, ``--helper``,
``--judge``; ``recitation detect --model`` and ``--reference-model``; ``recitation demo
--model``)::

    backend:model[@base_url]

- ``backend`` is one of :data:`BACKENDS` (``local``, ``openai``, ``anthropic``, ``scripted``);
- a bare name or a path (``smollm2``, ``./my-model``, ``C:\\models\\x.gguf``) means local;
- ``@base_url`` points an API backend at an OpenAI- or Anthropic-compatible endpoint, e.g.
  ``openai:llama3@http://localhost:8000/v1``.

:func:`parse_model_spec` is the only parser of that grammar. The model config lives here, with
the models, so that ``recitation.models`` needs nothing from ``recitation.runs``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from recitation.errors import ConfigError

Backend = Literal["local", "openai", "anthropic", "scripted"]
BACKENDS: tuple[str, ...] = get_args(Backend)
"""Every backend name, in one place (config validation, CLI choices, spec parsing)."""

_SECRET_FIELDS = {"api_key", "apikey", "key", "token", "secret", "password"}


class ModelConfig(BaseModel):
    """One model: its backend, name, endpoint, key variable and call limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Backend = "local"
    model: str = "smollm2"
    base_url: str | None = None
    # NAME of the variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY);
    # false for servers that need no key (e.g. `recitation serve`).
    api_key_env: str | Literal[False] | None = None
    timeout: float = Field(60.0, gt=0)
    concurrency: int = Field(4, ge=1)
    batch_size: int = Field(8, ge=1)
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    max_attempts: int = Field(4, ge=1)
    retry_base_delay: float = Field(0.5, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _no_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            bad = sorted(k for k in data if str(k).lower() in _SECRET_FIELDS)
            if bad:
                raise ValueError(
                    f"'{bad[0]}' is not allowed: API keys are read from environment variables "
                    "only; set 'api_key_env' to the variable's name"
                )
        return data


SPEC_HELP = ("backend:model[@url], backend one of " + ", ".join(BACKENDS)
             + "; a bare name or path is a local model")


def parse_model_spec(spec: str, key_env: str | None = None) -> dict[str, Any]:
    """``backend:model[@base_url]`` -> :class:`ModelConfig` fields.

    Bare names and paths are local models (a Windows drive letter is not a backend); a local
    model gets one worker and batches of 8. ``key_env`` names the variable holding the key.
    """
    backend, sep, rest = spec.partition(":")
    if not sep or backend not in BACKENDS:
        backend, rest = "local", spec
    model, at, base_url = rest.partition("@") if backend != "local" else (rest, "", "")
    if not model:
        raise ConfigError(f"model spec '{spec}': no model name ({SPEC_HELP})")
    if at and not base_url:
        raise ConfigError(f"model spec '{spec}': nothing after '@' ({SPEC_HELP})")
    cfg: dict[str, Any] = {"backend": backend, "model": model}
    if base_url:
        cfg["base_url"] = base_url
    if key_env:
        cfg["api_key_env"] = key_env
    if backend == "local":
        cfg |= {"concurrency": 1, "batch_size": 8}
    return cfg


def spec_backend(spec: str) -> str | None:
    """The backend a spec names explicitly (``openai:...``), or None for a bare name/path."""
    backend, sep, _ = spec.partition(":")
    return backend if sep and backend in BACKENDS else None


def resolve_model_spec(spec: str, *, backend: str | None = None, base_url: str | None = None,
                       key_env: str | None = None, flag: str = "--model") -> dict[str, Any]:
    """:func:`parse_model_spec` plus the deprecated ``--backend`` / ``--base-url`` aliases.

    ``--model gpt-4o-mini --backend openai`` means ``--model openai:gpt-4o-mini``; an alias
    that contradicts the spec (``--model anthropic:x --backend openai``) is an error.
    """
    named = spec_backend(spec)
    if backend is not None and named is None:
        if backend not in BACKENDS:
            raise ConfigError(f"backend '{backend}': choose from {', '.join(BACKENDS)}")
        spec = f"{backend}:{spec}"
    elif backend is not None and backend != named:
        raise ConfigError(f"{flag} '{spec}' names backend '{named}' but the deprecated "
                          f"backend option says '{backend}'; use only {flag} {SPEC_FORM}")
    cfg = parse_model_spec(spec, key_env)
    if base_url is not None:
        if cfg.get("base_url", base_url) != base_url:
            raise ConfigError(f"{flag} '{spec}' names endpoint '{cfg['base_url']}' but the "
                              f"deprecated --base-url says '{base_url}'")
        cfg["base_url"] = base_url
    return cfg


SPEC_FORM = "backend:model[@url]"
