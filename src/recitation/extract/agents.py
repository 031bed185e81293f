"""The RECAP agents over a batch of events: prefix probing, extraction (DSP), verbatim
verifier, jailbreaker and feedback loop.

The pipeline runs stage by stage over all events of a chunk, so each stage is one batched call
per model (the local backend decodes a batch at once; API backends send it concurrently):

1. ``prefix-probing``: the authors' prompt (``According to "<title>", please complete the
   following text with <n> words.``, the event's first sentence as the user turn), judged
   by the verifier like every attempt (a refusal is stored as ``MODEL_RESPONSE_BLOCKED``);
2. DSP (appendix D): the extraction prompt built from the summary metadata;
3. verifier (appendix E): the LLM judge (keywords only when it gives no answer); refusals go
   to the jailbreaker, accepted attempts to feedback;
4. jailbreaker (appendix F): the static function-call prompt (the published default); the
   opt-in variants of ``jailbreaks`` follow in order, each verified, until one gets through;
   a refused jailbreak is stored as ``MODEL_RESPONSE_BLOCKED``, as released;
5. feedback (appendix G), as the released ``feedback_agent.py`` runs it: one conversation
   per event -- the system and user turns that produced the accepted text (DSP, or the
   jailbreak that got through), that text as the assistant turn, then per round the helper's
   hints as a new user turn and the target's new attempt as the next assistant turn. Up to
   ``max_rounds`` (5) rounds; a round's attempt is *kept* (``refined_<round>``) only when its
   ROUGE-L recall beats the best so far by more than ``min_gain`` (0.02), otherwise the loop
   stops there; it also stops once the kept score exceeds ``stop_rouge`` (0.95). The last
   kept refinement is therefore the best, and is what ``refined_best`` reports. The loop
   scores against the full gold passage (``loop_gold``), as released.

Extraction calls are greedy (temperature 0), as in the released code, and may write the
released allowance of gold words + 1000 tokens (``max_new_tokens`` caps it). Every attempt,
kept or not, is stored in the run store and ``.attempts.jsonl`` with its prompt, its verdict,
the hint that produced it and its ROUGE-L; the EchoTrace file gets only the kept ones.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recitation.corpus.echotrace import BLOCKED
from recitation.extract import prompts
from recitation.extract.leak import LeakConfig, guard, measure
from recitation.extract.records import EventState, Tally
from recitation.extract.verifier import KeywordSet, Verdict, Verifier, VerifierMode
from recitation.methods import Access, AuditUse, Calls, MethodInfo
from recitation.metrics.rouge import rouge_l
from recitation.models.base import Generation, GenerationRequest, Message, Model
from recitation.prompts import copy_exactly
from recitation.records import refined_key

log = logging.getLogger(__name__)


RELEASED_EXTRA_TOKENS = 1000
"""The released attempt allowance is the gold passage's word count plus this many tokens."""
FEEDBACK_MAX_TOKENS = 4096
REFINE_TURN = ("{hints}\n\nLeverage these new informations to attempt one more time to "
               "recreate the original text.")
"""The user turn of a refinement in the continued conversation (released wording)."""


