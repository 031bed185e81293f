"""Loaders on the real reference data: EchoTrace JSON and PDNC novels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recitation.corpus.echotrace import (
    RECAP_METHODS,
    candidate_text,
    dump_echotrace,
    find_extraction_files,
    load_echotrace,
    parse_echotrace,
    parse_extraction_path,
    write_echotrace,
)
from recitation.corpus.model import Book, Event
from recitation.corpus.pdnc import list_pdnc_novels, load_pdnc_novel
from recitation.errors import CorpusError


def _echotrace(shared_data: Path) -> Path:
    return shared_data / "echotrace"


def test_summary_and_extraction_files_round_trip(shared_data: Path, tmp_path: Path) -> None:
    book_dir = _echotrace(shared_data) / "books/A_Christmas_Carol_-_Charles_Dickens"
    files = [
        next(book_dir.glob("*_summary_*.json")),
        *sorted((book_dir / "Extractions").glob("*.json")),
    ]
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        book = load_echotrace(path)
        assert dump_echotrace(book) == raw
        assert Book.model_validate_json(book.model_dump_json()) == book  # serializable
        out = tmp_path / path.name
        write_echotrace(book, out)
        assert json.loads(out.read_text(encoding="utf-8")) == raw
    assert book.title == "A Christmas Carol" and book.author == "Charles Dickens"
    ev = book.chapters[1].events[2]
    assert ev.id == "A_Christmas_Carol_-_Charles_Dickens/ch001/ev002"
    assert book.find(ev.id) is ev and ev.summary and ev.first_sentence and ev.text


def test_every_extraction_file_loads(shared_data: Path) -> None:
    files = find_extraction_files(_echotrace(shared_data))
    assert len(files) == 24 and {f.model for f in files} == {"deepseek-chat", "gpt-4.1-2025-04-14"}
    for f in files:
        book = load_echotrace(f.path)
        for ev in book.events():
            for method in RECAP_METHODS:
                assert isinstance(candidate_text(ev, method), str)


def _event(agent: dict[str, object], prefix: str = "pp") -> Event:
    return Event(
        id="b/ch000/ev000",
        text="gold",
        extra={"LLM_completions": {"prefix-probing": prefix, "Agent_Extraction": agent}},
    )


def test_candidate_selection_rules() -> None:
    ev = _event(
        {
            "simple_agent_extraction": " plain ",
            "simple_agent_extraction_refined_0": {"text": "r0", "refinement_prompt": None},
            "simple_agent_extraction_refined_1": {"text": "r1"},
            "simple_agent_extraction_refined_2": {"text": "r2 "},
        }
    )
    got = {m: candidate_text(ev, m) for m in RECAP_METHODS}
    assert got == {
        "prefix-probing": "pp",
        "simple_agent_extraction": "plain",
        "simple_agent_jailbreak": "plain",
        "simple_agent_extraction_refined_first": "r1",
        "simple_agent_extraction_refined_best_no_jail": "r2",
        "simple_agent_extraction_refined_best": "r2",
    }
    jail = _event(
        {
            "simple_agent_extraction": "MODEL_RESPONSE_BLOCKED",
            "simple_agent_jailbreak": "j",
            "simple_agent_extraction_refined_0": {"text": "r0"},
        }
    )
    assert candidate_text(jail, "simple_agent_jailbreak") == "j"
    assert (
        candidate_text(jail, "simple_agent_extraction_refined_best_no_jail")
        == "MODEL_RESPONSE_BLOCKED"
    )
    assert candidate_text(jail, "simple_agent_extraction_refined_first") == "r0"
    assert (
        candidate_text(
            _event({"simple_agent_jailbreak": "j"}), "simple_agent_extraction_refined_best"
        )
        == "j"
    )
    with pytest.raises(CorpusError):
        candidate_text(jail, "unknown-method")


def test_bad_input_raises_corpus_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="missing key 'chapters'"):
        parse_echotrace({"book_name": "X"})
    with pytest.raises(CorpusError, match="chapter 0, event 1"):
        parse_echotrace(
            {"book_name": "X", "chapters": [{"events": [{"text_segment": "a"}, {"title": "t"}]}]}
        )
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CorpusError, match="cannot read"):
        load_echotrace(bad)
    with pytest.raises(CorpusError, match="not found"):
        load_echotrace(tmp_path / "missing.json")
    with pytest.raises(CorpusError, match="extraction file name"):
        parse_extraction_path(tmp_path / "whatever.json")


def test_pdnc_novels(shared_data: Path) -> None:
    folders = list_pdnc_novels(shared_data / "pdnc")
    assert len(folders) == 24
    novel = load_pdnc_novel(shared_data / "pdnc" / "Emma", strict=True)
    assert len(novel.quotations) == 1593 and len(novel.characters) == 18  # rows of the CSVs
    q = novel.quotations[0]
    assert q.speaker == "Mr. Woodhouse" and q.quote_type in ("Explicit", "Anaphoric", "Implicit")
    assert novel.text[q.spans[0][0] : q.spans[0][1]] in q.text
    emma = novel.character("Miss Woodhouse")
    assert (
        emma is not None and emma.name == "Emma" and emma.gender == "F" and emma.category == "major"
    )
    assert novel.book.chapters[1].title == "CHAPTER I" and len(novel.book.chapters) == 56


def test_all_pdnc_spans_reproduce_quotations(shared_data: Path) -> None:
    for folder in list_pdnc_novels(shared_data / "pdnc"):
        load_pdnc_novel(folder, strict=True)  # raises if any span does not match its text
