"""Texts to audit: the Book > Chapter > Event > Passage model, loaders and chunking.

Loaders: :func:`load_text`, :func:`load_gutenberg` (plain text), :func:`load_echotrace`
(RECAP summary / extraction JSON), :func:`load_pdnc_novel` (PDNC), :func:`load_jsonl`
(JSONL corpora), :func:`load_latex` (arXiv sources); :func:`load_book` picks one by path
and checks the result (empty, binary, non-UTF-8, oversized files are refused in
:mod:`recitation.corpus.files`, the one place input files are checked). Chunking:
:func:`chunk_text`, :func:`chunk_book`; a book cut into passages: :func:`book_passages` (the
one cutter of detect, audit and extract, :mod:`recitation.corpus.passages`). Submodules are
imported lazily by these names.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from recitation.corpus.model import Book, Chapter, Event, Passage

_LAZY = {
    "load_text": "text",
    "load_gutenberg": "text",
    "strip_gutenberg": "text",
    "split_chapters": "text",
    "load_echotrace": "echotrace",
    "dump_echotrace": "echotrace",
    "write_echotrace": "echotrace",
    "candidate_text": "echotrace",
    "load_pdnc_novel": "pdnc",
    "list_pdnc_novels": "pdnc",
    "load_jsonl": "jsonl",
    "iter_jsonl": "jsonl",
    "load_jsonl_book": "jsonl",
    "load_latex": "latex",
    "chunk_text": "chunking",
    "chunk_book": "chunking",
    "book_passages": "passages",
    "cut_passages": "passages",
    "read_book_text": "passages",
    "word_tokenize": "tokenize",
    "load_book": "books",
    "read_text_file": "files",
}

__all__ = ["Book", "Chapter", "Event", "Passage", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"recitation.corpus.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'recitation.corpus' has no attribute {name!r}")
