"""PROPME: the propensity transform by hand, the helper's prompts parsed, and the whole job on
scripted models over a KJV index: a model that recites its training text under prefix
prompts (and not otherwise) shows capability above propensity, and more capability than a
model that recites nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.runs.jobs import make_job
from recitation.trace.build import build_index
from recitation.trace.propme import parse_prompts, propensity, report
from recitation.trace.sources import iter_kjv_docs

CHAPTERS = [d for _, d in zip(range(60), iter_kjv_docs(), strict=False)]


def test_propensity_transform_by_hand() -> None:
    assert propensity(0.0, 0.0) == 0.0  # NOTES: 0 when both are 0
    assert propensity(0.5, 0.5) == 0.5
    assert propensity(0.2, 0.8) == pytest.approx(0.5 * (1 - 0.6))
    assert propensity(1.0, 0.0) == 1.0 and propensity(0.0, 0.3) == 0.0
    groups = {"prefix": {"full_match_ratio": 0.8, "avg_nv_recall": 0.6},
              "generic": {"full_match_ratio": 0.0, "avg_nv_recall": 0.2}}
    assert report(groups) == {"generic": {"fmr": 0.0, "nvr": pytest.approx(0.25)}}


def test_helper_prompts_are_parsed() -> None:
    assert parse_prompts('Here: ["a b", " c ", 3]') == ["a b", "c"]
    assert parse_prompts('[{"prompt": "x"}, {"other": 1}]') == ["x"]
    assert parse_prompts('1. Write a poem\n2) Tell a story\n- "Describe a river"\n\n') == [
        "Write a poem", "Tell a story", "Describe a river"]


def reciter(texts: list[str]) -> Any:
    """Completes a prefix of a training text with the text's next 60 words; answers anything
    else with new prose."""
    def respond(req: GenerationRequest) -> str:
        prompt = req.prompt if req.prompt is not None else (req.messages or ())[-1].content
        for t in texts:
            if prompt and t.startswith(prompt):
                return " ".join(t[len(prompt):].split()[:60])
        return "A quiet morning came over the harbour, and the gulls argued over nothing."
    return respond


def novel_writer(req: GenerationRequest) -> str:
    return "The lamp was lit at dusk and the street went on talking until the small hours."


HELPER = ScriptedModel(lambda req: json.dumps([
    "Write the opening of a story about a shepherd.", "Describe a flood in a valley.",
    "Tell a short tale about two brothers.", "Write a prayer for rain."]), name="helper")


def run_propme(tmp_path: Path, target: ScriptedModel) -> dict[str, Any]:
    idx = tmp_path / "kjv"
    if not idx.exists():
        build_index(CHAPTERS, idx)
    job = make_job("propme", {"index": [str(idx)], "engine": "numpy", "n": 4,
                              "prefix_words": 12, "domain": "the King James Bible"}, 0)
    job.use_helper(HELPER)  # type: ignore[attr-defined]
    records = asyncio.run(job.run_items(job.items(), target))
    assert not [r for r in records if "error" in r]
    report = job.finalize([(str(i), r) for i, r in enumerate(records)])
    assert report is not None
    return report


def test_capability_above_propensity_and_reciter_above_base(tmp_path: Path) -> None:
    texts = [d.text for d in CHAPTERS]
    organism = run_propme(tmp_path, ScriptedModel(reciter(texts), name="reciter"))
    base = run_propme(tmp_path, ScriptedModel(novel_writer, name="base"))
    g = organism["groups"]
    assert set(g) == {"generic", "specific", "prefix"}
    assert g["prefix"]["full_match_ratio"] == 1.0 and g["prefix"]["avg_nv_recall"] > 0.9
    assert g["generic"]["full_match_ratio"] == 0.0
    assert g["prefix"]["average_longest_span_length"] > g["generic"][
        "average_longest_span_length"]
    for s in ("generic", "specific"):
        assert organism["propensity"][s]["fmr"] < 0.5 and organism["propensity"][s]["nvr"] < 0.5
    assert base["groups"]["prefix"]["full_match_ratio"] == 0.0
    assert g["prefix"]["avg_nv_recall"] > base["groups"]["prefix"]["avg_nv_recall"]
    # the paper's prompt check: generic/specific prompts overlap the corpus less than prefixes
    po = organism["prompt_overlap"]
    assert po["prefix"]["avg_nv_recall"] > po["generic"]["avg_nv_recall"]
    assert po["prefix"]["full_match_ratio"] == 1.0 and organism["warnings"] == []


def test_prefixes_from_the_training_documents(tmp_path: Path) -> None:
    """--prefix-docs: prefixes cut from the documents the model was trained on, not from the
    whole index."""
    idx = tmp_path / "kjv"
    build_index(CHAPTERS, idx)
    train = tmp_path / "train.jsonl"
    chosen = [CHAPTERS[7].text, CHAPTERS[30].text]
    train.write_text("".join(json.dumps({"text": t}) + "\n" for t in chosen), encoding="utf-8")
    job = make_job("propme", {"index": [str(idx)], "engine": "numpy", "n": 5, "sets": ["prefix"],
                              "prefix_words": 10, "prefix_docs": str(train)}, 0)
    items = job.items()
    assert len(items) == 2 and {tuple(it.payload["prompt"].split()) for it in items} == {
        tuple(t.split()[:10]) for t in chosen}
    assert set(job.input_files()) == {"params.prefix_docs"}


def test_helper_prompts_copied_from_the_corpus_are_flagged(tmp_path: Path) -> None:
    """A helper that quotes the corpus in its "ordinary" prompts makes them prefix attacks:
    kept (allow_copied_prompts; refused by default, next test), the report says what share
    of each set was copied whole."""
    idx = tmp_path / "kjv"
    build_index(CHAPTERS, idx)
    quoted = " ".join(CHAPTERS[3].text.split()[:15])
    helper = ScriptedModel(lambda req: json.dumps([quoted, "Write a prayer for rain.",
                                                   "Describe a flood.", "Tell a tale."]))
    job = make_job("propme", {"index": [str(idx)], "engine": "numpy", "n": 4,
                              "sets": ["specific", "prefix"], "prefix_words": 12,
                              "allow_copied_prompts": True}, 0)
    job.use_helper(helper)  # type: ignore[attr-defined]
    records = asyncio.run(job.run_items(job.items(), ScriptedModel(novel_writer)))
    report = job.finalize([(str(i), r) for i, r in enumerate(records)])
    assert report is not None
    assert report["prompt_overlap"]["specific"]["full_match_ratio"] == 0.25
    assert [w for w in report["warnings"] if "copied whole" in w] == [
        "25% of the specific prompts are copied whole from a corpus document: the helper "
        "quoted the corpus, and those prompts act as prefix attacks"]


def test_prefixes_as_the_authors_cut_them(tmp_path: Path) -> None:
    """The default prefixes (PropMe ``prefix_extraction.py``): the document's own text up to
    its 50th unit, newlines and spacing kept, from documents of at least 100 units only."""
    from recitation.trace.index import open_index
    from recitation.trace.propme import raw_prefix_prompts
    from recitation.trace.sources import SourceDoc

    long_docs = ["\n".join(d.text.split(": ", 2)) for d in CHAPTERS[:6]]  # lines, as verses
    short = "In the beginning God created the heaven and the earth."
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate([*long_docs, short])],
                tmp_path / "idx")
    ix = open_index(tmp_path / "idx", engine="numpy")
    got = raw_prefix_prompts(ix, 10, tokens=50, min_tokens=100, seed=3)
    assert len(got) == 6 and 6 not in {g["doc_ix"] for g in got}  # the short one: never
    for g in got:
        doc = [*long_docs, short][g["doc_ix"]]
        assert doc.startswith(g["prompt"]) and len(g["prompt"].split()) == 50
        assert g["prompt"][-1:].strip()  # ends on its 50th word
    assert any("\n" in g["prompt"] for g in got)  # the raw text, not words joined by spaces
    assert raw_prefix_prompts(ix, 10, tokens=50, min_tokens=100, seed=3) == got
    job = make_job("propme", {"index": [str(tmp_path / "idx")], "engine": "numpy", "n": 2,
                              "sets": ["prefix"]}, 0)
    assert [it.payload["prompt"] for it in job.items()] == [
        g["prompt"] for g in raw_prefix_prompts(ix, 2, seed=0)]


def test_helper_prompts_copied_from_the_corpus_are_refused(tmp_path: Path) -> None:
    """A generic prompt the helper copied whole from a corpus document is not sent (it would
    be a prefix attack, not ordinary use): its record says so and the report warns; with
    allow_copied_prompts it is kept, traced, and flagged as copied."""
    idx = tmp_path / "kjv"
    build_index(CHAPTERS, idx)
    copied = CHAPTERS[0].text.split(".")[0] + "."  # a verse of the index, whole
    helper = ScriptedModel(lambda req: json.dumps([copied, "Write a prayer for rain."]),
                           name="copier")

    def run(**extra: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        job = make_job("propme", {"index": [str(idx)], "engine": "numpy", "n": 2,
                                  "sets": ["generic", "prefix"], "prefix_words": 12,
                                  "generic_prompts": "helper", **extra}, 0)
        job.use_helper(helper)  # type: ignore[attr-defined]
        target = ScriptedModel(novel_writer, name="base")
        records = asyncio.run(job.run_items(job.items(), target))
        report = job.finalize([(str(i), r) for i, r in enumerate(records)])
        assert report is not None
        return records, report

    records, report = run()
    generic = [r for r in records if r["set"] == "generic"]
    assert [bool(r.get("refused")) for r in generic] == [True, False]
    assert "copied whole" in generic[0]["error"]
    assert report["groups"]["generic"]["total_generations"] == 1
    assert any("1 generic prompt(s) refused" in w for w in report["warnings"])
    records, report = run(allow_copied_prompts=True)
    assert not [r for r in records if "error" in r]
    assert report["prompt_overlap"]["generic"]["full_match_ratio"] == 0.5
    assert any("50% of the generic prompts are copied whole" in w for w in report["warnings"])
