"""One passage cutter (corpus/passages.py): detect, audit and extract read a book alike, with
no Project Gutenberg licence text, on a real Gutenberg file of the reference data."""

from __future__ import annotations

from pathlib import Path

import pytest

from recitation.audit.inputs import load_passages
from recitation.corpus.books import load_book
from recitation.corpus.passages import book_passages, book_text, cut_passages
from recitation.detect.samples import load_samples
from recitation.extract.job import ExtractJob

NOVEL = "APassageToIndia"  # PDNC's Project Gutenberg text: it kept the header's first line
HEADER = """\ufeffThe Project Gutenberg EBook of A Passage to India, by E. M. Forster

This eBook is for the use of anyone anywhere at no cost and with almost no restrictions
whatsoever.  You may copy it, give it away or re-use it under the terms of the Project
Gutenberg License included with this eBook or online at www.gutenberg.org

Title: A Passage to India

Author: E. M. Forster

*** START OF THIS PROJECT GUTENBERG EBOOK A PASSAGE TO INDIA ***

"""
FOOTER = """

End of the Project Gutenberg EBook of A Passage to India, by E. M. Forster

*** END OF THIS PROJECT GUTENBERG EBOOK A PASSAGE TO INDIA ***

***** This file should be named 61221-0.txt or 61221-0.zip *****

Updated editions will replace the previous one--the old editions will be renamed.

START: FULL LICENSE

THE FULL PROJECT GUTENBERG LICENSE
PLEASE READ THIS BEFORE YOU DISTRIBUTE OR USE THIS WORK

Section 1. General Terms of Use and Redistributing Project Gutenberg-tm electronic works
"""
LICENCE_WORDS = ("Gutenberg", "eBook", "EBook", "LICENSE", "License", "gutenberg.org")


def _novel(shared_data: Path) -> Path:
    return shared_data / "pdnc" / NOVEL / "novel_text.txt"


def _no_licence(texts: list[str]) -> None:
    assert not [t for t in texts if any(w in t for w in LICENCE_WORDS)]


@pytest.fixture(params=["as-shipped", "full-licence"])
def gutenberg_file(request: pytest.FixtureRequest, shared_data: Path, tmp_path: Path) -> Path:
    """The real novel text as the reference data ships it (header line only), and the same
    text inside a current Gutenberg file's header, footer and licence."""
    text = _novel(shared_data).read_text(encoding="utf-8")
    if request.param == "as-shipped":
        path = tmp_path / "passage.txt"
        path.write_text(text, encoding="utf-8")
    else:
        body = text.split("\n", 1)[1]  # the header line, now in HEADER
        path = tmp_path / "passage.txt"
        path.write_text((HEADER + body + FOOTER).replace("\n", "\r\n"), encoding="utf-8")
    return path


def test_detect_audit_and_extract_read_the_same_passages(gutenberg_file: Path) -> None:
    cut = book_passages(gutenberg_file, 100)
    detect = load_samples(f"book:{gutenberg_file}", "member", passage_words=100)
    audit = load_passages(str(gutenberg_file), 100)
    assert len(cut) > 1000
    assert [s.text for s in detect] == [p.text for p in audit] == [p.text for p in cut]
    assert [p.chapter for p in audit] == [p.chapter for p in cut]
    _no_licence([p.text for p in cut])
    assert cut[0].text.startswith("PART I: MOSQUE CHAPTER I Except for the Marabar Caves")
    assert cut[-1].chapter.endswith("CHAPTER XXXVII")
    # extract reads the same text (its chapters: the headings apart, word for word)
    job = ExtractJob(ExtractJob.Params(book=str(gutenberg_file)), seed=0)
    book = job.book()
    assert (book.title, book.author) == ("A Passage to India", "E. M. Forster")
    texts = [str(i.payload["text"]) for i in job.items()]
    _no_licence(texts)
    words = " ".join(texts).split()
    body = book_text(gutenberg_file.read_text(encoding="utf-8")).body.split()
    assert _skipped(body, words) == [w for ch in book.chapters[1:] for w in ch.title.split()]


def _skipped(body: list[str], words: list[str]) -> list[str]:
    """The words of ``body`` left out of ``words`` (a subsequence of it, in order)."""
    out, j = [], 0
    for w in body:
        if j < len(words) and words[j] == w:
            j += 1
        else:
            out.append(w)
    assert j == len(words)
    return out


def test_the_cutter_drops_the_last_short_passage_and_labels_chapters() -> None:
    text = "Front words here.\n\nCHAPTER I\n\n" + "a " * 150 + "\n\nCHAPTER II\n\n" + "b " * 60
    cut = cut_passages(text, 100)
    assert [len(p.text.split()) for p in cut] == [100, 100]  # 218 words: 18 dropped
    assert [p.chapter for p in cut] == ["000 Front matter", "001 CHAPTER I"]
    assert cut_passages("too short", 100) == []


def test_a_text_without_a_gutenberg_header_is_read_as_it_is() -> None:
    raw = "The Project Gutenberg licence is mentioned here, mid-text.\r\n\r\nMore."
    g = book_text(raw)
    assert g.body == raw and not g.had_header


def test_extract_reads_the_shipped_novel_folder_unchanged(shared_data: Path) -> None:
    """A PDNC folder keeps its text as shipped (quotation spans index into it)."""
    book = load_book(_novel(shared_data).parent)
    assert book.metadata.get("format") != "gutenberg"
