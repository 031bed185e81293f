"""Per-event state of an extraction, and cost accounting per pipeline stage.

Every model call of the pipeline goes through a :class:`Tally` view of a model, which adds
the call's prompts, tokens and dollars (``Generation.cost_usd``, priced by the managed model)
to the event's :class:`Ledger` under a *stage* name. Per-method costs (RECAP appendix T) are
sums of stages, see :data:`METHOD_STAGES`. Calls answered from the run store or the cache
still count, at their price: the method needed them, whether or not this process paid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from recitation.extract.prompts import EventMeta
from recitation.models.base import Generation, GenerationRequest, Message, Model, TokenScores
from recitation.models.tokenizer import Tokenizer
from recitation.records import EventRecord

METHOD_STAGES: dict[str, tuple[str, ...]] = {
    "prefix": ("prefix", "prefix_verify"),
    "dsp": ("summary", "dsp"),
    "dsp_jailbreak": ("summary", "dsp", "verify", "jailbreak"),
    "recap": ("summary", "dsp", "verify", "jailbreak", "feedback", "refine"),
    "recap_filter": ("summary", "dsp", "verify", "jailbreak", "feedback", "refine"),
}
"""Which stages' calls each method needs (``recap_filter`` counts only filtered-in events'
feedback and refine calls, see :func:`recitation.extract.export.method_costs`)."""



@dataclass
class StageCost:
    prompts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float = 0.0

    def add(self, other: StageCost) -> None:
        self.prompts += other.prompts
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.dollars += other.dollars

    def to_dict(self) -> dict[str, Any]:
        return {"prompts": self.prompts, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "dollars": self.dollars}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> StageCost:
        return StageCost(int(d.get("prompts", 0)), int(d.get("input_tokens", 0)),
                         int(d.get("output_tokens", 0)), float(d.get("dollars", 0.0)))


@dataclass
class Ledger:
    stages: dict[str, StageCost] = field(default_factory=dict)

    def add(self, stage: str, gen: Generation) -> None:
        """Book one call, its tokens and its cost, to ``stage``."""
        c = self.stages.setdefault(stage, StageCost())
        c.add(StageCost(1, gen.usage.input_tokens, gen.usage.output_tokens, gen.cost_usd))

    def to_dict(self) -> dict[str, Any]:
        return {k: v.to_dict() for k, v in self.stages.items()}


class Tally(Model):
    """A view of ``model`` whose :meth:`generate_for` books each generation to its event's
    ledger under ``stage`` (requests of several events share one batched call)."""

    def __init__(self, model: Model, stage: str) -> None:
        self.model = model
        self.stage = stage
        self.backend = model.backend
        self.name = model.name
        self.capabilities = model.capabilities

    def identity(self) -> dict[str, Any]:
        return self.model.identity()

    def tokenizer(self) -> Tokenizer | None:
        return self.model.tokenizer()

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return await self.model.generate(requests)

    async def generate_for(self, requests: list[GenerationRequest],
                           ledgers: list[Ledger]) -> list[Generation]:
        """Generate; the i-th generation is booked to ``ledgers[i]``."""
        gens = await self.model.generate(requests) if requests else []
        for gen, ledger in zip(gens, ledgers, strict=True):
            ledger.add(self.stage, gen)
        return gens

    async def score(self, texts: list[str]) -> list[TokenScores]:
        return await self.model.score(texts)


@dataclass
class EventState:
    """Everything the pipeline knows and produces for one event."""

    id: str
    meta: EventMeta
    gold: str  # the full gold passage (what hints are checked against)
    gold_scored: str  # gold without the given-away first sentence (what ROUGE-L uses)
    ledger: Ledger = field(default_factory=Ledger)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    completions: dict[str, Any] = field(default_factory=dict)  # EchoTrace LLM_completions
    rouge: dict[str, float] = field(default_factory=dict)
    refusals: dict[str, bool] = field(default_factory=dict)
    current_text: str = ""  # the last attempt (the accepted one, then each round's)
    # the system and user turns that produced the accepted text (DSP or the jailbreak), and
    # the feedback conversation continued from them (only while the loop runs; not stored)
    opening: tuple[Message, ...] = ()
    conversation: list[Message] = field(default_factory=list)
    accepted: bool = False
    rounds: int = 0  # feedback rounds run (kept or not)
    reported_round: int = 0  # the last kept refinement (what refined_best reports)
    loop_scores: list[float] = field(default_factory=list)  # the loop's ROUGE-L per round
    stop_reason: str = ""
    filter: dict[str, Any] | None = None
    summary_leak: dict[str, Any] | None = None
    hint_leaks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def agent(self) -> dict[str, Any]:
        agent: dict[str, Any] = self.completions.setdefault("Agent_Extraction", {})
        return agent

    def to_record(self) -> dict[str, Any]:
        """The stored record, checked against :class:`recitation.records.EventRecord` (what
        the report reads) and stored with exactly the keys set here."""
        return EventRecord.model_validate({
            "event_id": self.id, "chapter_title": self.meta.chapter_title,
            "llm_completions": self.completions, "attempts": self.attempts,
            "rouge_l": self.rouge, "refusals": self.refusals, "rounds": self.rounds,
            "reported_round": self.reported_round, "loop_scores": self.loop_scores,
            "stop_reason": self.stop_reason, "filter": self.filter,
            "leak": {"summary": self.summary_leak, "hints": self.hint_leaks},
            "cost": self.ledger.to_dict(),
        }).model_dump(exclude_unset=True)
