"""Jobs: what a run does. Each job names itself, validates its own parameters and splits its
work into items with stable ids, so the runner can store finished items and resume the rest.

A job's life in a run (see :mod:`recitation.runs.runner`):

1. created: ``items()`` and ``snapshot()`` read the user's inputs once; the run stores the
   items, the snapshot and a fingerprint of ``input_files()``;
2. every execute (first run and every resume) and every later read (summary, export) makes
   the job anew and restores it from the store (``restore``): from then on it reads the
   stored items (``work_items()``) and snapshot, never the user's files;
3. ``run_items`` on the items not yet done; secondary models come from ``model_for``;
4. at the end of every execute, ``finalize(records)`` builds the run's report once; the
   runner stores it (meta ``<job>_report``) and ``summary`` shows it.

Jobs are registered by name with a lazy ``module:Class`` path (heavy imports happen only for
the job that runs; another package registers one as a ``recitation.jobs`` entry point);
unknown names get a "did you mean" (:mod:`recitation.registry`).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ValidationError

from recitation.errors import ConfigError
from recitation.models.base import Model
from recitation.registry import Registry, paths

if TYPE_CHECKING:
    from recitation.runs.config import ModelConfig


class RunContext(Protocol):
    """What a running job may use besides its target model."""

    run_dir: Path | None  # None for a job used outside the runner
    seed: int

    def model_for(self, config: ModelConfig) -> Model:
        """A managed model for ``config`` sharing the run's store, cache and budget."""
        ...


@dataclass(frozen=True)
class WorkItem:
    id: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class CallEstimate:
    """The model calls a run will make, known before any is made: exact where the calls do
    not depend on the answers (prefix probing, detection), else an upper bound (RECAP: every
    feedback round taken). Input tokens are estimated from characters
    (:func:`recitation.corpus.tokenize.estimate_tokens`); output tokens are each request's
    limit, so the dollar figure is a ceiling on what the calls can cost."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    upper_bound: bool = False

    def __add__(self, other: CallEstimate) -> CallEstimate:
        return CallEstimate(self.calls + other.calls, self.input_tokens + other.input_tokens,
                            self.output_tokens + other.output_tokens,
                            self.upper_bound or other.upper_bound)


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
        self.stored_items: list[WorkItem] | None = None

    def bind(self, context: RunContext) -> None:
        """Called by the runner before ``run_items``: gives the job its run's context (the
        secondary models of :meth:`model_for` share the run's store, cache and budget)."""
        self.context = context

    def model_for(self, config: ModelConfig, target: Model) -> Model:
        """A secondary model (helper, judge, reference) for ``config``, or ``target`` itself
        when ``config`` names it: from the run's context, or, for a job used outside the
        runner, from a standalone context around ``target`` (sharing its store, cache,
        budget and price table when it is managed). One factory builds them all
        (:func:`recitation.runs.factory.secondary_model`)."""
        if self.context is None:
            from recitation.runs.factory import StandaloneContext

            self.context = StandaloneContext(target, self.seed)
        return self.context.model_for(config)

    # -- inputs ---------------------------------------------------------------------------
    @abc.abstractmethod
    def items(self) -> list[WorkItem]:
        """All work items, in a stable order with stable ids, read from the job's inputs;
        each payload holds the item's input (e.g. its text), so the stored items suffice
        to run it."""

    def input_files(self) -> dict[str, Path]:
        """The user files the job reads, by label (``{"params.book": Path(...)}``): their
        fingerprint is stored with the run and checked on resume. Default: none."""
        return {}

    def snapshot(self) -> dict[str, Any]:
        """What the job needs after the run besides its items (JSON-serializable), stored
        when the run is created, so reports and exports never re-read the user's files.
        Default: nothing."""
        return {}

    def restore(self, items: list[WorkItem], snapshot: dict[str, Any]) -> None:
        """Called with the run's stored items and snapshot: from now on the job reads these,
        not the user's files. Jobs that keep more in the snapshot extend this."""
        self.stored_items = list(items)

    def work_items(self) -> list[WorkItem]:
        """The stored items once restored from a run, else ``items()``."""
        return list(self.stored_items) if self.stored_items is not None else self.items()

    @abc.abstractmethod
    async def run_items(self, items: list[WorkItem], model: Model) -> list[dict[str, Any]]:
        """Process a chunk of items; return one JSON-serializable record per item."""

    @abc.abstractmethod
    def summarize(self, records: list[tuple[str, dict[str, Any]]]) -> Table:
        """Turn stored records into a table."""

    def estimate(self) -> CallEstimate | None:
        """The calls a run of this job will make to its target (:class:`CallEstimate`),
        from its work items before any call; None when the job cannot tell (default)."""
        return None

    # -- the run's report -------------------------------------------------------------------
    def finalize(self, records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
        """The run's report from all stored records (JSON-serializable), or None (default:
        no report). The runner calls it at the end of every execute, first run and every
        resume, also when the run stops on its budget or with failed items, and stores what
        it returns; strings under the report's ``"warnings"`` are logged as run events."""
        return None

    def summary(self, records: list[tuple[str, dict[str, Any]]],
                report: dict[str, Any] | None) -> Table:
        """The table shown for a run: from the stored ``report`` when the job finalizes one
        (so it is not built again), else :meth:`summarize`."""
        return self.summarize(records)


JOBS: dict[str, str] = {
    "prefix_probe": "recitation.extract.prefix_probe:PrefixProbeJob",
    "detect": "recitation.detect.job:DetectJob",
    "extract": "recitation.extract.job:ExtractJob",
    "continue": "recitation.extract.continue_book:ContinueJob",
    "trace": "recitation.trace.job:TraceJob",
    "propme": "recitation.trace.propme_job:PropmeJob",
    "name_cloze": "recitation.probes.name_cloze:NameClozeJob",
    "csg": "recitation.probes.csg:CsgJob",
    "quote_attribution": "recitation.probes.quote_attribution:QuoteAttributionJob",
    "contamination": "recitation.probes.contamination:ContaminationJob",
}


REGISTRY: Registry[str] = paths("job", JOBS)
""":data:`JOBS`, then the ``recitation.jobs`` entry points of other packages
(:mod:`recitation.registry`)."""


def job_class(name: str) -> type[Job]:
    REGISTRY.check(name, "job")
    job = REGISTRY.load(name)
    if not (isinstance(job, type) and issubclass(job, Job)):
        where = REGISTRY.origin(name) or f"'{REGISTRY.entry(name)}'"
        raise ConfigError(f"job registry: {where} is not a Job class")
    return job


def make_job(name: str, params: dict[str, Any], seed: int) -> Job:
    cls = job_class(name)
    try:
        parsed = cls.Params.model_validate(params)
    except ValidationError as e:
        from recitation.runs.config import format_validation_error

        raise ConfigError(format_validation_error(e, prefix="params.")) from None
    return cls(parsed, seed)
