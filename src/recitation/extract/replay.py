"""Replay a released RECAP extraction file through our pipeline.

Each event of a released EchoTrace extraction file (``<Book>_extraction_<target>_feedback_
<helper>.json``) is run through :func:`~recitation.extract.agents.run_all` with scripted
models that answer from the released texts:

* the target, per stage: the released ``prefix-probing`` text, the DSP text (the literal
  ``MODEL_RESPONSE_BLOCKED`` when the release blocked it), the jailbreak text, then the kept
  refinements ``refined_1..k`` in order. A round after the last kept one was run by the
  released code but not stored (its attempt did not beat the best by more than 0.02, or the
  loop had stopped): its text is unknown, so the target repeats ``refined_k`` (a stand-in that
  gains nothing);
* the judge: "No" exactly when the released text is ``MODEL_RESPONSE_BLOCKED``;
* the feedback helper: the released ``refinement_prompt`` of each kept round, then a
  placeholder for the unknown hint of the round that was not kept.

The replay then checks our decisions against the release's (which rounds are kept, which
attempt ``refined_best`` reports, the conversation each refinement was asked in) and writes
our EchoTrace export, which ``recitation evaluate --mode recap-compat`` scores like the
released Metrics file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recitation.corpus.echotrace import (
    BLOCKED,
    candidate_text,
    load_echotrace,
    parse_extraction_path,
    refinements,
)
from recitation.corpus.model import Book, Event
from recitation.extract.agents import REFINE_TURN, Pipeline, RecapConfig, run_all
from recitation.extract.prompts import EventMeta
from recitation.extract.records import EventState, Tally
from recitation.metrics.weighted import strip_given_first_sentence
from recitation.models.base import GenerationRequest, Message
from recitation.models.scripted import ScriptedModel

METHODS = frozenset({"prefix", "dsp", "dsp_jailbreak", "recap"})
REFINED_BEST = "simple_agent_extraction_refined_best"
UNKNOWN_HINT = "(hint of round {rnd}: not in the release, whose loop did not keep that round)"


def replay_config() -> RecapConfig:
    """The released setting: the judge alone decides refusals, one (static) jailbreak."""
    return RecapConfig(verifier="judge", jailbreaks=("static",))


def _text(raw: Any) -> str:
    if isinstance(raw, dict):
        return str(raw.get("text") or "")
    return "" if raw is None else str(raw)


@dataclass
class EventScript:
    """What the released run answered for one event."""

    prefix: str
    dsp: str
    jailbreak: str | None
    kept: list[tuple[str, str]]  # (text, hint) of refined_1..k

    @staticmethod
    def of(event: Event) -> EventScript:
        llm = event.extra.get("LLM_completions") or {}
        agent = llm.get("Agent_Extraction") or {}
        kept = []
        for i in sorted(k for k in refinements(event) if k > 0):
            raw = agent[f"simple_agent_extraction_refined_{i}"]
            kept.append((_text(raw), str(raw.get("refinement_prompt") or "")))
        jb = agent.get("simple_agent_jailbreak")
        return EventScript(_text(llm.get("prefix-probing")),
                           _text(agent.get("simple_agent_extraction")),
                           None if jb is None else _text(jb), kept)


def _queue(replies: list[str], then: Callable[[int], str]) -> Callable[[GenerationRequest], str]:
    """Answers with ``replies`` in order, then ``then(n)`` for the n-th call past them."""
    calls = [0]

    def respond(req: GenerationRequest) -> str:
        calls[0] += 1
        n = calls[0]
        return replies[n - 1] if n <= len(replies) else then(n - len(replies))

    return respond


def _judge(req: GenerationRequest) -> str:
    text = "\n".join(m.content for m in req.messages or ())
    return '{"classification": "No"}' if BLOCKED in text else '{"classification": "Yes"}'


@dataclass
class EventReplay:
    """Our decisions next to the release's for one event."""

    event_id: str
    released_kept: int
    kept: int
    rounds: int  # rounds our loop ran (kept or not)
    same_texts: bool  # our kept refinements (text and hint) are the released ones
    same_reported: bool  # refined_best reports the released attempt
    conversation_ok: bool  # every refinement was asked in the released conversation
    record: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def same(self) -> bool:
        return (self.kept == self.released_kept and self.same_texts and self.same_reported
                and self.conversation_ok)


def _state(book: Book, chapter_title: str, event: Event) -> EventState:
    meta = EventMeta(book.title, chapter_title, tuple(event.characters), tuple(event.summary),
                     event.first_sentence)
    return EventState(event.id, meta, event.text,
                      strip_given_first_sentence(event.text, event.first_sentence))


