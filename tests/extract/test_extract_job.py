"""The extract job through the runner with scripted models: a plain-text book is segmented by
the summary agent, every method runs, the filter scores with a (tiny) parrot, and the report
and EchoTrace file come out consistent with ``recitation evaluate``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from recitation.corpus.echotrace import load_echotrace
from recitation.evaluate import EvaluateConfig, evaluate_book
from recitation.extract import prompts
from recitation.extract.export import (
    ECHO_METHOD,
    build_book,
    event_records,
    method_costs,
    summary_table,
)
from recitation.extract.job import ExtractJob
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.runs.jobs import make_job

# KJV, Genesis 1 and 2 (public domain)
CH1 = ("In the beginning God created the heaven and the earth. And the earth was without form, "
       "and void; and darkness was upon the face of the deep. And the Spirit of God moved upon "
       "the face of the waters.\n\nAnd God said, Let there be light: and there was light. And "
       "God saw the light, that it was good: and God divided the light from the darkness. And "
       "God called the light Day, and the darkness he called Night.")
CH2 = ("Thus the heavens and the earth were finished, and all the host of them. And on the "
       "seventh day God ended his work which he had made; and he rested on the seventh day "
       "from all his work which he had made.\n\nAnd God blessed the seventh day, and "
       "sanctified it: because that in it he had rested from all his work which God created "
       "and made.")


@pytest.fixture(autouse=True)
def _fresh_parrot_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parrots are cached per book under the model cache: train them anew in each test."""
    monkeypatch.setenv("RECITATION_MODEL_CACHE_DIR", str(tmp_path / "models"))


def write_book(tmp_path: Path) -> Path:
    path = tmp_path / "genesis.txt"
    path.write_text(f"GENESIS\n\nCHAPTER 1\n\n{CH1}\n\nCHAPTER 2\n\n{CH2}\n", encoding="utf-8")
    return path


def helper_reply(req: GenerationRequest) -> str:
    system = next((m.content for m in req.messages or () if m.role == "system"), "")
    if system.startswith(prompts.VERIFIER_SYSTEM):
        return "Yes"
    if system.startswith("You will be given a full book chapter"):
        user = (req.messages or ())[-1].content
        if "seventh day" in user:
            return "I liked this chapter."  # never JSON -> paragraph fallback
        return json.dumps({"events": [
            {"title": "Creation", "characters": ["God"], "detailed_summary": ["the start"],
             "segmentation_boundaries": {"first_sentence": "In the beginning God created "
                                         "the heaven and the earth.", "last_sentence": ""}},
            {"title": "Light", "characters": ["God"], "detailed_summary": ["light made"],
             "segmentation_boundaries": {"first_sentence": "And God said, Let there be "
                                         "light: and there was light.", "last_sentence": ""}}]})
    if system.startswith("You are analyzing"):
        return "2. MISSING ELEMENTS:\n- later parts of the passage are missing"
    return "I cannot say."


def target_reply(req: GenerationRequest) -> str:
    user = (req.messages or ())[-1].content if req.messages else req.prompt or ""
    if "MISSING ELEMENTS" in user:  # feedback makes the target recall more
        return CH1 if "beginning" in user else CH2
    if "Let there be light" in user or "Let there be light" in str(req.messages):
        return "And God said, Let there be light: and there was light."
    return "In the beginning God created the heaven and the earth."


def run_job(params: dict[str, Any]) -> tuple[ExtractJob, list[tuple[str, dict[str, Any]]]]:
    job = make_job("extract", params, 0)
    assert isinstance(job, ExtractJob)
    helper = ScriptedModel(helper_reply, name="helper")
    job.use_models(helper=helper, judge=helper)
    items = job.items()
    records = asyncio.run(job.run_items(items, ScriptedModel(target_reply, name="target")))
    return job, [(it.id, r) for it, r in zip(items, records, strict=True)]


def test_text_book_segmented_extracted_and_reported(tmp_path: Path) -> None:
    params = {"book": str(write_book(tmp_path)), "chapters": [1, 2],
              "summary": {"max_attempts": 2,
                                                              "fallback_words": 20},
              "recap": {"max_rounds": 2},
              "filter": {"time_budget_s": 1, "threshold": 0.0, "chunk_tokens": 32,
                         "stride": 16, "eval_masks": 1}}
    job, records = run_job(params)
    assert [r["kind"] for _, r in records] == ["chapter", "chapter"]
    seg = [r["segmentation"]["method"] for _, r in records]
    assert seg[0] in ("agent", "agent_repaired") and seg[1] == "fallback"
    events = event_records(records)
    assert len(events) == 2 + len(records[1][1]["gold_events"])
    assert all(e["filter"] is not None and e["filter"]["passed"] for e in events)
    parrot = events[0]["filter"]["parrot"]
    assert parrot["cached"] is False and parrot["steps"] >= 1 and parrot["base"] == "scratch"
    assert 0 <= events[0]["filter"]["norm_loss"] <= 1
    # the same numbers as `recitation evaluate` on the written file
    book = build_book(job.book(), records)
    scores = evaluate_book(book, EvaluateConfig(methods=tuple(set(ECHO_METHOD.values()))))
    table = summary_table(records, list(job.params.methods), job.book())
    rows = {r[0]: r for r in table.rows}
    assert any(line.startswith("filter cost in ROUGE-L: +0.0000") for line in table.headline)
    assert rows["recap"][2] == f"{scores['rouge_scores'][ECHO_METHOD['recap']]:.4f}"
    assert float(rows["recap"][2]) > float(rows["dsp"][2])
    costs = method_costs(events, [r["summary_cost"] for _, r in records])
    assert costs["prefix"].prompts == 2 * len(events)  # the probe and its judge call
    assert costs["dsp"].prompts == len(events) + 3  # + summary calls: 1 (ch. 1) + 2 (ch. 2)
    assert costs["recap"].prompts >= costs["recap_filter"].prompts > costs["dsp_jailbreak"].prompts