class RecapConfig(BaseModel):
    """Knobs of the agents (part of the extract job's parameters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    domain: prompts.Domain = "book"
    max_new_tokens: int | None = Field(
        None, ge=8, description="cap on target tokens per attempt (None: no cap beyond the "
        "allowance; e.g. 128 for quick CPU runs of the embedded model)")
    length_factor: float | None = Field(
        None, gt=0, description="None: the released allowance, gold words + 1000 tokens; a "
        "number: our earlier allowance, factor x estimated gold tokens")
    feedback_max_tokens: int = Field(
        FEEDBACK_MAX_TOKENS, ge=8, description="reply limit of the feedback helper (released: "
        "none; the longest released hint is 638 words)")
    prefix_mode: str = Field("chat", pattern="^(chat|completion)$")
    prefix_prompt: Literal["recap", "continue"] = Field(
        "recap", description="recap: the authors' prompt (title and word count, the first "
        "sentence as the user turn); continue: 'Continue this text exactly' (ours)")
    prefix_verify: bool = Field(True, description="judge prefix outputs; refusals are stored "
                                "as MODEL_RESPONSE_BLOCKED (released)")
    verifier: VerifierMode = Field("judge", description="judge: the LLM judge, keywords only "
                                   "when it gives no answer (released)")
    refusal_keywords: KeywordSet = Field("first_person", description="broad: any refusal-like "
                                         "word (before issue 8)")
    jailbreaks: tuple[str, ...] = Field(("static",), description="the static prompt alone "
                                        "(published); past_tense, continuation: opt-in")
    max_rounds: int = Field(5, ge=0)
    stop_rouge: float = Field(0.95, gt=0, le=1, description="stop once a kept attempt "
                              "scores above this")
    min_gain: float = Field(0.02, ge=0, description="a round's attempt is kept (and the loop "
                            "goes on) only when it beats the best so far by more than this")
    refine_conversation: Literal["continue", "restate"] = Field(
        "continue", description="continue: one growing conversation, as released; restate: "
        "[system, previous attempt + hints] (our earlier prompt, shorter for small contexts)")
    loop_gold: Literal["full", "scored"] = Field(
        "full", description="what the loop scores against: the full gold passage (released) "
        "or the gold without its given-away first sentence (what evaluate scores)")
    leak: LeakConfig = LeakConfig()


def rouge_recall(gold_scored: str, text: str) -> float:
    """ROUGE-L recall with Porter stemming: the released code's score (and the loop's)."""
    return rouge_l(gold_scored, text, use_stemmer=True).recall


def round_decision(best: float, score: float, cfg: RecapConfig) -> tuple[bool, str]:
    """The released rule for one feedback round: (keep the attempt?, stop reason or "").

    ``best`` is the score of the last kept attempt (``refined_0`` at first). The attempt is
    kept only when ``score > best + min_gain``; otherwise the loop stops without keeping it.
    A kept attempt above ``stop_rouge`` ends the loop too."""
    if not score > best + cfg.min_gain:
        return False, "no_improvement"
    return True, "reached_target" if score > cfg.stop_rouge else ""


def attempt_allowance(gold: str, cfg: RecapConfig, *, refine: bool = False) -> int:
    """Max new tokens of one target attempt at ``gold``.

    Released: ``len(gold.split()) + 1000`` (refinements count ``gold.split(" ")``), whatever
    the target. ``length_factor`` gives our earlier allowance instead (factor x an estimate
    of the gold's tokens); ``max_new_tokens`` caps either."""
    if cfg.length_factor is None:
        words = len(gold.split(" ")) if refine else len(gold.split())
        tokens = words + RELEASED_EXTRA_TOKENS
    else:
        tokens = int((int(len(gold.split()) * 1.4) + 8) * cfg.length_factor)
    if cfg.max_new_tokens is not None:
        tokens = min(tokens, cfg.max_new_tokens)
    return max(8, tokens)


def request_timeout(max_tokens: int) -> float:
    """Seconds to wait for one call that may write ``max_tokens`` tokens: 60 s plus 20
    tokens a second (slow API targets decode at 20-30 tokens/s)."""
    return 60.0 + max_tokens / 20


class Pipeline:
    """Runs the agents on lists of :class:`EventState`. ``target`` is the audited model,
    ``helper`` writes feedback hints, ``judge`` verifies (both may be the target itself)."""

    def __init__(self, target: Model, helper: Model, judge: Model | None,
                 cfg: RecapConfig) -> None:
        self.cfg = cfg
        self.t = {s: Tally(target, s) for s in ("prefix", "dsp", "jailbreak", "refine")}
        self.feedback_model = Tally(helper, "feedback")
        self.judge = Tally(judge, "verify") if judge is not None else None
        self.verifier = Verifier(self.judge, cfg.verifier, cfg.refusal_keywords)
        self.prefix_judge = Tally(judge, "prefix_verify") if judge is not None else None

    def _max_tokens(self, ev: EventState, *, refine: bool = False) -> int:
        return attempt_allowance(ev.gold, self.cfg, refine=refine)

    def _loop_score(self, ev: EventState, text: str) -> float:
        return rouge_recall(ev.gold if self.cfg.loop_gold == "full" else ev.gold_scored, text)

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
            elif self.cfg.prefix_prompt == "recap":
                system, user = prompts.prefix_messages(ev.meta.work_title, prefix, ev.gold)
                reqs.append(GenerationRequest.chat(user, system=system, temperature=0,
                                                   max_tokens=self._max_tokens(ev)))
            else:
                reqs.append(GenerationRequest.chat(copy_exactly(prefix),
                                                   max_tokens=self._max_tokens(ev)))
        gens = await self.t["prefix"].generate_for(reqs, [e.ledger for e in events])
        texts = [g.text for g in gens]
        verdicts = await self._verify_prefix(events, reqs, texts)
        for ev, req, text, v in zip(events, reqs, texts, verdicts, strict=True):
            refused = v is not None and v.refused
            ev.completions["prefix-probing"] = BLOCKED if refused else text
            ev.rouge["prefix"] = 0.0 if refused else rouge_recall(ev.gold_scored, text)
            ev.attempts.append(_attempt("prefix", 0, req, text))
            if v is not None:
                ev.attempts[-1]["verdict"] = v.to_dict()
                ev.refusals["prefix"] = refused

    async def _verify_prefix(self, events: list[EventState], reqs: list[GenerationRequest],
                             texts: list[str]) -> list[Verdict | None]:
        """Released: prefix outputs go through the judge too (None: not verified)."""
        if not self.cfg.prefix_verify:
            return [None] * len(texts)
        judge, ledgers = self.prefix_judge, [e.ledger for e in events]

        async def booked(rs: list[GenerationRequest]) -> list[Generation]:
            assert judge is not None
            return await judge.generate_for(rs, ledgers)

        pairs = [(_prompt_text(r), t) for r, t in zip(reqs, texts, strict=True)]
        return list(await self.verifier.verify(pairs, booked if judge is not None else None))

    async def dsp(self, events: list[EventState]) -> None:
        """One DSP attempt per event (stored, not yet verified)."""
        pairs = [prompts.extraction_messages(ev.meta, self.cfg.domain) for ev in events]
        reqs = [self._chat(ev, s, u) for ev, (s, u) in zip(events, pairs, strict=True)]
        gens = await self.t["dsp"].generate_for(reqs, [e.ledger for e in events])
        for ev, req, gen in zip(events, reqs, gens, strict=True):
            ev.opening, ev.current_text = req.messages or (), gen.text
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
                ev.agent["simple_agent_jailbreak"] = BLOCKED if r else gen.text  # released
                ev.refusals[f"jailbreak:{variant}"] = r
                if not r:
                    ev.accepted = True
                    ev.opening, ev.current_text = req.messages or (), gen.text
            todo = [ev for ev in todo if not ev.accepted]
        for ev in events:
            if "simple_agent_jailbreak" in ev.agent:
                jb = ev.agent["simple_agent_jailbreak"]
                ev.rouge["dsp_jailbreak"] = rouge_recall(ev.gold_scored, jb) if ev.accepted else 0.0
            else:
                ev.rouge["dsp_jailbreak"] = ev.rouge["dsp"]

    # -- feedback loop ---------------------------------------------------------------------
    def start_feedback(self, events: list[EventState]) -> None:
        """Attempt 0 of the loop: the accepted DSP or jailbreak text (``refined_0``), the
        assistant turn after the opening that produced it."""
        for ev in events:
            if not ev.accepted:
                ev.stop_reason = "refused"
                continue
            ev.agent[refined_key(0)] = {"text": ev.current_text,
                                                             "refinement_prompt": None}
            ev.rouge["round_0"] = rouge_recall(ev.gold_scored, ev.current_text)
            ev.rouge["recap"] = ev.rouge["round_0"]
            ev.loop_scores = [self._loop_score(ev, ev.current_text)]
            ev.conversation = [*ev.opening, Message("assistant", ev.current_text)]

    async def feedback_loop(self, events: list[EventState],
                            keep: Callable[[EventState], bool] = lambda e: True) -> None:
        active = [ev for ev in events if ev.accepted and keep(ev)]
        for ev in events:
            if ev.accepted and ev not in active:
                ev.stop_reason = "filtered_out"
        for ev in active:
            ev.stop_reason = "reached_target" if ev.loop_scores[0] > self.cfg.stop_rouge else ""
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
        """The helper compares the last attempt (the best so far: a round that is not kept
        ends the loop) with the gold passage."""
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

    def _refine_request(self, ev: EventState, hint: str) -> GenerationRequest:
        if self.cfg.refine_conversation == "continue":
            msgs = (*ev.conversation, Message("user", REFINE_TURN.format(hints=hint)))
        else:
            system = ev.opening[0].content if ev.opening else ""
            msgs = (Message("system", system),
                    Message("user", prompts.refine_user(ev.current_text, hint, self.cfg.domain)))
        return GenerationRequest(messages=msgs, max_tokens=self._max_tokens(ev, refine=True),
                                 temperature=0)

    async def _refine(self, pairs: list[tuple[EventState, str]], rnd: int) -> None:
        events = [ev for ev, _ in pairs]
        reqs = [self._refine_request(ev, hint) for ev, hint in pairs]
        gens = await self.t["refine"].generate_for(reqs, [e.ledger for e in events])
        for (ev, hint), req, gen in zip(pairs, reqs, gens, strict=True):
            score = self._loop_score(ev, gen.text)
            kept, ev.stop_reason = round_decision(ev.loop_scores[ev.reported_round], score,
                                                  self.cfg)
            ev.rouge[f"round_{rnd}"] = rouge_recall(ev.gold_scored, gen.text)
            ev.loop_scores.append(score)
            ev.attempts.append(_attempt("refine", rnd, req, gen.text)
                               | {"rouge_l": ev.rouge[f"round_{rnd}"], "loop_score": score,
                                  "kept": kept})
            ev.rounds = rnd
            if kept:
                ev.agent[refined_key(rnd)] = {
                    "text": gen.text, "refinement_prompt": hint}
                ev.rouge["recap"] = ev.rouge[f"round_{rnd}"]
                ev.reported_round, ev.current_text = rnd, gen.text
                ev.conversation = [*(req.messages or ()), Message("assistant", gen.text)]

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


# -- metadata (recitation.methods) ---------------------------------------------------------
_AGENT = "llm_completions.Agent_Extraction."


def _recap_opts(p: Mapping[str, Any]) -> tuple[int, int, bool]:
    """(jailbreak variants, feedback rounds, prefix outputs judged) of the job's params."""
    recap = p.get("recap") or {}
    return (len(recap.get("jailbreaks", ("static",))), int(recap.get("max_rounds", 5)),
            bool(recap.get("prefix_verify", True)))


def _prefix_calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=1, judge=int(_recap_opts(p)[2]))