def _conversation_ok(opening: list[dict[str, Any]], refines: list[GenerationRequest],
                     first: str, kept: list[tuple[str, str]]) -> bool:
    """Refinement r is asked in [opening..., assistant: attempt 0, (user: hints i, assistant:
    attempt i) for i < r, user: hints r], the released conversation."""
    turns = [Message(m["role"], m["content"]) for m in opening]
    turns.append(Message("assistant", first))
    for r, req in enumerate(refines, start=1):
        msgs = list(req.messages or ())
        hint = kept[r - 1][1] if r <= len(kept) else UNKNOWN_HINT.format(rnd=r)
        if msgs != [*turns, Message("user", REFINE_TURN.format(hints=hint))]:
            return False
        if r <= len(kept):
            turns += [msgs[-1], Message("assistant", kept[r - 1][0])]
    return True


async def replay_event(book: Book, chapter_title: str, event: Event,
                       cfg: RecapConfig | None = None) -> EventReplay:
    """Run one released event through the pipeline with scripted target, judge and helper."""
    script = EventScript.of(event)
    last = script.kept[-1][0] if script.kept else _text(script.jailbreak or script.dsp)
    stage_replies = {"prefix": [script.prefix], "dsp": [script.dsp],
                     "jailbreak": [script.jailbreak or BLOCKED],
                     "refine": [t for t, _ in script.kept]}
    targets = {s: ScriptedModel(_queue(r, lambda n: last), name="released")
               for s, r in stage_replies.items()}
    helper = ScriptedModel(_queue([h for _, h in script.kept],
                                  lambda n: UNKNOWN_HINT.format(rnd=len(script.kept) + n)))
    pipe = Pipeline(targets["dsp"], helper, ScriptedModel(_judge), cfg or replay_config())
    pipe.t = {s: Tally(m, s) for s, m in targets.items()}
    state = _state(book, chapter_title, event)
    await run_all(pipe, [state], methods=set(METHODS))
    record = {"kind": "event", **state.to_record()}
    ours = state.agent
    ours_kept = sorted(int(k.rsplit("_", 1)[1]) for k in ours
                       if k.startswith("simple_agent_extraction_refined_"))
    kept_pairs = [(ours[f"simple_agent_extraction_refined_{i}"]["text"],
                   ours[f"simple_agent_extraction_refined_{i}"]["refinement_prompt"])
                  for i in ours_kept if i > 0]
    accepted = [a for a in state.attempts if a["stage"] in ("dsp", "jailbreak:static")
                and not (a.get("verdict") or {}).get("refused")]
    opening: list[dict[str, Any]] = accepted[-1]["messages"] if accepted else []
    first = ours.get("simple_agent_extraction_refined_0", {}).get("text", "")
    return EventReplay(
        event.id, len(script.kept), len(kept_pairs), state.rounds,
        kept_pairs == script.kept,
        _exported_best(state, event) == candidate_text(event, REFINED_BEST),
        _conversation_ok(opening, targets["refine"].requests, first, script.kept),
        record)


def _exported_best(state: EventState, event: Event) -> str:
    extra = {k: v for k, v in event.extra.items() if k != "LLM_completions"}
    ours = event.model_copy(update={"extra": extra | {"LLM_completions": state.completions}})
    return candidate_text(ours, REFINED_BEST)


@dataclass
class FileReplay:
    path: Path
    events: list[EventReplay]
    export: Path | None = None

    @property
    def mismatches(self) -> list[EventReplay]:
        return [e for e in self.events if not e.same]


async def _replay_all(book: Book, cfg: RecapConfig | None) -> list[EventReplay]:
    out = []
    for ch in book.chapters:
        for ev in ch.events:
            if ev.text.strip():
                out.append(await replay_event(book, ch.title, ev, cfg))
    return out


def replay_file(path: str | Path, out_dir: str | Path | None = None,
                cfg: RecapConfig | None = None) -> FileReplay:
    """Replay every event of a released extraction file; with ``out_dir``, also write our
    EchoTrace export there (named as released, so ``recitation evaluate`` parses it)."""
    from recitation.extract.export import build_book, extraction_filename, write_extraction

    f = parse_extraction_path(path)
    book = load_echotrace(f.path)
    events = asyncio.run(_replay_all(book, cfg))
    result = FileReplay(f.path, events)
    if out_dir is not None:
        records = [(e.event_id, e.record) for e in events]
        ours = build_book(book, records, book_name=f.book_name)
        target = Path(out_dir) / extraction_filename(f.book_name, f.model, f.feedback_model)
        result.export = write_extraction(ours, target, records)
    return result
