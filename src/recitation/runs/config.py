"""Run configuration: YAML validated by pydantic, with errors that name the bad field.

A run config looks like::

    job: prefix_probe            # which job (see recitation.runs.jobs)
    seed: 0
    model:
      backend: local             # local | openai | anthropic | scripted
      model: smollm2             # embedded SmolLM2, a transformers dir, a .gguf, or an API name
      base_url: null             # OpenAI-compatible / Anthropic endpoint
      api_key_env: null          # NAME of the variable holding the key; false: no key needed
      concurrency: 4
      batch_size: 8
      requests_per_minute: null
      tokens_per_minute: null
    budget: {max_tokens: null, max_dollars: null}
    prices: {my-model: {input: 1.0, output: 2.0}}   # USD per 1M tokens, extends the table
    cache: true                  # cross-run response cache for deterministic calls
    params: {...}                # the job's own parameters, validated by the job

API keys are never part of a config: only the *name* of the environment variable is stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from recitation.errors import ConfigError

_SECRET_FIELDS = {"api_key", "apikey", "key", "token", "secret", "password"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Strict):
    backend: Literal["local", "openai", "anthropic", "scripted"] = "local"
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


class BudgetConfig(_Strict):
    max_tokens: int | None = Field(None, gt=0)
    max_dollars: float | None = Field(None, gt=0)


class PriceConfig(_Strict):
    input: float = Field(ge=0)
    output: float = Field(ge=0)


class RunConfig(_Strict):
    job: str
    name: str | None = None
    seed: int = 0
    model: ModelConfig = ModelConfig()
    budget: BudgetConfig = BudgetConfig()
    prices: dict[str, PriceConfig] = {}
    cache: bool = True
    params: dict[str, Any] = {}


def format_validation_error(err: ValidationError, prefix: str = "") -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"{prefix}{loc}: {msg}")
    return "; ".join(lines)


def parse_config(data: Any, *, source: str = "config") -> RunConfig:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: {format_validation_error(e)}") from None


def load_config(path: Path) -> RunConfig:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    return parse_config(data, source=str(path))
