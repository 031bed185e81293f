"""Section summary agent: well-formed, malformed and wrong helper replies; fallback; PDNC."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from recitation.corpus.model import Chapter, Event
from recitation.extract.summary import (
    SectionSummaryAgent,
    SummaryConfig,
    SummaryProblem,
    extract_json,
    fallback_events,
    parse_events,
)
from recitation.models.base import Generation, GenerationRequest, Model
from recitation.models.scripted import ScriptedModel

TEXT = ("It was a dark and stormy night. The wind howled round the old house.\n\n"
        "John walked in from the cold. He sat down by the fire and warmed his hands.\n\n"
        "Mary came in later that evening. She brought bread and cheese for everyone.\n\n"
        "They ate in silence. Nobody mentioned the letter.")
CHAPTER = Chapter(id="book/ch000", title="One", text=TEXT)


def ev(first: str, last: str = "", title: str = "t", summary: Any = ("s",)) -> dict[str, Any]:
    return {"title": title, "characters": ["John"], "detailed_summary": list(summary)
            if not isinstance(summary, str) else summary,
            "segmentation_boundaries": {"first_sentence": first, "last_sentence": last}}


GOOD = {"events": [
    ev("It was a dark and stormy night.", "The wind howled round the old house."),
    ev("John walked in from the cold.", "She brought bread and cheese for everyone."),
    ev("They ate in silence.", "Nobody mentioned the letter."),
]}


def assert_covering(events: list[Event], text: str) -> None:
    """Contiguous, non-overlapping, covering: only whitespace between or around events."""
    assert events
    pos = 0
    for e in events:
        start, end = e.extra["char_start"], e.extra["char_end"]
        assert text[pos:start].strip() == "" and start >= pos
        assert text[start:end] == e.text and e.text.startswith(e.first_sentence)
        assert e.text.endswith(e.last_sentence)
        pos = end
    assert text[pos:].strip() == ""


async def segment(replies: list[str], cfg: SummaryConfig | None = None,
                  chapter: Chapter = CHAPTER) -> tuple[Any, ScriptedModel]:
    it = iter(replies)
    model = ScriptedModel(lambda r: next(it, replies[-1]))
    seg = await SectionSummaryAgent(model, cfg or SummaryConfig()).segment(chapter)
    return seg, model


async def test_well_formed_reply() -> None:
    seg, model = await segment([json.dumps(GOOD)])
    assert seg.method == "agent" and seg.attempts == 1 and len(model.requests) == 1
    assert [e.title for e in seg.events] == ["t", "t", "t"]
    assert seg.boundaries == ["exact"] * 3
    assert_covering(seg.events, TEXT)
    assert seg.events[1].text.endswith("cheese for everyone.")


async def test_json_in_fences_with_chatter_and_string_summary() -> None:
    data = {"events": [ev("It was a dark and stormy night.", "x", summary="one bullet")]}
    seg, _ = await segment([f"Sure! Here you go:\n```json\n{json.dumps(data)}\n```\nEnjoy."])
    assert seg.method == "agent_repaired"  # last sentence was wrong -> set to chapter end
    assert len(seg.events) == 1 and seg.events[0].summary == ["one bullet"]
    assert_covering(seg.events, TEXT)


async def test_non_json_then_good_reply_re_asks_with_the_problem() -> None:
    seg, model = await segment(["I think the chapter is about a storm.", json.dumps(GOOD)])
    assert seg.method == "agent" and seg.attempts == 2
    assert "no valid JSON" in seg.issues[0]
    second = model.requests[1].messages or ()
    assert second[-1].role == "user" and "no valid JSON" in second[-1].content


async def test_wrong_schema_everywhere_falls_back_and_records_it() -> None:
    bad = json.dumps({"events": [{"name": "storm"}, {"title": 3}]})
    seg, model = await segment([bad], SummaryConfig(max_attempts=2, fallback_words=15))
    assert seg.method == "fallback" and len(model.requests) == 2
    assert all("schema" in i for i in seg.issues)
    assert_covering(seg.events, TEXT)
    assert all(e.extra["fallback"] for e in seg.events) and len(seg.events) >= 2


async def test_boundaries_not_in_text_fall_back() -> None:
    invented = {"events": [ev("The dragon roared over the mountains at dawn."),
                           ev("Meanwhile the king counted his gold coins.")]}
    seg, _ = await segment([json.dumps(invented)], SummaryConfig(max_attempts=1))
    assert seg.method == "fallback" and "first sentence" in seg.issues[0]
    assert_covering(seg.events, TEXT)


async def test_fuzzy_boundaries_overlaps_and_order_are_repaired() -> None:
    messy = {"events": [
        ev("John walked in from the cold!", "Nobody mentioned the letter."),   # fuzzy, overlaps
        ev("It was a dark and stormy nite.", "They ate in silence."),          # fuzzy, out of order
        ev("John walked in from the cold.", "x"),                              # duplicate start
        ev("A sentence that is not there at all, really not.", "x"),           # not found
    ]}
    seg, _ = await segment([json.dumps(messy)])
    assert seg.method == "agent_repaired" and len(seg.events) == 2
    # Worked by hand: neither kept first sentence is in the text as written ("cold!", "nite"),
    # so both are placed fuzzily - event 0 at sentence 2 (John), event 1 at sentence 0 (the
    # night); event 2 quotes sentence 2 exactly but it is taken, event 3 is nowhere. Sorted,
    # the events start at sentences 0 and 2, both placed by the fuzzy match.
    assert "cold!" not in TEXT and "nite" not in TEXT
    assert seg.boundaries == ["fuzzy", "fuzzy"]
    assert seg.issues == [
        "event 2: starts where another event starts",
        "event 3: first sentence not found in the text",
        "events were out of order; sorted by position",
        # "They ate in silence." (sentence 6) is not the sentence before John (sentence 1)
        "event 0: last sentence set to the one before the next event",
    ]
    assert_covering(seg.events, TEXT)
    assert [e.first_sentence for e in seg.events] == ["It was a dark and stormy night.",
                                                       "John walked in from the cold."]
    assert [e.last_sentence for e in seg.events] == ["The wind howled round the old house.",
                                                      "Nobody mentioned the letter."]


async def test_helper_errors_other_than_replies_propagate_only_as_backend_errors() -> None:
    seg, _ = await segment(["[]"], SummaryConfig(max_attempts=1))  # valid JSON, no events
    assert seg.method == "fallback"


def test_extract_json_and_parse_events_shapes() -> None:
    assert extract_json('noise {"a": 1} trailing') == {"a": 1}
    assert parse_events(json.dumps([GOOD["events"][0]]))[0][0].title == "t"
    wrapped = {"chapters": [{"events": GOOD["events"][:1]}]}
    assert len(parse_events(json.dumps(wrapped))[0]) == 1
    flat = {"events": [{"title": "x", "first_sentence": "It was a dark and stormy night."}]}
    assert parse_events(json.dumps(flat))[0][0].segmentation_boundaries.first_sentence
    with pytest.raises(SummaryProblem):
        parse_events('{"events": "none"}')


def _pdnc_chapter(shared_data: Path, words: int) -> Chapter:
    """The opening paragraphs (about ``words`` words) of a PDNC novel's first long chapter,
    chapters as the corpus loader finds them."""
    from recitation.corpus.pdnc import load_pdnc_novel

    book = load_pdnc_novel(shared_data / "pdnc" / "PrideAndPrejudice").book
    chapter = next(c for c in book.chapters if len(c.full_text.split()) > words)
    kept, n = [], 0
    for p in re.split(r"\n\s*\n", chapter.full_text.strip()):
        if p.strip():
            kept.append(" ".join(p.split()))
            n += len(p.split())
        if n >= words:
            break
    return Chapter(id=chapter.id, title=chapter.title, text="\n\n".join(kept))


class _Recorder(Model):
    """Passes requests to ``inner`` and keeps each request with the generation it got."""

    def __init__(self, inner: Model) -> None:
        self.inner, self.backend, self.name = inner, inner.backend, inner.name
        self.capabilities = inner.capabilities
        self.calls: list[tuple[GenerationRequest, Generation]] = []

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        gens = await self.inner.generate(requests)
        self.calls.extend(zip(requests, gens, strict=True))
        return gens


@pytest.mark.model
@pytest.mark.slow
async def test_pdnc_chapter_with_the_embedded_model(shared_data: Path, local_model: Any) -> None:
    """The real SmolLM2 as helper: valid covering events or a recorded fallback, no crash.
    Whichever path the model's replies take, the same bookkeeping must hold."""
    chapter = _pdnc_chapter(shared_data, 250)
    cfg = SummaryConfig(max_attempts=2, max_tokens=160, fallback_words=120)
    helper = _Recorder(local_model)
    agent = SectionSummaryAgent(helper, cfg)
    seg = await agent.segment(chapter)
    assert seg.method in ("agent", "agent_repaired", "fallback")
    usable = seg.method != "fallback"
    # one helper call per attempt; the agent keeps each generation and its reply as written;
    # it stops at the first usable reply and falls back only after the last attempt
    assert 1 <= seg.attempts <= cfg.max_attempts and (usable or seg.attempts == 2)
    assert len(helper.calls) == len(agent.generations) == len(seg.replies) == seg.attempts
    assert all(isinstance(g, Generation) for g in agent.generations)
    assert [g for _, g in helper.calls] == agent.generations
    assert seg.replies == [g.text for g in agent.generations]
    # the requests: the paper's temperature 1.0, a new seed per attempt (0, 1), our limit;
    # a re-ask repeats the opening, then the failed reply and the problem found in it
    requests = [r for r, _ in helper.calls]
    assert all(isinstance(r, GenerationRequest) for r in requests)
    assert [r.seed for r in requests] == list(range(seg.attempts))
    assert {(r.temperature, r.max_tokens) for r in requests} == {(1.0, 160)}
    opening = (requests[0].messages or ())[:2]
    assert [m.role for m in opening] == ["system", "user"] and chapter.text in opening[1].content
    for k, r in enumerate(requests[1:], 1):
        msgs = r.messages or ()
        assert msgs[:2] == opening and [m.role for m in msgs[2:]] == ["assistant", "user"]
        assert msgs[2].content == seg.replies[k - 1][:2000]
    # one "attempt k: ..." issue per failed attempt, in order: all of them on the fallback
    failed = [i.split(":")[0] for i in seg.issues if re.match(r"attempt \d+: ", i)]
    assert failed == [f"attempt {k}" for k in range(1, seg.attempts + (0 if usable else 1))]
    assert_covering(seg.events, chapter.text)
    assert len(seg.boundaries) == len(seg.events)
    assert set(seg.boundaries) <= ({"exact", "fuzzy"} if usable else {"fallback"})
    assert all(e.extra.get("fallback", False) is not usable for e in seg.events)
    # the fallback's grouping, checked from the paragraphs whichever path was taken: every
    # group but the last reaches 120 words and would not without its last paragraph
    groups = fallback_events(chapter, chapter.text, cfg.fallback_words)
    assert "\n\n".join(g.text for g in groups) == chapter.text
    paragraphs = [g.text.split("\n\n") for g in groups]
    for paras in paragraphs[:-1]:
        assert len(" ".join(paras).split()) >= 120 > len(" ".join(paras[:-1]).split())
    if not usable:
        assert [e.text for e in seg.events] == [g.text for g in groups]


