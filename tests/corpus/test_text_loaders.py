"""Plain-text, Gutenberg, JSONL loaders and chunking."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from recitation.corpus.chunking import chunk_book, chunk_text
from recitation.corpus.jsonl import load_jsonl, load_jsonl_book
from recitation.corpus.text import load_gutenberg, load_text, strip_gutenberg
from recitation.corpus.tokenize import word_tokenize
from recitation.errors import CorpusError

PARA = (
    "Marley was dead, to begin with. There is no doubt whatever about that. The register "
    "of his burial was signed by the clergyman, the clerk, the undertaker, and the chief "
    "mourner. Scrooge signed it. "
)

GUTENBERG = f"""\ufeffThe Project Gutenberg eBook of A Christmas Carol

This eBook is for the use of anyone anywhere in the United States.

Title: A Christmas Carol

Author: Charles Dickens

*** START OF THE PROJECT GUTENBERG EBOOK A CHRISTMAS CAROL ***

A CHRISTMAS CAROL

CONTENTS

STAVE I. Marley's Ghost
STAVE II. The First of the Three Spirits

STAVE I.
MARLEY'S GHOST

{PARA * 3}

STAVE II.
THE FIRST OF THE THREE SPIRITS

{PARA * 2}

*** END OF THE PROJECT GUTENBERG EBOOK A CHRISTMAS CAROL ***

Section 1. General Terms of Use and Redistributing Project Gutenberg-tm
"""


def test_gutenberg_header_footer_and_chapters(tmp_path: Path) -> None:
    p = tmp_path / "carol.txt"
    p.write_text(GUTENBERG.replace("\n", "\r\n"), encoding="utf-8")
    g = strip_gutenberg(p.read_text(encoding="utf-8"))
    assert g.had_header and g.title == "A Christmas Carol" and g.author == "Charles Dickens"
    assert "Project Gutenberg" not in g.body and "General Terms" not in g.body
    book = load_gutenberg(p)
    assert book.author == "Charles Dickens" and book.id == "A_Christmas_Carol"
    titles = [c.title for c in book.chapters]
    assert titles == ["Front matter", "STAVE I.", "STAVE II."]  # the contents lines fold away
    assert book.chapters[1].text.startswith("MARLEY'S GHOST")
    assert book.chapters[2].id == "A_Christmas_Carol/ch002"
    assert load_gutenberg(p).model_dump() == book.model_dump()  # stable ids


def test_plain_text_without_headings(tmp_path: Path) -> None:
    p = tmp_path / "plain.txt"
    p.write_text(PARA, encoding="utf-8")
    book = load_text(p, title="Plain")
    assert len(book.chapters) == 1 and book.text == PARA.strip()
    with pytest.raises(CorpusError):
        load_text(tmp_path / "missing.txt")
    (tmp_path / "licence_only.txt").write_text(
        "*** START OF THE PROJECT GUTENBERG EBOOK X ***\n"
        "*** END OF THE PROJECT GUTENBERG EBOOK X ***\n"
    )
    with pytest.raises(CorpusError, match="no text"):
        load_gutenberg(tmp_path / "licence_only.txt")


def test_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "corpus.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "a", "text": "First.", "source": "x"}) + "\n\n")
        fh.write(json.dumps({"text": "Second.", "year": 1843}) + "\n")
    docs = load_jsonl(p)
    assert [(d.id, d.text, d.metadata) for d in docs] == [
        ("a", "First.", {"source": "x"}),
        ("corpus.jsonl:3", "Second.", {"year": 1843}),
    ]
    book = load_jsonl_book(p)
    assert [c.title for c in book.chapters] == ["a", "corpus.jsonl:3"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"body": "no text"}\n')
    with pytest.raises(CorpusError, match=":2: missing string field 'text'"):
        load_jsonl(bad)
    bad.write_text("[1, 2]\n")
    with pytest.raises(CorpusError, match="JSON object"):
        load_jsonl(bad)


def test_chunking_words_and_tokenizer() -> None:
    text = " ".join(f"w{i}" for i in range(100))
    parts = chunk_text(text, parent_id="doc")
    assert [(p.start, p.end) for p in parts] == [(0, 40), (40, 80)]  # the 20-token tail is dropped
    assert (
        parts[1].text == text[parts[1].char_start : parts[1].char_end]
        and parts[1].id == "doc/p0001"
    )
    overl = chunk_text(text, n=40, stride=20, min_tokens=1)
    assert [(p.start, p.end) for p in overl] == [(0, 40), (20, 60), (40, 80), (60, 100)]
    toks = chunk_text("Hello, world! " * 10, n=4, tokenizer=word_tokenize)
    assert toks[0].text == "Hello , world !" and len(toks) == 10
    with pytest.raises(CorpusError):
        chunk_text(text, n=0)


def test_chunk_book_uses_events_or_chapters(tmp_path: Path) -> None:
    p = tmp_path / "plain.txt"
    p.write_text(PARA * 10, encoding="utf-8")
    book = load_text(p)
    parts = chunk_book(book, n=40)
    assert parts and all(x.parent_id == book.chapters[0].id for x in parts)