def _dsp_calls(p: Mapping[str, Any]) -> Calls:
    return Calls(generate=1, judge=1)


def _jailbreak_calls(p: Mapping[str, Any]) -> Calls:
    j = _recap_opts(p)[0]
    return Calls(generate=1 + j, judge=1 + j)


def _recap_calls(p: Mapping[str, Any]) -> Calls:
    j, rounds, _ = _recap_opts(p)
    return Calls(generate=1 + j + rounds, judge=1 + j, helper=rounds)


_SUMMARY = "; + the summary agent's calls per chapter when the book has no events"
_GEN_JUDGE = frozenset({Access.GENERATE, Access.JUDGE_MODEL})
_DSP_ACCESS = _GEN_JUDGE | {Access.HELPER_MODEL}


def _info(name: str, title: str, paper: str, access: frozenset[Access],
          writes: tuple[str, ...], calls: Any, formula: str, summary: str) -> MethodInfo:
    return MethodInfo(name=name, kind="extraction", title=title, paper=paper, access=access,
                      writes=writes, calls=calls, calls_formula=formula, job="extract",
                      family=name, unit="event", options=("recap",), summary=summary)


METHODS: dict[str, MethodInfo] = {m.name: m for m in (
    _info("prefix", "Prefix-Probing", "recap.md §4.2 (Karamolegkou et al. 2023)", _GEN_JUDGE,
          ("llm_completions.prefix-probing", "rouge_l.prefix"), _prefix_calls,
          "1 generation + 1 judge call (recap.prefix_verify)",
          "the event's first sentence after the authors' prefix-probing prompt"),
    _info("dsp", "DSP", "recap.md §3.1, §3.2, §4.2, §D (Dynamic Soft Prompting: Wang et al. "
          "2024)", _DSP_ACCESS, (_AGENT + "simple_agent_extraction", "rouge_l.dsp"),
          _dsp_calls, "1 generation + 1 judge call" + _SUMMARY,
          "one extraction prompt built from the event's summary metadata"),
    _info("dsp_jailbreak", "DSP + jailbreak", "recap.md §3.3, §3.4, §4.2", _DSP_ACCESS,
          (_AGENT + "simple_agent_jailbreak", "rouge_l.dsp_jailbreak"), _jailbreak_calls,
          "at most (1 + jailbreaks) generations and judge calls" + _SUMMARY,
          "DSP; refusals found by the verifier get the jailbreak prompt(s)"),
    _info("recap", "RECAP", "recap.md §3.1, §3.3, §3.4, §3.5", _DSP_ACCESS,
          (_AGENT + "simple_agent_extraction_refined_0", "rouge_l.recap", "rounds"),
          _recap_calls, "at most 1 + jailbreaks + max_rounds generations, 1 + jailbreaks "
          "judge calls, max_rounds feedback calls" + _SUMMARY,
          "DSP + jailbreak, then up to max_rounds feedback rounds (kept while they improve)"),
)}
# an audit runs RECAP on its first recap_passages text passages and as many controls, the
# audited model as its own helper and judge (recitation.audit.recap)
METHODS["recap"] = replace(METHODS["recap"], audit=AuditUse(
    run="recap", order=20, off="recap_passages", off_flag="--recap-passages 0"))