# -- issue 8: the paper's prompt, temperature and reply limit; cut-off replies ------------

def _plain(text: str) -> str:
    """Words of a prompt without typesetting: markdown marks, dashes and spacing dropped."""
    text = re.sub(r"[*#`\u2014\u2003]", " ", text.replace("\\_", "_"))
    return " ".join(text.split())


def test_default_prompt_is_the_papers_appendix_b(shared_data: Path, require: Any) -> None:
    from recitation.extract import prompts

    paper = shared_data.parent / "papers" / "recap.md"
    require(paper.exists(), f"the RECAP paper is not at {paper} (the project's shared/papers "
            "folder, beside shared/data)")
    page = paper.read_text(encoding="utf-8")
    table = page[page.index("### Section Summary Agent Prompt"):page.index("Table 4 |")]
    sys_part = table[table.index("**System Prompt:**") + 18:table.index("### **User Prompt:**")]
    user_part = table[table.index("### **User Prompt:**") + 20:]
    system, user = prompts.summary_messages("{chapter_text}")
    assert _plain(system) == _plain(sys_part)
    assert _plain(user) == _plain(user_part)
    # nothing of ours is added for a helper with structured output
    assert "schema" not in system
    with_note, _ = prompts.summary_messages("x", schema_in_prompt=True)
    assert with_note.startswith(system) and '"detailed_summary"' in with_note