CREATION = CH1.split("\n\n")[0]  # the gold text of the "Creation" event


def recalls_creation_only(req: GenerationRequest) -> str:
    """"Creation": first all but its last three words (ROUGE-L recall about 0.9, below the
    loop's stop at 0.95), after feedback all of it. "Light": a text sharing no sentence
    with the chapter."""
    if "Let there be light" in str(req.messages or req.prompt):
        return "A merchant counted his coins by candlelight and found one missing."
    if "MISSING ELEMENTS" in str(req.messages):
        return CREATION
    return CREATION.rsplit(" ", 3)[0]


def test_filter_keeps_the_recalled_event_and_drops_the_other(tmp_path: Path) -> None:
    """The published threshold (0.5) on the real parrot and embedding model. The nearly
    verbatim first extraction (recall >= 0.89, cosine > 0.85: z >= 4 (1 - loss) + 4.0 + 1.27
    - 5 > 0 whatever the parrot's loss) gets a feedback round; the unrelated one (recall < 0.1,
    cosine < 0.5: z <= 4 + 0.45 + 0.75 - 5 < 0.3 even at loss 0, and the tiny parrot is far
    from 0) is filtered out before any feedback call."""
    params = {"book": str(write_book(tmp_path)), "chapters": [1],
              "methods": ["dsp", "recap_filter"], "summary": {"max_attempts": 1},
              "recap": {"max_rounds": 1},
              "filter": {"time_budget_s": 1, "chunk_tokens": 32, "stride": 16,
                         "eval_masks": 1}}
    job = make_job("extract", params, 0)
    assert isinstance(job, ExtractJob) and job.params.filter.threshold == 0.5
    helper = ScriptedModel(helper_reply, name="helper")
    job.use_models(helper=helper, judge=helper)
    items = job.items()
    records = asyncio.run(job.run_items(items, ScriptedModel(recalls_creation_only)))
    events = {e["llm_completions"]["Agent_Extraction"]["simple_agent_extraction"][:9]: e
              for e in event_records([(it.id, r) for it, r in zip(items, records, strict=True)])}
    kept, dropped = events["In the be"], events["A merchan"]
    assert kept["filter"]["passed"] and kept["filter"]["score"] > 0.5
    assert 0.89 <= kept["rouge_l"]["round_0"] < 0.95
    assert kept["filter"]["cosine"] > 0.85 and dropped["filter"]["cosine"] < 0.5
    assert kept["rounds"] == 1 and "feedback" in kept["cost"]  # the feedback loop ran
    assert not dropped["filter"]["passed"] and dropped["filter"]["score"] < 0.5
    assert dropped["stop_reason"] == "filtered_out" and dropped["rounds"] == 0
    assert "feedback" not in dropped["cost"]


def test_written_file_round_trips_through_the_loader(tmp_path: Path) -> None:
    from recitation.extract.export import write_extraction

    job, records = run_job({"book": str(write_book(tmp_path)), "chapters": [1],
                            "methods": ["prefix", "dsp"]})
    path = write_extraction(build_book(job.book(), records), tmp_path / "x.json", records)
    book = load_echotrace(path)
    ev = next(book.events())
    assert ev.extra["LLM_completions"]["prefix-probing"]
    assert "recitation" in ev.extra and "cost" in ev.extra["recitation"]
    lines = path.with_suffix(".attempts.jsonl").read_text().splitlines()
    assert len(lines) == len(list(book.events()))


def test_latex_paper_sections_are_targets(tmp_path: Path) -> None:
    tex = tmp_path / "paper.tex"
    tex.write_text(r"""\documentclass{article}
\title{A Tiny Paper}
\begin{document}
\maketitle
\section{Introduction}
We study how models recall text. Our method is simple. It works on sections of papers.

Second paragraph of the introduction, with more words to make it long enough.
\section{Method}
The method asks a model to reproduce each section. We compare outputs with the source.
\end{document}
""", encoding="utf-8")
    job, records = run_job({"book": str(tex), "methods": ["dsp"],
                            "summary": {"max_attempts": 1, "fallback_words": 10}})
    assert job.recap_config().domain == "paper"
    assert [r["kind"] for _, r in records] == ["chapter", "chapter"]
    events = event_records(records)
    assert events and all(e["chapter_title"] in ("Introduction", "Method") for e in events)
    first = events[0]["attempts"][0]["messages"][0]["content"]
    assert "known paper" in first and "section_title: Introduction" in first
