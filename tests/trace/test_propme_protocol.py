"""How PROPME's prompts reach the target and what of the reply is traced (issue 47, D4 and
D5): under the authors' definitions every set goes as a plain completion and the reply is
stripped before tracing (PropMe ``generate_vllm.py``: ``/v1/completions``,
``completion.strip()``); under ours generic and specific go as chat to a chat-capable
target and the reply is traced as written; a chat-only backend cannot follow the authors'
protocol and the summary says so. Scripted models for the control flow, the embedded
SmolLM2 for one real plain completion."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from recitation.models.base import Capabilities, GenerationRequest, Model
from recitation.models.scripted import ScriptedModel
from recitation.prompts import copy_exactly
from recitation.runs.jobs import make_job
from recitation.trace.build import build_index
from recitation.trace.propme_protocol import protocol_notes, sent_as
from recitation.trace.sources import iter_kjv_docs

CHAPTERS = [d for _, d in zip(range(30), iter_kjv_docs(), strict=False)]
SPECIFIC = ["The committee will publish its findings on the new bridge next spring.",
            "Our tram line reopened after the flood repairs were finished last week."]
# what a base model's continuation looks like: a leading space and newline, a trailing one
REPLY = " \n And the lamp was lit at dusk, and the street went on talking. \n"


class ChatOnly(ScriptedModel):
    """A backend without plain completion (as Anthropic's API)."""

    capabilities = Capabilities(completion=False)


def kjv_index(work: Path) -> tuple[Path, Path]:
    """An index of :data:`CHAPTERS` and a file of :data:`SPECIFIC` sentences in ``work``."""
    build_index(CHAPTERS, work / "idx")
    (work / "specific.txt").write_text("\n".join(SPECIFIC) + "\n", encoding="utf-8")
    return work / "idx", work / "specific.txt"


@pytest.fixture(scope="module")
def kjv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return kjv_index(tmp_path_factory.mktemp("protocol"))


def run(kjv: tuple[Path, Path], target: Model, **params: Any
        ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    idx, specific = kjv
    job = make_job("propme", {"index": [str(idx)], "engine": "numpy", "n": 2,
                              "specific_sentences": str(specific), **params}, 0)
    records = asyncio.run(job.run_items(job.items(), target))
    assert not [r for r in records if "error" in r]
    report = job.finalize([(str(i), r) for i, r in enumerate(records)])
    assert report is not None
    return records, report


def test_sent_as_under_each_definitions() -> None:
    both, chat_only = Capabilities(), Capabilities(completion=False)
    no_chat = Capabilities(chat=False)
    for kind in ("generic", "specific", "prefix"):
        assert sent_as(kind, both, "auto", "propme") == "completion"
        assert sent_as(kind, chat_only, "auto", "propme") == "chat"
        assert sent_as(kind, both, "chat", "propme") == "chat"
        assert sent_as(kind, chat_only, "completion", "recitation") == "completion"
        assert sent_as(kind, no_chat, "auto", "recitation") == "completion"
    assert sent_as("generic", both, "auto", "recitation") == "chat"
    assert sent_as("prefix", both, "auto", "recitation") == "completion"
    assert sent_as("prefix", chat_only, "auto", "recitation") == "chat"


def test_propme_sends_plain_completions_and_traces_the_stripped_reply(
        kjv: tuple[Path, Path]) -> None:
    target = ScriptedModel(lambda req: REPLY, name="base")
    records, report = run(kjv, target)
    assert {r["set"] for r in records} == {"generic", "specific", "prefix"}
    assert target.requests and all(not q.is_chat for q in target.requests)
    # the prompt's own text, nothing around it (the authors' prompt file's text)
    assert sorted(q.prompt or "" for q in target.requests) == sorted(r["prompt"] for r in records)
    for r in records:
        assert (r["sent_as"], r["stripped"]) == ("completion", True)
        assert r["raw_generation"] == REPLY
        assert r["generation"] == r["text"] == REPLY.strip()
    assert report["protocol"] == {s: {"completion": 2, "chat": 0, "stripped": 2}
                                  for s in ("generic", "specific", "prefix")}
    assert not [w for w in report["warnings"] if "protocol" in w or "ours" in w]


def test_recitation_keeps_chat_for_generic_and_specific_and_the_reply_as_written(
        kjv: tuple[Path, Path]) -> None:
    target = ScriptedModel(lambda req: REPLY, name="chat-model")
    records, report = run(kjv, target, definitions="recitation")
    by_prompt = {r["prompt"]: r for r in records}
    for q in target.requests:
        if q.is_chat:
            r = by_prompt[(q.messages or ())[-1].content]
            assert r["set"] in ("generic", "specific") and r["sent_as"] == "chat"
        else:
            assert by_prompt[q.prompt or ""]["set"] == "prefix"
    assert sum(q.is_chat for q in target.requests) == 4
    for r in records:
        assert r["stripped"] is False and r["generation"] == r["text"] == REPLY
    assert any(w.startswith("ours (--definitions recitation)") for w in report["warnings"])


def test_a_chat_only_backend_is_said_to_break_the_authors_protocol(
        kjv: tuple[Path, Path]) -> None:
    target = ChatOnly(lambda req: REPLY, name="chat-only")
    records, report = run(kjv, target)
    assert all(q.is_chat for q in target.requests)
    prefixes = [r["prompt"] for r in records if r["set"] == "prefix"]
    assert {(q.messages or ())[-1].content for q in target.requests} >= {
        copy_exactly(p) for p in prefixes}
    assert all(r["sent_as"] == "chat" and r["generation"] == REPLY.strip() for r in records)
    notes = [w for w in report["warnings"] if w.startswith("not the authors' protocol")]
    assert len(notes) == 1 and "no plain completion (chat only)" in notes[0]
    assert "2 generic, 2 specific, 2 prefix prompt(s) sent as chat" in notes[0]
    forced = protocol_notes({"generic": {"completion": 0, "chat": 1, "stripped": 1}},
                            "propme", "chat")
    assert "--mode chat was asked" in forced[0]


def test_a_blank_reply_is_traced_as_empty(kjv: tuple[Path, Path]) -> None:
    """The authors keep an empty completion (``.strip()`` of whitespace): traced, no span."""
    records, report = run(kjv, ScriptedModel(lambda req: " \n\n ", name="mute"),
                          sets=["generic"])
    assert [r["generation"] for r in records] == ["", ""]
    assert all(r["longest"] == 0 and not r["spans"] for r in records)
    assert report["groups"]["generic"]["full_match_ratio"] == 0.0


@pytest.mark.model
def test_the_embedded_model_gets_a_plain_completion(kjv: tuple[Path, Path],
                                                    local_model: Model) -> None:
    """SmolLM2 has a chat template; under the authors' definitions it is not used: the
    prompt goes as plain text and the stripped continuation is traced."""
    seen: list[GenerationRequest] = []

    class Watching(Model):
        backend, name = "local", "smollm2"
        capabilities = local_model.capabilities

        async def generate(self, requests: list[GenerationRequest]) -> list[Any]:
            seen.extend(requests)
            return await local_model.generate(requests)

    records, _ = run(kjv, Watching(), sets=["generic", "prefix"], n=1, max_new_tokens=8)
    assert len(seen) == 2 and not [q for q in seen if q.is_chat]
    assert sorted(q.prompt or "" for q in seen) == sorted(r["prompt"] for r in records)
    for r in records:
        assert r["sent_as"] == "completion" and r["generation"] == r["raw_generation"].strip()
    # a whole sentence may get no continuation at all (SmolLM2 ends its turn: the authors
    # keep such an empty completion); a document's first 50 words do
    assert [r["generation"] for r in records if r["set"] == "prefix"][0]