class _Structured(ScriptedModel):
    from recitation.models.base import Capabilities

    capabilities = Capabilities(structured_output=True)


async def test_paper_temperature_long_limit_and_new_seed_per_attempt() -> None:
    cfg = SummaryConfig()
    assert (cfg.temperature, cfg.max_tokens, cfg.prompt) == (1.0, 16384, "paper")
    seg, model = await segment(["no json here", json.dumps(GOOD)])
    assert seg.attempts == 2
    first, second = model.requests
    assert first.temperature == 1.0 and first.max_tokens == 16384
    assert (first.seed, second.seed) == (0, 1)
    assert first.response_schema is not None
    # a helper without structured output is told the schema; one with it is not
    assert "schema" in (first.messages or ())[0].content
    structured = _Structured(lambda r: json.dumps(GOOD))
    await SectionSummaryAgent(structured).segment(CHAPTER)
    assert "schema" not in (structured.requests[0].messages or ())[0].content


async def test_reply_cut_at_the_limit_is_retried_not_salvaged() -> None:
    full = json.dumps(GOOD)
    limit = len(full.split())  # the scripted model reports finish_reason "length" here
    seg, model = await segment([full, full], SummaryConfig(max_tokens=limit, max_attempts=2))
    assert seg.method == "fallback" and len(model.requests) == 2
    assert all("cut off at the limit" in i for i in seg.issues)


async def test_broken_outer_object_is_a_failure_not_one_event_per_chapter() -> None:
    truncated = json.dumps(GOOD)[:-60]  # cut inside the last event: inner objects still parse
    seg, model = await segment([truncated, json.dumps(GOOD)], SummaryConfig(max_attempts=2))
    assert seg.method == "agent" and seg.attempts == 2 and len(seg.events) == 3
    assert "no valid JSON" in seg.issues[0]
    with pytest.raises(SummaryProblem):
        extract_json(truncated)
    # prose brackets before a whole object are still fine
    assert extract_json('See [note] and "a {quoted" brace: {"a": [1]}') == {"a": [1]}


async def test_compact_prompt_and_greedy_remain_named_options() -> None:
    seg, model = await segment([json.dumps(GOOD)],
                               SummaryConfig(prompt="recitation", temperature=0))
    req = model.requests[0]
    assert req.temperature == 0 and req.seed is None
    assert "Answer with JSON only, matching this schema" in (req.messages or ())[0].content
    assert seg.method == "agent"
