"""PROPME's generic and specific prompts drawn from an outside sentence sample, as the
authors build them (PropMe ``group_by_overlap.py``, ``build_prompt_sets.py``): each
sentence's overlap group against a brute-force scan of the documents, full matches excluded,
and the job run from sentence files with no helper."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from recitation.errors import ConfigError
from recitation.models.base import GenerationRequest
from recitation.models.scripted import ScriptedModel
from recitation.runs.jobs import make_job
from recitation.trace.build import build_index
from recitation.trace.index import open_index
from recitation.trace.prompt_sets import (
    FULL,
    coverage_group,
    everyday_sample,
    overlap,
    read_sentences,
    sentence_prompts,
)
from recitation.trace.sources import SourceDoc

DOCS = [
    "It was a bright cold day in April, and the clocks were striking the hour. The lamp was "
    "lit at dusk.",
    "The old man sat by the river and watched the boats go down to the sea.",
    "She opened the letter slowly; it said nothing she had not known for years.",
]
SENTENCES = [
    "The lamp was lit at dusk.",                       # whole, in a document
    "the boats go down to the sea",                     # whole, mid-sentence
    "The old man sat by the river and fished.",         # most of it
    "She opened the door and went out into the rain.",  # about half
    "Quartz crystals vibrate at a precise frequency.",  # almost none
    "I would like two tickets for tomorrow, please.",
]


def brute(docs: list[str], s: str) -> tuple[bool, float]:
    """(whole in a document, longest substring in a document / its length), by scanning
    every start and end (bytes: the sentences are ASCII)."""
    if any(s in d for d in docs):
        return True, 1.0
    best = max(e - a for a in range(len(s)) for e in range(a, len(s) + 1)
               if any(s[a:e] in d for d in docs))
    return False, best / len(s)


@pytest.fixture
def byte_index(tmp_path: Path) -> Any:
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(DOCS)], tmp_path / "ix")
    return open_index(tmp_path / "ix", engine="numpy")


def test_groups_equal_a_brute_force_scan(byte_index: Any) -> None:
    groups = []
    for s in SENTENCES:
        whole, cov = brute(DOCS, s)
        o = overlap(byte_index, s)
        assert o.units == len(s.encode())
        if whole:
            assert o.group == FULL and o.coverage == 1.0
        else:
            assert o.coverage == pytest.approx(cov, abs=1e-4)
            assert o.group == coverage_group(cov)
        groups.append(o.group)
    assert groups[:2] == [FULL, FULL] and groups[2] == "5" and groups[3] in ("3", "4")
    assert groups[4] == "1"
    # the authors' thresholds, each boundary on its upper side
    assert [coverage_group(c) for c in (0.0, 0.2499, 0.25, 0.4999, 0.5, 0.7499, 0.75, 0.99)] \
        == ["1", "1", "3", "3", "4", "4", "5", "5"]


class Pieces:
    """Words with their leading whitespace as tokens (a BPE's ' word' pieces)."""

    PIECE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.vocab_size = 1000

    def encode(self, text: str) -> list[int]:
        out = []
        for p in self.PIECE.findall(text):
            if p not in self.pieces:
                self.pieces.append(p)
            out.append(self.pieces.index(p))
        return out

    def decode(self, ids: list[int]) -> str:
        return "".join(self.pieces[i] for i in ids)


def test_a_sentence_found_mid_document_is_whole_through_its_spaced_form(
        tmp_path: Path) -> None:
    """On a token-level index "the boats go ..." alone starts with the piece 'the', in the
    document with ' the': only the spaced tokenization finds it whole (the authors try
    both)."""
    tok = Pieces()
    for d in DOCS:
        tok.encode(d)
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(DOCS)], tmp_path / "tok",
                tokenizer=tok, tokenizer_name="pieces")  # type: ignore[arg-type]
    ix = open_index(tmp_path / "tok", engine="numpy", tokenizer=tok)  # type: ignore[arg-type]
    s = "the boats go down to the sea"
    assert ix.engine.count(ix.ids(s)) == 0 and ix.engine.count(ix.ids(" " + s)) == 1
    assert overlap(ix, s).group == FULL
    o = overlap(ix, "the boats go down to the harbour")
    assert o.group == "5" and o.longest == 6 and o.units == 7  # ' the' ... ' the' of 7


def test_drawn_prompts_exclude_full_matches_and_repeat_with_the_seed(byte_index: Any) -> None:
    drawn, counts = sentence_prompts(byte_index, SENTENCES, 3, seed=1)
    assert counts[FULL] == 2 and sum(counts.values()) == len(SENTENCES)
    assert len(drawn) == 3 and all(d["prompt"] in SENTENCES[2:] for d in drawn)
    assert [d["prompt"] for d in drawn] == [
        d["prompt"] for d in sentence_prompts(byte_index, SENTENCES, 3, seed=1)[0]]
    every, _ = sentence_prompts(byte_index, SENTENCES, 100, seed=0)
    assert [d["prompt"] for d in every] == SENTENCES[2:]  # all 4 kept, in sample order
    assert {d["group"] for d in every} <= {"1", "3", "4", "5"}


