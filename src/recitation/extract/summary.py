"""Section summary agent (RECAP section 3.1, appendix B): chapter -> events.

A helper model reads a chapter and returns events (title, characters, paraphrased bullet
summary, verbatim first and last sentence). By default the helper gets the paper's prompt
(appendix B) at the paper's temperature (1.0, appendix I; each re-ask draws with a new seed)
and room for a long reply (``max_tokens`` 16,384: the released summaries of EchoTrace take
about 3,200 tokens per chapter, up to about 10,000). Small or careless helpers return prose,
broken JSON, the wrong schema, or boundary sentences that are not in the text, so the agent:

0. treats a reply cut off at the token limit (``finish_reason == "length"``) or whose outer
   JSON value does not parse as a failed attempt: it is never salvaged from an inner object
   (which would make one event of a whole chapter);
1. parses leniently (code fences, text around the JSON, a bare list, ``{"chapters": ...}``)
   and validates each event against the schema (a string summary becomes one bullet);
2. locates each first sentence in the chapter's Punkt sentences - exactly (whitespace- and
   case-folded containment), then fuzzily (rapidfuzz ``ratio`` >= ``fuzzy_cutoff``);
3. makes the events contiguous, non-overlapping and covering: events are ordered by their
   first sentence, each runs to the sentence before the next one's start, the first starts
   at the chapter's start and the last ends at its end; events whose first sentence cannot
   be placed, or repeats a place, are dropped; every change is recorded as an *issue*;
4. re-asks (up to ``max_attempts`` calls) with the problem spelled out when nothing usable
   came back;
5. falls back to a deterministic segmentation - paragraphs grouped to about
   ``fallback_words`` words - and records that it did.

It never raises on a bad reply: the result says which path produced the events.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rapidfuzz import fuzz, process

from recitation.corpus.model import Chapter, Event, event_id
from recitation.corpus.tokenize import sent_tokenize
from recitation.extract import prompts
from recitation.models.base import GenerationRequest, Message, Model

log = logging.getLogger(__name__)
_SCHEMA_JSON = json.dumps(prompts.EVENT_SCHEMA, sort_keys=True)


class SummaryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    max_attempts: int = Field(3, ge=1)
    max_tokens: int = Field(16384, ge=16, description="reply limit of the helper")
    temperature: float = Field(1.0, ge=0, description="the paper's 1.0; 0 = greedy")
    seed: int = Field(0, description="seed of attempt 1; attempt k uses seed + k - 1")
    prompt: prompts.SummaryPrompt = Field("paper", description="paper: appendix B; "
                                          "recitation: our compact prompt (schema inline)")
    fuzzy_cutoff: float = Field(85.0, ge=0, le=100)
    min_events: int = Field(2, ge=1)
    max_events: int = Field(10, ge=1)
    fallback_words: int = Field(400, ge=1)


class _Bounds(BaseModel):
    first_sentence: str
    last_sentence: str = ""


class RawEvent(BaseModel):
    """One event as the helper should write it."""

    model_config = ConfigDict(extra="ignore")
    title: str = ""
    characters: list[str] = Field(default_factory=list)
    detailed_summary: list[str] = Field(default_factory=list)
    segmentation_boundaries: _Bounds

    @field_validator("detailed_summary", "characters", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [v]
        return [str(x) for x in v] if isinstance(v, list) else v


class SummaryProblem(Exception):
    """A reply that cannot be used; the message is shown to the helper on re-asking."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _opens_before(text: str, end: int) -> bool:
    """Is a JSON bracket still open at ``end``? (brackets inside double-quoted strings do
    not count, so prose such as "see [1]" before the JSON is fine)."""
    depth, in_str, esc = 0, False, False
    for ch in text[:end]:
        if in_str:
            esc, in_str = (False, in_str) if esc else (ch == "\\", ch != '"')
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]" and depth:
            depth -= 1
    return depth > 0


def extract_json(reply: str) -> Any:
    """The first outer JSON value in ``reply`` (inside a code fence or not). A value nested
    in a bracket that never closes (a cut-off or broken outer object) is not taken: the
    reply then counts as unparseable."""
    candidates = [m.group(1) for m in _FENCE.finditer(reply)] + [reply]
    decoder = json.JSONDecoder()
    for text in candidates:
        for i, ch in enumerate(text):
            if ch in "{[":
                try:
                    value = decoder.raw_decode(text[i:])[0]
                except json.JSONDecodeError:
                    continue
                except RecursionError:  # e.g. a reply of 100k "[": refused, not a crash
                    raise SummaryProblem("the answer's JSON is nested too deeply to "
                                         "read") from None
                if _opens_before(text, i):
                    break  # an inner value of a broken outer one
                return value
    raise SummaryProblem("the answer contained no valid JSON (or its outer object is "
                         "broken or cut off)")


