"""A book from any supported path: the one entry point commands use (``recitation extract``).

The format is found from the path (:func:`detect_format`), the loader reads the file through
:mod:`recitation.corpus.files` (missing, oversized, binary, non-UTF-8 and empty files are
refused there, naming file and byte offset), and :func:`check_book` refuses a book in which
no chapter has text.
"""

from __future__ import annotations

from pathlib import Path

from recitation.corpus.echotrace import load_echotrace
from recitation.corpus.latex import load_latex
from recitation.corpus.model import Book
from recitation.corpus.passages import read_book_text
from recitation.corpus.pdnc import load_pdnc_novel
from recitation.corpus.text import load_gutenberg, load_text
from recitation.errors import CorpusError

FORMATS = ("auto", "echotrace", "text", "gutenberg", "latex", "pdnc")


def check_book(book: Book, source: str | Path) -> Book:
    """``book``, or :class:`CorpusError` when none of its chapters has text."""
    if not book.chapters or not any(ch.full_text.strip() for ch in book.chapters):
        raise CorpusError(f"{source}: no text found in the book (0 chapters with text)")
    return book


def detect_format(path: str | Path) -> str:
    """The loader for ``path``: a folder with ``novel_text.txt`` is PDNC, another folder
    LaTeX; a file by its extension (``.json`` EchoTrace, ``.tex`` LaTeX, else text)."""
    p = Path(path)
    if p.is_dir():
        return "pdnc" if (p / "novel_text.txt").exists() else "latex"
    return {".json": "echotrace", ".tex": "latex"}.get(p.suffix.lower(), "text")


def load_book(path: str | Path, fmt: str = "auto") -> Book:
    """A book from an EchoTrace JSON file, a PDNC novel folder, an arXiv LaTeX source (file
    or folder) or a plain-text / Project Gutenberg file, checked (see the module docstring).
    A text file found by ``auto`` is read as Gutenberg (licence removed) when it has a
    Gutenberg header: the rule of :func:`recitation.corpus.passages.read_book_text`, so
    ``extract`` reads the text ``detect`` and ``audit`` cut into passages."""
    p, auto = Path(path), fmt == "auto"
    if fmt not in FORMATS:
        raise CorpusError(f"unknown book format {fmt!r}; one of {', '.join(FORMATS)}")
    if not p.exists():
        raise CorpusError(f"book not found: {p}")
    fmt = detect_format(p) if auto else fmt
    if auto and fmt == "text" and read_book_text(p).had_header:
        fmt = "gutenberg"
    book: Book
    if fmt == "echotrace":
        book = load_echotrace(p)
    elif fmt == "pdnc":
        book = load_pdnc_novel(p).book
    elif fmt == "latex":
        book = load_latex(p)
    else:
        book = load_gutenberg(p) if fmt == "gutenberg" else load_text(p)
    return check_book(book, p)


__all__ = ["FORMATS", "check_book", "detect_format", "load_book"]
