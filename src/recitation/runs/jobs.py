"""Jobs: what a run does. Each job names itself, validates its own parameters and splits its
work into items with stable ids, so the runner can store finished items and resume the rest.

Jobs are registered by name with a lazy ``module:Class`` path (heavy imports happen only for
the job that runs); unknown names get a "did you mean".
"""

from __future__ import annotations

import abc
import difflib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ValidationError

from recitation.errors import ConfigError
from recitation.models.base import Model

if TYPE_CHECKING:
    from recitation.runs.config import ModelConfig


class RunContext(Protocol):
    """What a running job may use besides its target model."""

    run_dir: Path
    seed: int

    def model_for(self, config: ModelConfig) -> Model:
        """A managed model for ``config`` sharing the run's store, cache and budget."""
        ...


@dataclass(frozen=True)
class WorkItem:
    id: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Table:
    """A summary for display: column names, rows of cells, and headline lines."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    headline: list[str] = field(default_factory=list)


class Job(abc.ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[BaseModel]]

    def __init__(self, params: BaseModel, seed: int) -> None:
        self.params = params
        self.seed = seed
        self.context: RunContext | None = None

    def bind(self, context: RunContext) -> None:
        """Called by the runner before ``run_items``: gives the job its run's context, e.g.
        to build a second model (helper, judge, reference) that shares the run store,
        cache and budget: ``self.context.model_for(ModelConfig(...))``."""
        self.context = context

    @abc.abstractmethod
    def items(self) -> list[WorkItem]:
        """All work items, in a stable order with stable ids."""

    @abc.abstractmethod
    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        """Process a chunk of items; return one JSON-serializable record per item."""

    @abc.abstractmethod
    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        """Turn stored records into a table."""


JOBS: dict[str, str] = {
    "prefix_probe": "recitation.extract.prefix_probe:PrefixProbeJob",
    "detect": "recitation.detect.job:DetectJob",
    "extract": "recitation.extract.job:ExtractJob",
}


def job_class(name: str) -> type[Job]:
    if name not in JOBS:
        close = difflib.get_close_matches(name, list(JOBS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f"; known jobs: {sorted(JOBS)}"
        raise ConfigError(f"job: unknown job '{name}'{hint}")
    module, _, cls = JOBS[name].partition(":")
    job: type[Job] = getattr(importlib.import_module(module), cls)
    return job


def make_job(name: str, params: dict[str, Any], seed: int) -> Job:
    cls = job_class(name)
    try:
        parsed = cls.Params.model_validate(params)
    except ValidationError as e:
        from recitation.runs.config import format_validation_error

        raise ConfigError(format_validation_error(e, prefix="params.")) from None
    return cls(parsed, seed)