def parse_events(reply: str) -> tuple[list[RawEvent], list[str]]:
    """Schema-valid events of a reply, and what was wrong with the others."""
    data = extract_json(reply)
    if isinstance(data, dict) and "chapters" in data and isinstance(data["chapters"], list):
        data = {"events": [e for c in data["chapters"] if isinstance(c, dict)
                           for e in c.get("events", [])]}
    raw = data.get("events") if isinstance(data, dict) else data
    if isinstance(data, dict) and raw is None and "segmentation_boundaries" in data:
        raw = [data]
    if not isinstance(raw, list):
        raise SummaryProblem('the JSON has no "events" list')
    events, issues = [], []
    for i, item in enumerate(raw):
        if isinstance(item, dict) and "segmentation_boundaries" not in item \
                and "first_sentence" in item:
            bounds = {"first_sentence": item["first_sentence"],
                      "last_sentence": item.get("last_sentence", "")}
            item = item | {"segmentation_boundaries": bounds}
        try:
            events.append(RawEvent.model_validate(item))
        except ValidationError as e:
            issues.append(f"event {i} does not match the schema: {e.errors()[0]['msg']}")
    if not events:
        raise SummaryProblem("no event matched the schema; " + "; ".join(issues[:3]))
    return events, issues


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str


def sentences(text: str) -> list[Sentence]:
    """Punkt sentences with their character offsets in ``text``."""
    out, pos = [], 0
    for s in sent_tokenize(text):
        i = text.find(s, pos)
        if i < 0:
            continue
        out.append(Sentence(i, i + len(s), s))
        pos = i + len(s)
    return out


def _norm(s: str) -> str:
    for a, b in (("\u201c", '"'), ("\u201d", '"'), ("\u2019", "'"), ("\u2018", "'")):
        s = s.replace(a, b)
    return " ".join(s.lower().split())


def locate(sentence: str, sents: list[Sentence], cutoff: float) -> tuple[int, str] | None:
    """Index of the chapter sentence that ``sentence`` quotes: exact, then fuzzy."""
    target = _norm(sentence)
    if not target:
        return None
    normed = [_norm(s.text) for s in sents]
    for i, s in enumerate(normed):
        if s == target or (len(target) >= 12 and (target in s or s.startswith(target))):
            return i, "exact"
    for i, s in enumerate(normed):  # a quote spanning two Punkt sentences
        if len(target) >= 12 and i + 1 < len(normed) and target in f"{s} {normed[i + 1]}":
            return i, "exact"
    best = process.extractOne(target, normed, scorer=fuzz.ratio, score_cutoff=cutoff)
    return (best[2], "fuzzy") if best else None


@dataclass
class Segmentation:
    """The result: events, which path made them, and everything that went wrong."""

    events: list[Event]
    method: str  # "agent" | "agent_repaired" | "fallback"
    attempts: int
    issues: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    boundaries: list[str] = field(default_factory=list)  # "exact" | "fuzzy" per event

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "attempts": self.attempts, "issues": self.issues,
                "boundaries": self.boundaries, "events": len(self.events)}


def _place(raws: list[RawEvent], sents: list[Sentence],
           cutoff: float) -> tuple[list[tuple[int, RawEvent, str]], list[str]]:
    placed, issues, seen = [], [], set()
    for j, ev in enumerate(raws):
        hit = locate(ev.segmentation_boundaries.first_sentence, sents, cutoff)
        if hit is None:
            issues.append(f"event {j}: first sentence not found in the text")
        elif hit[0] in seen:
            issues.append(f"event {j}: starts where another event starts")
        else:
            seen.add(hit[0])
            placed.append((hit[0], ev, hit[1]))
    if [p[0] for p in placed] != sorted(p[0] for p in placed):
        issues.append("events were out of order; sorted by position")
    return sorted(placed, key=lambda p: p[0]), issues


