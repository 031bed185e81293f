"""The RECAP agents over a batch of events: prefix probing, extraction (DSP), verbatim
verifier, jailbreaker and feedback loop.

The pipeline runs stage by stage over all events of a chunk, so each stage is one batched call
per model (the local backend decodes a batch at once; API backends send it concurrently):

1. ``prefix-probing``: the event's first sentence, "continue this text exactly";
2. DSP (appendix D): the extraction prompt built from the summary metadata;
3. verifier (appendix E): refusals go to the jailbreaker, accepted attempts to feedback;
4. jailbreaker (appendix F): the static function-call prompt, then the other variants of
   :data:`~recitation.extract.prompts.JAILBREAK_VARIANTS` in order, each verified, until one
   gets through;
5. feedback (appendix G): up to ``max_rounds`` rounds of helper hints (through the hint-leak
   guard) and a new attempt by the target; stop when ROUGE-L recall reaches
   ``stop_rouge`` (0.95) or a round improves it by less than ``min_gain`` (0.02) over the
   previous round.

Extraction calls are greedy (temperature 0), as in the released code. Every attempt is
stored with its prompt, its verdict, the hint that produced it and its ROUGE-L.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.echotrace import BLOCKED
from recitation.extract import prompts
from recitation.extract.leak import LeakConfig, guard, measure
from recitation.extract.records import EventState, Tally
from recitation.extract.verifier import Verifier, VerifierMode
from recitation.metrics.rouge import rouge_l
from recitation.models.base import Generation, GenerationRequest, Message, Model

log = logging.getLogger(__name__)


class RecapConfig(BaseModel):
    """Knobs of the agents (part of the extract job's parameters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    domain: prompts.Domain = "book"
    max_new_tokens: int = Field(512, ge=8, description="cap on target tokens per attempt")
    length_factor: float = Field(1.5, gt=0, description="attempt tokens ~ factor x gold tokens")
    feedback_max_tokens: int = Field(400, ge=8)
    prefix_mode: str = Field("chat", pattern="^(chat|completion)$")
    verifier: VerifierMode = "judge_or_keywords"
    jailbreaks: tuple[str, ...] = prompts.JAILBREAK_VARIANTS
    max_rounds: int = Field(5, ge=0)
    stop_rouge: float = Field(0.95, gt=0, le=1)
    min_gain: float = Field(0.02, ge=0)
    leak: LeakConfig = LeakConfig()


def rouge_recall(gold_scored: str, text: str) -> float:
    """ROUGE-L recall with Porter stemming: the released code's score (and the loop's)."""
    return rouge_l(gold_scored, text, use_stemmer=True).recall


def should_stop(history: list[float], stop_rouge: float, min_gain: float) -> str | None:
    """The feedback loop's stopping rule over the ROUGE-L of attempts 0..k (None = go on)."""
    if history and history[-1] >= stop_rouge:
        return "reached_target"
    if len(history) >= 2 and history[-1] - history[-2] < min_gain:
        return "no_improvement"
    return None


class Pipeline:
    """Runs the agents on lists of :class:`EventState`. ``target`` is the audited model,
    ``helper`` writes feedback hints, ``judge`` verifies (both may be the target itself)."""

    def __init__(self, target: Model, helper: Model, judge: Model | None,
                 cfg: RecapConfig) -> None:
        self.cfg = cfg
        self.t = {s: Tally(target, s) for s in ("prefix", "dsp", "jailbreak", "refine")}
        self.feedback_model = Tally(helper, "feedback")
        self.judge = Tally(judge, "verify") if judge is not None else None
        self.verifier = Verifier(self.judge, cfg.verifier)

    def _max_tokens(self, ev: EventState) -> int:
        gold_tokens = int(len(ev.gold_scored.split()) * 1.4) + 8
        return max(8, min(self.cfg.max_new_tokens, int(gold_tokens * self.cfg.length_factor)))

    def _chat(self, ev: EventState, system: str, user: str) -> GenerationRequest:
        return GenerationRequest(messages=(Message("system", system), Message("user", user)),
                                 max_tokens=self._max_tokens(ev), temperature=0)

    # -- baselines -------------------------------------------------------------------------
    async def prefix_probe(self, events: list[EventState]) -> None:
        reqs = []
        for ev in events:
            prefix = ev.meta.first_sentence or " ".join(ev.gold.split()[:20])
            if self.cfg.prefix_mode == "completion":
                reqs.append(GenerationRequest(prompt=prefix, max_tokens=self._max_tokens(ev)))
            else:
                reqs.append(GenerationRequest.chat(prompts.PREFIX_CHAT.format(prefix=prefix),
                                                   max_tokens=self._max_tokens(ev)))
        gens = await self.t["prefix"].generate_for(reqs, [e.ledger for e in events])
        for ev, req, gen in zip(events, reqs, gens, strict=True):
            ev.completions["prefix-probing"] = gen.text
            ev.rouge["prefix"] = rouge_recall(ev.gold_scored, gen.text)
            ev.attempts.append(_attempt("prefix", 0, req, gen.text))

    async def dsp(self, events: list[EventState]) -> None:
        """One DSP attempt per event (stored, not yet verified)."""
        pairs = [prompts.extraction_messages(ev.meta, self.cfg.domain) for ev in events]
        reqs = [self._chat(ev, s, u) for ev, (s, u) in zip(events, pairs, strict=True)]
        gens = await self.t["dsp"].generate_for(reqs, [e.ledger for e in events])
        for ev, req, gen in zip(events, reqs, gens, strict=True):
            ev.current_system, ev.current_text = req.messages[0].content, gen.text  # type: ignore[index]
            ev.attempts.append(_attempt("dsp", 0, req, gen.text))

    async def _verify(self, events: list[EventState], reqs: list[GenerationRequest],
                      texts: list[str]) -> list[bool]:
        pairs = [(_prompt_text(r), t) for r, t in zip(reqs, texts, strict=True)]
        judge, ledgers = self.judge, [e.ledger for e in events]

        async def booked(rs: list[GenerationRequest]) -> list[Generation]:
            assert judge is not None
            return await judge.generate_for(rs, ledgers)

        verdicts = await self.verifier.verify(pairs, booked if judge is not None else None)
        for ev, v in zip(events, verdicts, strict=True):
            ev.attempts[-1]["verdict"] = v.to_dict()
        return [v.refused for v in verdicts]

    async def verify_dsp(self, events: list[EventState]) -> None:
        reqs = [_request_of(ev.attempts[-1]) for ev in events]
        refused = await self._verify(events, reqs, [ev.current_text for ev in events])
        for ev, r in zip(events, refused, strict=True):
            ev.refusals["dsp"] = r
            ev.accepted = not r
            ev.agent["simple_agent_extraction"] = BLOCKED if r else ev.current_text
            ev.rouge["dsp"] = 0.0 if r else rouge_recall(ev.gold_scored, ev.current_text)

    async def jailbreak(self, events: list[EventState]) -> None:
        """Variants in order for the events still refused; the first accepted one wins."""
        todo = [ev for ev in events if not ev.accepted]
        for variant in self.cfg.jailbreaks:
            if not todo:
                break
            pairs = [prompts.jailbreak_messages(variant, ev.meta, self.cfg.domain) for ev in todo]
            reqs = [self._chat(ev, s, u) for ev, (s, u) in zip(todo, pairs, strict=True)]
            gens = await self.t["jailbreak"].generate_for(reqs, [e.ledger for e in todo])
            for ev, req, gen in zip(todo, reqs, gens, strict=True):
                ev.attempts.append(_attempt(f"jailbreak:{variant}", 0, req, gen.text))
            refused = await self._verify(todo, reqs, [g.text for g in gens])
            for ev, req, gen, r in zip(todo, reqs, gens, refused, strict=True):
                ev.agent["simple_agent_jailbreak"] = gen.text
                ev.refusals[f"jailbreak:{variant}"] = r
                if not r:
                    ev.accepted = True
                    ev.current_system, ev.current_text = req.messages[0].content, gen.text  # type: ignore[index]
            todo = [ev for ev in todo if not ev.accepted]
        for ev in events:
            if "simple_agent_jailbreak" in ev.agent:
                jb = ev.agent["simple_agent_jailbreak"]
                ev.rouge["dsp_jailbreak"] = rouge_recall(ev.gold_scored, jb) if ev.accepted else 0.0
            else:
                ev.rouge["dsp_jailbreak"] = ev.rouge["dsp"]

    # -- feedback loop ---------------------------------------------------------------------
    def start_feedback(self, events: list[EventState]) -> None:
        """Attempt 0 of the loop: the accepted DSP or jailbreak text (``refined_0``)."""
        for ev in events:
            if not ev.accepted:
                ev.stop_reason = "refused"
                continue
            ev.agent["simple_agent_extraction_refined_0"] = {"text": ev.current_text,
                                                             "refinement_prompt": None}
            ev.rouge["round_0"] = rouge_recall(ev.gold_scored, ev.current_text)
            ev.rouge["recap"] = ev.rouge["round_0"]

    async def feedback_loop(self, events: list[EventState],
                            keep: Callable[[EventState], bool] = lambda e: True) -> None:
        active = [ev for ev in events if ev.accepted and keep(ev)]
        for ev in events:
            if ev.accepted and ev not in active:
                ev.stop_reason = "filtered_out"
        for ev in active:
            ev.stop_reason = should_stop([ev.rouge["round_0"]], self.cfg.stop_rouge,
                                         self.cfg.min_gain) or ""
        for rnd in range(1, self.cfg.max_rounds + 1):
            active = [ev for ev in active if not ev.stop_reason]
            if not active:
                return
            hints = await self._hints(active, rnd)
            sendable = [(ev, h) for ev, h in zip(active, hints, strict=True) if h is not None]
            for ev, h in zip(active, hints, strict=True):
                if h is None:
                    ev.stop_reason = "hint_blocked"
            await self._refine(sendable, rnd)
        for ev in active:
            ev.stop_reason = ev.stop_reason or "max_rounds"

    async def _hints(self, events: list[EventState], rnd: int) -> list[str | None]:
        pairs = [prompts.feedback_messages(ev.gold, ev.current_text, self.cfg.domain)
                 for ev in events]
        reqs = [GenerationRequest.chat(u, system=s, max_tokens=self.cfg.feedback_max_tokens,
                                       temperature=0) for s, u in pairs]
        gens = await self.feedback_model.generate_for(reqs, [e.ledger for e in events])
        out: list[str | None] = []
        for ev, gen in zip(events, gens, strict=True):
            g = guard(gen.text, ev.gold, self.cfg.leak, allowed=[ev.meta.first_sentence])
            ev.hint_leaks.append({"round": rnd, **g.to_dict()})
            ev.attempts.append({"stage": "feedback", "round": rnd, "hint": gen.text,
                                "hint_sent": None if g.blocked else g.text,
                                "leak": g.to_dict()})
            out.append(None if g.blocked else g.text)
        return out

    async def _refine(self, pairs: list[tuple[EventState, str]], rnd: int) -> None:
        events = [ev for ev, _ in pairs]
        reqs = [self._chat(ev, ev.current_system,
                           prompts.refine_user(ev.current_text, hint, self.cfg.domain))
                for ev, hint in pairs]
        gens = await self.t["refine"].generate_for(reqs, [e.ledger for e in events])
        for (ev, hint), req, gen in zip(pairs, reqs, gens, strict=True):
            score = rouge_recall(ev.gold_scored, gen.text)
            history = [ev.rouge[f"round_{i}"] for i in range(rnd)] + [score]
            ev.rouge[f"round_{rnd}"] = score
            ev.agent[f"simple_agent_extraction_refined_{rnd}"] = {"text": gen.text,
                                                                  "refinement_prompt": hint}
            ev.attempts.append(_attempt("refine", rnd, req, gen.text) | {"rouge_l": score})
            ev.current_text, ev.rounds = gen.text, rnd
            ev.rouge["recap"] = max(ev.rouge["recap"], score)
            ev.stop_reason = should_stop(history, self.cfg.stop_rouge, self.cfg.min_gain) or ""

    def measure_summaries(self, events: list[EventState]) -> None:
        """Leak stats of each event's summary metadata (title, bullets) against its gold."""
        for ev in events:
            text = "\n".join([ev.meta.chapter_title, *ev.meta.summary])
            stats = measure(text, ev.gold, self.cfg.leak, allowed=[ev.meta.first_sentence])
            ev.summary_leak = stats.to_dict()


def _prompt_text(req: GenerationRequest) -> str:
    if req.prompt is not None:
        return req.prompt
    return "\n\n".join(m.content for m in req.messages or ())


def _attempt(stage: str, rnd: int, req: GenerationRequest, text: str) -> dict[str, Any]:
    msgs = [{"role": m.role, "content": m.content} for m in req.messages or ()]
    return {"stage": stage, "round": rnd, "messages": msgs, "prompt": req.prompt,
            "max_tokens": req.max_tokens, "text": text}


def _request_of(attempt: dict[str, Any]) -> GenerationRequest:
    msgs = tuple(Message(m["role"], m["content"]) for m in attempt["messages"])
    return GenerationRequest(messages=msgs or None, prompt=attempt.get("prompt"),
                             max_tokens=attempt["max_tokens"])


async def run_all(pipeline: Pipeline, events: list[EventState], *, methods: set[str],
                  keep: Callable[[EventState], bool] | None = None,
                  before_feedback: Callable[[list[EventState]], Awaitable[None]] | None = None,
                  ) -> None:
    """Every requested method on ``events``: prefix probing, DSP, jailbreak, RECAP."""
    pipeline.measure_summaries(events)
    if "prefix" in methods:
        await pipeline.prefix_probe(events)
    if not methods & {"dsp", "dsp_jailbreak", "recap", "recap_filter"}:
        return
    await pipeline.dsp(events)
    await pipeline.verify_dsp(events)
    if not methods & {"dsp_jailbreak", "recap", "recap_filter"}:
        return
    await pipeline.jailbreak(events)
    if not methods & {"recap", "recap_filter"}:
        return
    pipeline.start_feedback(events)
    if before_feedback is not None:
        await before_feedback(events)
    await pipeline.feedback_loop(events, keep or (lambda e: True))