def test_sentence_files_are_read_or_refused_by_line(tmp_path: Path) -> None:
    txt = tmp_path / "s.txt"
    txt.write_text("  One.\n\nTwo.\nOne.\n", encoding="utf-8")
    assert read_sentences(txt) == ["One.", "Two."]
    jl = tmp_path / "s.jsonl"
    jl.write_text('{"text": "One."}\n{"txt": "Two."}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"s.jsonl, line 2: not a JSON object with a 'text'"):
        read_sentences(jl)
    (tmp_path / "e.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(ConfigError, match="holds no sentence"):
        read_sentences(tmp_path / "e.txt")
    with pytest.raises(ConfigError, match="cannot read the sentence sample"):
        read_sentences(tmp_path / "missing.txt")


def _never(req: GenerationRequest) -> str:
    raise AssertionError("no helper is asked when the sets come from sentence samples")


def _run(tmp_path: Path, params: dict[str, Any]) -> tuple[list[Any], dict[str, Any], Any]:
    build_index([SourceDoc(t, {"n": i}) for i, t in enumerate(DOCS)], tmp_path / "ix")
    job = make_job("propme", {"index": [str(tmp_path / "ix")], "engine": "numpy",
                              "prefix_words": 4, "prefix_min_tokens": 8, **params}, 0)
    job.use_helper(ScriptedModel(_never, name="helper"))  # type: ignore[attr-defined]
    items = job.items()
    target = ScriptedModel(lambda r: "A new sentence about nothing in particular.")
    records = asyncio.run(job.run_items(items, target))
    report = job.finalize([(str(i), r) for i, r in enumerate(records)])
    assert report is not None
    return items, report, job.summary([(str(i), r) for i, r in enumerate(records)], report)


def test_the_job_draws_its_sets_from_sentence_files_without_a_helper(tmp_path: Path) -> None:
    (tmp_path / "generic.txt").write_text("\n".join(SENTENCES), encoding="utf-8")
    (tmp_path / "specific.jsonl").write_text(
        "".join(json.dumps({"text": s}) + "\n" for s in SENTENCES[2:4]), encoding="utf-8")
    items, report, table = _run(tmp_path, {
        "n": 3, "generic_sentences": str(tmp_path / "generic.txt"),
        "specific_sentences": str(tmp_path / "specific.jsonl")})
    by_set = {s: [i.payload for i in items if i.payload["set"] == s]
              for s in ("generic", "specific", "prefix")}
    assert len(by_set["generic"]) == 3 and len(by_set["specific"]) == 2
    assert all(p["prompt"] in SENTENCES[2:] and p["source"] == "sentences"
               for s in ("generic", "specific") for p in by_set[s])
    src = report["prompt_sources"]
    assert src["generic"]["sample_full_matches"] == 2
    assert src["specific"]["sample_full_matches"] == 0
    assert sum(src["generic"]["groups"].values()) == 3
    assert report["prompt_overlap"]["generic"]["full_match_ratio"] == 0.0
    assert not [n for n in table.headline if "written by a helper" in n]


def test_helper_written_sets_are_named_as_ours(tmp_path: Path) -> None:
    items, report, table = _run(tmp_path, {"n": 2, "sets": ["prefix"]})
    assert "prompt_sources" in report and report["prompt_sources"] == {}
    job = make_job("propme", {"index": [str(tmp_path / "ix")], "engine": "numpy", "n": 2,
                              "sets": ["generic"], "generic_prompts": "helper"}, 0)
    helper = ScriptedModel(lambda r: json.dumps(["Write a poem.", "Tell a story."]))
    job.use_helper(helper)  # type: ignore[attr-defined]
    records = asyncio.run(job.run_items(job.items(), ScriptedModel(lambda r: "Fine.")))
    pairs = [(str(i), r) for i, r in enumerate(records)]
    rep = job.finalize(pairs)
    assert rep is not None and rep["prompt_sources"] == {"generic": "helper"}
    notes = job.summary(pairs, rep).headline
    assert any("generic prompts written by a helper model" in n
               and "--generic-sentences" in n for n in notes)


def test_by_default_the_generic_set_is_drawn_from_the_packaged_sample(tmp_path: Path) -> None:
    """No sentence file, no helper: the generic prompts are the packaged everyday sentences
    that do not occur whole in the index (the specific ones, with no sample of unseen
    sources, are the helper's, and the table says so)."""
    sample = read_sentences(everyday_sample())
    assert len(sample) == 197
    items, report, table = _run(tmp_path, {"n": 100, "sets": ["generic", "prefix"]})
    generic = [i.payload for i in items if i.payload["set"] == "generic"]
    assert len(generic) == 100 and all(p["prompt"] in sample for p in generic)
    assert len({p["prompt"] for p in generic}) == 100
    assert report["prompt_sources"]["generic"]["source"] == "sentences"
    assert not [n for n in table.headline if "written by a helper" in n]