def build_events(chapter: Chapter, text: str, raws: list[RawEvent],
                 cfg: SummaryConfig) -> tuple[list[Event], list[str], list[str]]:
    """Contiguous, covering events from located raw events (may be empty)."""
    sents = sentences(text)
    if not sents:
        return [], ["the chapter has no sentences"], []
    placed, issues = _place(raws, sents, cfg.fuzzy_cutoff)
    events, kinds = [], []
    for k, (start_idx, raw, kind) in enumerate(placed):
        first = 0 if k == 0 else start_idx
        last = placed[k + 1][0] - 1 if k + 1 < len(placed) else len(sents) - 1
        if k == 0 and start_idx != 0:
            issues.append("first event did not start at the chapter start; extended")
        claimed = locate(raw.segmentation_boundaries.last_sentence, sents, cfg.fuzzy_cutoff)
        if claimed is None or claimed[0] != last:
            issues.append(f"event {k}: last sentence set to the one before the next event")
        start, end = sents[first].start, sents[last].end
        events.append(Event(id=event_id(chapter.id, k), title=raw.title,
                            characters=raw.characters, summary=raw.detailed_summary,
                            first_sentence=sents[first].text, last_sentence=sents[last].text,
                            text=text[start:end],
                            extra={"char_start": start, "char_end": end}))
        kinds.append(kind)
    return events, issues, kinds


def fallback_events(chapter: Chapter, text: str, target_words: int) -> list[Event]:
    """Paragraphs (blank-line separated) grouped greedily to about ``target_words`` words."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S(?:.*?\S)?(?=\n\s*\n|\s*$)", text,
                                                         re.DOTALL)]
    groups: list[tuple[int, int]] = []
    words = 0
    for s, e in spans:
        if groups and words < target_words:
            groups[-1] = (groups[-1][0], e)
        else:
            groups.append((s, e))
            words = 0
        words += len(text[s:e].split())
    events = []
    for k, (s, e) in enumerate(groups):
        sents = sentences(text[s:e]) or [Sentence(0, e - s, text[s:e])]
        events.append(Event(id=event_id(chapter.id, k), title=f"Part {k + 1}",
                            first_sentence=sents[0].text, last_sentence=sents[-1].text,
                            text=text[s:e], extra={"char_start": s, "char_end": e,
                                                   "fallback": True}))
    return events


class SectionSummaryAgent:
    """Segments chapters with a helper model (see the module docstring)."""

    def __init__(self, helper: Model, cfg: SummaryConfig | None = None,
                 domain: prompts.Domain = "book") -> None:
        self.helper = helper
        self.cfg = cfg or SummaryConfig()
        self.domain: prompts.Domain = domain
        self.generations: list[Any] = []  # every Generation, for cost accounting

    def _request(self, msgs: list[Message], attempt: int) -> GenerationRequest:
        c = self.cfg
        return GenerationRequest(messages=tuple(msgs), max_tokens=c.max_tokens,
                                 temperature=c.temperature,
                                 seed=c.seed + attempt - 1 if c.temperature > 0 else None,
                                 response_schema=_SCHEMA_JSON)

    async def segment(self, chapter: Chapter) -> Segmentation:
        text = chapter.full_text
        system, user = prompts.summary_messages(
            text, self.domain, min_events=self.cfg.min_events, max_events=self.cfg.max_events,
            prompt=self.cfg.prompt,
            schema_in_prompt=not self.helper.capabilities.structured_output)
        msgs = [Message("system", system), Message("user", user)]
        issues: list[str] = []
        replies: list[str] = []
        for attempt in range(1, self.cfg.max_attempts + 1):
            gen = (await self.helper.generate([self._request(msgs, attempt)]))[0]
            self.generations.append(gen)
            replies.append(gen.text)
            try:
                if gen.finish_reason == "length":
                    raise SummaryProblem(f"the answer was cut off at the limit of "
                                         f"{self.cfg.max_tokens} tokens")
                raws, schema_issues = parse_events(gen.text)
                events, place_issues, kinds = build_events(chapter, text, raws, self.cfg)
                if not events:
                    raise SummaryProblem("no first sentence could be found in the text; "
                                         + "; ".join(place_issues[:3]))
            except SummaryProblem as e:
                issues.append(f"attempt {attempt}: {e}")
                w = prompts.WORDS[self.domain]
                msgs = msgs[:2] + [Message("assistant", gen.text[:2000]), Message(
                    "user", prompts.SUMMARY_REPAIR.format(problem=e, unit=w.unit))]
                continue
            found = schema_issues + place_issues
            method = "agent" if not found else "agent_repaired"
            return Segmentation(events, method, attempt, issues + found, replies, kinds)
        log.warning("chapter %s: helper gave no usable events after %d attempts; "
                    "falling back to paragraph groups", chapter.id, self.cfg.max_attempts)
        events = fallback_events(chapter, text, self.cfg.fallback_words)
        return Segmentation(events, "fallback", self.cfg.max_attempts, issues, replies,
                            ["fallback"] * len(events))
