"""A book cut into consecutive passages of N words: the one cutter of ``detect`` (``book:PATH``
and ``PATH.txt`` sources), ``audit`` (``--text`` / ``--controls`` books) and ``extract`` (its
books read through :func:`read_book_text` as well, by :func:`recitation.corpus.books.load_book`).

* **What is read**: the file through :func:`~recitation.corpus.files.read_text_file` (empty,
  binary, non-UTF-8 files refused), with the Project Gutenberg licence header and footer
  removed wherever a Gutenberg header is found (:func:`~recitation.corpus.text
  .strip_gutenberg`: the ``*** START OF`` marker, or a copy that kept only the header's "The
  Project Gutenberg EBook of ..." line). Other text is read as it is.
* **How it is cut**: consecutive, non-overlapping windows of ``words`` whitespace words
  (:func:`~recitation.corpus.chunking.chunk_text`), their words joined by single spaces; the
  last, shorter window is dropped. A book shorter than ``words`` gives no passage.
* **Chapter**: each passage is labelled ``"<n> <heading>"`` with the chapter it starts in
  (every line :data:`~recitation.corpus.text.DEFAULT_HEADING` matches, ``"000 Front
  matter"`` before the first), what the audit's stratified sample draws by.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recitation.corpus.chunking import chunk_text
from recitation.corpus.files import read_text_file
from recitation.corpus.text import DEFAULT_HEADING, GutenbergText, strip_gutenberg


@dataclass(frozen=True)
class BookPassage:
    """The ``index``-th passage of a book: its words joined by single spaces, and the
    chapter it starts in."""

    index: int
    text: str
    chapter: str


def book_text(raw: str) -> GutenbergText:
    """``raw`` with the Gutenberg licence removed when it has a Gutenberg header (else as it
    is, ``had_header`` False): the one rule of what a book's text is."""
    g = strip_gutenberg(raw)
    if g.had_header and g.body.strip():
        return g
    return GutenbergText(raw, "", "", False)


def read_book_text(path: str | Path) -> GutenbergText:
    """The text of the book at ``path`` (:func:`book_text` of the file)."""
    return book_text(read_text_file(Path(path)))


def chapter_marks(text: str) -> list[tuple[int, str]]:
    """``(first word, heading)`` of each chapter heading of ``text``, ``(0, "Front
    matter")`` first."""
    marks, words, pos = [(0, "Front matter")], 0, 0
    for m in DEFAULT_HEADING.finditer(text):
        words += len(text[pos:m.start(1)].split())
        pos = m.start(1)
        marks.append((words, " ".join(m.group(1).split())))
    return marks


def cut_passages(text: str, words: int) -> list[BookPassage]:
    """``text`` cut into passages of ``words`` words (module docstring)."""
    marks, out, k = chapter_marks(text), [], 0
    for p in chunk_text(text, parent_id="book", n=words):
        while k + 1 < len(marks) and marks[k + 1][0] <= p.start:
            k += 1
        out.append(BookPassage(p.index, " ".join(p.text.split()), f"{k:03d} {marks[k][1]}"))
    return out


def book_passages(path: str | Path, words: int) -> list[BookPassage]:
    """The passages of the book at ``path``: :func:`cut_passages` of :func:`read_book_text`."""
    return cut_passages(read_book_text(path).body, words)


__all__ = ["BookPassage", "book_passages", "book_text", "chapter_marks", "cut_passages",
           "read_book_text"]
