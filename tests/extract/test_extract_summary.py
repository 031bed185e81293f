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
    parse_events,
)
from recitation.models.base import GenerationRequest
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
    assert seg.boundaries == ["fuzzy", "exact"] or seg.boundaries.count("fuzzy") >= 1
    text = " ".join(seg.issues)
    assert "out of order" in text and "starts where another" in text and "not found" in text
    assert_covering(seg.events, TEXT)
    assert seg.events[0].first_sentence == "It was a dark and stormy night."


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


@pytest.mark.slow
async def test_pdnc_chapter_with_the_embedded_model(shared_data: Path, local_model: Any) -> None:
    """The real SmolLM2 as helper: valid covering events or a recorded fallback, no crash."""
    chapter = _pdnc_chapter(shared_data, 250)
    agent = SectionSummaryAgent(local_model, SummaryConfig(max_attempts=2, max_tokens=160,
                                                           fallback_words=120))
    seg = await agent.segment(chapter)
    assert seg.method in ("agent", "agent_repaired", "fallback")
    assert len(seg.replies) == seg.attempts and all(isinstance(r, str) for r in seg.replies)
    if seg.method == "fallback":
        assert len(seg.issues) == seg.attempts
    assert_covering(seg.events, chapter.text)
    assert all(isinstance(g, GenerationRequest) or True for g in agent.generations)


# -- issue 8: the paper's prompt, temperature and reply limit; cut-off replies ------------

def _plain(text: str) -> str:
    """Words of a prompt without typesetting: markdown marks, dashes and spacing dropped."""
    text = re.sub(r"[*#`\u2014\u2003]", " ", text.replace("\\_", "_"))
    return " ".join(text.split())


def test_default_prompt_is_the_papers_appendix_b(shared_data: Path) -> None:
    from recitation.extract import prompts

    paper = shared_data.parent / "papers" / "recap.md"
    if not paper.exists():
        pytest.skip(f"the RECAP paper is not at {paper}")
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
