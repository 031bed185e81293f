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
The ``model`` section is :class:`recitation.models.config.ModelConfig` (re-exported here);
on the command line a model is named ``backend:model[@url]``
(:func:`recitation.models.config.parse_model_spec`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from recitation.errors import ConfigError
from recitation.models.config import ModelConfig
from recitation.models.pricing import Price, PriceTable

__all__ = ["BudgetConfig", "ModelConfig", "PriceConfig", "ResolvedPath", "RunConfig",
           "format_validation_error", "load_config", "parse_config"]

ResolvedPath = Annotated[str, AfterValidator(
    lambda v: str(Path(v).expanduser().resolve()) if v else v)]
"""A path option kept absolute (``~`` expanded), so a resumed run finds what it named
wherever it is resumed from."""


def _readable_tokenizer(v: str) -> str:
    from recitation.models.tokenizer_file import tokenizer_json

    try:
        tokenizer_json(v)
    except ConfigError as e:
        raise ValueError(str(e)) from None
    return v


TokenizerPath = Annotated[ResolvedPath, AfterValidator(_readable_tokenizer)]
"""A served model's tokenizer named by the user (a folder holding ``tokenizer.json``, or that
file), absolute and checked to be readable when the config is made."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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

    def price_table(self) -> PriceTable:
        """The built-in price table extended by this config's ``prices``."""
        return PriceTable({k: Price(v.input, v.output) for k, v in self.prices.items()})


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


def read_yaml(path: Path) -> Any:
    """The data of YAML file ``path``; :class:`ConfigError` when unreadable or not YAML."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None


def load_config(path: Path) -> RunConfig:
    return parse_config(read_yaml(path), source=str(path))
